//! One evaluation on a real store: a real log imported, the rules with the
//! sizing advice, the alerts opened, and the daemon's stop between clusters.

use std::path::Path;

use jiff::Timestamp;
use serde_json::json;

use super::*;
use crate::alert::lifecycle::tests::{ids, noise_store};

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

#[test]
fn evaluate_all_reads_a_real_log_and_fires_with_the_sizing_advice() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    noise_store(&db);
    let now = at("2026-11-22T08:12:00Z");
    let summary = |r: &Evaluation| -> Vec<(String, String, serde_json::Value, serde_json::Value)> {
        r.clusters
            .iter()
            .flat_map(|c| {
                c.findings.iter().map(move |f| {
                    (
                        c.cluster.clone(),
                        f.rule.to_string(),
                        f.figures["count"].clone(),
                        f.figures["suggested_max_wal_size_mb"].clone(),
                    )
                })
            })
            .collect()
    };
    // 15 `checkpoint starting: wal` and 18 too-frequent warnings in the hour
    // up to 08:12; the sizing model asks for 4GB.
    let want = vec![
        ("main".to_string(), "forced_checkpoints".to_string(), json!(15), json!(4096)),
        ("main".to_string(), "too_frequent".to_string(), json!(18), serde_json::Value::Null),
    ];
    let mut store = Store::open(&db).unwrap();
    let config = Config::default();
    let report = all(&mut store, &config, &RuleSet::default(), now).unwrap();
    assert_eq!(report.evaluated_at, now);
    assert_eq!(summary(&report), want);
    assert_eq!(ids(&report.clusters[0].changes.fired), [1, 2]);
    assert_eq!(
        report.clusters[0].findings[0].suggestion.as_ref().map(|s| s.sql.as_str()),
        Some("ALTER SYSTEM SET max_wal_size = '4GB';\nSELECT pg_reload_conf();")
    );

    // The advice is read whenever forced_checkpoints carries it, even with wal_files_added off.
    let text = "[alerts.wal_files_added]\nenabled = false\n";
    let only_forced = RuleSet::configure(&crate::config::parse(text, Path::new("w.toml")).unwrap().alerts).unwrap();
    assert_eq!(only_forced.enabled().len(), 8);
    let report = clusters(&mut store, &config, &only_forced, &["main".to_string()], now).unwrap();
    assert_eq!(summary(&report), want);
    assert_eq!(ids(&report.clusters[0].changes.still_open), [1, 2]);
    assert!(clusters(&mut store, &config, &RuleSet::default(), &[], now).unwrap().clusters.is_empty());

    // The daemon's pass stops between clusters once asked to.
    let stop = std::sync::atomic::AtomicBool::new(true);
    let rules = RuleSet::default();
    assert!(matches!(all_until(&mut store, &config, &rules, now, &stop), Err(EvaluateError::Stopped)));
    stop.store(false, std::sync::atomic::Ordering::Relaxed);
    let report = all_until(&mut store, &config, &rules, now, &stop).unwrap();
    assert_eq!((report.evaluated_at, summary(&report)), (now, want));
}
