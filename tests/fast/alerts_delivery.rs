//! The whole alert path with real parts: a real fixture log imported by the
//! walwatch binary, `walwatch analyze` firing the rules and delivering
//! through the `file` mail transport (real .eml files on disk, parsed
//! here), the alerts moving firing -> notified when the message is written,
//! then re-runs, a resolution, reminders and an acknowledgement — each a
//! separate walwatch process on the same SQLite file.

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use support::walwatch;

fn run_ok(args: &[&str]) -> Vec<u8> {
    let out = walwatch().args(args).output().unwrap();
    assert!(out.status.success(), "walwatch {args:?}: {}", support::describe(&out));
    out.stdout
}

/// The .eml files written so far, oldest first, as text.
fn mails(dir: &Path) -> Vec<String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort_by_key(|p| std::fs::metadata(p).unwrap().modified().unwrap());
    files.iter().map(|p| decoded(&std::fs::read_to_string(p).unwrap())).collect()
}

/// The message with quoted-printable soft line breaks and escapes undone
/// (the bodies are quoted-printable; the headers are plain ASCII here).
fn decoded(mail: &str) -> String {
    let joined = mail.replace("=\r\n", "").replace("=\n", "");
    let bytes = joined.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
        match (bytes[i], hex) {
            (b'=', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn header<'a>(mail: &'a str, name: &str) -> &'a str {
    mail.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("no {name} header in\n{mail}"))
}

struct Setup {
    _tmp: tempfile::TempDir,
    db: PathBuf,
    mail_dir: PathBuf,
    config: PathBuf,
    cluster: String,
}

impl Setup {
    fn new() -> Setup {
        let tmp = tempfile::tempdir().unwrap();
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/15-stderr-default-std");
        let cluster = "std15".to_string();
        let db = tmp.path().join("w.db");
        let mut args =
            vec!["import".to_string(), "--db".into(), db.to_str().unwrap().into(), "--cluster".into(), cluster.clone()];
        for f in std::fs::read_dir(fixture.join("log")).unwrap() {
            args.push(f.unwrap().path().to_str().unwrap().to_string());
        }
        run_ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let mail_dir = tmp.path().join("mail");
        std::fs::create_dir(&mail_dir).unwrap();
        let config = tmp.path().join("walwatch.toml");
        let setup = Setup { _tmp: tmp, db, mail_dir, config, cluster };
        setup.write_config("");
        setup
    }

    fn write_config(&self, alerts: &str) {
        let text = format!(
            "[store]\npath = {:?}\n[mail]\ntransport = \"file\"\nfrom = \"walwatch@example.org\"\nto = [\"dba@example.org\"]\n[mail.file]\ndirectory = {:?}\n{alerts}",
            self.db, self.mail_dir
        );
        std::fs::write(&self.config, text).unwrap();
    }

    fn analyze(&self) -> Value {
        serde_json::from_slice(&run_ok(&["analyze", "--config", self.config.to_str().unwrap(), "--format", "json"]))
            .unwrap()
    }

    fn alerts(&self) -> Vec<Value> {
        let out = run_ok(&["alerts", "--all", "--db", self.db.to_str().unwrap(), "--format", "json"]);
        serde_json::from_slice::<Value>(&out).unwrap().as_array().unwrap().clone()
    }
}

fn rules(list: &Value) -> Vec<String> {
    list.as_array().unwrap().iter().map(|c| c["rule"].as_str().unwrap().to_string()).collect()
}

#[test]
fn analyze_mails_each_alert_once_then_its_resolution_and_reminders() {
    let s = Setup::new();
    let report = s.analyze();
    let fired = rules(&report["clusters"][0]["changes"]["fired"]);
    assert_eq!(fired, ["forced_checkpoints", "too_frequent"], "what this log shows (see alerts_fixtures)");
    let sent = mails(&s.mail_dir);
    assert_eq!(sent.len(), 2);
    // One mail per alert, each with its own stable Message-ID.
    assert_ne!(header(&sent[0], "Message-ID"), header(&sent[1], "Message-ID"));
    let forced = sent.iter().find(|m| m.contains("WAL-triggered checkpoints")).expect("the forced_checkpoints mail");
    assert!(header(forced, "Subject").starts_with(&format!("[walwatch] WARNING {}: ", s.cluster)), "{forced}");
    assert!(forced.contains("ALTER SYSTEM SET max_wal_size = "), "the suggestion's SQL is in the body");
    // Delivered (the file was written): notified.
    for a in s.alerts() {
        assert_eq!(a["state"], "notified", "{a}");
        assert!(a["notified_at"].is_string());
    }

    // A second run (and a third): nothing new is mailed.
    for _ in 0..2 {
        let again = s.analyze();
        assert_eq!(again["clusters"][0]["changes"]["notices"], Value::Array(vec![]));
        assert_eq!(mails(&s.mail_dir).len(), 2);
    }

    // too_frequent turned off: its alert is closed silently (the rule
    // stopped looking; nothing was seen resolving), no resolved mail.
    s.write_config("[alerts.too_frequent]\nenabled = false\n");
    let report = s.analyze();
    assert_eq!(rules(&report["clusters"][0]["changes"]["rule_disabled"]), ["too_frequent"]);
    assert_eq!(report["clusters"][0]["changes"]["resolved"], Value::Array(vec![]));
    assert_eq!(mails(&s.mail_dir).len(), 2);
    let states: Vec<(String, String, Value)> = s
        .alerts()
        .iter()
        .map(|a| {
            (a["rule"].as_str().unwrap().to_string(), a["state"].as_str().unwrap().to_string(), a["resolution"].clone())
        })
        .collect();
    assert_eq!(states.len(), 2);
    assert!(states.contains(&("too_frequent".into(), "resolved".into(), "rule_disabled".into())), "{states:?}");
    assert!(states.contains(&("forced_checkpoints".into(), "notified".into(), Value::Null)), "{states:?}");

    // Reminders every second for the open alert, until acknowledged.
    s.write_config("[alerts]\nreminder_interval = \"1s\"\n[alerts.too_frequent]\nenabled = false\n");
    std::thread::sleep(Duration::from_millis(1100));
    let report = s.analyze();
    assert_eq!(rules(&report["clusters"][0]["changes"]["reminded"]), ["forced_checkpoints"]);
    assert_eq!(report["clusters"][0]["changes"]["notices"][0]["sequence"], 1);
    std::thread::sleep(Duration::from_millis(1100));
    let report = s.analyze();
    assert_eq!(report["clusters"][0]["changes"]["notices"][0]["sequence"], 2);
    let sent = mails(&s.mail_dir);
    assert_eq!(sent.len(), 4);
    let ids: std::collections::BTreeSet<&str> = sent.iter().map(|m| header(m, "Message-ID")).collect();
    assert_eq!(ids.len(), 4, "every reminder is its own message");
    let id = s.alerts().iter().find(|a| a["rule"] == "forced_checkpoints").unwrap()["id"].to_string();
    run_ok(&["alerts", "ack", "--db", s.db.to_str().unwrap(), &id]);
    std::thread::sleep(Duration::from_millis(1100));
    let report = s.analyze();
    assert_eq!(report["clusters"][0]["changes"]["notices"], Value::Array(vec![]));
    assert_eq!(mails(&s.mail_dir).len(), 4);
}
