//! Syslog whose log_line_prefix has no time, and the logs of
//! managed services, read from real PostgreSQL 15 servers and checked
//! against the independent counter of tests/support/truth.rs.
//!
//! * Syslog: a real server logs through syslog(3) to a real rsyslogd with
//!   `log_line_prefix = 'db=%d,user=%u,app=%a,client=%h '` (pgBadger's
//!   syslog advice: no time, no pid), written three ways at once: RFC 3164
//!   (`RSYSLOG_TraditionalFileFormat`), RFC 3339 (`RSYSLOG_FileFormat`) and
//!   RFC 5424 (`RSYSLOG_SyslogProtocol23Format`); the envelope's time is the
//!   event's. journald does not run here, so its `journalctl -o json` form
//!   of the same messages is built from the RFC 3339 file with the fields
//!   journald documents (MESSAGE, _PID, SYSLOG_IDENTIFIER, _HOSTNAME,
//!   __REALTIME_TIMESTAMP, PRIORITY).
//! * Envelopes: no Cloud SQL, CloudNativePG or journald runs here, so a
//!   real server's stderr and csvlog (Cloud SQL's log_line_prefix
//!   `%m [%p]: [%l-1] db=%d,user=%u `) are wrapped the way each documents
//!   its format: Cloud Logging LogEntries with `textPayload`, CNPG's
//!   `{"logger":"postgres","msg":"record","record":{csvlog columns}}` (with
//!   operator lines and raw stderr lines among them), `journalctl -o json`
//!   and plain `journalctl` of a server logging to stderr (the stream's
//!   `_PID` the postmaster's). walwatch reads each like the raw log.
//!
//! Needs root, rsyslogd and the PostgreSQL 15 server binaries (like
//! syslog_postgres.rs); fails, never skips, without them.

use crate::support;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use support::syslog::Rsyslog;
use support::truth::{assert_complete_numbers, Layout, Truth, ENGLISH};
use support::{describe, int, ts_key, walwatch, walwatch_json, PgCluster, StopMode};

/// No time and no pid: the syslog envelope has to give both.
const SYSLOG_PREFIX: &str = "db=%d,user=%u,app=%a,client=%h ";
/// Cloud SQL for PostgreSQL's log_line_prefix (fixed by the service).
const CLOUDSQL_PREFIX: &str = "%m [%p]: [%l-1] db=%d,user=%u ";

const LAST_LINE: &str = "database system is shut down";

fn settings<'a>(destination: &'a str, prefix: &'a str) -> Vec<(&'a str, String)> {
    vec![
        ("log_destination", format!("'{destination}'")),
        ("logging_collector", "on".into()),
        ("syslog_facility", "'LOCAL0'".into()),
        ("syslog_ident", "'postgres'".into()),
        ("log_line_prefix", format!("'{prefix}'")),
        ("lc_messages", "'C'".into()),
        ("log_timezone", "'UTC'".into()),
        ("log_checkpoints", "on".into()),
        ("max_wal_size", "'32MB'".into()),
        ("min_wal_size", "'32MB'".into()),
        ("checkpoint_timeout", "'30s'".into()),
        // Every WAL checkpoint after the first warns (and HINTs), however
        // slowly a busy machine runs pgbench.
        ("checkpoint_warning", "'1d'".into()),
        ("shared_buffers", "'32MB'".into()),
    ]
}

fn cluster(destination: &str, prefix: &str) -> PgCluster {
    let owned = settings(destination, prefix);
    let borrowed: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
    PgCluster::init(&borrowed)
}

/// WAL checkpoints (some too frequent), a manual one, a reload that changes
/// a parameter, and a session whose logged statement holds a line that
/// looks like the checkpointer's (to be rejected, never an event).
/// (CHECKPOINT's start may carry `wal` too, when WAL asked for one
/// meanwhile: its trigger is then wal, not manual.)
fn run_workload(pg: &PgCluster, fake: &str) {
    pg.pgbench(&["-i", "-s", "5", "-q"]);
    pg.pgbench(&["-c", "2", "-j", "1", "-T", "8"]);
    pg.psql("CHECKPOINT;");
    pg.psql("ALTER SYSTEM SET max_wal_size = '64MB';");
    pg.reload();
    // csvlog doubles the quotes: look for the words.
    let changed = |t: &str| t.contains("max_wal_size") && t.contains("changed to") && t.contains("64MB");
    assert!(pg.wait_for_log(Duration::from_secs(20), changed), "no reload line");
    pg.psql(&format!("SET log_statement = 'all';\nSELECT 'a\n{fake}\n' AS forged;\n"));
    assert!(pg.wait_for_log(Duration::from_secs(20), |t| t.contains("AS forged")), "statement not logged");
}

#[test]
fn syslog_without_a_prefix_time_is_dated_by_real_rsyslog_envelopes() {
    syslog_without_a_prefix_time(true);
}

/// `syslog_split_messages = off`: an entry's lines (a warning and its HINT,
/// a statement's continuation lines) travel as one message, their newlines
/// `#012` in rsyslog's files.
#[test]
fn syslog_messages_sent_whole_are_read_like_split_ones() {
    syslog_without_a_prefix_time(false);
}

fn syslog_without_a_prefix_time(split: bool) {
    let work = tempfile::Builder::new().prefix("walwatch-managed-syslog-").tempdir().expect("tempdir");
    let outputs = [("rfc3339.syslog", "RSYSLOG_FileFormat"), ("rfc5424.syslog", "RSYSLOG_SyslogProtocol23Format")];
    let rsyslog = Rsyslog::start_with_outputs(&work.path().join("rsyslog"), &outputs);
    let mut owned = settings("syslog,csvlog", SYSLOG_PREFIX);
    owned.push(("syslog_split_messages", if split { "on" } else { "off" }.into()));
    let borrowed: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut pg = PgCluster::init(&borrowed);
    pg.start();
    run_workload(&pg, "db=,user=,app=,client= LOG:  checkpoint starting: time");
    pg.stop(StopMode::Fast);
    let files: Vec<PathBuf> =
        std::iter::once(rsyslog.log_file()).chain(outputs.iter().map(|(f, _)| rsyslog.dir().join(f))).collect();
    for f in &files {
        let done = wait_for_file(f, |t| t.contains(LAST_LINE));
        assert!(done, "rsyslogd never wrote {LAST_LINE:?} to {}:\n{}", f.display(), rsyslog.diagnostics());
    }
    let (traditional, rfc3339, rfc5424) = (&files[0], &files[1], &files[2]);
    assert!(first_line(rfc5424).starts_with('<'), "not RFC 5424: {}", first_line(rfc5424));
    let whole = fs::read_to_string(traditional).unwrap().contains("#012");
    assert_eq!(whole, !split, "messages with rsyslog's #012 in them, syslog_split_messages = {split}");
    let journal = work.path().join("journal.json");
    fs::write(&journal, journald_json_of_syslog(&fs::read_to_string(rfc3339).unwrap())).unwrap();

    let truth = Truth::read(std::slice::from_ref(rfc3339), &Layout::syslog(SYSLOG_PREFIX));
    let csv: Vec<PathBuf> = pg.log_files().into_iter().filter(|f| f.extension().is_some_and(|e| e == "csv")).collect();
    let truth_csv = Truth::read(&csv, &Layout::syslog(SYSLOG_PREFIX));
    println!("counter over syslog: {}\ncounter over csvlog: {}", truth.brief(), truth_csv.brief());
    // The csvlog quotes the statement's fake line inside a field, where it is
    // no line of its own; the syslog file shows it as one (rejected).
    assert_eq!((truth.forged_records, truth_csv.forged_records), (1, 0), "the fake line");
    assert_eq!(counts(&truth), counts(&truth_csv), "the counter over syslog (left) and over csvlog (right)");
    assert!(truth.wal >= 2 && truth.too_frequent >= 1 && truth.immediate_force == 1, "workload: {}", truth.brief());

    let db = |name: &str| work.path().join(name).to_str().unwrap().to_string();
    // Format and prefix are detected, but for the first file, read with
    // both given: the envelope dates a prefix without a time.
    let imports = [
        ("RFC 3164", traditional, Some("syslog"), Some(SYSLOG_PREFIX), "syslog"),
        ("RFC 3339", rfc3339, None, None, "syslog"),
        ("RFC 5424", rfc5424, None, None, "syslog"),
        ("journald JSON", &journal, None, None, "journald-json"),
    ];
    for (who, file, format, prefix, detected) in imports {
        let store = db(&format!("{}.db", who.replace(' ', "_")));
        let report = import(&store, file, format, prefix);
        let read_as = format!("(cluster c, {detected}, prefix '{SYSLOG_PREFIX}')");
        assert!(report.contains(&read_as), "{who}: {read_as} expected in {report}");
        let (sum, cps) = (summary(&store), checkpoints(&store));
        for (path, want) in truth.expected_summary() {
            assert_eq!(int(&sum, path), want, "{who}: summary {path} vs the counter: {sum}");
        }
        let logged: Vec<String> = sorted(truth.start_list.iter().map(|s| s.ts_key.clone()));
        let started: Vec<String> = sorted(cps.iter().filter_map(|cp| cp["started_at"].as_str().map(ts_key)));
        if who == "RFC 3164" {
            // Whole seconds, the year from the file's mtime.
            let secs = |v: &[String]| v.iter().map(|k| k[..14].to_string()).collect::<Vec<_>>();
            assert_eq!(secs(&started), secs(&logged), "{who}: start times (seconds)");
        } else {
            assert_eq!(started, logged, "{who}: start times vs the envelopes' times");
            assert_complete_numbers(&cps, &truth, who);
        }
    }
    cut_inside_the_last_complete_line(work.path(), rfc3339);
}

/// The rsyslog file ending inside its last `checkpoint complete:` line,
/// just after `wrote N`: the line is kept up to the cut (its buffers
/// written), the checkpoint marked truncated, the import exits 4.
fn cut_inside_the_last_complete_line(dir: &Path, file: &Path) {
    let text = fs::read_to_string(file).unwrap();
    let last = text.rfind("checkpoint complete: wrote ").unwrap() + "checkpoint complete: wrote ".len();
    let digits = text[last..].find(' ').unwrap();
    let buffers: i64 = text[last..last + digits].parse().unwrap();
    let cut = dir.join("cut.syslog");
    fs::write(&cut, &text[..last + digits + 3]).unwrap();
    let old = std::time::SystemTime::now() - Duration::from_secs(10);
    fs::File::options().write(true).open(&cut).unwrap().set_modified(old).unwrap();
    let store = dir.join("cut.db").to_str().unwrap().to_string();
    let out = walwatch().args(["import", "--db", &store, "--cluster", "c"]).arg(&cut).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("a checkpoint_complete line cut by the end of the input"));
    assert_eq!(summary(&store)["truncated"], 1);
    let cps = checkpoints(&store);
    let cut_row = cps.iter().find(|c| c["truncated"] == true).expect("a truncated row");
    assert_eq!((cut_row["buffers_written"].as_i64(), cut_row["write_s"].is_null()), (Some(buffers), true));
    assert!(!cut_row["completed_at"].is_null());
}

#[test]
fn managed_envelopes_of_a_real_server_read_like_its_own_logs() {
    let work = tempfile::Builder::new().prefix("walwatch-managed-").tempdir().expect("tempdir");
    let mut pg = cluster("stderr,csvlog", CLOUDSQL_PREFIX);
    pg.start();
    run_workload(&pg, "2026-01-01 00:00:00.000 UTC [1]: [1-1] db=,user= LOG:  checkpoint starting: time");
    let pid = postmaster_pid(&pg);
    pg.stop(StopMode::Fast);
    let files = pg.log_files();
    let by_ext =
        |ext: &str| files.iter().filter(|f| f.extension().is_some_and(|e| e == ext)).cloned().collect::<Vec<_>>();
    let (stderr, csv) = (by_ext("log"), by_ext("csv"));
    assert!(!stderr.is_empty() && !csv.is_empty(), "log files: {files:?}");
    let layout = Layout { prefix: CLOUDSQL_PREFIX.into(), syslog: false, heads: &ENGLISH };
    let truth = Truth::read(&stderr, &layout);
    let truth_csv = Truth::read(&csv, &layout);
    println!("counter over stderr: {}\ncounter over csvlog: {}", truth.brief(), truth_csv.brief());
    assert_eq!(counts(&truth), counts(&truth_csv), "the counter over stderr (left) and over csvlog (right)");
    assert_eq!(truth.forged_records, 1, "the statement's fake line");
    assert!(truth.wal >= 2 && truth.too_frequent >= 1 && truth.immediate_force == 1, "workload: {}", truth.brief());
    assert_eq!(truth.parameter_changes, 1, "workload: {}", truth.brief());

    let text: String = stderr.iter().map(|f| fs::read_to_string(f).unwrap()).collect();
    let raw = work.path().join("raw.db").to_str().unwrap().to_string();
    for f in &stderr {
        import(&raw, f, None, None);
    }
    assert_eq!(summary(&raw)["rejected"], 1, "the raw stderr import");
    let early = fs::read_to_string(pg.path().join("pg_ctl.log")).unwrap_or_default();
    let wrapped = [
        ("cloudsql", cloudsql_of(&text)),
        ("journald-json", journald_json_of_stderr(&text, pid)),
        ("journald", journalctl_of_stderr(&text, pid)),
        ("cnpg", cnpg_of(&csv, &early)),
    ];
    for (format, content) in wrapped {
        let file = work.path().join(format!("{format}.log"));
        fs::write(&file, content).unwrap();
        let store = work.path().join(format!("{format}.db")).to_str().unwrap().to_string();
        let report = import(&store, &file, None, None);
        assert!(report.contains(&format!("(cluster c, {format}, prefix '{CLOUDSQL_PREFIX}')")), "{format}: {report}");
        let (sum, cps) = (summary(&store), checkpoints(&store));
        for (path, want) in truth.expected_summary() {
            // CNPG's records are csvlog's: the fake line stays inside its field.
            let want = if path == "rejected" && format == "cnpg" { truth_csv.forged_records } else { want };
            assert_eq!(int(&sum, path), want, "{format}: summary {path} vs the counter: {sum}");
        }
        let logged: Vec<String> = sorted(truth.start_list.iter().map(|s| s.ts_key.clone()));
        let started: Vec<String> = sorted(cps.iter().filter_map(|cp| cp["started_at"].as_str().map(ts_key)));
        assert_eq!(started, logged, "{format}: start times vs the log's");
        assert_complete_numbers(&cps, &truth, format);
    }
}

/// Every count of the counter but the rejected lines, which depend on the
/// format (a fake line inside a csv field is no line of its own).
fn counts(t: &Truth) -> Vec<(&'static str, i64)> {
    t.expected_summary().into_iter().filter(|(p, _)| *p != "rejected").collect()
}

fn sorted(it: impl Iterator<Item = String>) -> Vec<String> {
    let mut v: Vec<String> = it.collect();
    v.sort();
    v
}

fn first_line(f: &Path) -> String {
    fs::read_to_string(f).unwrap_or_default().lines().next().unwrap_or("").to_string()
}

fn wait_for_file(f: &Path, pred: impl Fn(&str) -> bool) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::time::Instant::now() < deadline {
        if pred(&String::from_utf8_lossy(&fs::read(f).unwrap_or_default())) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

fn postmaster_pid(pg: &PgCluster) -> u32 {
    let text = fs::read_to_string(pg.data_dir().join("postmaster.pid")).expect("postmaster.pid");
    text.lines().next().and_then(|l| l.trim().parse().ok()).expect("pid in postmaster.pid")
}

/// rsyslog's RFC 3339 lines as `journalctl -o json` shows the messages
/// journald would have received on /dev/log: the envelope's fields by
/// journald's names, `#011` back to the TAB journald stores.
fn journald_json_of_syslog(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let (stamp, rest) = line.split_once(' ').expect("time");
        let (host, rest) = rest.split_once(' ').expect("host");
        let (tag, message) = rest.split_once(": ").expect("tag");
        let (ident, pid) = tag.trim_end_matches(']').split_once('[').expect("ident[pid]");
        let t: jiff::Timestamp = stamp.parse().expect("RFC 3339 time");
        let entry = json!({"__REALTIME_TIMESTAMP": t.as_microsecond().to_string(), "_PID": pid, "SYSLOG_IDENTIFIER": ident,
            "_HOSTNAME": host, "PRIORITY": "6", "SYSLOG_FACILITY": "16", "MESSAGE": message.replace("#011", "\t")});
        out += &format!("{entry}\n");
    }
    out
}

/// One Cloud Logging LogEntry per stderr line, as a sink to Cloud Storage
/// writes them (JSON lines); `timestamp` is when Cloud Logging got it.
fn cloudsql_of(text: &str) -> String {
    let now = jiff::Timestamp::now();
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            let entry = json!({"insertId": format!("s={i}"), "logName": "projects/walwatch-test/logs/cloudsql.googleapis.com%2Fpostgres.log",
                "resource": {"type": "cloudsql_database", "labels": {"database_id": "walwatch-test:pg15", "region": "europe-west1"}},
                "severity": "INFO", "textPayload": line, "timestamp": now.to_string(), "receiveTimestamp": now.to_string()});
            format!("{entry}\n")
        })
        .collect()
}

/// A server under systemd logging to stderr, as `journalctl -o json` shows
/// it: every line from the postmaster's stream.
fn journald_json_of_stderr(text: &str, pid: u32) -> String {
    let now = jiff::Timestamp::now().as_microsecond();
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            let entry = json!({"__REALTIME_TIMESTAMP": (now + i as i64).to_string(), "_PID": pid.to_string(),
                "SYSLOG_IDENTIFIER": "postgres", "_COMM": "postgres", "_TRANSPORT": "stdout", "PRIORITY": "6",
                "_HOSTNAME": "db1", "MESSAGE": line});
            format!("{entry}\n")
        })
        .collect()
}

/// The same as plain `journalctl -u postgresql` prints it.
fn journalctl_of_stderr(text: &str, pid: u32) -> String {
    let now = jiff::Timestamp::now().to_zoned(jiff::tz::TimeZone::system());
    let stamp = now.strftime("%b %e %H:%M:%S").to_string();
    let mut out = format!(
        "-- Journal begins at {}, ends at {}. --\n",
        now.strftime("%a %Y-%m-%d %H:%M:%S %Z"),
        now.strftime("%a %Y-%m-%d %H:%M:%S %Z")
    );
    for line in text.lines() {
        out += &format!("{stamp} db1 postgres[{pid}]: {line}\n");
    }
    out
}

/// PostgreSQL 15's csvlog columns, by the names CloudNativePG gives them.
const CSV_COLUMNS: [&str; 26] = [
    "log_time",
    "user_name",
    "database_name",
    "process_id",
    "connection_from",
    "session_id",
    "session_line_num",
    "command_tag",
    "session_start_time",
    "virtual_transaction_id",
    "transaction_id",
    "error_severity",
    "sql_state_code",
    "message",
    "detail",
    "hint",
    "internal_query",
    "internal_query_pos",
    "context",
    "query",
    "query_pos",
    "location",
    "application_name",
    "backend_type",
    "leader_pid",
    "query_id",
];

/// CloudNativePG's log of the server: its early stderr lines as raw
/// `msg`s, each csvlog record under `record`, and operator lines among them.
fn cnpg_of(csv: &[PathBuf], early: &str) -> String {
    let pod = "walwatch-1";
    let mut out = String::new();
    for line in early.lines() {
        out += &format!(
            "{}\n",
            json!({"level": "info", "ts": 1.0, "logger": "postgres", "msg": line, "pipe": "stderr", "logging_pod": pod})
        );
    }
    for f in csv {
        let mut r = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_path(f).unwrap();
        for (i, rec) in r.records().enumerate() {
            let rec = rec.unwrap();
            let record: serde_json::Map<String, Value> =
                CSV_COLUMNS.iter().zip(rec.iter()).map(|(k, v)| ((*k).to_string(), Value::String(v.into()))).collect();
            let t: jiff::Timestamp = rec[0].replace(" UTC", "Z").replacen(' ', "T", 1).parse().expect("log_time");
            let ts = t.as_microsecond() as f64 / 1e6;
            out += &format!(
                "{}\n",
                json!({"level": "info", "ts": ts, "logger": "postgres", "msg": "record", "logging_pod": pod, "record": record})
            );
            if i % 10 == 0 {
                out += &format!(
                    "{}\n",
                    json!({"level": "info", "ts": ts, "logger": "instance-manager", "msg": "Checking for free disk space for WALs before archiving", "logging_pod": pod})
                );
            }
        }
    }
    out
}

fn import(db: &str, file: &Path, format: Option<&str>, prefix: Option<&str>) -> String {
    let mut cmd = walwatch();
    cmd.args(["import", "--db", db, "--cluster", "c"]);
    if let Some(f) = format {
        cmd.args(["--format", f]);
    }
    if let Some(p) = prefix {
        cmd.args(["--prefix", p]);
    }
    let out = cmd.arg(file).output().expect("spawn walwatch import");
    assert!(out.status.success(), "walwatch import {format:?} {}: {}", file.display(), describe(&out));
    let report = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    println!("import {} ({}): {}", file.display(), format.unwrap_or("auto"), report.trim());
    report
}

fn summary(db: &str) -> Value {
    walwatch_json(&["summary", "--db", db, "--cluster", "c", "--format", "json"])
}

fn checkpoints(db: &str) -> Vec<Value> {
    let v = walwatch_json(&["checkpoints", "--db", db, "--cluster", "c", "--format", "json"]);
    v.as_array().unwrap_or_else(|| panic!("checkpoints JSON is not an array: {v}")).clone()
}
