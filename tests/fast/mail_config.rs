//! `[mail]` and `[webhook]` through the library's config parser: every key
//! read, the defaults, and errors with file:line:column and the key.

use std::path::{Path, PathBuf};
use std::time::Duration;

use walwatch::config::{self, MailTransport, PasswordSource, Retry, SmtpSecurity, SmtpSettings};

fn error(text: &str) -> String {
    config::parse(text, Path::new("t.toml")).unwrap_err().to_string()
}

fn assert_error(text: &str, expected_start: &str) {
    let message = error(text);
    assert!(message.starts_with(expected_start), "{text:?}\n gave {message}\n expected {expected_start}…");
}

const HEAD: &str = "[mail]\ntransport = \"smtp\"\nfrom = \"walwatch@db1.example.com\"\nto = [\"dba@example.com\"]\n";

#[test]
fn a_full_smtp_section_is_read() {
    let text = r#"
[mail]
transport = "smtp"
from = "walwatch <walwatch@db1.example.com>"
to = ["dba@example.com", "Ops Team <ops@example.com>"]
retry_initial = "10s"
retry_max = "5m"
[mail.smtp]
host = "smtp.example.com"
port = 2525
security = "tls"
username = "walwatch"
password_file = "/etc/walwatch/smtp-password"
ca_file = "/etc/walwatch/ca.pem"
timeout = "20s"
"#;
    let mail = config::parse(text, Path::new("t.toml")).unwrap().mail.unwrap();
    assert_eq!(mail.from.to_string(), "walwatch <walwatch@db1.example.com>");
    let to: Vec<String> = mail.to.iter().map(|m| m.email.to_string()).collect();
    assert_eq!(to, ["dba@example.com", "ops@example.com"]);
    assert_eq!(mail.retry, Retry { initial: Duration::from_secs(10), max: Duration::from_secs(300) });
    assert_eq!(
        mail.transport,
        MailTransport::Smtp(SmtpSettings {
            host: "smtp.example.com".into(),
            port: 2525,
            security: SmtpSecurity::Tls,
            username: Some("walwatch".into()),
            password: Some(PasswordSource::File("/etc/walwatch/smtp-password".into())),
            ca_file: Some("/etc/walwatch/ca.pem".into()),
            timeout: Duration::from_secs(20),
        })
    );
}

#[test]
fn smtp_defaults_follow_the_security() {
    let parse = |extra: &str| {
        let text = format!("{HEAD}[mail.smtp]\nhost = \"smtp.example.com\"\n{extra}");
        match config::parse(&text, Path::new("t.toml")).unwrap().mail.unwrap().transport {
            MailTransport::Smtp(s) => s,
            other => panic!("{other:?}"),
        }
    };
    let starttls = parse("");
    assert_eq!(
        (starttls.security, starttls.port, starttls.timeout),
        (SmtpSecurity::StartTls, 587, Duration::from_secs(30))
    );
    assert_eq!(parse("security = \"tls\"\n").port, 465);
    let env = parse("username = \"u\"\npassword_env = \"SMTP_PASSWORD\"\n");
    assert_eq!(env.password, Some(PasswordSource::Env("SMTP_PASSWORD".into())));
    let text = format!("{HEAD}[mail.smtp]\nhost = \"::1\"\nsecurity = \"none\"\n");
    match config::parse(&text, Path::new("t.toml")).unwrap().mail.unwrap().transport {
        MailTransport::Smtp(s) => assert_eq!((s.security, s.port), (SmtpSecurity::None, 25)),
        other => panic!("{other:?}"),
    }
    let mail = config::parse(HEAD.replace("\"smtp\"", "\"sendmail\"").as_str(), Path::new("t.toml")).unwrap().mail;
    assert_eq!(mail.unwrap().transport, MailTransport::Sendmail { command: PathBuf::from("/usr/sbin/sendmail") });
    assert_error(HEAD, "t.toml:2:13: mail.transport: transport = \"smtp\" needs a [mail.smtp] section with `host`");
}

#[test]
fn an_inline_password_is_rejected_with_the_alternatives() {
    let message =
        error(&format!("{HEAD}[mail.smtp]\nhost = \"smtp.example.com\"\nusername = \"u\"\npassword = \"hunter2\"\n"));
    assert!(
        message.starts_with("t.toml:8:12: mail.smtp.password: an inline SMTP password is not accepted"),
        "{message}"
    );
    assert!(message.contains("password_file = \"/path\"") && message.contains("password_env = \"NAME\""), "{message}");
    assert!(!message.contains("hunter2"), "the error must not echo the secret: {message}");
}

#[test]
fn unknown_keys_and_bad_values_point_at_them() {
    assert_error(
        &format!("{HEAD}[mail.smtp]\nhots = \"smtp.example.com\"\n"),
        "t.toml:6:1: mail.smtp: unknown field `hots`, expected one of `host`",
    );
    assert_error("[mail]\ntransprot = \"smtp\"\n", "t.toml:2:1: mail: unknown field `transprot`");
    assert_error("[webhook]\nurl = \"http://x\"\ntoken = \"t\"\n", "t.toml:3:1: webhook: unknown field `token`");
    assert_error(
        "[mail]\ntransport = \"smtp\"\nfrom = \"a@example.com\"\nto = [\"dba@example.com\", \"not an address\"]\n",
        "t.toml:4:26: mail.to: to[1]: \"not an address\" is not a mail address",
    );
    assert_error(
        "[mail]\ntransport = \"smtp\"\nfrom = \"@@\"\n",
        "t.toml:3:8: mail.from: from: \"@@\" is not a mail address",
    );
    assert_error(
        "[mail]\ntransport = \"smtp\"\nfrom = \"a@example.com\"\nto = []\n",
        "t.toml:4:6: mail.to: `to` must name at least one recipient",
    );
    assert_error(
        "[mail]\ntransport = \"pigeon\"\n",
        "t.toml:2:13: mail.transport: unknown mail transport \"pigeon\", expected one of smtp, sendmail, file",
    );
    assert_error(
        &format!("{HEAD}[mail.smtp]\nhost = \"h\"\nport = 70000\n"),
        "t.toml:7:8: mail.smtp.port: port 70000 is not between 1 and 65535",
    );
    assert_error(
        &format!("{HEAD}[mail.smtp]\nhost = \"h\"\nusername = \"u\"\n"),
        "t.toml:7:12: mail.smtp.username: `username` needs `password_file` or `password_env`",
    );
    assert_error(
        &format!("{HEAD}[mail.smtp]\nhost = \"h\"\nusername = \"u\"\npassword_file = \"/a\"\npassword_env = \"B\"\n"),
        "t.toml:9:16: mail.smtp.password_env: set either `password_file` or `password_env`, not both",
    );
    assert_error(
        &format!("{HEAD}[mail.smtp]\nhost = \"h\"\nca_file = \"ca.pem\"\n"),
        "t.toml:7:11: mail.smtp.ca_file: \"ca.pem\" is not an absolute path",
    );
    assert_error(
        &HEAD.replace("\"smtp\"", "\"file\""),
        "t.toml:2:13: mail.transport: transport = \"file\" needs [mail.file] `directory`",
    );
    assert_error(
        "[webhook]\nurl = \"ftp://x\"\n",
        "t.toml:2:7: webhook.url: \"ftp://x\" is not an http:// or https:// URL",
    );
    assert_error(
        "[webhook]\nurl = \"http://x\"\nauthorization_env = \"MY TOKEN\"\n",
        "t.toml:3:21: webhook.authorization_env: \"MY TOKEN\" is not an environment variable name",
    );
}

#[test]
fn clear_text_smtp_only_to_localhost_and_the_error_says_why() {
    let message = error(&format!("{HEAD}[mail.smtp]\nhost = \"smtp.example.com\"\nsecurity = \"none\"\n"));
    assert!(
        message.starts_with("t.toml:7:12: mail.smtp.security: security = \"none\" is only allowed for localhost"),
        "{message}"
    );
    assert!(message.contains("clear text"), "{message}");
    for host in ["localhost", "127.0.0.1", "127.0.0.2", "::1", "[::1]"] {
        let text = format!("{HEAD}[mail.smtp]\nhost = \"{host}\"\nsecurity = \"none\"\n");
        assert!(config::parse(&text, Path::new("t.toml")).is_ok(), "{host}");
    }
}

#[test]
fn webhook_section_is_read_with_defaults() {
    let hook = config::parse("[webhook]\nurl = \"https://hooks.example.com/w\"\n", Path::new("t.toml"))
        .unwrap()
        .webhook
        .unwrap();
    assert_eq!(hook.url, "https://hooks.example.com/w");
    assert_eq!(hook.timeout, Duration::from_secs(10));
    assert_eq!(hook.authorization_env, None);
    assert_eq!(hook.header, "Authorization");
    assert_eq!(hook.retry, Retry::default());
    let text = "[webhook]\nurl = \"http://127.0.0.1:9/\"\ntimeout = \"3s\"\nauthorization_env = \"TOKEN\"\nheader = \"X-Api-Key\"\n";
    let hook = config::parse(text, Path::new("t.toml")).unwrap().webhook.unwrap();
    assert_eq!(
        (hook.timeout, hook.authorization_env.as_deref(), hook.header.as_str()),
        (Duration::from_secs(3), Some("TOKEN"), "X-Api-Key")
    );
}
