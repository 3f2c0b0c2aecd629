//! The alert lifecycle on a real SQLite store file: fire, notified (the
//! sender's move, done here through the same store call the sender uses),
//! resolve, re-run, silence, ack, reminders — and every step survives
//! closing and reopening the store, as a daemon restart would.

use std::path::Path;
use std::time::Duration;

use crate::alert::lifecycle::{apply, Changes};
use crate::alert::rules::Finding;
use crate::config::Config;
use crate::model::alert::{NoticeKind, Severity};
use crate::store::Store;
use jiff::{SignedDuration, Timestamp};
use serde_json::json;

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn finding(rule: &'static str, key: &str, summary: &str) -> Finding {
    Finding {
        rule,
        key: key.into(),
        severity: if rule == "durability_off" { Severity::Critical } else { Severity::Warning },
        summary: summary.into(),
        details: vec![format!("details of {summary}")],
        figures: json!({ "count": summary.len() }),
        suggestion: None,
        evidence_at: Some(at("2026-11-22T10:00:00Z")),
    }
}

/// A configuration with a transport (the file one, only named: apply sends
/// nothing), so firing notices count as queued.
fn mailing() -> Config {
    let text = format!(
        "[mail]\ntransport = \"file\"\nfrom = \"w@example.org\"\nto = [\"dba@example.org\"]\n[mail.file]\ndirectory = {:?}\n",
        std::env::temp_dir()
    );
    crate::config::parse(&text, Path::new("w.toml")).unwrap()
}

fn run(path: &Path, config: &Config, findings: Vec<Finding>, now: &str) -> Changes {
    // A fresh connection each time: nothing is kept in memory between evaluations.
    let mut store = Store::open(path).unwrap();
    let enabled = crate::alert::rules::RuleSet::configure(&config.alerts).unwrap().enabled();
    apply(&mut store, config, &enabled, "main", findings, at(now)).unwrap()
}

fn kinds(c: &Changes) -> Vec<(NoticeKind, Option<i64>, u32)> {
    c.notices.iter().map(|n| (n.kind, n.alert_id, n.sequence)).collect()
}

pub(crate) fn ids(list: &[crate::alert::lifecycle::AlertChange]) -> Vec<i64> {
    list.iter().map(|c| c.alert_id).collect()
}

fn row(path: &Path, id: i64) -> crate::store::alerts::AlertRow {
    Store::open_read_only(path).unwrap().alerts().get(id).unwrap().unwrap()
}

#[test]
fn fire_notify_rerun_resolve() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let config = mailing();
    let forced = || finding("forced_checkpoints", "", "3 forced");
    let fsync = || finding("durability_off", "fsync", "fsync is off");

    let c = run(&db, &config, vec![forced(), fsync()], "2026-11-22T12:00:00Z");
    assert_eq!(ids(&c.fired), [1, 2]);
    assert_eq!(kinds(&c), [(NoticeKind::Firing, Some(1), 0), (NoticeKind::Firing, Some(2), 0)]);
    assert_eq!(c.notices[0].cluster, "main");
    assert_eq!(c.notices[1].severity, Severity::Critical);
    assert_eq!(c.notices[0].fired_at, at("2026-11-22T12:00:00Z"));
    let a = row(&db, 1);
    assert_eq!((a.state.as_str(), a.rule.as_str(), a.key.as_str()), ("firing", "forced_checkpoints", ""));
    assert_eq!(a.details, ["details of 3 forced"]);
    assert_eq!(a.figures, json!({ "count": 8 }));
    assert_eq!(a.queued_at, Some(at("2026-11-22T12:00:00Z")));

    // The sender's move once the server accepted the firing notice.
    let mut store = Store::open(&db).unwrap();
    assert!(store.alerts_mut().mark_notified(1, at("2026-11-22T12:00:05Z")).unwrap());
    assert!(!store.alerts_mut().mark_notified(1, at("2026-11-22T12:00:09Z")).unwrap(), "only firing -> notified");
    drop(store);
    let a = row(&db, 1);
    assert_eq!((a.state.as_str(), a.notified_at), ("notified", Some(at("2026-11-22T12:00:05Z"))));

    // The same findings again (a restart, a second `analyze`): nothing new, content refreshed.
    let mut again = forced();
    again.summary = "4 forced".into();
    let c = run(&db, &config, vec![again, fsync()], "2026-11-22T12:01:00Z");
    assert!(c.fired.is_empty() && c.notices.is_empty() && c.resolved.is_empty(), "{c:?}");
    assert_eq!(ids(&c.still_open), [1, 2]);
    assert_eq!(row(&db, 1).summary, "4 forced");
    assert_eq!(row(&db, 1).state.as_str(), "notified");

    // fsync is back on: resolved, with a resolved notice (its firing notice was queued).
    let c = run(&db, &config, vec![forced()], "2026-11-22T12:02:00Z");
    assert_eq!(ids(&c.resolved), [2]);
    assert_eq!(kinds(&c), [(NoticeKind::Resolved, Some(2), 0)]);
    let a = row(&db, 2);
    assert_eq!((a.state.as_str(), a.resolved_at), ("resolved", Some(at("2026-11-22T12:02:00Z"))));
    let c = run(&db, &config, vec![forced()], "2026-11-22T12:03:00Z");
    assert!(c.notices.is_empty() && c.resolved.is_empty());

    // Off again: a new alert (the resolved one stays resolved), a new firing notice.
    let c = run(&db, &config, vec![forced(), fsync()], "2026-11-22T12:04:00Z");
    assert_eq!(ids(&c.fired), [3]);
    assert_eq!(kinds(&c), [(NoticeKind::Firing, Some(3), 0)]);
    let store = Store::open_read_only(&db).unwrap();
    assert_eq!(store.alerts().list(None, false).unwrap().iter().map(|a| a.id).collect::<Vec<_>>(), [3, 1]);
    assert_eq!(store.alerts().list(None, true).unwrap().len(), 3);
    assert_eq!(store.alerts().list(Some("other"), true).unwrap().len(), 0);
}

#[test]
fn the_unique_index_refuses_a_second_open_alert() {
    // Two processes evaluating at once cannot both open the same alert.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    run(&db, &mailing(), vec![finding("too_frequent", "", "x")], "2026-11-22T12:00:00Z");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let dup = conn.execute(
        "INSERT INTO alert(cluster_id, rule, key, severity, state, summary, fired_at, updated_at)
         SELECT cluster_id, rule, key, severity, 'firing', 'dup', 0, 0 FROM alert WHERE id = 1",
        [],
    );
    assert!(dup.unwrap_err().to_string().contains("UNIQUE constraint failed"));
}

#[test]
fn silence_holds_notices_until_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let config = mailing();
    let slow = || finding("slow_sync", "", "slow");
    // The cluster must exist to be silenced by name.
    run(&db, &config, vec![], "2026-11-22T11:00:00Z");
    let mut store = Store::open(&db).unwrap();
    let now = at("2026-11-22T12:00:00Z");
    let until = now + SignedDuration::from_hours(2);
    store.silences_mut().start("slow_sync", Some("main"), until, now).unwrap();
    assert_eq!(
        store.silences_mut().start("slow_sync", Some("nope"), until, now).unwrap(),
        crate::store::silences::SilenceOutcome::UnknownCluster
    );
    drop(store);

    let c = run(&db, &config, vec![slow()], "2026-11-22T12:00:00Z");
    assert_eq!((ids(&c.silenced), c.notices.len()), (vec![1], 0));
    assert_eq!(row(&db, 1).queued_at, None);
    let c = run(&db, &config, vec![slow()], "2026-11-22T13:59:59Z");
    assert_eq!((ids(&c.silenced), c.notices.len()), (vec![1], 0));
    // Other rules are not silenced.
    let c = run(&db, &config, vec![slow(), finding("too_frequent", "", "tf")], "2026-11-22T13:59:59Z");
    assert_eq!(kinds(&c), [(NoticeKind::Firing, Some(2), 0)]);
    // The silence ended and the alert is still open: its firing notice now, once.
    let c = run(&db, &config, vec![slow(), finding("too_frequent", "", "tf")], "2026-11-22T14:00:00Z");
    assert_eq!(ids(&c.fired), [1]);
    assert_eq!(kinds(&c), [(NoticeKind::Firing, Some(1), 0)]);
    assert_eq!(c.notices[0].fired_at, at("2026-11-22T12:00:00Z"), "fired when first found");
    assert_eq!(row(&db, 1).queued_at, Some(at("2026-11-22T14:00:00Z")));
    let c = run(&db, &config, vec![slow(), finding("too_frequent", "", "tf")], "2026-11-22T14:01:00Z");
    assert!(c.notices.is_empty());
}

#[test]
fn an_alert_fired_and_resolved_within_a_silence_sends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let config = mailing();
    let mut store = Store::open(&db).unwrap();
    // No cluster: silences every cluster.
    store.silences_mut().start("too_frequent", None, at("2026-11-22T13:00:00Z"), at("2026-11-22T12:00:00Z")).unwrap();
    drop(store);
    let c = run(&db, &config, vec![finding("too_frequent", "", "tf")], "2026-11-22T12:10:00Z");
    assert_eq!((c.silenced.len(), c.notices.len()), (1, 0));
    let c = run(&db, &config, vec![], "2026-11-22T12:20:00Z");
    assert_eq!((ids(&c.resolved), c.notices.len()), (vec![1], 0));
    let c = run(&db, &config, vec![], "2026-11-22T13:30:00Z");
    assert!(c.notices.is_empty() && c.resolved.is_empty() && c.fired.is_empty());
}

#[test]
fn reminders_at_the_interval_until_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let mut config = mailing();
    config.alerts.reminder_interval = Some(Duration::from_secs(3600));
    let tf = || finding("too_frequent", "", "tf");

    let c = run(&db, &config, vec![tf()], "2026-11-22T12:00:00Z");
    assert_eq!(kinds(&c), [(NoticeKind::Firing, Some(1), 0)]);
    let mut store = Store::open(&db).unwrap();
    store.alerts_mut().mark_notified(1, at("2026-11-22T12:00:30Z")).unwrap();
    drop(store);
    // Due an interval after the notice was accepted, not before.
    assert!(run(&db, &config, vec![tf()], "2026-11-22T13:00:29Z").notices.is_empty());
    let c = run(&db, &config, vec![tf()], "2026-11-22T13:00:30Z");
    assert_eq!(kinds(&c), [(NoticeKind::Reminder, Some(1), 1)]);
    assert_eq!(ids(&c.reminded), [1]);
    assert!(run(&db, &config, vec![tf()], "2026-11-22T13:30:00Z").notices.is_empty());
    let c = run(&db, &config, vec![tf()], "2026-11-22T14:00:30Z");
    assert_eq!(kinds(&c), [(NoticeKind::Reminder, Some(1), 2)]);
    let a = row(&db, 1);
    assert_eq!((a.reminders, a.reminded_at), (2, Some(at("2026-11-22T14:00:30Z"))));

    // Acknowledged: no more reminders, the alert stays open.
    let mut store = Store::open(&db).unwrap();
    assert_eq!(store.alerts_mut().ack(1, at("2026-11-22T14:10:00Z")).unwrap(), Some(true));
    assert_eq!(store.alerts_mut().ack(1, at("2026-11-22T14:11:00Z")).unwrap(), Some(false));
    assert_eq!(store.alerts_mut().ack(99, at("2026-11-22T14:11:00Z")).unwrap(), None);
    drop(store);
    let c = run(&db, &config, vec![tf()], "2026-11-22T20:00:00Z");
    assert!(c.notices.is_empty());
    assert_eq!(ids(&c.still_open), [1]);
    // Resolving an acknowledged alert still says so.
    let c = run(&db, &config, vec![], "2026-11-22T20:01:00Z");
    assert_eq!(kinds(&c), [(NoticeKind::Resolved, Some(1), 0)]);

    // Without reminder_interval, never.
    let c = run(&db, &mailing(), vec![tf()], "2026-11-22T21:00:00Z");
    assert_eq!(kinds(&c), [(NoticeKind::Firing, Some(2), 0)]);
    assert!(run(&db, &mailing(), vec![tf()], "2026-11-30T21:00:00Z").notices.is_empty());
}

#[test]
fn notices_are_queued_in_the_outbox_with_the_alert_change() {
    // With a transport configured, each notice is rendered and queued in
    // the transaction that changes the alert (the file transport is only
    // named here: nothing is sent by apply).
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let text = format!(
        "[mail]\ntransport = \"file\"\nfrom = \"w@example.org\"\nto = [\"dba@example.org\"]\n[mail.file]\ndirectory = {:?}\n[alerts]\nreminder_interval = \"1h\"\n",
        dir.path()
    );
    let config = crate::config::parse(&text, Path::new("w.toml")).unwrap();
    let tf = || finding("too_frequent", "", "tf");
    run(&db, &config, vec![tf()], "2026-11-22T12:00:00Z");
    run(&db, &config, vec![tf()], "2026-11-22T12:30:00Z");
    run(&db, &config, vec![tf()], "2026-11-22T13:00:00Z");
    run(&db, &config, vec![], "2026-11-22T13:10:00Z");
    run(&db, &config, vec![], "2026-11-22T13:20:00Z");
    let store = Store::open(&db).unwrap();
    let queued: Vec<(Option<i64>, String)> =
        store.outbox().all().unwrap().into_iter().map(|m| (m.alert_id, m.notice.as_str().to_string())).collect();
    assert_eq!(
        queued,
        [(Some(1), "firing".to_string()), (Some(1), "reminder".to_string()), (Some(1), "resolved".to_string())]
    );
    let ids: std::collections::BTreeSet<String> =
        store.outbox().all().unwrap().into_iter().map(|m| m.message_id).collect();
    assert_eq!(ids.len(), 3);
}

// --- Mutation tests (see mutants.md) ---

#[test]
fn changes_name_their_cluster_and_stored_alerts_keep_their_severity() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let config = mailing();
    let c = run(
        &db,
        &config,
        vec![finding("forced_checkpoints", "", "f"), finding("durability_off", "fsync", "off")],
        "2026-11-22T12:00:00Z",
    );
    assert_eq!(c.cluster, "main");
    assert_eq!((row(&db, 1).severity, row(&db, 2).severity), (Severity::Warning, Severity::Critical));
    let mut info = finding("durability_off", "synchronous_commit", "sc");
    info.severity = Severity::Info;
    run(&db, &config, vec![info], "2026-11-22T12:01:00Z");
    assert_eq!(row(&db, 3).severity, Severity::Info);
    // The resolved notices are built from the stored alerts.
    let c = run(&db, &config, vec![], "2026-11-22T12:02:00Z");
    assert_eq!(c.cluster, "main");
    let resolved: Vec<(Option<i64>, Severity, &str)> =
        c.notices.iter().map(|n| (n.alert_id, n.severity, n.summary.as_str())).collect();
    assert_eq!(resolved, [(Some(3), Severity::Info, "sc")]);
}

#[test]
fn keys_of_one_rule_are_separate_alerts() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let config = mailing();
    let fsync = || finding("durability_off", "fsync", "fsync is off");
    let fpw = || finding("durability_off", "full_page_writes", "full_page_writes is off");
    let c = run(&db, &config, vec![fsync()], "2026-11-22T12:00:00Z");
    assert_eq!(ids(&c.fired), [1]);
    let c = run(&db, &config, vec![fsync(), fpw()], "2026-11-22T12:01:00Z");
    assert_eq!((ids(&c.still_open), ids(&c.fired)), (vec![1], vec![2]));
    assert_eq!((row(&db, 1).summary.as_str(), row(&db, 2).key.as_str()), ("fsync is off", "full_page_writes"));
    let c = run(&db, &config, vec![fpw()], "2026-11-22T12:02:00Z");
    assert_eq!((ids(&c.still_open), ids(&c.resolved)), (vec![2], vec![1]));
    // A finding of another rule with the same (empty) key is another alert too.
    let c = run(
        &db,
        &config,
        vec![fpw(), finding("slow_sync", "", "s"), finding("too_frequent", "", "t")],
        "2026-11-22T12:03:00Z",
    );
    assert_eq!((ids(&c.still_open), ids(&c.fired)), (vec![2], vec![3, 4]));
}

#[test]
fn a_resolved_notice_only_follows_a_firing_notice_and_never_in_a_silence() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let config = mailing();
    let tf = || finding("too_frequent", "", "tf");
    let mut store = Store::open(&db).unwrap();
    store.silences_mut().start("too_frequent", None, at("2026-11-22T13:00:00Z"), at("2026-11-22T12:00:00Z")).unwrap();
    drop(store);
    // Fired in the silence, resolved after it without being seen again: its
    // firing notice never went out, so no resolved notice either.
    let c = run(&db, &config, vec![tf()], "2026-11-22T12:10:00Z");
    assert_eq!((ids(&c.silenced), c.notices.len()), (vec![1], 0));
    let c = run(&db, &config, vec![], "2026-11-22T13:30:00Z");
    assert_eq!((ids(&c.resolved), c.notices.len()), (vec![1], 0));
    assert_eq!(row(&db, 1).state.as_str(), "resolved");

    // Fired and notified, then silenced: resolving it in the silence is quiet.
    let c = run(&db, &config, vec![tf()], "2026-11-22T14:00:00Z");
    assert_eq!(kinds(&c), [(NoticeKind::Firing, Some(2), 0)]);
    let mut store = Store::open(&db).unwrap();
    store.alerts_mut().mark_notified(2, at("2026-11-22T14:00:01Z")).unwrap();
    store
        .silences_mut()
        .start("too_frequent", Some("main"), at("2026-11-22T16:00:00Z"), at("2026-11-22T14:30:00Z"))
        .unwrap();
    drop(store);
    let c = run(&db, &config, vec![], "2026-11-22T15:00:00Z");
    assert_eq!((ids(&c.resolved), c.notices.len()), (vec![2], 0));
}

/// A store holding a real PostgreSQL 15 log (fixture 15-stderr-default-noise:
/// max_wal_size = 32MB, forced checkpoints and too-frequent warnings).
pub(crate) fn noise_store(db: &Path) {
    use crate::frame::time::TimeContext;
    use crate::ingest::{self, Options};
    let log = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/15-stderr-default-noise/log/postgresql-2026-11-22_080841.log");
    let mut store = Store::open(db).unwrap();
    let cluster = store.clusters_mut().find_or_create("main").unwrap();
    let opts = Options { prefix: Some("%m [%p] %q%u@%d ".into()), ..Options::default() };
    let time = TimeContext::new(Some("UTC")).unwrap();
    ingest::import(&mut store, cluster, log.to_str().unwrap(), &opts, &time).unwrap();
}

#[test]
fn without_a_transport_the_firing_notice_waits_for_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let none = Config::default();
    let tf = || finding("too_frequent", "", "tf");

    run(&db, &none, vec![tf()], "2026-11-22T12:00:00Z");
    assert_eq!(row(&db, 1).queued_at, None, "nothing was queued: no transport");
    let c = run(&db, &none, vec![tf()], "2026-11-22T12:10:00Z");
    assert!(c.notices.is_empty());
    assert_eq!(ids(&c.still_open), [1]);

    let c = run(&db, &mailing(), vec![tf()], "2026-11-22T12:20:00Z");
    assert_eq!(kinds(&c), [(NoticeKind::Firing, Some(1), 0)]);
    assert_eq!(row(&db, 1).queued_at, Some(at("2026-11-22T12:20:00Z")));
    assert!(run(&db, &mailing(), vec![tf()], "2026-11-22T12:30:00Z").notices.is_empty(), "once");
    let c = run(&db, &mailing(), vec![], "2026-11-22T12:40:00Z");
    assert_eq!(kinds(&c), [(NoticeKind::Resolved, Some(1), 0)]);
    assert_eq!(row(&db, 1).resolution, Some(crate::model::alert::Resolution::Cleared));
}

#[test]
fn an_alert_closed_before_any_transport_is_never_mailed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    run(&db, &Config::default(), vec![finding("too_frequent", "", "tf")], "2026-11-22T12:00:00Z");
    let c = run(&db, &mailing(), vec![], "2026-11-22T12:10:00Z");
    assert_eq!(ids(&c.resolved), [1]);
    assert!(c.notices.is_empty(), "no resolved notice for a firing notice never queued");
    assert!(Store::open(&db).unwrap().outbox().all().unwrap().is_empty());
}

#[test]
fn a_disabled_rule_closes_its_alerts_silently_and_fires_anew_once_enabled() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let tf = || finding("too_frequent", "", "tf");
    run(&db, &mailing(), vec![tf()], "2026-11-22T12:00:00Z");
    let mut off = mailing();
    off.alerts = crate::config::parse("[alerts.too_frequent]\nenabled = false\n", Path::new("w.toml")).unwrap().alerts;

    let c = run(&db, &off, vec![], "2026-11-22T12:10:00Z");
    assert_eq!(ids(&c.rule_disabled), [1]);
    assert!(c.resolved.is_empty() && c.notices.is_empty(), "{c:?}");
    let closed = row(&db, 1);
    assert_eq!(closed.state, crate::model::alert::AlertState::Resolved);
    assert_eq!(closed.resolution, Some(crate::model::alert::Resolution::RuleDisabled));
    let outbox = Store::open(&db).unwrap().outbox().all().unwrap();
    assert_eq!(outbox.iter().map(|m| m.notice).collect::<Vec<_>>(), [NoticeKind::Firing], "no resolved notice");

    let c = run(&db, &mailing(), vec![tf()], "2026-11-22T12:20:00Z");
    assert_eq!(ids(&c.fired), [2]);
    assert_eq!(kinds(&c), [(NoticeKind::Firing, Some(2), 0)]);
}

#[test]
fn migration_13_forgets_firing_notices_that_were_never_queued() {
    // A store written by a version that set queued_at with no transport:
    // alert 1 open, "queued" with nothing in the outbox; alert 2 resolved;
    // alert 3 open with its firing notice really queued.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let (a, b, c) = (
        || finding("too_frequent", "", "a"),
        || finding("slow_sync", "", "b"),
        || finding("checkpoint_overrun", "", "c"),
    );
    run(&db, &Config::default(), vec![a(), c()], "2026-11-22T12:00:00Z");
    run(&db, &mailing(), vec![a(), b()], "2026-11-22T12:01:00Z");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "DELETE FROM outbox WHERE alert_id = 1;
         UPDATE alert SET queued_at = fired_at;
         ALTER TABLE alert DROP COLUMN resolution;
         DROP TABLE listener;
         DROP TABLE ingest_damage;
         DROP TABLE store_identity;
         DROP TABLE ingest_stream;
         ALTER TABLE cluster DROP COLUMN server_uid;
         ALTER TABLE cluster DROP COLUMN forgets;
         ALTER TABLE retention DROP COLUMN unrecorded;
         DROP VIEW line; DROP INDEX checkpoint_truncated; ALTER TABLE checkpoint DROP COLUMN truncated;
         ALTER TABLE checkpoint ADD COLUMN start_event_id INTEGER;
         ALTER TABLE checkpoint ADD COLUMN complete_event_id INTEGER;
         PRAGMA user_version = 12;",
    )
    .unwrap();
    drop(conn);

    let changes = run(&db, &mailing(), vec![a(), b()], "2026-11-22T12:03:00Z");
    assert_eq!(kinds(&changes), [(NoticeKind::Firing, Some(1), 0)], "alert 1 is mailed now, alert 3 not again");
    assert_eq!(row(&db, 2).resolution, Some(crate::model::alert::Resolution::Cleared));
    assert_eq!(row(&db, 3).resolution, None);
}
