//! `walwatch doctor` on real PostgreSQL 15 clusters: one set up as walwatch
//! needs (every finding ok, exit 0, with the daemon following it and mail
//! to a real SMTP server), one set up wrong (log_checkpoints off, a prefix
//! without a pid, German messages where the locale exists, logs the service
//! user may not read): exit 1, and each finding with its status and fix.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::Value;

use crate::support::daemon::{Daemon, Workspace};
use crate::support::smtp::{mail_config, SinkOptions, SmtpSink};
use crate::support::{describe, walwatch, PgCluster};

fn doctor(config: &Path, extra: &[&str]) -> (Output, Vec<Value>) {
    let out = walwatch().args(["doctor", "--format", "json", "--config"]).arg(config).args(extra).output().unwrap();
    let findings: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", describe(&out)));
    (out, findings.as_array().unwrap().clone())
}

/// (check, status) of each finding, in order.
fn verdicts(findings: &[Value]) -> Vec<(String, String)> {
    findings.iter().map(|f| (f["check"].as_str().unwrap().into(), f["status"].as_str().unwrap().into())).collect()
}

fn finding<'a>(findings: &'a [Value], check: &str) -> &'a Value {
    findings.iter().find(|f| f["check"] == check).unwrap_or_else(|| panic!("no {check} in {findings:?}"))
}

/// The user the tests run as.
fn me() -> String {
    let out = std::process::Command::new("id").arg("-un").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn pair(check: &str, status: &str) -> (String, String) {
    (check.into(), status.into())
}

#[test]
fn doctor_finds_a_cluster_set_up_right_all_ok() {
    let mut pg = PgCluster::init(&[
        ("log_checkpoints", "on"),
        ("logging_collector", "on"),
        ("log_line_prefix", "'%m [%p] %q%u@%d '"),
        ("lc_messages", "'C'"),
    ]);
    pg.start();
    let work = Workspace::new();
    let sink = SmtpSink::start(&work.dir("mail"), crate::support::smtp::free_port(), SinkOptions::default());
    let config = work.config_path();
    let text = format!(
        "[store]\npath = {:?}\n\n[daemon]\npoll_interval = \"200ms\"\n\n[[cluster]]\nname = \"good\"\ndata_directory = {:?}\n\n{}",
        work.db(),
        pg.data_dir(),
        mail_config(sink.port)
    );
    fs::write(&config, text).unwrap();
    let mut daemon = Daemon::start(&config, &work.db(), &work.path().join("daemon.log"));
    daemon.wait_running();
    pg.psql("CHECKPOINT");
    assert!(pg.wait_for_log(Duration::from_secs(30), |l| l.contains("checkpoint complete")));

    // The daemon runs as this user: its access is checked, whether or not a walwatch user exists.
    let me = me();
    let (out, findings) = doctor(&config, &["--user", &me]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let want: Vec<(String, String)> =
        ["postgresql.conf", "log_checkpoints", "log_line_prefix", "lc_messages", "log_destination", "logs"]
            .iter()
            .map(|c| pair(c, "ok"))
            .chain(["store", "mail", "daemon"].iter().map(|c| pair(c, "ok")))
            .collect();
    assert_eq!(verdicts(&findings), want, "{findings:#?}");
    assert!(findings[..6].iter().all(|f| f["cluster"] == "good"));
    assert_eq!(
        finding(&findings, "mail")["message"],
        format!("the SMTP server at 127.0.0.1:{} answered EHLO", sink.port)
    );
    assert!(finding(&findings, "daemon")["message"]
        .as_str()
        .unwrap()
        .starts_with(&format!("running (pid {}", daemon.pid())));
    assert!(finding(&findings, "log_line_prefix")["message"].as_str().unwrap().starts_with("'%m [%p] %q%u@%d ' ("));
    // Nothing was mailed: connect and EHLO only.
    assert_eq!(sink.messages().len(), 0);

    // The report a human reads says the same.
    let table = walwatch().args(["doctor", "--user", &me, "--config"]).arg(&config).output().unwrap();
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.starts_with("cluster good:\n  ok       postgresql.conf: "), "{text}");
    assert!(text.ends_with("0 errors, 0 warnings, 9 ok\n"), "{text}");
}

fn german_exists() -> bool {
    let out = std::process::Command::new("locale").arg("-a").output().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().any(|l| l.to_lowercase().replace('-', "") == "de_de.utf8")
}

#[test]
fn doctor_finds_a_cluster_set_up_wrong_and_says_the_fixes() {
    let german = german_exists();
    let mut settings = vec![
        ("log_checkpoints", "off"),
        ("logging_collector", "on"),
        ("log_line_prefix", "'%m '"),
        // log_file_mode stays 0600: only postgres reads the log.
    ];
    if german {
        settings.push(("lc_messages", "'de_DE.UTF-8'"));
    }
    let mut pg = PgCluster::init(&settings);
    pg.start();
    let work = Workspace::new();
    // A store directory anyone may create the store in: the store is not what is wrong here.
    let store_dir = work.dir("store");
    fs::set_permissions(&store_dir, fs::Permissions::from_mode(0o777)).unwrap();
    fs::set_permissions(work.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let config = work.config_path();
    let text = format!(
        "[store]\npath = {:?}\n\n[[cluster]]\nname = \"wrong\"\ndata_directory = {:?}\n",
        store_dir.join("w.db"),
        pg.data_dir()
    );
    fs::write(&config, text).unwrap();
    fs::set_permissions(&config, fs::Permissions::from_mode(0o644)).unwrap();

    // As root, checking for the user the service would run as.
    let (out, findings) = doctor(&config, &["--user", "nobody"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let lc = if german { "warning" } else { "ok" };
    let want = vec![
        pair("postgresql.conf", "warning"),
        pair("log_checkpoints", "error"),
        pair("log_line_prefix", "error"),
        pair("lc_messages", lc),
        pair("log_destination", "ok"),
        pair("logs", "error"),
        pair("store", "ok"),
        pair("mail", "warning"),
        pair("daemon", "warning"),
    ];
    assert_eq!(verdicts(&findings), want, "{findings:#?}");

    let conf = pg.data_dir().join("postgresql.conf");
    let conf_line = |name| format!("{}:{}", conf.display(), crate::support::conf_line_of(&conf, name));
    let checkpoints = finding(&findings, "log_checkpoints");
    assert_eq!(checkpoints["message"], format!("off ({})", conf_line("log_checkpoints")));
    assert_eq!(
        checkpoints["fix"],
        format!("set `log_checkpoints = on` in {}, then reload (SELECT pg_reload_conf();)", conf.display())
    );
    let prefix = finding(&findings, "log_line_prefix");
    assert_eq!(prefix["message"], format!("'%m ' ({}) has no pid", conf_line("log_line_prefix")));
    assert!(prefix["why"].as_str().unwrap().starts_with("without the pid (%p) before %q walwatch cannot tell"));
    assert_eq!(
        prefix["fix"],
        format!(
            "set `log_line_prefix = '%m [%p] %q%u@%d '` in {}, then reload (SELECT pg_reload_conf();)",
            conf.display()
        )
    );
    if german {
        let lc = finding(&findings, "lc_messages");
        assert!(lc["fix"].as_str().unwrap().starts_with("set `lc_messages = 'C'` in "), "{lc}");
    }
    let logs = finding(&findings, "logs");
    let message = logs["message"].as_str().unwrap();
    let log = pg.log_files().last().unwrap().clone();
    assert!(message.starts_with("nobody cannot read 2 of the 2 file(s) walwatch reads: "), "{message}");
    assert!(message.contains(&format!("{} (Permission denied (os error 13))", log.display())), "{message}");
    let fix = logs["fix"].as_str().unwrap();
    assert!(fix.contains("log_file_mode = 0640") && fix.contains("usermod -aG postgres nobody"), "{fix}");
    assert!(finding(&findings, "postgresql.conf")["message"].as_str().unwrap().starts_with("nobody cannot read "));
    assert_eq!(finding(&findings, "daemon")["status"], "warning");

    // After the fixes the server's settings are ok (the access stays as it was).
    let mut text = fs::read_to_string(&conf).unwrap();
    text += "log_checkpoints = on\nlog_line_prefix = '%m [%p] %q%u@%d '\nlc_messages = 'C'\n";
    fs::write(&conf, text).unwrap();
    pg.reload();
    let (_, findings) = doctor(&config, &["--user", "nobody"]);
    for check in ["log_checkpoints", "log_line_prefix", "lc_messages", "log_destination"] {
        assert_eq!(finding(&findings, check)["status"], "ok", "{check}: {findings:#?}");
    }
}
