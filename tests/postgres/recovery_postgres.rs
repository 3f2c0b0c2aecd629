//! The recovery walwatch predicts, against a real crash.
//!
//! A PostgreSQL server sized time-driven (checkpoint_timeout = 5min,
//! max_wal_size = 4GB) runs pgbench unthrottled and is killed with
//! SIGKILL (postmaster and every child) after 60 s: its restart replays
//! the WAL since the last checkpoint, and logs `redo done … elapsed`.
//! walwatch imports that log and measures the replay speed. The same load
//! runs again; just before a second kill -9, the WAL a crash would replay
//! is read from the server itself (`pg_current_wal_lsn()` less the REDO of
//! the last completed checkpoint, `pg_control_checkpoint()`), as the
//! recovery model has it. The recovery the server then logs must start at
//! that REDO and replay that WAL (the few ms of WAL between the query and
//! the kill aside), and walwatch must keep both recoveries as crash
//! recoveries.
//!
//! The time is printed, not asserted: the predicted time is that WAL over
//! the speed walwatch measured, and on a shared machine a sub-second
//! replay's elapsed time moves with the load (+161 % once at a load
//! average of 8.8 on 2 CPUs). `bench/recovery-bench.sh` runs this test in
//! rounds and tabulates predicted against logged (docs/dev/benchmarks.md).
//!
//! About 2.5 minutes. Run with --nocapture to see the figures.

use crate::support;

use std::time::Duration;

use support::{describe, walwatch, walwatch_json, PgCluster};

const SETTINGS: &[(&str, &str)] = &[
    ("max_wal_size", "'4GB'"),
    ("checkpoint_timeout", "'5min'"),
    ("shared_buffers", "'128MB'"),
    ("log_checkpoints", "on"),
    ("logging_collector", "on"),
    ("log_destination", "'stderr'"),
    ("log_filename", "'postgresql-%Y%m%d-%H%M%S.log'"),
    ("log_line_prefix", "'%m [%p] '"),
    ("log_timezone", "'UTC'"),
    ("lc_messages", "'C'"),
    ("autovacuum", "off"),
];

/// How long the load runs before each kill: well inside checkpoint_timeout,
/// so the crash replays everything since the checkpoint before the load.
const LOAD_S: u64 = 60;

fn lsn(text: &str) -> u64 {
    let (hi, lo) = text.trim().split_once('/').expect("an LSN");
    (u64::from_str_radix(hi, 16).unwrap() << 32) | u64::from_str_radix(lo, 16).unwrap()
}

/// The LSN after `marker` on the `n`th line (0-based) holding it.
fn nth_lsn(text: &str, marker: &str, n: usize) -> u64 {
    let line = text.lines().filter(|l| l.contains(marker)).nth(n).unwrap_or_else(|| panic!("{n}th {marker:?}"));
    lsn(line.split(marker).nth(1).unwrap().split_whitespace().next().unwrap())
}

fn nth_elapsed(text: &str, n: usize) -> f64 {
    let line = text.lines().filter(|l| l.contains("redo done at ")).nth(n).expect("a redo done line");
    line.split("elapsed: ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap()
}

fn log_text(pg: &PgCluster) -> String {
    pg.log_files().iter().map(|f| std::fs::read_to_string(f).unwrap()).collect()
}

/// The load for [`LOAD_S`], then kill -9; what a crash would replay, read
/// from the server just before: (WAL bytes, the REDO it starts at).
fn load_and_crash(pg: &mut PgCluster) -> (u64, u64) {
    let mut bench = pg.pgbench_spawn(&["-c", "4", "-j", "2", "-T", "150"]);
    std::thread::sleep(Duration::from_secs(LOAD_S));
    let row = pg.psql("SELECT pg_current_wal_lsn(), (pg_control_checkpoint()).redo_lsn;");
    let (now, redo) = row.trim().split_once('|').expect("two LSNs");
    pg.kill9();
    let _ = bench.wait();
    (lsn(now) - lsn(redo), lsn(redo))
}

#[test]
fn a_crash_replays_the_wal_the_model_predicts() {
    let mut pg = PgCluster::init(SETTINGS);
    pg.start();
    pg.pgbench(&["-i", "-q", "-s", "10"]);
    pg.psql("CHECKPOINT;");

    // The first crash: its recovery measures the replay speed.
    load_and_crash(&mut pg);
    pg.start();
    assert!(pg.wait_for_log(Duration::from_secs(30), |t| t.contains("redo done at ")), "no recovery logged");
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("r.db");
    let import = |files: Vec<std::path::PathBuf>| {
        let out = walwatch().args(["import", "--db", db.to_str().unwrap(), "--cluster", "pg"]).args(files).output();
        let out = out.unwrap();
        assert!(out.status.success(), "import: {}", describe(&out));
    };
    import(pg.log_files());
    let settings = walwatch_json(&["settings", "--db", db.to_str().unwrap(), "--cluster", "pg", "--format", "json"]);
    let speed = settings[0]["replay_mb_s"].as_f64().expect("a measured replay speed");
    assert_eq!(settings[0]["crash_recoveries"], 1);

    // The second crash, predicted at its moment.
    let (wal, redo) = load_and_crash(&mut pg);
    let predicted_s = wal as f64 / 1_048_576.0 / speed;
    pg.start();
    let two = |t: &str| t.matches("redo done at ").count() == 2;
    assert!(pg.wait_for_log(Duration::from_secs(60), two), "no second recovery logged");
    let text = log_text(&pg);
    let replayed = nth_lsn(&text, "redo done at ", 1) - nth_lsn(&text, "redo starts at ", 1);
    let actual_s = nth_elapsed(&text, 1);
    println!(
        "speed measured {speed:.1} MB/s; second crash: {:.1} MB to replay by the server's LSNs, {:.1} MB \
         replayed; predicted {predicted_s:.2} s, logged {actual_s:.2} s ({:+.0} %)",
        wal as f64 / 1_048_576.0,
        replayed as f64 / 1_048_576.0,
        100.0 * (actual_s / predicted_s - 1.0)
    );
    // The replay starts at the control file's REDO and ends where WAL stood
    // at the kill: at most the few ms of WAL after the query.
    // The server logs the first record it reads at or after that REDO:
    // the same LSN, or (seen once in many runs) a record's length later.
    let redo_logged = nth_lsn(&text, "redo starts at ", 1);
    assert!(
        redo_logged >= redo && redo_logged - redo < 8192,
        "recovery starts at the last completed checkpoint's REDO: logged {redo_logged}, control file {redo}"
    );
    let from_redo = replayed + (redo_logged - redo);
    assert!(from_redo >= wal && (from_redo - wal) < 16 * 1_048_576, "replayed {from_redo}, predicted {wal}");
    assert!(actual_s > 0.0 && predicted_s > 0.0);

    // And walwatch, reading both recoveries, keeps them both as crash recoveries.
    import(pg.log_files());
    let settings = walwatch_json(&["settings", "--db", db.to_str().unwrap(), "--cluster", "pg", "--format", "json"]);
    assert_eq!(settings[0]["crash_recoveries"], 2);
}
