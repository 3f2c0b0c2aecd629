//! Real syslog: a real PostgreSQL server logs through libc's syslog(3) to a
//! real rsyslogd (and, at the same time, to stderr files via the logging
//! collector). The oracle is not walwatch: the dumb counter of
//! tests/support/truth.rs reads the raw syslog file (and, separately, the raw
//! stderr files, which must give the same counts), and walwatch's import of
//! the syslog file must match it exactly: every summary count, every
//! checkpoint start time, and every number of every complete line. (The
//! stderr import is still compared too, as a second opinion.)
//!
//! Hand-written syslog fixtures only show what their author thought the
//! daemon writes; this test checks the framer against what rsyslogd really
//! writes: its envelope and escaping (`#011`), PostgreSQL's sequence numbers
//! and chunks (a LOG with its HINT as `[N-1]`/`[N-2]`, a long line cut at 900
//! bytes), and messages of several processes interleaved.
//!
//! Needs root (rsyslogd must own /dev/log, the only socket syslog(3) writes
//! to), rsyslogd and the PostgreSQL server binaries; fails, never skips,
//! without them (`.ci/run` installs both). Takes under a minute.
//! Set WALWATCH_SYSLOG_KEEP_LOGS=<dir> to keep a copy of both logs.

use crate::support;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use support::syslog::Rsyslog;
use support::truth::{assert_complete_numbers, Layout, Truth};
use support::{describe, ts_key, walwatch, PgCluster, StopMode};

/// Long enough for "too frequently" warnings on top of pgbench -i's
/// checkpoints, short enough to keep the test under a minute.
const PGBENCH_SECONDS: &str = "20";

/// stderr and syslog at once, so one run gives both logs of the same events.
/// syslog_sequence_numbers/split_messages are the defaults, spelled out
/// because the framer depends on them. log_timezone=UTC so the prefix's %m is
/// what walwatch stores, for both imports alike.
const SETTINGS: &[(&str, &str)] = &[
    ("log_destination", "'stderr,syslog'"),
    ("logging_collector", "on"),
    ("syslog_facility", "'LOCAL0'"),
    ("syslog_ident", "'postgres'"),
    ("syslog_sequence_numbers", "on"),
    ("syslog_split_messages", "on"),
    ("log_line_prefix", PREFIX_SETTING),
    ("lc_messages", "'C'"),
    ("log_timezone", "'UTC'"),
    ("log_checkpoints", "on"),
    ("max_wal_size", "'32MB'"),
    ("min_wal_size", "'32MB'"),
    ("checkpoint_timeout", "'30s'"),
    ("shared_buffers", "'32MB'"),
];

const PREFIX: &str = "%m [%p] %q%u@%d ";
const PREFIX_SETTING: &str = "'%m [%p] %q%u@%d '";

/// The postmaster's last message: once rsyslogd has written it, the file
/// holds everything (each process sends its own lines, in order).
const LAST_LINE: &str = "database system is shut down";

#[test]
fn walwatch_reads_real_rsyslog_output_like_stderr() {
    let work = tempfile::Builder::new().prefix("walwatch-syslog-").tempdir().expect("tempdir");
    // Started before the server, so no message of the server can miss it; and
    // declared first, so it is dropped after the cluster.
    let rsyslog = Rsyslog::start(&work.path().join("rsyslog"));
    let mut pg = PgCluster::init(SETTINGS);
    pg.start();
    run_workload(&pg);
    pg.stop(StopMode::Fast);
    let flushed = rsyslog.wait_for(Duration::from_secs(20), |t| t.contains(LAST_LINE));
    assert!(flushed, "rsyslogd never wrote {LAST_LINE:?}:\n{}\n{}", rsyslog.diagnostics(), tail(&rsyslog.text()));

    let syslog_file = rsyslog.log_file();
    let stderr_files = pg.log_files();
    assert!(!stderr_files.is_empty(), "no stderr log files in {}", pg.log_dir().display());
    keep_logs_if_asked(&syslog_file, &stderr_files);
    check_syslog_file(&rsyslog.text());

    let db = |name: &str| work.path().join(name).to_str().expect("utf-8 temp path").to_string();
    let (a, b, c) = (db("syslog.db"), db("stderr.db"), db("auto.db"));
    import(&a, "sys", Some("syslog"), std::slice::from_ref(&syslog_file));
    import(&b, "err", None, &stderr_files);
    // The README promises detection from the first line: no --format.
    import(&c, "sys", None, std::slice::from_ref(&syslog_file));

    let (sum_a, sum_b, sum_c) = (summary(&a, "sys"), summary(&b, "err"), summary(&c, "sys"));
    let (cps_a, cps_b, cps_c) = (checkpoints(&a, "sys"), checkpoints(&b, "err"), checkpoints(&c, "sys"));
    println!("summary from syslog: {sum_a}\nsummary from stderr: {sum_b}");
    println!("checkpoints: {} from syslog, {} from stderr", cps_a.len(), cps_b.len());

    assert_eq!(sum_a, sum_b, "summary: syslog import (left) differs from stderr import (right)");
    assert_eq!(cps_a, cps_b, "checkpoints: syslog import (left) differs from stderr import (right)");
    assert_eq!(sum_c, sum_a, "summary: --format auto (left) differs from --format syslog (right)");
    assert_eq!(cps_c, cps_a, "checkpoints: --format auto (left) differs from --format syslog (right)");

    // The independent truth, from the raw syslog file; the raw stderr files
    // must give the same counts and start times.
    let truth = Truth::read(std::slice::from_ref(&syslog_file), &Layout::syslog(PREFIX));
    let truth_stderr = Truth::from_files(&stderr_files);
    println!(
        "independent truth from syslog: {}\nindependent truth from stderr: {}",
        truth.brief(),
        truth_stderr.brief()
    );
    assert_eq!(truth.brief(), truth_stderr.brief(), "the counter over syslog (left) and over stderr (right)");
    let starts = |t: &Truth| t.start_list.iter().map(|s| (s.ts_key.clone(), s.flags.clone())).collect::<Vec<_>>();
    assert_eq!(starts(&truth), starts(&truth_stderr), "start lines: syslog (left) vs stderr (right)");
    check_against_truth(&sum_a, &cps_a, &truth);
    let conn = rusqlite::Connection::open(&a).expect("open syslog store");
    let hints: i64 = conn
        .query_row(
            "SELECT count(*) FROM event WHERE kind = 'too_frequent' AND json_extract(data, '$.hint') = 1",
            [],
            |r| r.get(0),
        )
        .expect("count hints");
    assert_eq!(hints, truth.hints, "too-frequent warnings stored with their HINT vs HINTs in the syslog file");

    // Equal could mean equally empty: the workload's events must be there.
    let n = |path: &str| int(&sum_a, path);
    assert!(n("checkpoints.by_trigger.wal") >= 3, "fewer than 3 WAL checkpoints: {sum_a}");
    assert!(n("too_frequent") >= 1, "no too_frequent warning: {sum_a}");
    assert_eq!(n("parameter_changes"), 1, "parameter changes: {sum_a}");
    assert_eq!(n("checkpoints.by_trigger.shutdown"), 1, "shutdown checkpoints: {sum_a}");
}

/// walwatch's syslog import against the counter: summary counts, one row per
/// start at the logged time, and the numbers of each complete line in the
/// row completed at that line's time.
fn check_against_truth(summary: &Value, cps: &[Value], t: &Truth) {
    for (path, want) in t.expected_summary() {
        assert_eq!(int(summary, path), want, "summary {path} vs the counter over the syslog file: {summary}");
    }
    let mut started: Vec<String> = cps.iter().filter_map(|cp| cp["started_at"].as_str().map(ts_key)).collect();
    started.sort();
    let mut logged: Vec<String> = t.start_list.iter().map(|s| s.ts_key.clone()).collect();
    logged.sort();
    assert_eq!(started, logged, "checkpoint start times: walwatch (left) vs the syslog file (right)");
    assert_complete_numbers(cps, t, "syslog import");
    println!("syslog import = counter: {} complete lines, every number equal", t.complete_list.len());
}

/// Checkpoints (WAL-triggered, too frequent, manual), a reload that changes a
/// parameter, and one long multi-line statement for the chunking paths.
fn run_workload(pg: &PgCluster) {
    pg.pgbench(&["-i", "-s", "5", "-q"]);
    pg.pgbench(&["-c", "4", "-j", "2", "-T", PGBENCH_SECONDS]);
    pg.psql("CHECKPOINT;");

    pg.psql("ALTER SYSTEM SET max_wal_size = '64MB';");
    pg.reload();
    let changed = r#"parameter "max_wal_size" changed to "64MB""#;
    assert!(pg.wait_for_log(Duration::from_secs(20), |t| t.contains(changed)), "no reload line");

    // log_statement only for this session. Each of the first two lines is
    // far over syslog's 900-byte chunk limit, so PostgreSQL cuts it at a word
    // boundary and the next chunk starts with that whitespace: a space after
    // the first line's cut, a TAB (`#011` after rsyslog, like a continuation
    // line, which it is not) after the second's. The lines after the first
    // are TAB continuations in the log. A TAB-separated list (a pasted TSV
    // row, a generated IN list) is ordinary logged SQL, and puts many `#011`
    // into a few lines.
    let spaced: Vec<String> = (0..150).map(|i| format!("word{i:04}")).collect();
    let tabbed: Vec<String> = (0..150).map(|i| format!("tab{i:04}")).collect();
    let sql = format!(
        "SET log_statement = 'all';\nSELECT '{}' AS spaced,\n  '{}' AS tabbed,\n\t2 AS indented;\n",
        spaced.join(" "),
        tabbed.join("\t")
    );
    pg.psql(&sql);
    assert!(pg.wait_for_log(Duration::from_secs(20), |t| t.contains("2 AS indented;")), "statement not logged");
}

/// The file really is rsyslog's rendering of PostgreSQL's chunked messages,
/// before walwatch is involved: otherwise the equality above proves nothing.
fn check_syslog_file(text: &str) {
    let lines: Vec<&str> = text.lines().collect();
    let count = |needle: &str| lines.iter().filter(|l| l.contains(needle)).count();
    let show = || tail(text);
    assert!(count("checkpoint starting: wal") >= 3, "fewer than 3 WAL checkpoints in the syslog file\n{}", show());
    assert!(count("checkpoints are occurring too frequently") >= 1, "no too-frequent warning\n{}", show());
    assert!(count("checkpoint starting: shutdown") == 1, "no shutdown checkpoint\n{}", show());
    // Every line is `Mon DD HH:MM:SS host postgres[pid]: [seq...] ...`.
    let foreign: Vec<&&str> = lines.iter().filter(|l| !envelope_ok(l)).take(5).collect();
    assert!(foreign.is_empty(), "lines not in PostgreSQL's syslog envelope: {foreign:#?}");
    // A LOG with its HINT travels as one message in two chunks.
    let hint = lines.iter().any(|l| l.contains("-2] ") && l.contains(" HINT:  "));
    assert!(hint, "no HINT as the second chunk of a message\n{}", show());
    assert!(count("] #011  'tab0000") == 1, "no TAB continuation line escaped as #011\n{}", show());
    let cut = lines.iter().any(|l| l.contains("-2]  word0"));
    assert!(cut, "the long statement line was not cut at a space into chunks\n{}", show());
    let tab_cut = lines.iter().any(|l| l.contains("] #011tab0"));
    assert!(tab_cut, "the TAB-separated line was not cut at a TAB into chunks\n{}", show());
}

/// RFC 3164 timestamp, a host, `postgres[pid]: `, then `[seq]` or `[seq-chunk]`.
fn envelope_ok(line: &str) -> bool {
    let Some((head, rest)) = line.split_once(" postgres[") else { return false };
    let Some((pid, rest)) = rest.split_once("]: [") else { return false };
    let Some((seq, _)) = rest.split_once("] ") else { return false };
    let seq_ok = seq.split('-').all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    head.len() > 16 && head.as_bytes()[15] == b' ' && pid.bytes().all(|b| b.is_ascii_digit()) && seq_ok
}

fn import(db: &str, cluster: &str, format: Option<&str>, files: &[PathBuf]) {
    let mut cmd = walwatch();
    cmd.args(["import", "--db", db, "--cluster", cluster]);
    if let Some(f) = format {
        cmd.args(["--format", f]);
    }
    let out = cmd.args(files).output().expect("spawn walwatch import");
    assert!(out.status.success(), "walwatch import {format:?} {files:?}: {}", describe(&out));
    println!("import {cluster} ({}): {}", format.unwrap_or("auto"), String::from_utf8_lossy(&out.stdout).trim());
}

fn summary(db: &str, cluster: &str) -> Value {
    walwatch_json(&["summary", "--db", db, "--cluster", cluster, "--format", "json"])
}

/// The array with each object's `cluster` dropped: the two imports name their
/// cluster differently on purpose, everything else must match.
fn checkpoints(db: &str, cluster: &str) -> Vec<Value> {
    let v = walwatch_json(&["checkpoints", "--db", db, "--cluster", cluster, "--format", "json"]);
    let list = v.as_array().unwrap_or_else(|| panic!("checkpoints JSON is not an array: {v}"));
    list.iter()
        .map(|cp| {
            let mut cp = cp.clone();
            let obj = cp.as_object_mut().unwrap_or_else(|| panic!("checkpoint is not an object: {v}"));
            assert_eq!(obj.remove("cluster").as_ref().and_then(Value::as_str), Some(cluster), "cluster of {v}");
            cp
        })
        .collect()
}

fn walwatch_json(args: &[&str]) -> Value {
    let out = walwatch().args(args).output().expect("spawn walwatch");
    assert!(out.status.success(), "walwatch {args:?}: {}", describe(&out));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("walwatch {args:?}: not JSON ({e}): {}", describe(&out)))
}

fn int(v: &Value, path: &str) -> i64 {
    let cur = path.split('.').fold(v, |cur, part| &cur[part]);
    cur.as_i64().unwrap_or_else(|| panic!("{path} is not an integer in {v}"))
}

/// The last lines of a log, for failure messages.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    format!("--- last lines of the syslog file ---\n{}", lines[lines.len().saturating_sub(30)..].join("\n"))
}

fn keep_logs_if_asked(syslog_file: &Path, stderr_files: &[PathBuf]) {
    let Some(dir) = std::env::var_os("WALWATCH_SYSLOG_KEEP_LOGS") else {
        return;
    };
    let dir = PathBuf::from(dir);
    fs::create_dir_all(&dir).expect("create WALWATCH_SYSLOG_KEEP_LOGS dir");
    for f in std::iter::once(syslog_file).chain(stderr_files.iter().map(PathBuf::as_path)) {
        fs::copy(f, dir.join(f.file_name().expect("file name"))).expect("copy log");
    }
}
