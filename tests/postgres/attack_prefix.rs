//! Replayed against a real PostgreSQL 15: clients that never log
//! in put line breaks and checkpoint lines into their user and database
//! names, which PostgreSQL prints verbatim in `%u` and `%d`. Under Debian's
//! `%m [%p] %q%u@%d ` and PostgreSQL's own `%m [%p] `, walwatch's counts must
//! equal the real checkpointer's lines, no forged line may become an event
//! (whatever pid it claims, whatever time it carries), the alerts must follow
//! the real checkpoints only, and a file flooded with such lines right after
//! a rotation must still be read — by `import` and by the daemon.
//!
//! Needs PostgreSQL server binaries; fails, never skips, without them.

use crate::support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use support::daemon::{Snapshot, Workspace};
use support::{describe, int, ts_key, walwatch, walwatch_json, PgCluster, StopMode};

const DEBIAN: &str = "%m [%p] %q%u@%d ";
const UPSTREAM: &str = "%m [%p] ";

#[test]
fn debian_prefix_forges_nothing() {
    replay(DEBIAN);
}

#[test]
fn upstream_prefix_forges_nothing() {
    replay(UPSTREAM);
}

/// csvlog and jsonlog quote the names: the forged lines stay inside a
/// field. The server writes stderr beside them, which the oracle counts.
#[test]
fn csvlog_and_jsonlog_forge_nothing() {
    let run = attack_with(DEBIAN, "'stderr,csvlog,jsonlog'");
    let truth = count_real_lines(run.checkpointer, &run.began, &run.logs);
    assert!(truth["wal"] >= 2 && truth["manual"] >= 3, "the workload made real checkpoints: {truth:?}");
    for ext in ["csv", "json"] {
        let files: Vec<String> = run
            .pg
            .log_files()
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == ext))
            .map(|f| f.display().to_string())
            .collect();
        assert_eq!(files.len(), 2, "{ext}: {files:?}");

        let db = run.pg.path().join(format!("{ext}.db"));
        let db = db.to_str().unwrap();
        let mut args = vec!["import", "--db", db, "--cluster", ext];
        args.extend(files.iter().map(String::as_str));
        let out = walwatch().args(&args).output().unwrap();
        assert!(out.status.success(), "import {ext}: {}", describe(&out));
        let s = walwatch_json(&["summary", "--db", db, "--cluster", ext, "--format", "json"]);
        assert_counts(&s, &truth);
        // The forged lines stay inside quoted or escaped fields, and a
        // stderr-shaped line is no look-alike of a csv or JSON record.
        assert_eq!(int(&s, "rejected"), 0, "{ext}: {s}");
        // The file opened at the rotation starts with a record the flood of
        // line breaks cuts after two commas: still read as what it is.
        let report = String::from_utf8_lossy(&out.stdout);
        let format = if ext == "csv" { "csvlog" } else { "jsonlog" };
        assert_eq!(report.matches(&format!(", {format})")).count(), 2, "{report}");
        let st = walwatch_json(&["status", "--db", db, "--config", "/dev/null", "--format", "json"]);
        assert_eq!(st["clusters"][0]["advice"], serde_json::json!([]), "{ext}: nothing left open: {st}");
    }
}

/// Everything the test knows about the server's real checkpointer.
struct Run {
    pg: PgCluster,
    checkpointer: u32,
    /// Server clock when the test began (`ts_key`); every real line is later.
    began: String,
    /// Forged lines the server printed, and where.
    forged: Forged,
    logs: Vec<PathBuf>,
    /// The file the collector opened at the rotation.
    rotated: PathBuf,
}

fn replay(prefix: &str) {
    let run = attack(prefix);
    let truth = count_real_lines(run.checkpointer, &run.began, &run.logs);
    println!("{prefix:?}: real {truth:?}, forged lines printed {:?}", run.forged);
    assert!(truth["wal"] >= 2 && truth["manual"] >= 3, "the workload made real checkpoints: {truth:?}");
    check_import(&run, &truth);
    check_alerts(&run);
    check_flooded_file(&run);
}

fn attack(prefix: &str) -> Run {
    attack_with(prefix, "'stderr'")
}

fn attack_with(prefix: &str, destination: &str) -> Run {
    let quoted = format!("'{prefix}'");
    let mut pg = PgCluster::init(&crate::support::attacked_server(&quoted, destination));
    pg.start();
    pg.require_passwords();
    let began = ts_key(&pg.psql("SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS')"));
    let checkpointer: u32 = pg
        .psql("SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")
        .trim()
        .parse()
        .expect("the checkpointer's pid");
    pg.psql("CHECKPOINT");
    let mut forged = inject(&pg, checkpointer);
    forced_checkpoints(&pg, |files| count_real_lines(checkpointer, &began, files)["wal"] >= 2);
    pg.psql("CHECKPOINT");
    forged += inject(&pg, checkpointer);
    pg.psql("CHECKPOINT");
    let before = stderr_files(&pg);
    pg.psql("SELECT pg_rotate_logfile()");
    let rotated = wait_for_new_file(&pg, &before);
    // A flood of lines no log_line_prefix reads, before any real line.
    for _ in 0..20 {
        pg.failed_login(&"x\n".repeat(31), "postgres");
    }
    forged += inject(&pg, checkpointer);
    pg.psql("CHECKPOINT");
    pg.stop(StopMode::Fast);
    let logs = stderr_files(&pg);
    support::keep_logs_if_asked(&logs);
    Run { pg, checkpointer, began, forged, logs, rotated }
}

/// What the server printed for the forged lines.
#[derive(Debug, Default, Clone, Copy)]
struct Forged {
    /// Copies inside a prefix (`%u`/`%d`), one per FATAL and DETAIL line.
    in_prefix: i64,
    /// Copies as a TAB-continuation of the FATAL message, which quotes the
    /// user name (the DETAIL's quote is not scanned for look-alikes).
    in_message: i64,
}

impl std::ops::AddAssign for Forged {
    fn add_assign(&mut self, o: Forged) {
        self.in_prefix += o.in_prefix;
        self.in_message += o.in_message;
    }
}

/// The forged lines, each in a name of its own (PostgreSQL keeps 63 bytes
/// of a name, so a line break, a `%m` line and a line break leave room for
/// 60 bytes: a short zone, a short pid or a short message): the first
/// known one (`Z [1]`, a bare first line), the real checkpointer's pid, a line from
/// 2099, a crash recovery, a bare line; each also as the database name
/// behind a user name that makes the first line look like a log line of
/// its own.
fn inject(pg: &PgCluster, checkpointer: u32) -> Forged {
    let lines = [
        "2026-01-01 00:00:00.000 Z [1] LOG:  checkpoint starting: wal".to_string(),
        "2099-01-01 00:00:00.000 Z [1] LOG:  checkpoint starting: wal".to_string(),
        format!("2026-01-01 00:00:00.000 Z [{checkpointer}] LOG:  redo starts at 0/1"),
        "2026-01-01 00:00:00.000 Z [1] LOG:  checkpoint starting: time".to_string(),
        // No head at all: a line no prefix reads, inside the real one (a
        // misfit of the prefix, were it not seen to be inside a name).
        "LOG:  checkpoint starting: wal".to_string(),
    ];
    let mut forged = Forged::default();
    for line in &lines {
        let name = format!("\n{line}\n");
        assert!(name.len() <= 63, "{name:?} would be cut");
        for _ in 0..3 {
            pg.failed_login(&name, "postgres");
            pg.failed_login("LOG:  ", &name);
            // A bare line in the message looks like no line of this log:
            // nobody would read it as an event, it is no look-alike.
            let in_message = i64::from(line.starts_with("20"));
            forged += Forged { in_prefix: 4, in_message };
        }
    }
    forged
}

/// WAL-triggered checkpoints from a real workload (max_wal_size is 32MB),
/// until `enough` says the log has them.
fn forced_checkpoints(pg: &PgCluster, enough: impl Fn(&[PathBuf]) -> bool) {
    pg.psql("CREATE TABLE IF NOT EXISTS filler (v text)");
    for round in 0..60 {
        pg.psql("INSERT INTO filler SELECT repeat('x', 200) FROM generate_series(1, 60000)");
        std::thread::sleep(Duration::from_millis(200));
        if enough(&stderr_files(pg)) {
            return;
        }
        if round % 5 == 4 {
            pg.psql("TRUNCATE filler");
        }
    }
    panic!("not enough WAL-triggered checkpoints");
}

/// The collector's stderr files (csvlog and jsonlog write `.csv`, `.json` beside them).
fn stderr_files(pg: &PgCluster) -> Vec<PathBuf> {
    pg.log_files().into_iter().filter(|f| f.extension().is_some_and(|e| e == "log")).collect()
}

fn wait_for_new_file(pg: &PgCluster, before: &[PathBuf]) -> PathBuf {
    for _ in 0..100 {
        if let Some(new) = stderr_files(pg).into_iter().find(|f| !before.contains(f)) {
            return new;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the collector opened no new file after pg_rotate_logfile()");
}

/// The checkpointer's own lines, counted without walwatch: a line that
/// starts with a real time (UTC, after the test began, before 2090) and the
/// checkpointer's pid, then `checkpoint starting:`/`complete:`. Every forged
/// line carries another zone, a date in 2020 or 2099, or is not a checkpoint.
fn count_real_lines(checkpointer: u32, began: &str, files: &[PathBuf]) -> BTreeMap<&'static str, i64> {
    let mut n: BTreeMap<&'static str, i64> =
        ["started", "completed", "wal", "time", "manual", "shutdown"].iter().map(|k| (*k, 0)).collect();
    let prefix = "] LOG:  ";
    for file in files {
        let text = String::from_utf8_lossy(&std::fs::read(file).unwrap()).into_owned();
        for line in text.lines() {
            let Some((head, message)) = line.split_once(prefix) else { continue };
            let Some((ts, pid)) = head.split_once(" UTC [") else { continue };
            if pid.split(']').next() != Some(&checkpointer.to_string()) || ts.len() != 23 {
                continue;
            }
            let key = ts_key(ts);
            if key.as_str() < began || key.as_str() > "2090" {
                continue;
            }
            if let Some(flags) = message.strip_prefix("checkpoint starting: ") {
                *n.get_mut("started").unwrap() += 1;
                let trigger = match flags {
                    f if f.contains("shutdown") => "shutdown",
                    f if f.split(' ').any(|w| w == "wal") => "wal",
                    f if f.split(' ').any(|w| w == "time") => "time",
                    _ => "manual",
                };
                *n.get_mut(trigger).unwrap() += 1;
            } else if message.starts_with("checkpoint complete: ") {
                *n.get_mut("completed").unwrap() += 1;
            }
        }
    }
    n
}

fn check_import(run: &Run, truth: &BTreeMap<&'static str, i64>) {
    let db = run.pg.path().join("import.db");
    let db = db.to_str().unwrap();
    let mut args = vec!["import", "--db", db, "--cluster", "attack"];
    let files: Vec<String> = run.logs.iter().map(|f| f.display().to_string()).collect();
    args.extend(files.iter().map(String::as_str));
    let out = walwatch().args(&args).output().unwrap();
    assert!(out.status.success(), "import: {}", describe(&out));
    let report = String::from_utf8_lossy(&out.stdout);
    if run_prefix(run) == DEBIAN {
        // (PostgreSQL's own '%m [%p] ' is read as Debian's today, which parses
        // the same lines: inferring it exactly is a matter of its own.)
        assert_eq!(report.matches(&format!("prefix '{DEBIAN}'")).count(), run.logs.len(), "{report}");
    }
    let s = walwatch_json(&["summary", "--db", db, "--cluster", "attack", "--format", "json"]);
    assert_counts(&s, truth);
    // Debian's prefix: every copy inside a prefix is refused and counted.
    // PostgreSQL's: the names appear only in messages, where the FATAL's
    // quote is a continuation line walwatch counts as a look-alike.
    let f = run.forged;
    let want_rejected = if run_prefix(run) == DEBIAN { f.in_prefix } else { f.in_message };
    assert_eq!(int(&s, "rejected"), want_rejected, "each forged line refused and counted: {s}");
    // `status` says the attack happened and what would close it.
    let st = walwatch_json(&["status", "--db", db, "--config", "/dev/null", "--format", "json"]);
    let cluster = &st["clusters"][0];
    let refused = format!("{want_rejected} lines refused as forged in the files read in the last 24h");
    assert!(cluster["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().starts_with(&refused)), "{st}");
    if run_prefix(run) == DEBIAN {
        assert_eq!(cluster["prefix"], DEBIAN, "{st}");
        let advice = cluster["advice"].as_array().unwrap();
        assert_eq!(advice.len(), 1, "{st}");
        assert!(advice[0].as_str().unwrap().contains("log_line_prefix = '%m [%p] %b '"), "{st}");
    }
    let starts = walwatch_json(&["checkpoints", "--db", db, "--cluster", "attack", "--format", "json"]);
    let rows = starts.as_array().unwrap();
    assert!(
        rows.iter().all(|r| r["completed_at"].is_string() && r["started_at"].is_string()),
        "every row paired: {starts}"
    );
}

/// walwatch's summary equals the checkpointer's own lines, and no forged
/// line moved a setting or a time.
fn assert_counts(s: &serde_json::Value, truth: &BTreeMap<&'static str, i64>) {
    for (key, path) in [
        ("started", "checkpoints.started"),
        ("completed", "checkpoints.completed"),
        ("wal", "checkpoints.by_trigger.wal"),
        ("time", "checkpoints.by_trigger.time"),
        ("manual", "checkpoints.by_trigger.manual"),
        ("shutdown", "checkpoints.by_trigger.shutdown"),
    ] {
        assert_eq!(int(s, path), truth[key], "{path}: {s}");
    }
    assert_eq!(int(s, "parameter_changes"), 0, "no forged setting: {s}");
    assert_eq!(int(s, "dated_ahead"), 0, "no forged line from 2099: {s}");
}

fn run_prefix(run: &Run) -> &str {
    let conf = std::fs::read_to_string(run.pg.data_dir().join("postgresql.conf")).unwrap();
    let line = conf.lines().rev().find(|l| l.starts_with("log_line_prefix")).unwrap();
    let value = line.split_once('=').unwrap().1.trim();
    if value == format!("'{DEBIAN}'") {
        DEBIAN
    } else {
        UPSTREAM
    }
}

/// The alert rules see the real checkpoints only: forced checkpoints fire
/// (the workload made them), durability_off does not (the forged fsync
/// line), nor does clock_skew (the forged 2099 line).
fn check_alerts(run: &Run) {
    let db = run.pg.path().join("import.db");
    let db = db.to_str().unwrap();
    let out = walwatch().args(["analyze", "--db", db, "--cluster", "attack"]).output().unwrap();
    assert!(out.status.success() || out.status.code() == Some(1), "analyze: {}", describe(&out));
    let alerts = walwatch_json(&["alerts", "--db", db, "--format", "json"]);
    let rules: Vec<&str> = alerts.as_array().unwrap().iter().filter_map(|a| a["rule"].as_str()).collect();
    assert!(rules.contains(&"forced_checkpoints"), "{alerts}");
    for rule in ["durability_off", "clock_skew"] {
        assert!(!rules.contains(&rule), "{rule} from a forged line: {alerts}");
    }
}

/// The file opened at the rotation starts with hundreds of lines no prefix
/// reads: a fresh store still detects its prefix and reads its checkpoints,
/// and the daemon following all the files (it knows the cluster's prefix
/// from the earlier ones) stores exactly what the import stored.
fn check_flooded_file(run: &Run) {
    let db = run.pg.path().join("flooded.db");
    let db = db.to_str().unwrap();
    let file = run.rotated.display().to_string();
    let out = walwatch().args(["import", "--db", db, "--cluster", "flooded", &file]).output().unwrap();
    assert!(out.status.success(), "import of the flooded file: {}", describe(&out));
    let s = walwatch_json(&["summary", "--db", db, "--cluster", "flooded", "--format", "json"]);
    let wanted = count_real_lines(run.checkpointer, &run.began, std::slice::from_ref(&run.rotated));
    assert!(wanted["manual"] >= 1 && wanted["shutdown"] == 1, "{wanted:?}");
    assert_eq!(int(&s, "checkpoints.started"), wanted["started"], "{s}");
    assert_eq!(int(&s, "checkpoints.completed"), wanted["completed"], "{s}");

    let ws = Workspace::new();
    ws.write_config(&[("attack", &format!("{}/*.log", run.pg.log_dir().display()))]);
    let want = Snapshot::read(&run.pg.path().join("import.db"), "attack").unwrap();
    let mut daemon = ws.start();
    daemon.wait_equal("attack", &want);
    daemon.terminate();
}
