//! `walwatch suggest` on the shapes the closed-loop test on a real server
//! cannot reach: checkpoints that overrun checkpoint_timeout, and a load
//! whose p95 and median lie ten times apart. The logs are written here in
//! PostgreSQL 15's words (its stderr lines, `%m [%p] `), imported, and the
//! suggestion is checked against the numbers worked out below from
//! PostgreSQL's rule and the README's rounding, and against the
//! independent counter (tests/support/truth.rs) for what it was made of.

use crate::support;

use std::fs;
use std::path::Path;

use serde_json::Value;
use support::truth::{Layout, Truth};
use support::{describe, walwatch, walwatch_json};

/// A checkpoint cycle of the log: seconds from the previous start, the
/// checkpoint's write time (an overrun: longer than checkpoint_timeout),
/// its distance, the WAL files it added.
struct Cycle {
    seconds: u64,
    took: u64,
    distance_kb: u64,
    added: u64,
}

/// A PostgreSQL 15 log: the server's start, then time-triggered
/// checkpoints, each start `seconds` after the one before, its complete
/// `took` seconds after it.
fn log(cycles: &[Cycle]) -> String {
    let t0: jiff::Timestamp = "2026-11-01T00:00:00Z".parse().unwrap();
    let at =
        |s: u64| (t0 + jiff::SignedDuration::from_secs(s as i64)).strftime("%Y-%m-%d %H:%M:%S%.3f UTC").to_string();
    let mut out = format!("{} [100] LOG:  database system is ready to accept connections\n", at(0));
    let (mut start, mut previous_took) = (10, 1);
    let mut lines = |start: u64, took: u64, distance: u64, added: u64| {
        out += &format!("{} [101] LOG:  checkpoint starting: time\n", at(start));
        out += &format!(
            "{} [101] LOG:  checkpoint complete: wrote 4000 buffers (24.4%); {added} WAL file(s) added, 0 removed, \
             2 recycled; write={took}.000 s, sync=0.010 s, total={took}.020 s; sync files=12, longest=0.004 s, \
             average=0.001 s; distance={distance} kB, estimate={distance} kB\n",
            at(start + took)
        );
    };
    lines(start, previous_took, 1024, 0);
    for c in cycles {
        start += c.seconds;
        previous_took = c.took;
        lines(start, previous_took, c.distance_kb, c.added);
    }
    out
}

/// `walwatch suggest` for `cluster` on `log`, with the server's settings
/// given (checkpoint_timeout 5min, cct 0.9, 16 MB segments).
fn suggest(dir: &Path, cluster: &str, log: &str, max: &str, min: &str) -> (Value, String, Truth) {
    let file = dir.join(format!("{cluster}.log"));
    fs::write(&file, log).unwrap();
    let db = dir.join(format!("{cluster}.db"));
    let (db, file_arg) = (db.to_str().unwrap(), file.to_str().unwrap());
    let out = walwatch().args(["import", "--db", db, "--cluster", cluster, file_arg]).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let config = dir.join(format!("{cluster}.toml"));
    let text = format!(
        "[[cluster]]\nname = {cluster:?}\nlogs = [{file_arg:?}]\n[cluster.settings]\nserver_version = \"15\"\n\
         checkpoint_timeout = \"5min\"\ncheckpoint_completion_target = 0.9\nmax_wal_size = {max:?}\n\
         min_wal_size = {min:?}\n"
    );
    fs::write(&config, text).unwrap();
    let config = config.to_str().unwrap();
    let json = walwatch_json(&["suggest", "--config", config, "--db", db, "--cluster", cluster, "--format", "json"]);
    let out = walwatch().args(["suggest", "--config", config, "--db", db, "--cluster", cluster]).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let truth = Truth::read(&[file], &Layout { prefix: "%m [%p] ".into(), ..Layout::default_stderr() });
    (json, String::from_utf8(out.stdout).unwrap(), truth)
}

/// PostgreSQL's WAL trigger (`xlog.c`, 11+): a checkpoint is requested
/// after floor(max_wal_size / segment / (1 + cct)) - 1 segments.
fn trigger_mb(max_mb: u64) -> u64 {
    ((max_mb as f64 / 16.0 / 1.9).floor() as u64 - 1) * 16
}

/// Checkpoints that take 890 s against checkpoint_timeout = 5min: each
/// starts when the one before it ends, 900 s after it, with 900,000 kB of
/// WAL since its REDO (1000 kB/s). Sized for the rate over 300 s (293 MB),
/// max_wal_size would be 768MB, whose trigger (368 MB) the next cycle's
/// 879 MB cross: a forced checkpoint. The whole distance is sized for:
/// 879 MB x 1.25 = 1099 MB -> 2304MB (trigger 1184 MB); min_wal_size from the
/// typical cycle, 879 MB x 1.9 = 1670 MB -> 1792MB, below it.
#[test]
fn overrunning_checkpoints_are_sized_for_the_wal_between_their_starts() {
    let dir = tempfile::tempdir().unwrap();
    let cycles: Vec<Cycle> =
        (0..12).map(|_| Cycle { seconds: 900, took: 890, distance_kb: 900_000, added: 3 }).collect();
    let (s, text, truth) = suggest(dir.path(), "overrun", &log(&cycles), "1GB", "80MB");
    assert_eq!((truth.starts, truth.time, truth.completes), (13, 13, 13), "{}", truth.brief());
    assert_eq!(s["basis"]["samples"], 12, "every cycle between two of the log's 13 starts: {s:#}");
    assert_eq!(s["basis"]["peak_wal_rate_kb_s"], 1000.0);
    assert_eq!(s["basis"]["projected_wal_per_timeout_mb"], 878.9);
    assert_eq!(s["suggested"]["max_wal_size_mb"], 2304);
    assert_eq!(s["suggested"]["min_wal_size_mb"], 1792);
    assert!(trigger_mb(2304) as f64 >= 900_000.0 / 1024.0, "the next overrunning cycle stays time-driven");
    assert!(trigger_mb(768) as f64 * 1.25 < 900_000.0 / 1024.0);
    assert_eq!(
        s["sql"],
        "ALTER SYSTEM SET max_wal_size = '2304MB';\nALTER SYSTEM SET min_wal_size = '1792MB';\nSELECT pg_reload_conf();"
    );
    assert!(text.contains("  suggested max_wal_size  2304MB\n  suggested min_wal_size  1792MB\n"), "{text}");
    assert!(text.contains("12 cycles ran longer than checkpoint_timeout"), "{text}");
}

/// 17 cycles at 200 kB/s and 3 at 2000 kB/s, all of 300 s, the fast ones
/// spread among the slow: 15 % of the time at 2000 kB/s. The time-weighted
/// p95 is 2000 kB/s: 586 MB per checkpoint_timeout, x 1.25 = 732 MB ->
/// 1536MB (a median of 200 kB/s would give 192MB); min_wal_size from the
/// median cycle, 58.6 MB x 1.9 = 111 MB -> 128MB.
#[test]
fn a_load_whose_p95_and_median_differ_is_sized_for_the_p95_by_time() {
    let dir = tempfile::tempdir().unwrap();
    let cycles: Vec<Cycle> = (0..20)
        .map(|i| {
            let fast = [4, 11, 17].contains(&i);
            Cycle { seconds: 300, took: 270, distance_kb: if fast { 600_000 } else { 60_000 }, added: 1 }
        })
        .collect();
    let (s, text, truth) = suggest(dir.path(), "bimodal", &log(&cycles), "1GB", "80MB");
    assert_eq!((truth.starts, truth.time), (21, 21), "{}", truth.brief());
    assert_eq!(s["basis"]["samples"], 20);
    assert_eq!(s["basis"]["peak_wal_rate_kb_s"], 2000.0);
    assert_eq!(s["basis"]["projected_wal_per_timeout_mb"], 585.9);
    assert_eq!(s["suggested"]["max_wal_size_mb"], 1536);
    assert_eq!(s["suggested"]["min_wal_size_mb"], 128);
    assert!(trigger_mb(1536) as f64 >= 600_000.0 / 1024.0 * 1.25);
    assert!(text.contains("  suggested max_wal_size  1536MB\n  suggested min_wal_size  128MB\n"), "{text}");
    assert!(text.contains("Peak WAL rate (p95 by time"), "{text}");
}
