//! End-to-end: a real PostgreSQL server writes a real log (WAL-triggered
//! checkpoints under pgbench, "too frequently" warnings, a manual CHECKPOINT,
//! a parameter change, a clean shutdown, and two forged look-alike lines from
//! a client session); walwatch imports it, and its numbers must match both an
//! independent, deliberately dumb count of the log and the server's own
//! checkpoint counters.
//!
//! Needs PostgreSQL server binaries (Debian: `apt-get install postgresql`);
//! fails, never skips, without them. Takes about a minute.
//! Set WALWATCH_E2E_KEEP_LOGS=<dir> to keep a copy of the server log.

use crate::support;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use support::truth::{trigger_of, Truth, COMPLETE_FIELDS};
use support::{describe, int, keep_logs_if_asked, ts_key, walwatch, walwatch_json, PgCluster, StopMode};

/// How long pgbench hammers the server. Long enough for several WAL-triggered
/// checkpoints at max_wal_size=32MB, short enough to keep the test ~1 min.
const PGBENCH_SECONDS: &str = "40";

/// A small max_wal_size and a short checkpoint_timeout, so that a short
/// load forces checkpoints by WAL and times some. log_timezone=UTC so log
/// timestamps and walwatch's (UTC) timestamps compare as plain strings.
const SETTINGS: &[(&str, &str)] = &[
    ("max_wal_size", "'32MB'"),
    ("min_wal_size", "'32MB'"),
    ("checkpoint_timeout", "'30s'"),
    ("log_checkpoints", "on"),
    ("logging_collector", "on"),
    ("log_destination", "'stderr'"),
    ("log_line_prefix", "'%m [%p] %q%u@%d '"),
    ("log_timezone", "'UTC'"),
    ("lc_messages", "'C'"),
    ("shared_buffers", "'32MB'"),
];

/// A complete line in the log's own format, smuggled into a string literal:
/// in the log it becomes a TAB-continuation line of a logged statement.
const FORGED_LINE: &str = "2026-01-01 00:00:00.000 UTC [1] LOG:  checkpoint starting: time";

#[test]
fn walwatch_matches_a_real_postgres_log() {
    let run = run_postgres_scenario();
    check_walwatch(&run);
}

// ---------------------------------------------------------------------------
// The PostgreSQL part
// ---------------------------------------------------------------------------

/// Checkpoint counters and the server clock at the moment they were read.
#[derive(Debug, Clone)]
struct Counters {
    timed: i64,
    requested: i64,
    /// `ts_key` of clock_timestamp() in UTC.
    at: String,
}

struct Scenario {
    /// Kept alive (server stopped) so the log files stay on disk.
    _cluster: PgCluster,
    logs: Vec<PathBuf>,
    truth: Truth,
    before: Counters,
    after: Counters,
}

fn run_postgres_scenario() -> Scenario {
    let mut pg = PgCluster::init(SETTINGS);
    pg.start();
    let version = pg.server_version_num();
    let before = read_counters(&pg, version);

    // WAL-heavy load: the -i alone writes >100MB of WAL at scale 10.
    pg.pgbench(&["-i", "-s", "10", "-q"]);
    pg.pgbench(&["-c", "4", "-j", "2", "-T", PGBENCH_SECONDS]);
    pg.psql("CHECKPOINT;");

    // A postmaster-logged `parameter "max_wal_size" changed to "64MB"`.
    pg.psql("ALTER SYSTEM SET max_wal_size = '64MB';");
    pg.reload();
    let changed = r#"parameter "max_wal_size" changed to "64MB""#;
    assert!(pg.wait_for_log(Duration::from_secs(20), |t| t.contains(changed)), "no reload line");

    forge_lines(&pg);
    let after = read_counters(&pg, version);
    pg.stop(StopMode::Fast);

    let logs = pg.log_files();
    assert!(!logs.is_empty(), "no log files in {}", pg.log_dir().display());
    keep_logs_if_asked(&logs);
    let truth = Truth::from_files(&logs);
    println!("independent truth: {}", truth.brief());
    println!("server counters before: {before:?}\n                after:  {after:?}");
    check_postgres_side(&truth, &before, &after);
    Scenario { _cluster: pg, logs, truth, before, after }
}

/// Two session records that look like checkpoint events:
/// 1. `RAISE LOG` whose whole message is `checkpoint starting: wal`
///    (log_statement is still 'none'; the DO's text still shows up, as the
///    `STATEMENT:` secondary line of that same record, not a record of its own);
/// 2. a logged statement whose literal holds a full fake log line.
///
/// psql sends the script statement by statement, so the SET applies to the
/// SELECT. The literal has real newlines, not `\n` escapes: the log shows
/// the statement's source text.
fn forge_lines(pg: &PgCluster) {
    pg.psql("DO $$ BEGIN RAISE LOG 'checkpoint starting: wal'; END $$;");
    pg.psql(&format!("SET log_statement = 'all';\nSELECT 'x\n{FORGED_LINE}\n' AS forged;\n"));
    let tabbed = format!("\t{FORGED_LINE}\n");
    let seen = pg.wait_for_log(Duration::from_secs(20), |t| {
        t.contains("postgres@postgres LOG:  checkpoint starting: wal\n") && t.contains(&tabbed)
    });
    assert!(seen, "forged lines did not reach the log");
}

/// pg_stat_checkpointer (17+) or pg_stat_bgwriter, plus the server clock.
fn read_counters(pg: &PgCluster, version: u32) -> Counters {
    let (view, timed, req) = if version >= 170000 {
        ("pg_stat_checkpointer", "num_timed", "num_requested")
    } else {
        ("pg_stat_bgwriter", "checkpoints_timed", "checkpoints_req")
    };
    let now = "to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS')";
    let out = pg.psql(&format!("SELECT {timed}, {req}, {now} FROM {view};"));
    let f: Vec<&str> = out.trim().split('|').collect();
    assert_eq!(f.len(), 3, "unexpected counters output {out:?}");
    Counters { timed: f[0].parse().unwrap(), requested: f[1].parse().unwrap(), at: ts_key(f[2]) }
}

/// The scenario did what it claims, before walwatch is even involved.
fn check_postgres_side(t: &Truth, before: &Counters, after: &Counters) {
    assert!(t.wal >= 3, "pgbench produced only {} WAL checkpoints", t.wal);
    assert!(t.too_frequent >= 1, "no 'too frequently' warning");
    assert_eq!(t.shutdown, 1, "exactly one (clean) shutdown checkpoint");
    assert_eq!(t.manual, t.immediate_force_wait, "manual = our CHECKPOINT command");
    assert!(t.manual >= 1, "our CHECKPOINT was not logged");
    assert_eq!(t.parameter_changes, 1);
    assert_eq!(t.forged_records, 2, "both forged records must be in the log");
    assert_eq!(t.starts, t.completes, "clean stop: every start completed");
    let starts: Vec<(String, String)> =
        t.start_list.iter().map(|st| (st.ts_key.clone(), trigger_of(&st.flags).into())).collect();
    check_counters(&starts, before, after);
}

/// Server counters vs logged checkpoints started inside the counter window:
/// - the server also counts checkpoints it skipped (timed, no WAL activity
///   since the last one) and never logs those, so logged <= delta, not ==;
/// - the shutdown checkpoint runs after the last snapshot: outside the window;
/// - WAL-triggered and CHECKPOINT-command checkpoints are "requested";
/// - nothing is in flight at the last snapshot (our CHECKPOINT waited for all
///   earlier ones, and nothing writes WAL afterwards), so no start is logged
///   whose counter is still unreported.
///
/// `starts` holds (ts_key of start, trigger).
fn check_counters(starts: &[(String, String)], before: &Counters, after: &Counters) {
    let in_window = |ts: &String| *ts > before.at && *ts < after.at;
    let count = |triggers: &[&str]| {
        starts.iter().filter(|(ts, tr)| in_window(ts) && triggers.contains(&tr.as_str())).count() as i64
    };
    let (req_delta, timed_delta) = (after.requested - before.requested, after.timed - before.timed);
    assert!(req_delta > 0, "server counted no requested checkpoints: {before:?} {after:?}");
    let req_logged = count(&["wal", "manual"]);
    assert!(req_logged <= req_delta, "logged wal+manual {req_logged} > server's {req_delta}");
    let timed_logged = count(&["time"]);
    assert!(timed_logged <= timed_delta, "logged time {timed_logged} > server's {timed_delta}");
}

// ---------------------------------------------------------------------------
// The walwatch part
// ---------------------------------------------------------------------------

fn check_walwatch(s: &Scenario) {
    let work = tempfile::tempdir().expect("tempdir");
    let db = work.path().join("w.db");
    let db = db.to_str().expect("utf-8 temp path");
    let out = walwatch()
        .args(["import", "--db", db, "--cluster", "e2e"])
        .args(&s.logs)
        .output()
        .expect("spawn walwatch import");
    assert!(out.status.success(), "walwatch import: {}", describe(&out));

    let summary = walwatch_json(&["summary", "--db", db, "--cluster", "e2e", "--format", "json"]);
    check_summary(&summary, &s.truth);
    let cps = walwatch_json(&["checkpoints", "--db", db, "--cluster", "e2e", "--format", "json"]);
    check_checkpoints(&cps, s);
}

fn assert_keys(v: &Value, expected: &[&str], what: &str) {
    let obj = v.as_object().unwrap_or_else(|| panic!("{what} is not an object: {v}"));
    let got: BTreeSet<&str> = obj.keys().map(String::as_str).collect();
    let want: BTreeSet<&str> = expected.iter().copied().collect();
    assert_eq!(got, want, "keys of {what}: {v}");
}

fn check_summary(s: &Value, t: &Truth) {
    println!("walwatch summary: {s}");
    let top = [
        "checkpoints",
        "restartpoints",
        "too_frequent",
        "parameter_changes",
        "rejected",
        "unmatched",
        "truncated",
        "first_at",
        "last_at",
        "dated_ahead",
    ];
    assert_keys(s, &top, "summary");
    // Read with its own prefix, every line that looks like an event fits.
    assert_eq!(s["unmatched"], 0, "unmatched: {s}");
    assert_eq!(s["truncated"], 0, "truncated: {s}");
    for part in ["checkpoints", "restartpoints"] {
        assert_keys(&s[part], &["started", "completed", "by_trigger"], part);
        let triggers = ["shutdown", "end-of-recovery", "wal", "time", "manual"];
        assert_keys(&s[part]["by_trigger"], &triggers, &format!("{part}.by_trigger"));
    }
    // manual == our CHECKPOINT commands (asserted on the log in
    // check_postgres_side); exactly one parameter change (our ALTER SYSTEM).
    // Both forged records (see forge_lines) must be counted as rejected:
    // each is a session record carrying exactly one event look-alike — a
    // RAISE LOG whose message *is* `checkpoint starting: wal`, and a
    // logged statement whose continuation line is a complete fake log
    // line. One Rejected event per record (an Event has one body), so
    // rejected == forged_records (== 2, asserted on the log itself).
    assert_eq!(t.manual, t.immediate_force_wait, "manual = our CHECKPOINT command");
    assert_eq!(int(s, "parameter_changes"), 1, "summary parameter_changes");
    for (path, want) in t.expected_summary() {
        assert_eq!(int(s, path), want, "summary {path}");
    }
    // Every line was read after the server wrote it: none is dated ahead.
    assert_eq!(int(s, "dated_ahead"), 0, "summary dated_ahead");
    let (first, last) = (s["first_at"].as_str(), s["last_at"].as_str());
    let (first, last) = (first.expect("first_at string"), last.expect("last_at string"));
    assert!(ts_key(first) <= ts_key(last), "first_at {first} after last_at {last}");
}

/// Every key of a `checkpoints --format json` object: who and when, the
/// complete line's figures, then what walwatch derives.
fn checkpoint_keys() -> Vec<&'static str> {
    let who = ["cluster", "kind", "trigger", "flags", "started_at", "completed_at"];
    let derived = ["truncated", "write_mb_s", "pace_ratio"];
    who.into_iter().chain(COMPLETE_FIELDS).chain(derived).collect()
}

fn check_checkpoints(v: &Value, s: &Scenario) {
    let list = v.as_array().unwrap_or_else(|| panic!("checkpoints JSON is not an array: {v}"));
    // Clean stop, so every start has its complete: one object per start.
    assert_eq!(list.len() as i64, s.truth.starts, "checkpoints array length");
    let mut starts = Vec::new();
    for (i, cp) in list.iter().enumerate() {
        assert_keys(cp, &checkpoint_keys(), &format!("checkpoints[{i}]"));
        assert_eq!(cp["cluster"], "e2e", "checkpoints[{i}].cluster");
        assert_eq!(cp["kind"], "checkpoint", "checkpoints[{i}].kind");
        assert!(cp["completed_at"].is_string(), "checkpoints[{i}] never completed: {cp}");
        let started = cp["started_at"].as_str().expect("started_at string");
        let trigger = cp["trigger"].as_str().expect("trigger string");
        starts.push((ts_key(started), trigger.to_string()));
        // The write storm from the row's own figures: 8 kB buffers over the
        // write time; no pace, as an import of the log alone does not know
        // the server's checkpoint_timeout.
        let (buffers, write_s) = (cp["buffers_written"].as_f64().unwrap(), cp["write_s"].as_f64().unwrap());
        let rate = (write_s > 0.0).then(|| (buffers * 8192.0 / 1048576.0 / write_s * 10.0).round() / 10.0);
        assert_eq!(cp["write_mb_s"].as_f64(), rate, "checkpoints[{i}]: {cp}");
        assert!(cp["pace_ratio"].is_null(), "checkpoints[{i}]: {cp}");
    }
    // Same start instants as the log, at least to the second.
    let secs = |v: &mut Vec<String>| {
        v.sort();
        v.iter().map(|k| k[..14].to_string()).collect::<Vec<_>>()
    };
    let mut ours: Vec<String> = starts.iter().map(|(k, _)| k.clone()).collect();
    let mut truth: Vec<String> = s.truth.start_list.iter().map(|st| st.ts_key.clone()).collect();
    assert_eq!(secs(&mut ours), secs(&mut truth), "checkpoint start times differ from the log");
    // walwatch's own per-checkpoint triggers against the server counters.
    check_counters(&starts, &s.before, &s.after);
}
