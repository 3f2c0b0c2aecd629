//! The alert lifecycle against a real SMTP server (aiosmtpd) and a real
//! store file: an alert that fired before `[mail]` existed is mailed once
//! `[mail]` is configured, and closes with exactly one RESOLVED mail; one that
//! came and went before `[mail]` existed is never mailed; a rule switched off
//! closes its alert without a mail.

use crate::support;

use std::path::Path;

use jiff::Timestamp;
use serde_json::json;
use support::smtp::{free_port, mail_config, SinkOptions, SmtpSink};
use walwatch::alert::lifecycle;
use walwatch::alert::rules::{Finding, RuleSet};
use walwatch::config::{self, Config};
use walwatch::model::alert::{AlertState, Resolution, Severity};
use walwatch::outbox;
use walwatch::store::Store;

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn parse(text: &str) -> Config {
    config::parse(text, Path::new("t.toml")).unwrap()
}

fn too_frequent() -> Finding {
    Finding {
        rule: "too_frequent",
        key: String::new(),
        severity: Severity::Warning,
        summary: "checkpoints 12 s apart".into(),
        details: vec!["3 checkpoints occurring too frequently".into()],
        figures: json!({ "count": 3 }),
        suggestion: None,
        evidence_at: Some(at("2026-11-22T10:00:00Z")),
    }
}

/// One evaluation as the daemon does it (apply, then send what is due), on a
/// fresh connection each time, as after a restart with a new configuration.
/// At `minute` + 1 minutes from now: the outbox dates a message by the
/// real clock when it is queued, and it must be due when sent.
fn evaluate(db: &Path, config: &Config, findings: Vec<Finding>, minute: i64) -> lifecycle::Changes {
    let now = Timestamp::now() + jiff::SignedDuration::from_mins(minute + 1);
    let mut store = Store::open(db).unwrap();
    let enabled = RuleSet::configure(&config.alerts).unwrap().enabled();
    let changes = lifecycle::apply(&mut store, config, &enabled, "main", findings, now).unwrap();
    let report = outbox::flush(&mut store, config, now).unwrap();
    assert_eq!(report.failed(), 0, "{report:?}");
    changes
}

fn subjects(sink: &SmtpSink) -> Vec<String> {
    sink.messages().iter().map(|m| m.header("Subject")).collect()
}

#[test]
fn an_alert_fired_before_mail_is_mailed_once_then_resolved_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let sink = SmtpSink::start(&dir.path().join("received"), free_port(), SinkOptions::default());
    let mail = parse(&mail_config(sink.port));

    evaluate(&db, &Config::default(), vec![too_frequent()], 0);
    evaluate(&db, &Config::default(), vec![too_frequent()], 1);
    assert!(sink.messages().is_empty());

    evaluate(&db, &mail, vec![too_frequent()], 2);
    evaluate(&db, &mail, vec![too_frequent()], 3);
    let got = subjects(&sink);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].starts_with("[walwatch] WARNING main:"), "{got:?}");
    let row = Store::open(&db).unwrap().alerts().get(1).unwrap().unwrap();
    assert_eq!(row.state, AlertState::Notified);

    evaluate(&db, &mail, vec![], 4);
    evaluate(&db, &mail, vec![], 5);
    let got = subjects(&sink);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got[1].contains("RESOLVED"), "{got:?}");
    let row = Store::open(&db).unwrap().alerts().get(1).unwrap().unwrap();
    assert_eq!(row.resolution, Some(Resolution::Cleared));
}

#[test]
fn an_alert_gone_before_mail_existed_is_never_mailed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let sink = SmtpSink::start(&dir.path().join("received"), free_port(), SinkOptions::default());
    let mail = parse(&mail_config(sink.port));

    evaluate(&db, &Config::default(), vec![too_frequent()], 0);
    let c = evaluate(&db, &Config::default(), vec![], 1);
    assert_eq!(c.resolved.len(), 1);
    evaluate(&db, &mail, vec![], 2);
    evaluate(&db, &mail, vec![], 3);
    assert_eq!(subjects(&sink), Vec::<String>::new());
    assert!(Store::open(&db).unwrap().outbox().all().unwrap().is_empty());
}

#[test]
fn a_rule_switched_off_closes_its_alert_without_a_mail() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let sink = SmtpSink::start(&dir.path().join("received"), free_port(), SinkOptions::default());
    let mail = parse(&mail_config(sink.port));
    let off = parse(&format!("{}\n[alerts.too_frequent]\nenabled = false\n", mail_config(sink.port)));

    evaluate(&db, &mail, vec![too_frequent()], 0);
    assert_eq!(subjects(&sink).len(), 1);
    let c = evaluate(&db, &off, vec![], 1);
    assert_eq!((c.rule_disabled.len(), c.resolved.len()), (1, 0), "{c:?}");
    evaluate(&db, &off, vec![], 2);
    assert_eq!(subjects(&sink).len(), 1, "no RESOLVED mail: {:?}", subjects(&sink));
    let row = Store::open(&db).unwrap().alerts().get(1).unwrap().unwrap();
    assert_eq!((row.state, row.resolution), (AlertState::Resolved, Some(Resolution::RuleDisabled)));

    // Switched on again, the rule fires a new alert, mailed.
    evaluate(&db, &mail, vec![too_frequent()], 3);
    assert_eq!(subjects(&sink).len(), 2);
    let open = Store::open(&db).unwrap().alerts().list(None, false).unwrap();
    assert_eq!(open.iter().map(|a| a.id).collect::<Vec<_>>(), [2]);
}
