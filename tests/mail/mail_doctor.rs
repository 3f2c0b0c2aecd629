//! `walwatch doctor`'s mail check against a real SMTP server (connect and
//! EHLO: nothing is sent) and against a port nothing listens on.

use std::fs;

use serde_json::Value;

use crate::support::smtp::{free_port, mail_config, SinkOptions, SmtpSink};
use crate::support::{describe, walwatch};

/// The mail finding and the exit status of doctor with `mail` as [mail].
fn mail_finding(dir: &std::path::Path, mail: &str) -> (Option<i32>, Value) {
    let logs = dir.join("logs");
    fs::create_dir_all(&logs).unwrap();
    fs::write(logs.join("postgresql.log"), "").unwrap();
    let config = dir.join("walwatch.toml");
    let text = format!(
        "[store]\npath = {:?}\n\n[[cluster]]\nname = \"c\"\nlogs = [{:?}]\n\n{mail}",
        dir.join("w.db"),
        logs.join("*.log")
    );
    fs::write(&config, text).unwrap();
    // Checked as this test's own user: as root, doctor would otherwise check
    // the walwatch user when one exists (an installed package leaves it),
    // who may not write the test's private directory.
    let me = std::process::Command::new("id").arg("-un").output().unwrap();
    let me = String::from_utf8(me.stdout).unwrap().trim().to_string();
    let out = walwatch().args(["doctor", "--format", "json", "--user", &me, "--config"]).arg(&config).output().unwrap();
    let findings: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", describe(&out)));
    let mail = findings.as_array().unwrap().iter().find(|f| f["check"] == "mail").unwrap().clone();
    (out.status.code(), mail)
}

#[test]
fn doctor_says_the_smtp_server_answers_and_sends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let sink = SmtpSink::start(&dir.path().join("sink"), free_port(), SinkOptions::default());
    let (code, mail) = mail_finding(dir.path(), &mail_config(sink.port));
    assert_eq!(mail["status"], "ok", "{mail}");
    assert_eq!(mail["message"], format!("the SMTP server at 127.0.0.1:{} answered EHLO", sink.port));
    // The cluster has no postgresql.conf to check and no daemon runs: warnings, not errors.
    assert_eq!(code, Some(0));
    assert_eq!(sink.messages().len(), 0);
}

#[test]
fn doctor_says_a_closed_smtp_port_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let (code, mail) = mail_finding(dir.path(), &mail_config(port));
    assert_eq!(mail["status"], "error", "{mail}");
    let message = mail["message"].as_str().unwrap();
    assert!(message.starts_with(&format!("the SMTP server at 127.0.0.1:{port}: ")), "{message}");
    assert!(message.contains("Connection refused"), "{message}");
    assert!(mail["fix"].as_str().unwrap().ends_with("then `walwatch alerts test-mail`"));
    assert_eq!(code, Some(1));
}
