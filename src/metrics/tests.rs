//! The exposition of a small store, exactly, in both formats.

use std::io::Write;

use super::*;
use crate::store::Store;

#[test]
fn negotiation_prefers_openmetrics_only_when_asked() {
    let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,\
                      text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    assert_eq!(Format::negotiate(Some(prometheus)), Format::OpenMetrics);
    assert_eq!(Format::negotiate(Some("application/openmetrics-text")), Format::OpenMetrics);
    assert_eq!(Format::negotiate(None), Format::PrometheusText);
    assert_eq!(Format::negotiate(Some("*/*")), Format::PrometheusText);
    assert_eq!(Format::negotiate(Some("text/plain;version=0.0.4")), Format::PrometheusText);
    assert_eq!(Format::negotiate(Some("text/plain;q=0.9, application/openmetrics-text;q=0.5")), Format::PrometheusText);
    assert_eq!(Format::negotiate(Some("application/openmetrics-text;q=0, text/plain")), Format::PrometheusText);
    assert_eq!(Format::OpenMetrics.content_type(), "application/openmetrics-text; version=1.0.0; charset=utf-8");
    assert_eq!(Format::PrometheusText.content_type(), "text/plain; version=0.0.4; charset=utf-8");
}

/// Three checkpoints of a PostgreSQL 15 log (the lines as the server writes
/// them), one of them forced by WAL with a too-frequent warning.
const LOG: &str = "\
2026-11-22 08:04:20.100 UTC [21760] LOG:  checkpoint starting: time
2026-11-22 08:04:21.000 UTC [21760] LOG:  checkpoint complete: wrote 100 buffers (2.4%); 0 WAL file(s) added, 1 removed, 0 recycled; write=0.385 s, sync=0.207 s, total=0.900 s; sync files=30, longest=0.082 s, average=0.007 s; distance=512 kB, estimate=512 kB
2026-11-22 08:04:23.386 UTC [21760] LOG:  checkpoints are occurring too frequently (3 seconds apart)
2026-11-22 08:04:23.386 UTC [21760] HINT:  Consider increasing the configuration parameter \"max_wal_size\".
2026-11-22 08:04:23.387 UTC [21760] LOG:  checkpoint starting: wal
2026-11-22 08:04:24.198 UTC [21760] LOG:  checkpoint complete: wrote 100 buffers (2.4%); 0 WAL file(s) added, 1 removed, 0 recycled; write=1.5 s, sync=5.0 s, total=7.25 s; sync files=30, longest=0.082 s, average=0.007 s; distance=12284 kB, estimate=12284 kB
2026-11-22 08:05:00.000 UTC [21760] LOG:  checkpoint starting: wal
2026-11-22 08:05:01.000 UTC [21760] LOG:  checkpoint complete: wrote 100 buffers (2.4%); 0 WAL file(s) added, 1 removed, 0 recycled; write=0.5 s, sync=0.25 s, total=0.75 s; sync files=30, longest=0.082 s, average=0.007 s; distance=20000 kB, estimate=20000 kB
";

fn small_store(dir: &std::path::Path) -> std::path::PathBuf {
    use crate::ingest::{self, Options};
    let (db, log) = (dir.join("w.db"), dir.join("postgresql.log"));
    std::fs::write(&log, LOG).unwrap();
    let mut store = Store::open(&db).unwrap();
    let cluster = store.clusters_mut().find_or_create("main").unwrap();
    let opts = Options { prefix: Some("%m [%p] %q%u@%d ".into()), ..Options::default() };
    let time = crate::frame::time::TimeContext::new(Some("UTC")).unwrap();
    ingest::import(&mut store, cluster, log.to_str().unwrap(), &opts, &time).unwrap();
    db
}

fn params() -> Params {
    Params {
        skew_tolerance: std::time::Duration::from_secs(300),
        advice: crate::config::AdviceSection::default().into(),
        followed: None,
    }
}

/// A scrape with the advice computed first, as the endpoint's advisor does.
fn scrape_advised(db: &std::path::Path) -> Snapshot {
    let board = AdviceBoard::default();
    Advisor::new(board.clone()).refresh(db, &params(), &|| false).unwrap();
    Scraper::new(board).scrape(db, &params()).unwrap()
}

fn lines_of<'a>(text: &'a str, family: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.starts_with(family) || l.contains(&format!(" {family}"))).collect()
}

#[test]
fn the_exposition_of_a_small_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = small_store(dir.path());
    let text = scrape_advised(&db).render(Format::OpenMetrics).unwrap();
    assert!(text.ends_with("# EOF\n"), "{text}");
    let checkpoints = lines_of(&text, "walwatch_checkpoints");
    assert_eq!(
        checkpoints[..2],
        [
            "# HELP walwatch_checkpoints Checkpoints and restartpoints started, by trigger",
            "# TYPE walwatch_checkpoints counter"
        ]
    );
    for (trigger, n) in [("shutdown", 0), ("end-of-recovery", 0), ("wal", 2), ("time", 1), ("manual", 0)] {
        let line =
            format!("walwatch_checkpoints_total{{cluster=\"main\",kind=\"checkpoint\",trigger=\"{trigger}\"}} {n}");
        assert!(checkpoints.contains(&line.as_str()), "{line} in {checkpoints:#?}");
        let line =
            format!("walwatch_checkpoints_total{{cluster=\"main\",kind=\"restartpoint\",trigger=\"{trigger}\"}} 0");
        assert!(checkpoints.contains(&line.as_str()), "{line} in {checkpoints:#?}");
    }
    assert_eq!(checkpoints.len(), 2 + 10);
    assert!(text.contains("\nwalwatch_checkpoint_too_frequent_total{cluster=\"main\"} 1\n"), "{text}");
    // Sync: 0.207, 5.0 (on the bound: counted in le="5.0"), 0.25.
    let sync: Vec<&str> = text.lines().filter(|l| l.contains("phase=\"sync\"")).collect();
    let want = [
        "walwatch_checkpoint_duration_seconds_sum{cluster=\"main\",phase=\"sync\"} 5.457",
        "walwatch_checkpoint_duration_seconds_count{cluster=\"main\",phase=\"sync\"} 3",
        "walwatch_checkpoint_duration_seconds_bucket{le=\"0.1\",cluster=\"main\",phase=\"sync\"} 0",
        "walwatch_checkpoint_duration_seconds_bucket{le=\"0.5\",cluster=\"main\",phase=\"sync\"} 2",
        "walwatch_checkpoint_duration_seconds_bucket{le=\"1.0\",cluster=\"main\",phase=\"sync\"} 2",
        "walwatch_checkpoint_duration_seconds_bucket{le=\"2.0\",cluster=\"main\",phase=\"sync\"} 2",
        "walwatch_checkpoint_duration_seconds_bucket{le=\"5.0\",cluster=\"main\",phase=\"sync\"} 3",
    ];
    assert_eq!(sync[..want.len()], want);
    assert_eq!(
        sync.last(),
        Some(&"walwatch_checkpoint_duration_seconds_bucket{le=\"+Inf\",cluster=\"main\",phase=\"sync\"} 3")
    );
    // Distances 512 kB, 12284 kB, 20000 kB against 1, 4, 16, 64 MiB.
    let distance: Vec<&str> = lines_of(&text, "walwatch_checkpoint_distance_bytes_bucket");
    assert_eq!(
        distance[..4],
        [
            "walwatch_checkpoint_distance_bytes_bucket{le=\"1048576.0\",cluster=\"main\"} 1",
            "walwatch_checkpoint_distance_bytes_bucket{le=\"4194304.0\",cluster=\"main\"} 1",
            "walwatch_checkpoint_distance_bytes_bucket{le=\"16777216.0\",cluster=\"main\"} 2",
            "walwatch_checkpoint_distance_bytes_bucket{le=\"67108864.0\",cluster=\"main\"} 3",
        ]
    );
    assert!(text.contains("\nwalwatch_checkpoint_last_distance_bytes{cluster=\"main\"} 20480000.0\n"), "{text}");
    assert!(text.contains("\nwalwatch_checkpoint_last_estimate_bytes{cluster=\"main\"} 20480000.0\n"), "{text}");
    assert!(
        text.contains("\nwalwatch_setting{cluster=\"main\",name=\"checkpoint_completion_target\"} 0.9\n"),
        "{text}"
    );
    assert!(text.contains("\nwalwatch_last_event_timestamp_seconds{cluster=\"main\"} 1795334701.0\n"), "{text}");
    let version = format!("\nwalwatch_build_info{{version=\"{}\"}} 1.0\n", env!("CARGO_PKG_VERSION"));
    assert!(text.contains(&version), "{text}");
    // The file was read to its end: nothing left to read.
    let lag = format!(
        "walwatch_follow_lag_bytes{{cluster=\"main\",file=\"{}\"}} 0.0",
        dir.path().join("postgresql.log").display()
    );
    assert!(text.lines().any(|l| l == lag), "{text}");
}

#[test]
fn the_prometheus_text_format_names_counters_with_their_suffix_and_has_no_eof() {
    let dir = tempfile::tempdir().unwrap();
    let db = small_store(dir.path());
    let text = scrape_advised(&db).render(Format::PrometheusText).unwrap();
    assert!(!text.contains("# EOF"), "{text}");
    assert!(text.contains("# TYPE walwatch_checkpoints_total counter\n"), "{text}");
    assert!(
        text.contains("\nwalwatch_checkpoints_total{cluster=\"main\",kind=\"checkpoint\",trigger=\"wal\"} 2\n"),
        "{text}"
    );
}

/// A scrape after more checkpoints were stored adds only them; a deleted
/// row makes the next scrape count everything again.
#[test]
fn histograms_follow_the_store_between_scrapes() {
    let dir = tempfile::tempdir().unwrap();
    let db = small_store(dir.path());
    let mut scraper = Scraper::default();
    let count = |s: &Snapshot| s.histograms["main"].total.count();
    assert_eq!(count(&scraper.scrape(&db, &params()).unwrap()), 3);
    assert_eq!(count(&scraper.scrape(&db, &params()).unwrap()), 3, "nothing new: nothing added twice");
    // A row deleted from the middle (as `forget` of one file does).
    let conn = rusqlite::Connection::open(&db).unwrap();
    let middle = "SELECT id FROM checkpoint WHERE complete_source_id IS NOT NULL ORDER BY id LIMIT 1 OFFSET 1";
    conn.execute(&format!("DELETE FROM checkpoint WHERE id = ({middle})"), []).unwrap();
    let after = scraper.scrape(&db, &params()).unwrap();
    assert_eq!(count(&after), 2);
    assert_eq!(after.histograms["main"].sync.sum, 0.207 + 0.25);
}

/// The newest event leaves out one dated beyond the clock-skew tolerance,
/// as `walwatch status` does; a new tolerance reads the times again.
#[test]
fn the_newest_event_is_not_one_dated_ahead() {
    use crate::store::shared_tests::{start, store};
    let dir = tempfile::tempdir().unwrap();
    let s = store(
        dir.path(),
        vec![start("2026-11-22T10:00:00Z", "time", None), start("2026-11-22T10:05:00Z", "time", Some(400_000_000))],
    );
    let mut newest = super::newest::NewestEvents::default();
    newest.update(&s, std::time::Duration::from_secs(300)).unwrap();
    let at = |t: &str| t.parse::<jiff::Timestamp>().unwrap().as_microsecond();
    assert_eq!(newest.newest["main"], at("2026-11-22T10:00:00Z"));
    newest.update(&s, std::time::Duration::from_secs(500)).unwrap();
    assert_eq!(newest.newest["main"], at("2026-11-22T10:05:00Z"));
}

/// The newest event deleted while the checkpoint rows stay as they were
/// (its id below what was read, the lowest id unchanged): the time is read
/// again, not kept from the deleted event.
#[test]
fn a_deleted_newest_event_is_no_longer_the_newest_though_no_checkpoint_changed() {
    use crate::model::event::EventBody;
    use crate::store::shared_tests::{start, store, Line};
    let dir = tempfile::tempdir().unwrap();
    let event = |at: &str, body| Line { at: at.parse().unwrap(), body, ahead_us: None };
    let s = store(
        dir.path(),
        vec![
            event("2026-11-22T09:00:00Z", EventBody::ServerStart { version: None }),
            start("2026-11-22T10:00:00Z", "time", None),
            event("2026-11-22T10:05:00Z", EventBody::ServerReady { read_only: false }),
        ],
    );
    let mut newest = super::newest::NewestEvents::default();
    let tolerance = std::time::Duration::from_secs(300);
    newest.update(&s, tolerance).unwrap();
    let at = |t: &str| t.parse::<jiff::Timestamp>().unwrap().as_microsecond();
    assert_eq!(newest.newest["main"], at("2026-11-22T10:05:00Z"));
    let conn = rusqlite::Connection::open(dir.path().join("w.db")).unwrap();
    let ids: Vec<i64> = conn
        .prepare("SELECT id FROM event ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    conn.execute("DELETE FROM event WHERE id = ?1", [ids[1]]).unwrap();
    newest.update(&s, tolerance).unwrap();
    assert_eq!(newest.newest["main"], at("2026-11-22T10:00:00Z"));
}

/// The newest events deleted (`forget` of the file read last): the time is
/// read again from what is left, not kept from the deleted rows.
#[test]
fn the_newest_event_forgotten_is_no_longer_the_newest() {
    let dir = tempfile::tempdir().unwrap();
    let db = small_store(dir.path());
    let store = Store::open(&db).unwrap();
    let mut newest = super::newest::NewestEvents::default();
    let tolerance = std::time::Duration::from_secs(300);
    newest.update(&store, tolerance).unwrap();
    let at = |t: &str| t.parse::<jiff::Timestamp>().unwrap().as_microsecond();
    assert_eq!(newest.newest["main"], at("2026-11-22T08:05:01Z"));
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "DELETE FROM checkpoint WHERE started_at >= 1795334700000000 OR completed_at >= 1795334700000000;
         DELETE FROM event WHERE at >= 1795334700000000;",
    )
    .unwrap();
    newest.update(&store, tolerance).unwrap();
    assert_eq!(newest.newest["main"], at("2026-11-22T08:04:24.198Z"));
}

/// One cluster's file forgotten while another cluster's events, read
/// after it, remain (`walwatch forget` of its only file): the store's
/// highest event id stays, its lowest moves, and the forgotten cluster no
/// longer has a newest event.
#[test]
fn a_cluster_forgotten_below_the_newest_id_has_no_newest_event() {
    use crate::ingest::{self, Options};
    let dir = tempfile::tempdir().unwrap();
    let db = small_store(dir.path());
    let mut store = Store::open(&db).unwrap();
    let other = store.clusters_mut().find_or_create("other").unwrap();
    let opts = Options { prefix: Some("%m [%p] %q%u@%d ".into()), ..Options::default() };
    let time = crate::frame::time::TimeContext::new(Some("UTC")).unwrap();
    let log = dir.path().join("postgresql.log");
    ingest::import(&mut store, other, log.to_str().unwrap(), &opts, &time).unwrap();
    let mut newest = super::newest::NewestEvents::default();
    let tolerance = std::time::Duration::from_secs(300);
    newest.update(&store, tolerance).unwrap();
    let last = "2026-11-22T08:05:01Z".parse::<jiff::Timestamp>().unwrap().as_microsecond();
    assert_eq!(newest.newest, [("main".to_string(), last), ("other".to_string(), last)].into());
    let main: Vec<i64> = store.sources().known(Some("main")).unwrap().iter().map(|s| s.id).collect();
    assert_eq!(main.len(), 1);
    store.sources_mut().forget(&main).unwrap();
    newest.update(&store, tolerance).unwrap();
    assert_eq!(newest.newest, [("other".to_string(), last)].into());
}

/// Bytes written to a file after walwatch read it are its lag, at the next
/// scrape, without the daemon having read anything.
#[test]
fn the_lag_is_what_the_file_grew_by_since_it_was_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = small_store(dir.path());
    let log = dir.path().join("postgresql.log");
    let line = "2026-11-22 08:06:00.000 UTC [21760] LOG:  checkpoint starting: time\n";
    std::fs::OpenOptions::new().append(true).open(&log).unwrap().write_all(line.as_bytes()).unwrap();
    let lag = Scraper::default().scrape(&db, &params()).unwrap().lag;
    assert_eq!(lag, [("main".to_string(), log.display().to_string(), line.len() as u64)]);
    // A daemon that does not follow the cluster (it was imported) shows no lag for it.
    let other = Params { followed: Some(vec!["other".into()]), ..params() };
    assert_eq!(Scraper::default().scrape(&db, &other).unwrap().lag, []);
}

/// The write storm: each checkpoint's rate (100 buffers of 8 kB over 0.385,
/// 1.5 and 0.5 s) in a histogram; the newest's rate, and its pace against a
/// timed checkpoint once the log has told checkpoint_timeout (30 s × 0.9
/// over 0.5 s).
#[test]
fn the_write_storm_of_each_checkpoint_and_the_newest() {
    let dir = tempfile::tempdir().unwrap();
    let db = small_store(dir.path());
    let text = scrape_advised(&db).render(Format::PrometheusText).unwrap();
    let rates = lines_of(&text, "walwatch_checkpoint_write_rate_bytes_per_second");
    let bytes = 100.0 * 8192.0;
    let sum = bytes / 0.385 + bytes / 1.5 + bytes / 0.5;
    let want = [
        format!("walwatch_checkpoint_write_rate_bytes_per_second_sum{{cluster=\"main\"}} {sum}"),
        "walwatch_checkpoint_write_rate_bytes_per_second_count{cluster=\"main\"} 3".to_string(),
        "walwatch_checkpoint_write_rate_bytes_per_second_bucket{cluster=\"main\",le=\"1.048576e+06\"} 1".to_string(),
        "walwatch_checkpoint_write_rate_bytes_per_second_bucket{cluster=\"main\",le=\"4.194304e+06\"} 3".to_string(),
    ];
    for line in &want {
        assert!(rates.contains(&line.as_str()), "{line} in {rates:#?}");
    }
    let newest = "walwatch_checkpoint_last_write_rate_bytes_per_second{cluster=\"main\"} 1638400";
    assert!(text.lines().any(|l| l == newest || l == format!("{newest}.0")), "{text}");
    // checkpoint_timeout only assumed: no pace.
    assert!(!text.contains("walwatch_checkpoint_last_pace_ratio{"), "{text}");
    let changed = "2026-11-22 08:04:00.000 UTC [21750] LOG:  parameter \"checkpoint_timeout\" changed to \"30s\"\n";
    std::fs::write(dir.path().join("earlier.log"), changed).unwrap();
    let mut store = Store::open(&db).unwrap();
    let cluster = store.clusters_mut().find_or_create("main").unwrap();
    let opts = crate::ingest::Options { prefix: Some("%m [%p] %q%u@%d ".into()), ..Default::default() };
    let time = crate::frame::time::TimeContext::new(Some("UTC")).unwrap();
    let earlier = dir.path().join("earlier.log");
    crate::ingest::import(&mut store, cluster, earlier.to_str().unwrap(), &opts, &time).unwrap();
    drop(store);
    let text = scrape_advised(&db).render(Format::PrometheusText).unwrap();
    let pace = lines_of(&text, "walwatch_checkpoint_last_pace_ratio");
    assert_eq!(pace.last(), Some(&"walwatch_checkpoint_last_pace_ratio{cluster=\"main\"} 54.0"), "{pace:#?}");
}
