//! The closed loop of the max_wal_size advice on a real PostgreSQL server.
//!
//! Phase 1: max_wal_size = 32MB, checkpoint_timeout = 30s and a fixed-rate
//! pgbench workload (`--rate`) that writes far more than 16 MB of WAL per
//! 30 s: checkpoints are WAL-triggered every few seconds and the server warns
//! "checkpoints are occurring too frequently". walwatch imports that log and
//! `walwatch suggest` (reading the server's own postgresql.conf and
//! postgresql.auto.conf through `data_directory`) gives S. S must stay at or
//! below an independent upper bound: the WAL phase 1 wrote per
//! checkpoint_timeout by the server's own LSNs, × headroom, × a slack for the
//! model's p95 over that mean, through PostgreSQL's trigger rule and the
//! README's rounding (`upper_bound`); a suggestion twice too big fails. S
//! must also reach the need at that mean rate (from below), and equal what
//! phase 1's raw log gives without walwatch (`FromLog`: its cycles as the
//! independent counter reads them, their p95 by time, the same rule).
//!
//! Phase 2: `ALTER SYSTEM SET max_wal_size = S` and the same workload for the
//! same time. There must be no WAL-triggered checkpoint and no "too
//! frequently" warning at all, and the checkpoints must be time-triggered
//! (>= 5 of them). Both phases are counted twice: by a dumb line counter over
//! the raw log (tests/support/truth.rs), and by walwatch (`checkpoints` and `summary` with `--since`
//! the phase start).
//!
//! Then walwatch is asked again: phase 1's forced checkpoints
//! ran under 32MB and must not hold S up, phase 1's cycles are left out
//! (phase 2 has min_samples of its own), the change is dated at the reload's
//! `parameter "max_wal_size" changed` line, and the suggestion is at most S.
//!
//! The log is rotated before and after each phase, so each phase has its own
//! file: phase 1's suggestion must not see `pgbench -i`'s bulk load.
//!
//! A second test is the closed loop from the log alone: the
//! same server settings, a quiet stretch (time-triggered checkpoints) and a
//! busy one (forced), imported with no config at all; the suggestion must be
//! within 1.25x of the one with the config (about 4 minutes).
//!
//! Needs PostgreSQL server binaries (Debian: `apt-get install postgresql`);
//! fails, never skips, without them. Takes about 6.5 minutes (two runs of
//! 170 s: at least 5 checkpoint_timeout cycles each). Run with --nocapture
//! to see the figures. Set WALWATCH_E2E_KEEP_LOGS=<dir> to keep the logs.

use crate::support;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::truth::Truth;
use support::{describe, int, keep_logs_if_asked, ts_key, walwatch, walwatch_json, PgCluster, StopMode};

/// pgbench scale: 1M accounts (~130 MB), so random updates touch mostly
/// pages not yet written since the last checkpoint (full-page images).
const SCALE: &str = "10";
/// The fixed rate (transactions/s). About 2.5 MB/s of WAL at 32MB and 2 MB/s
/// once checkpoints are 30 s apart: a WAL-triggered checkpoint every ~6 s in
/// phase 1, while two shared cores keep up with the schedule.
const RATE: u32 = 200;
const CLIENTS: &str = "4";
/// Five checkpoint_timeout cycles (150 s) plus margin for late checkpoints.
const SECONDS: u32 = 170;
const CLUSTER: &str = "advice";

/// log_filename with seconds: every rotation (1 s apart) makes a new file,
/// and names sort chronologically. log_timezone = UTC so log and walwatch
/// timestamps compare as strings.
const SETTINGS: &[(&str, &str)] = &[
    ("max_wal_size", "'32MB'"),
    ("min_wal_size", "'32MB'"),
    ("checkpoint_timeout", "'30s'"),
    ("log_checkpoints", "on"),
    ("logging_collector", "on"),
    ("log_destination", "'stderr'"),
    ("log_filename", "'postgresql-%Y%m%d-%H%M%S.log'"),
    ("log_rotation_age", "0"),
    ("log_rotation_size", "0"),
    ("log_line_prefix", "'%m [%p] %q%u@%d '"),
    ("log_timezone", "'UTC'"),
    ("lc_messages", "'C'"),
    // Autovacuum writes WAL too, in bursts: the first autovacuum of
    // pgbench_accounts after `pgbench -i` once fell inside phase 1 and put
    // the p95 of the cycle rates at ~2x their mean, right at the upper
    // bound's slack. The loop under test is the workload's WAL against the
    // suggestion, so the workload is kept steady; the log still shows any
    // autovacuum run (anti-wraparound ones ignore the switch).
    ("autovacuum", "off"),
    ("log_autovacuum_min_duration", "0"),
];

#[test]
fn suggested_max_wal_size_leaves_only_time_triggered_checkpoints() {
    let started = Instant::now();
    let mut pg = PgCluster::init(SETTINGS);
    pg.start();
    pg.pgbench(&["-i", "-s", SCALE, "-q"]);
    pg.psql("CHECKPOINT;");

    let work = tempfile::tempdir().expect("tempdir");
    let db = work.path().join("walwatch.db");
    let config = write_config(work.path(), &db, &pg);

    // ---- phase 1: 32MB
    let one = run_phase(&pg, "phase 1 (max_wal_size 32MB)");
    assert!(one.truth.wal >= 5, "phase 1 must force checkpoints, saw {} WAL-triggered", one.truth.wal);
    assert!(one.truth.too_frequent >= 1, "phase 1 must provoke a \"too frequently\" warning");
    import(&db, &one.log);
    let suggestion = suggest(&config, &db);
    eprintln!("walwatch suggest: {suggestion:#}");
    let basis = &suggestion["basis"];
    let s = suggestion["suggested"]["max_wal_size_mb"]
        .as_u64()
        .unwrap_or_else(|| panic!("suggested.max_wal_size_mb is not a number: {suggestion}"));
    assert!(s > 32, "the suggestion must be above the 32MB that forced checkpoints, got {s}");
    assert!(int(basis, "samples") >= 5, "samples: {basis}");
    assert_eq!(int(basis, "forced_checkpoints"), one.truth.wal, "basis.forced_checkpoints vs the log's wal starts");
    assert_eq!(int(basis, "too_frequent"), one.truth.too_frequent, "basis.too_frequent vs the log");
    assert_eq!(suggestion["current"]["max_wal_size"]["value"], "32MB", "current max_wal_size");
    let sql = suggestion["sql"].as_str().expect("sql");
    assert!(sql.contains(&format!("max_wal_size = '{}'", pg_size(s))), "sql {sql:?} does not set {s}MB");
    print_cycles(&db, &one.t0, None, "phase 1");
    let bound = upper_bound(&pg, &one);
    eprintln!("{}", bound.describe(s));
    assert!(s <= bound.mb, "S = {s}MB is above the bound from the server's own WAL positions: {}", bound.describe(s));
    // From below: the p95 of a steady load is at or above its mean rate.
    assert!(s >= bound.need_mb, "S = {s}MB is below the need at the mean rate: {}", bound.describe(s));
    // Exactly what the raw log's own cycles give through PostgreSQL's rule.
    let from_log = FromLog::of(&one, &bound);
    eprintln!("{}", from_log.describe());
    assert_eq!(int(basis, "samples"), from_log.cycles as i64, "usable cycles vs the log's wal and time cycles");
    assert_eq!(basis["peak_wal_rate_kb_s"].as_f64(), Some(round1(from_log.p95_rate_kb_s)), "{}", from_log.describe());
    assert_eq!(s, from_log.p95_mb, "S vs the suggestion worked out from the raw log: {}", from_log.describe());

    // ---- phase 2: S
    pg.psql(&format!("ALTER SYSTEM SET max_wal_size = '{s}MB';"));
    pg.reload();
    let changed = format!("parameter \"max_wal_size\" changed to \"{s}MB\"");
    assert!(pg.wait_for_log(Duration::from_secs(20), |t| t.contains(&changed)), "no {changed:?} in the log");
    assert_eq!(pg.psql("SHOW max_wal_size;").trim(), pg_size(s), "SHOW max_wal_size after the reload");
    // The checkpointer has applied the reload once it serves this request,
    // and the next cycle starts from here.
    pg.psql("CHECKPOINT;");
    let two = run_phase(&pg, &format!("phase 2 (max_wal_size {s}MB)"));
    pg.stop(StopMode::Fast);
    keep_logs_if_asked(&pg.log_files());

    assert_eq!(two.truth.wal, 0, "WAL-triggered checkpoints in the log of phase 2");
    assert_eq!(two.truth.too_frequent, 0, "\"too frequently\" warnings in the log of phase 2");
    assert!(two.truth.time >= 5, "phase 2 must have >= 5 time-triggered checkpoints, the log has {}", two.truth.time);
    // The file between the phases: the reload's `parameter "max_wal_size"
    // changed` line and the CHECKPOINT after it.
    for between in pg.log_files().iter().filter(|f| **f > one.log && **f < two.log) {
        import(&db, between);
    }
    import(&db, &two.log);
    check_walwatch_phase2(&db, &two);
    print_cycles(&db, &two.t0, Some(s), "phase 2");
    let again = ask_again(&config, &db, s, &one, &two);
    eprintln!(
        "closed loop: S = {s}MB (bound {}MB from the LSNs), asked again after phase 2: {again}MB; phase 1 {} forced / \
         {} timed / {} too frequent, {:.2} MB/s of WAL; phase 2 {} forced / {} timed / {} too frequent, {:.2} MB/s; \
         {:.0} s in all",
        bound.mb,
        one.truth.wal,
        one.truth.time,
        one.truth.too_frequent,
        one.wal_mb / one.seconds,
        two.truth.wal,
        two.truth.time,
        two.truth.too_frequent,
        two.wal_mb / two.seconds,
        started.elapsed().as_secs_f64()
    );
}

/// A rate whose WAL stays far below a segment per 30 s most of the time:
/// checkpoints come from checkpoint_timeout.
const QUIET_RATE: u32 = 5;
/// Four checkpoint_timeout periods and a margin.
const QUIET_SECONDS: u32 = 130;
/// Enough forced cycles at `RATE` for the model's min_samples, several times over.
const BUSY_SECONDS: u32 = 90;

/// The closed loop from the log alone: a PostgreSQL 15 run with
/// checkpoint_timeout = 30s and max_wal_size = 32MB whose log has
/// time-triggered checkpoints (a quiet stretch) and forced ones (a busy
/// stretch). `walwatch import` + `walwatch suggest` with no config must
/// infer both settings from the log and suggest within 1.25x of what the
/// same log gives with the config (which reads the server's own
/// postgresql.conf). Without the inference it assumed the default 5min and
/// suggested 10x too much. The log directory is outside the data directory,
/// so nothing but the log is there to read.
#[test]
fn from_the_log_alone_the_suggestion_is_within_a_quarter_of_the_one_with_the_config() {
    let mut pg = PgCluster::init(SETTINGS);
    pg.start();
    let version = pg.server_version_num();
    pg.pgbench(&["-i", "-s", SCALE, "-q"]);
    pg.psql("CHECKPOINT;");
    let quiet = run_workload(&pg, "quiet", QUIET_RATE, QUIET_SECONDS);
    let busy = run_workload(&pg, "busy", RATE, BUSY_SECONDS);
    pg.stop(StopMode::Fast);
    keep_logs_if_asked(&pg.log_files());
    assert!(quiet.truth.time >= 4, "the quiet stretch must have time-triggered checkpoints: {}", quiet.truth.brief());
    assert!(busy.truth.wal >= 5, "the busy stretch must force checkpoints: {}", busy.truth.brief());

    let work = tempfile::tempdir().expect("tempdir");
    // As a new user does it: every file of the log directory, no config at all.
    let alone = work.path().join("alone.db");
    let empty = work.path().join("empty.toml");
    fs::write(&empty, "").expect("write empty.toml");
    // An empty file (two rotations in a row) cannot be imported with the
    // prefix inferred: `walwatch import` refuses it (a limitation of import).
    let logs: Vec<PathBuf> =
        pg.log_files().into_iter().filter(|f| fs::metadata(f).is_ok_and(|m| m.len() > 0)).collect();
    let out = walwatch().args(["import", "--db"]).arg(&alone).args(&logs).output().expect("spawn import");
    assert!(out.status.success(), "walwatch import: {}", describe(&out));
    let (empty_s, alone_s) = (empty.to_str().unwrap(), alone.to_str().unwrap());
    let all = walwatch_json(&["suggest", "--config", empty_s, "--db", alone_s, "--format", "json"]);
    let from_log = all.as_array().filter(|a| a.len() == 1).map(|a| a[0].clone()).unwrap_or_else(|| panic!("{all}"));
    // The same files with the config that points at the data directory.
    let with = work.path().join("with.db");
    let config = write_config(work.path(), &with, &pg);
    for log in &logs {
        import(&with, log);
    }
    let with_config = suggest(&config, &with);

    let current = |s: &Value, name: &str| {
        let v = &s["current"][name];
        (v["value"].as_str().unwrap_or("?").to_string(), v["source"]["kind"].as_str().unwrap_or("?").to_string())
    };
    assert_eq!(current(&from_log, "checkpoint_timeout"), ("30s".into(), "inferred".into()), "{from_log:#}");
    assert_eq!(current(&from_log, "max_wal_size"), ("32MB".into(), "inferred".into()), "{from_log:#}");
    assert_eq!(current(&with_config, "checkpoint_timeout"), ("30s".into(), "conf_file".into()));
    assert_eq!(current(&with_config, "max_wal_size"), ("32MB".into(), "conf_file".into()));
    let mb = |s: &Value| s["suggested"]["max_wal_size_mb"].as_u64().unwrap_or_else(|| panic!("no suggestion: {s:#}"));
    let (alone_mb, with_mb) = (mb(&from_log), mb(&with_config));
    let ratio = alone_mb.max(with_mb) as f64 / alone_mb.min(with_mb) as f64;
    eprintln!(
        "closed loop from the log alone (server {version}): no config {alone_mb}MB, with the config {with_mb}MB, \
         ratio {ratio:.3}; quiet {}, busy {}\nno config: {from_log:#}\nwith the config: {with_config:#}",
        quiet.truth.brief(),
        busy.truth.brief()
    );
    assert!(with_mb > 32, "the forced checkpoints ask for more than 32MB, got {with_mb}MB");
    assert!(ratio <= 1.25, "no config {alone_mb}MB vs with the config {with_mb}MB: {ratio:.3}x");
}

/// Asked again after the change and phase 2, walwatch judges
/// phase 1's forced checkpoints against the 32MB they ran under, not S:
/// nothing holds S up, phase 1's cycles are left out (phase 2 has enough of
/// its own) and the suggestion is at most S. Returns it.
fn ask_again(config: &Path, db: &Path, s: u64, one: &Phase, two: &Phase) -> u64 {
    let again = suggest(config, db);
    eprintln!("walwatch suggest after phase 2: {again:#}");
    let basis = &again["basis"];
    let changed = &basis["settings_changed"];
    assert_eq!(changed["name"], "max_wal_size", "the change walwatch knows of: {basis}");
    assert_eq!((changed["old"].as_str(), changed["new"].as_str()), (Some("32MB"), Some(&*format!("{s}MB"))));
    // Dated at the `parameter "max_wal_size" changed` line, between the phases.
    let at = support::ts_key(changed["at"].as_str().expect("settings_changed.at"));
    assert!(at > support::ts_key(&one.t0) && at < support::ts_key(&two.t0), "changed at {at}: {basis}");
    assert_eq!(int(basis, "forced_checkpoints"), one.truth.wal, "forced in the window: phase 1's");
    assert_eq!(int(basis, "forced_at_current_settings"), 0, "forced since the change");
    assert!(int(basis, "left_out.other_settings") >= 5, "phase 1's cycles are left out: {basis}");
    // Phase 2's time-triggered cycles, the first from the CHECKPOINT after the reload.
    assert_eq!(int(basis, "samples"), two.truth.time, "the cycles since the change: {basis}");
    let text = again["explanation"]
        .as_array()
        .expect("explanation")
        .iter()
        .map(|e| e.as_str().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(!text.contains("Keep max_wal_size at least"), "{text}");
    assert!(!text.contains("cycles were short"), "{text}");
    assert!(text.contains("max_wal_size changed from 32MB to"), "{text}");
    let again_mb = again["suggested"]["max_wal_size_mb"].as_u64().unwrap_or_else(|| panic!("no suggestion: {again}"));
    assert!(again_mb <= s, "asked again at {s}MB with no forced checkpoint since, it suggests {again_mb}MB");
    assert!(again["sql"].is_null(), "nothing to raise: {again}");
    again_mb
}

// ---------------------------------------------------------------------------
// PostgreSQL
// ---------------------------------------------------------------------------

/// One run of the workload, in its own log file.
struct Phase {
    log: PathBuf,
    /// Server clock at the start, RFC 3339 UTC (`--since`).
    t0: String,
    seconds: f64,
    wal_mb: f64,
    truth: Truth,
}

/// Rotate, run pgbench at the fixed rate, wait for the checkpoint in
/// progress (CHECKPOINT), rotate again: the file in between is the phase.
fn run_phase(pg: &PgCluster, name: &str) -> Phase {
    run_workload(pg, name, RATE, SECONDS)
}

/// [`run_phase`] at `rate` transactions/s for `seconds`.
fn run_workload(pg: &PgCluster, name: &str, rate: u32, seconds: u32) -> Phase {
    let log = rotate(pg);
    let (t0, lsn0) = clock_and_lsn(pg);
    let (rate_text, secs) = (rate.to_string(), seconds.to_string());
    let out = pg.pgbench(&["--rate", &rate_text, "-T", &secs, "-c", CLIENTS, "-j", CLIENTS]);
    let (t1, lsn1) = clock_and_lsn(pg);
    pg.psql("CHECKPOINT;");
    rotate(pg);
    let bench = Pgbench::parse(&out);
    let seconds = seconds_between(&t0, &t1);
    // The shared dumb counter (tests/support/truth.rs) over this phase's file only.
    let truth = Truth::from_files(std::slice::from_ref(&log));
    eprintln!(
        "{name}: {:.1} tps (rate {rate}), latency {:.1} ms, schedule lag avg {:.1} ms max {:.0} ms; \
         WAL {:.0} MB in {seconds:.0} s = {:.2} MB/s; log: {}",
        bench.tps,
        bench.latency_ms,
        bench.lag_avg_ms,
        bench.lag_max_ms,
        lsn1 - lsn0,
        (lsn1 - lsn0) / seconds,
        truth.brief()
    );
    // The phases are only comparable if the machine kept the schedule.
    assert!(bench.tps >= 0.9 * f64::from(rate), "{name}: pgbench fell behind the fixed rate: {out}");
    Phase { log, t0, seconds, wal_mb: lsn1 - lsn0, truth }
}

/// A new log file from now on (returned). File names have 1 s resolution.
fn rotate(pg: &PgCluster) -> PathBuf {
    let before = pg.log_files();
    std::thread::sleep(Duration::from_millis(1100));
    pg.psql("SELECT pg_rotate_logfile();");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(new) = pg.log_files().into_iter().filter(|f| !before.contains(f)).max() {
            return new;
        }
        assert!(Instant::now() < deadline, "pg_rotate_logfile() made no new file in {}", pg.log_dir().display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The server clock (RFC 3339, UTC) and the WAL position in MB.
fn clock_and_lsn(pg: &PgCluster) -> (String, f64) {
    let now = r#"to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')"#;
    let out = pg.psql(&format!("SELECT {now}, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0') / 1048576.0;"));
    let (t, lsn) = out.trim().split_once('|').unwrap_or_else(|| panic!("clock and lsn: {out:?}"));
    (t.to_string(), lsn.parse().unwrap_or_else(|_| panic!("lsn {lsn:?}")))
}

fn seconds_between(a: &str, b: &str) -> f64 {
    let secs = |t: &str| {
        let k = ts_key(t);
        let n = |r: std::ops::Range<usize>| k[r].parse::<f64>().unwrap();
        // Same day in practice; days only guard a run across midnight.
        n(6..8) * 86_400.0 + n(8..10) * 3600.0 + n(10..12) * 60.0 + n(12..14) + n(14..17) / 1000.0
    };
    secs(b) - secs(a)
}

/// What pgbench reported about keeping its schedule.
struct Pgbench {
    tps: f64,
    latency_ms: f64,
    lag_avg_ms: f64,
    lag_max_ms: f64,
}

impl Pgbench {
    fn parse(out: &str) -> Pgbench {
        let after = |prefix: &str| {
            let line = out.lines().find_map(|l| l.strip_prefix(prefix));
            line.unwrap_or_else(|| panic!("no {prefix:?} in pgbench output:\n{out}"))
        };
        let number = |s: &str| s.trim().parse::<f64>().unwrap_or_else(|_| panic!("number {s:?} in {out}"));
        let tps = after("tps = ").split(' ').next().unwrap_or("");
        let latency = after("latency average = ").trim_end_matches(" ms");
        // "rate limit schedule lag: avg 1.234 (max 56.789) ms"
        let lag = after("rate limit schedule lag: avg ");
        let (avg, max) = lag.split_once(" (max ").unwrap_or_else(|| panic!("lag line {lag:?}"));
        Pgbench {
            tps: number(tps),
            latency_ms: number(latency),
            lag_avg_ms: number(avg),
            lag_max_ms: number(max.trim_end_matches(") ms")),
        }
    }
}

// ---------------------------------------------------------------------------
// The upper bound on S, from the server's own WAL positions
// ---------------------------------------------------------------------------

/// How far the model's peak (the p95 of per-cycle rates) may sit above the
/// phase's mean rate (WAL between the LSNs at its start and end, over its
/// duration). At 32MB each cycle is about one segment of WAL, so the cycles
/// weight the rate by WAL written, not by time: fast stretches contribute
/// more cycles, and the p95 sits near the fastest ones. Seen so far: p95 ÷
/// mean 1.17 and 1.31 on the benchmark's steady phases (docs/dev/benchmarks.md, 100
/// and 300 tps), 1.15 on this test's run of 2026-11-22 12:39, and 1.8–2.2 on
/// its run of 13:56 (2.13 MB/s mean, S = 384MB, so a p95 of 3.84–4.60 MB/s):
/// the first autovacuum of pgbench_accounts after `pgbench -i` falls in
/// phase 1 and its 2–3 s edge cycles reach the p95. 2.0 passes a p95 up to
/// 2.15–2.5× the mean at this test's rates (after the rounding below), and a
/// suggestion twice as big as the model's fails as long as the p95 is above
/// ~1.05× the mean — it has never been below 1.15 (checked for means of
/// 1.2–3.3 MB/s with the same rounding). A bug that doubles S (headroom,
/// divisor, percentile, units) therefore fails here.
const P95_OVER_MEAN: f64 = 2.0;
/// The headroom the README documents for the model (`[advice] headroom`).
const HEADROOM: f64 = 1.25;

/// The suggestion worked out from phase 1's raw log, without walwatch: its
/// cycles as the independent counter reads them (tests/support/truth.rs;
/// those ending in a wal or time start, each with its complete line's
/// distance), the WAL each puts between two starts (its rate over
/// checkpoint_timeout, or its whole distance when longer), the p95 and the
/// median of that by time, each through PostgreSQL's rule and the README's
/// rounding at the headroom, at least the current 32MB (there were forced
/// checkpoints).
struct FromLog {
    cycles: usize,
    p95_rate_kb_s: f64,
    p95_mb: u64,
    median_mb: u64,
}

impl FromLog {
    fn of(one: &Phase, bound: &Bound) -> FromLog {
        let cycles: Vec<(f64, f64)> = one
            .truth
            .cycles()
            .into_iter()
            .filter(|c| matches!(c.trigger, "wal" | "time") && c.seconds > 0.0)
            .map(|c| (c.distance_kb.expect("every wal or time checkpoint completed") / c.seconds, c.seconds))
            .collect();
        let by_time = |values: Vec<(f64, f64)>, p: f64| {
            let mut sorted = values;
            sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
            let total: f64 = sorted.iter().map(|(_, s)| s).sum();
            let mut covered = 0.0;
            sorted.into_iter().find(|(_, s)| {
                covered += s;
                covered >= total * p / 100.0 * (1.0 - 1e-12)
            })
        };
        let projected = |(rate, s): &(f64, f64)| (rate * s.max(bound.timeout_s), *s);
        let size = |p: f64| {
            let (kb, _) = by_time(cycles.iter().map(projected).collect(), p).expect("cycles");
            size_for(kb / 1024.0 * HEADROOM, bound.cct, bound.segment_mb).max(32)
        };
        FromLog {
            cycles: cycles.len(),
            p95_rate_kb_s: by_time(cycles.clone(), 95.0).expect("cycles").0,
            p95_mb: size(95.0),
            median_mb: size(50.0),
        }
    }

    fn describe(&self) -> String {
        format!(
            "from the raw log: {} cycles, p95 rate {:.1} kB/s, sized at the p95 {}MB, at the median {}MB{}",
            self.cycles,
            self.p95_rate_kb_s,
            self.p95_mb,
            self.median_mb,
            if self.p95_mb == self.median_mb { " (the same here: the fast tier tells them apart)" } else { "" }
        )
    }
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// The bound and what it was computed from, all read from the server.
struct Bound {
    mb: u64,
    wal_per_timeout_mb: f64,
    timeout_s: f64,
    cct: f64,
    segment_mb: f64,
    need_mb: u64,
}

impl Bound {
    fn describe(&self, s: u64) -> String {
        format!(
            "upper bound: WAL per checkpoint_timeout ({:.0} s) from pg_current_wal_lsn() at phase 1's start and end = \
             {:.1} MB; PostgreSQL's trigger rule (cct {}, {} MB segments) at that WAL x {HEADROOM} headroom needs \
             {}MB, at x {P95_OVER_MEAN} for the p95 over the mean {}MB = the bound; S = {s}MB = {:.2} x the bound, \
             {:.2} x the mean need; 2 x S would {}",
            self.timeout_s,
            self.wal_per_timeout_mb,
            self.cct,
            self.segment_mb,
            self.need_mb,
            self.mb,
            s as f64 / self.mb as f64,
            s as f64 / self.need_mb as f64,
            if 2 * s > self.mb { "fail" } else { "PASS (the bound is too loose for this run)" }
        )
    }
}

/// The bound on S from phase 1's WAL written per checkpoint_timeout, as the
/// server's LSNs measured it (not from the log, not from walwatch's code):
/// the smallest whole-segment max_wal_size whose WAL trigger, per
/// PostgreSQL's rule (`xlog.c`: a checkpoint is requested after
/// floor(max_wal_size / segment / (1 + cct)) - 1 segments), stays at or above
/// that WAL × the headroom × the p95-over-mean slack, rounded up as the README
/// documents (next 64 MB up to 1 GB, next 256 MB up to 4 GB, next GB above).
fn upper_bound(pg: &PgCluster, one: &Phase) -> Bound {
    let out = pg.psql(
        "SELECT extract(epoch FROM current_setting('checkpoint_timeout')::interval), \
         current_setting('checkpoint_completion_target'), \
         pg_size_bytes(current_setting('wal_segment_size')) / 1048576.0;",
    );
    let v: Vec<f64> = out.trim().split('|').map(|x| x.parse().unwrap_or_else(|_| panic!("settings {out:?}"))).collect();
    let (timeout_s, cct, segment_mb) = (v[0], v[1], v[2]);
    let wal_per_timeout_mb = one.wal_mb / one.seconds * timeout_s;
    Bound {
        mb: size_for(wal_per_timeout_mb * HEADROOM * P95_OVER_MEAN, cct, segment_mb),
        wal_per_timeout_mb,
        timeout_s,
        cct,
        segment_mb,
        need_mb: size_for(wal_per_timeout_mb * HEADROOM, cct, segment_mb),
    }
}

/// The smallest whole-segment max_wal_size whose WAL trigger (PostgreSQL
/// 11+, `xlog.c`: floor(max_wal_size / segment / (1 + cct)) - 1 segments)
/// is at or above `wal_mb`, rounded up as the README documents (next 64 MB
/// up to 1 GB, next 256 MB up to 4 GB, next GB above).
fn size_for(wal_mb: f64, cct: f64, segment_mb: f64) -> u64 {
    let mut segments = 2.0_f64;
    while ((segments / (1.0 + cct)).floor() - 1.0) * segment_mb < wal_mb {
        segments += 1.0;
    }
    let mb = segments * segment_mb;
    let step = if mb <= 1024.0 {
        64.0
    } else if mb <= 4096.0 {
        256.0
    } else {
        1024.0
    };
    ((mb / step).ceil() * step) as u64
}

// ---------------------------------------------------------------------------
// walwatch
// ---------------------------------------------------------------------------

/// walwatch reads the server's settings from its data directory.
fn write_config(dir: &Path, db: &Path, pg: &PgCluster) -> PathBuf {
    let path = dir.join("walwatch.toml");
    let text = format!(
        "[store]\npath = {db:?}\n\n[[cluster]]\nname = {CLUSTER:?}\ndata_directory = {data:?}\n",
        data = pg.data_dir()
    );
    fs::write(&path, text).expect("write walwatch.toml");
    path
}

fn import(db: &Path, log: &Path) {
    let out = walwatch()
        .args(["import", "--db"])
        .arg(db)
        .args(["--cluster", CLUSTER])
        .arg(log)
        .output()
        .expect("spawn walwatch import");
    assert!(out.status.success(), "walwatch import: {}", describe(&out));
}

fn suggest(config: &Path, db: &Path) -> Value {
    let (config, db) = (config.to_str().expect("utf-8 path"), db.to_str().expect("utf-8 path"));
    walwatch_json(&["suggest", "--config", config, "--db", db, "--cluster", CLUSTER, "--format", "json"])
}

/// walwatch's own view of phase 2 agrees with the log: nothing forced.
fn check_walwatch_phase2(db: &Path, two: &Phase) {
    let db = db.to_str().expect("utf-8 path");
    let since = ["--db", db, "--cluster", CLUSTER, "--since", &two.t0, "--format", "json"];
    let cps = walwatch_json(&[&["checkpoints"][..], &since[..]].concat());
    let list = cps.as_array().unwrap_or_else(|| panic!("checkpoints JSON is not an array: {cps}"));
    let by = |t: &str| list.iter().filter(|c| c["trigger"] == t).count() as i64;
    assert_eq!(by("wal"), 0, "walwatch checkpoints --since phase 2: WAL-triggered");
    assert_eq!(by("time"), two.truth.time, "walwatch checkpoints --since phase 2: time-triggered vs the log");
    let summary = walwatch_json(&[&["summary"][..], &since[..]].concat());
    eprintln!("walwatch summary --since {}: {summary}", two.t0);
    assert_eq!(int(&summary, "checkpoints.by_trigger.wal"), 0, "summary: WAL-triggered in phase 2");
    assert_eq!(int(&summary, "too_frequent"), 0, "summary: \"too frequently\" in phase 2");
    assert_eq!(int(&summary, "checkpoints.by_trigger.time"), two.truth.time, "summary: time-triggered in phase 2");
}

/// Per-cycle WAL rates as walwatch stored them: distance over the time since
/// the previous start (what the model takes its percentile of).
fn print_cycles(db: &Path, since: &str, max_wal_size_mb: Option<u64>, name: &str) {
    let db = db.to_str().expect("utf-8 path");
    let cps = walwatch_json(&["checkpoints", "--db", db, "--cluster", CLUSTER, "--since", since, "--format", "json"]);
    let list = cps.as_array().cloned().unwrap_or_default();
    let mut line = String::new();
    let mut prev: Option<String> = None;
    for c in &list {
        let started = c["started_at"].as_str().unwrap_or_default().to_string();
        if let (Some(p), Some(kb)) = (&prev, c["distance_kb"].as_f64()) {
            let s = seconds_between(p, &started);
            line += &format!(" {}:{:.0}kB/{s:.1}s={:.0}kB/s", c["trigger"].as_str().unwrap_or("?"), kb, kb / s);
        }
        prev = Some(started);
    }
    let trigger = max_wal_size_mb.map(|m| format!(" (S={m}MB)")).unwrap_or_default();
    eprintln!("{name}{trigger} cycles (trigger:distance/seconds=rate):{line}");
}

/// How PostgreSQL's SHOW spells a size in MB.
fn pg_size(mb: u64) -> String {
    if mb >= 1024 && mb.is_multiple_of(1024) {
        format!("{}GB", mb / 1024)
    } else {
        format!("{mb}MB")
    }
}
