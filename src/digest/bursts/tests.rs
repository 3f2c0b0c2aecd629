use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};

use super::*;
use crate::analyze::history::{Rates, Triggers};

/// Eight days of hour rows in Berlin from 2026-11-16, `forced(day, hour)`
/// WAL checkpoints in each, at `rate` kB/s when forced.
fn week(forced: impl Fn(usize, usize) -> i64, rate: f64) -> Vec<Row> {
    let tz = TimeZone::get("Europe/Berlin").unwrap();
    let start: Timestamp = "2026-11-15T23:00:00Z".parse().unwrap(); // 00:00 in Berlin
    (0..8 * 24)
        .map(|i| {
            let from = (start + SignedDuration::from_hours(i as i64)).to_zoned(tz.clone());
            let to = (start + SignedDuration::from_hours(i as i64 + 1)).to_zoned(tz.clone());
            let n = forced(i / 24, i % 24);
            Row {
                cluster: "c".into(),
                bucket_start: from,
                bucket_end: to,
                checkpoints: Triggers { wal: n, time: 12 - n.min(12), ..Triggers::default() },
                restartpoints: Triggers::default(),
                forced_share: None,
                too_frequent: 0,
                wal_written_mb: 0.0,
                wal_rate_kb_s: Rates { p50: None, p95: None, max: (n > 0).then_some(rate) },
                write_s_p95: None,
                write_mb_s_p95: None,
                pace_ratio_p95: None,
                sync_s_p95: None,
                sync_s_max: None,
                sync_longest_s_max: None,
                buffers_written: 0,
                wal_files_added: 0,
                wal_files_removed: 0,
                wal_files_recycled: 0,
                server_starts: 0,
                crashes: 0,
                parameter_changes: 0,
                alerts_fired: 0,
            }
        })
        .collect()
}

#[test]
fn a_nightly_job_on_most_days_is_one_window_with_the_size_that_absorbs_it() {
    // 02:00–04:00 on days 1, 2, 4, 5 and 7; 03:00 also on day 6 alone.
    let rows =
        week(|d, h| i64::from(([1, 2, 4, 5, 7].contains(&d) && (2..4).contains(&h)) || (d == 6 && h == 3)), 10_240.0);
    let bursts = recurring(&rows, &Params::test_defaults(16));
    assert_eq!(bursts.len(), 1, "{bursts:?}");
    let b = &bursts[0];
    assert_eq!((b.from_hour, b.to_hour, b.of_days, b.forced), (2, 4, 8, 11));
    let days: Vec<String> = b.days.iter().map(|d| d.to_string()).collect();
    assert_eq!(days, ["2026-11-17", "2026-11-18", "2026-11-20", "2026-11-21", "2026-11-22", "2026-11-23"]);
    assert_eq!(b.peak_kb_s, Some(10_240.0));
    // 10 MB/s for 300 s = 3000 MB between checkpoints; PostgreSQL 16 triggers at
    // max_wal_size / 1.9 less a segment: 3000 MB needs 5760 MB, shown in whole GB.
    assert_eq!(b.absorbing_max_wal_size_mb, Some(6144));
}

#[test]
fn twice_is_chance_and_scattered_hours_are_no_window() {
    let twice = week(|d, h| i64::from((d == 1 || d == 5) && h == 2), 500.0);
    assert_eq!(recurring(&twice, &Params::test_defaults(16)), []);
    let scattered = week(|d, h| i64::from(h == d * 3), 500.0);
    assert_eq!(recurring(&scattered, &Params::test_defaults(16)), []);
    let three = week(|d, h| i64::from((d == 0 || d == 3 || d == 7) && h == 23), 500.0);
    let b = recurring(&three, &Params::test_defaults(16));
    assert_eq!(b.len(), 1);
    assert_eq!((b[0].from_hour, b[0].to_hour, b[0].days.len(), b[0].forced), (23, 24, 3, 3));
}

#[test]
fn a_window_without_a_measured_rate_names_no_size() {
    let rows = week(|d, h| i64::from(d < 4 && h == 5), f64::NAN);
    let b = recurring(&rows, &Params::test_defaults(16));
    assert_eq!((b.len(), b[0].peak_kb_s, b[0].absorbing_max_wal_size_mb), (1, None, None));
}
