//! The outbox and the alert it notifies, in a real SQLite store: an alert
//! becomes `notified` only when a transport accepted its firing message.
//! The refusing transport is real: SMTP to a loopback port nobody listens
//! on; the accepting one is lettre's file transport writing a real .eml.

use std::path::{Path, PathBuf};

use jiff::Timestamp;

use crate::alert::render;
use crate::alert::Notice;
use crate::config::{self, Config};
use crate::model::alert::{NoticeKind, Severity};
use crate::outbox::{self, Channel, NewMessage};
use crate::store::Store;

struct Setup {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    db: PathBuf,
    store: Store,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let store = Store::open(&db).unwrap();
    Setup { dir: dir.path().into(), db, store, _dir: dir }
}

/// A loopback port that refuses connections: bound to find a free one, then closed.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn smtp_config(port: u16) -> Config {
    let text = format!(
        "[mail]\ntransport = \"smtp\"\nfrom = \"walwatch@db1.example.com\"\nto = [\"dba@example.com\"]\n\
         retry_initial = \"10s\"\nretry_max = \"1m\"\n\
         [mail.smtp]\nhost = \"127.0.0.1\"\nport = {port}\nsecurity = \"none\"\ntimeout = \"5s\"\n"
    );
    config::parse(&text, Path::new("t.toml")).unwrap()
}

fn file_config(dir: &Path) -> Config {
    let text = format!(
        "[mail]\ntransport = \"file\"\nfrom = \"walwatch@db1.example.com\"\nto = [\"dba@example.com\"]\n\
         [mail.file]\ndirectory = \"{}\"\n",
        dir.display()
    );
    config::parse(&text, Path::new("t.toml")).unwrap()
}

/// A firing alert row, as the lifecycle writes it.
fn firing_alert(db: &Path) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute("INSERT INTO cluster (name) VALUES ('prod')", []).unwrap();
    conn.execute(
        "INSERT INTO alert (cluster_id, rule, severity, state, summary, fired_at, updated_at)
         SELECT id, 'forced_checkpoints', 'warning', 'firing', 's', 0, 0 FROM cluster WHERE name = 'prod'",
        [],
    )
    .unwrap();
    conn.last_insert_rowid()
}

/// (state, notified_at) of an alert row.
fn alert_state(db: &Path, id: i64) -> (String, Option<i64>) {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("SELECT state, notified_at FROM alert WHERE id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?))).unwrap()
}

fn notice(alert_id: i64, kind: NoticeKind) -> Notice {
    Notice {
        alert_id: Some(alert_id),
        kind,
        severity: Severity::Warning,
        cluster: "prod".into(),
        rule: "forced_checkpoints".into(),
        summary: "12 of 14 checkpoints forced by WAL in 1h".into(),
        details: vec![],
        suggestion: None,
        fired_at: Timestamp::from_second(1_790_000_000).unwrap(),
        sequence: 0,
    }
}

/// The store's precision (microseconds), so stored times compare equal.
fn t(second: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + second).unwrap()
}

fn queue(store: &mut Store, notice: &Notice, config: &Config, at: Timestamp) -> Vec<NewMessage> {
    let messages = render::render_at(notice, config, at);
    assert_eq!(messages.len(), 1);
    store.outbox_mut().queue(&messages).unwrap();
    messages
}

#[test]
fn a_failed_send_leaves_the_alert_firing_and_only_an_accepted_one_notifies() {
    let mut s = setup();
    let alert = firing_alert(&s.db);
    let refused = smtp_config(closed_port());
    queue(&mut s.store, &notice(alert, NoticeKind::Firing), &refused, t(0));

    let report = outbox::flush(&mut s.store, &refused, t(0)).unwrap();
    assert_eq!((report.sent(), report.failed()), (0, 1), "{report:?}");
    assert_eq!(alert_state(&s.db, alert), ("firing".to_string(), None), "claimed and refused is not notified");
    let row = &s.store.outbox().all().unwrap()[0];
    assert_eq!((row.alert_id, row.notice.as_str(), row.channel), (Some(alert), "firing", Channel::Mail));
    assert_eq!((row.attempts, row.sent_at, row.next_attempt_at), (1, None, t(10)));
    assert!(row.last_error.as_deref().is_some_and(|e| !e.is_empty()), "{row:?}");

    // The same message, accepted at the retry: now notified, at that time.
    let mails = s.dir.join("mails");
    std::fs::create_dir(&mails).unwrap();
    let report = outbox::flush(&mut s.store, &file_config(&mails), t(10)).unwrap();
    assert_eq!((report.sent(), report.failed()), (1, 0), "{report:?}");
    assert_eq!(alert_state(&s.db, alert), ("notified".to_string(), Some(t(10).as_microsecond())));
    let row = &s.store.outbox().all().unwrap()[0];
    assert_eq!((row.attempts, row.sent_at), (2, Some(t(10))));
    assert_eq!(std::fs::read_dir(&mails).unwrap().count(), 1);
}

#[test]
fn a_claim_holds_a_message_until_its_lease_ends_and_a_sent_one_is_never_claimed() {
    let mut s = setup();
    let alert = firing_alert(&s.db);
    let config = smtp_config(closed_port());
    queue(&mut s.store, &notice(alert, NoticeKind::Firing), &config, t(0));
    let id = s.store.outbox().all().unwrap()[0].id;

    assert!(!s.store.outbox_mut().claim(id, t(-1), t(60)).unwrap(), "not due yet");
    assert!(s.store.outbox_mut().claim(id, t(0), t(60)).unwrap());
    assert!(!s.store.outbox_mut().claim(id, t(1), t(61)).unwrap(), "claimed by the first sender");
    assert_eq!(s.store.outbox().due(t(59)).unwrap(), []);
    // The first sender died: its lease ends and another may take it.
    assert!(s.store.outbox_mut().claim(id, t(60), t(120)).unwrap());
    s.store.outbox_mut().mark_sent(id, t(61)).unwrap();
    assert!(!s.store.outbox_mut().claim(id, t(200), t(260)).unwrap(), "sent");
    assert_eq!(alert_state(&s.db, alert), ("notified".to_string(), Some(t(61).as_microsecond())));
}

#[test]
fn the_next_due_time_follows_the_unsent_messages() {
    let mut s = setup();
    let alert = firing_alert(&s.db);
    let config = smtp_config(closed_port());
    assert_eq!(s.store.outbox().next_due().unwrap(), None);
    queue(&mut s.store, &notice(alert, NoticeKind::Firing), &config, t(5));
    queue(&mut s.store, &notice(alert, NoticeKind::Resolved), &config, t(3));
    assert_eq!(s.store.outbox().next_due().unwrap(), Some(t(3)));
    let [firing, resolved] = [0, 1].map(|i| s.store.outbox().all().unwrap()[i].id);
    s.store.outbox_mut().mark_failed(resolved, "refused", t(30)).unwrap();
    assert_eq!(s.store.outbox().next_due().unwrap(), Some(t(5)));
    s.store.outbox_mut().mark_sent(firing, t(6)).unwrap();
    assert_eq!(s.store.outbox().next_due().unwrap(), Some(t(30)));
    s.store.outbox_mut().mark_sent(resolved, t(30)).unwrap();
    assert_eq!(s.store.outbox().next_due().unwrap(), None);
}

#[test]
fn only_a_firing_notice_moves_its_alert_to_notified() {
    let mut s = setup();
    let alert = firing_alert(&s.db);
    let config = smtp_config(closed_port());
    queue(&mut s.store, &notice(alert, NoticeKind::Resolved), &config, t(0));
    let id = s.store.outbox().all().unwrap()[0].id;
    s.store.outbox_mut().mark_sent(id, t(1)).unwrap();
    assert_eq!(alert_state(&s.db, alert), ("firing".to_string(), None));
    let row = &s.store.outbox().all().unwrap()[0];
    assert_eq!((row.attempts, row.sent_at), (1, Some(t(1))));
}

#[test]
fn deleting_an_unsent_message_keeps_the_sent_ones() {
    let mut s = setup();
    let alert = firing_alert(&s.db);
    let config = smtp_config(closed_port());
    let sent = queue(&mut s.store, &notice(alert, NoticeKind::Firing), &config, t(0));
    let unsent = queue(&mut s.store, &notice(alert, NoticeKind::Resolved), &config, t(0));
    let sent_id = s.store.outbox().all().unwrap()[0].id;
    s.store.outbox_mut().mark_sent(sent_id, t(1)).unwrap();
    s.store.outbox_mut().delete_unsent(&sent[0].message_id).unwrap();
    s.store.outbox_mut().delete_unsent(&unsent[0].message_id).unwrap();
    let left: Vec<String> = s.store.outbox().all().unwrap().into_iter().map(|r| r.message_id).collect();
    assert_eq!(left, [sent[0].message_id.clone()]);
}
