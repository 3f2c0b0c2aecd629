//! `[mail]` and `[webhook]`: where alert notices go. Absent sections mean no
//! delivery (alerts stay in the store). Secrets are never inline: the SMTP
//! password comes from a file or an environment variable, the webhook token
//! from an environment variable, so the config file can be world-readable
//! in a repository and a leaked file leaks no credential.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use lettre::message::Mailbox;
use serde::Deserialize;
use toml::Spanned;

use super::problem::{absolute, interval, one_of, Problem};

/// The values of `[mail] transport`.
pub(crate) const MAIL_TRANSPORTS: [&str; 3] = ["smtp", "sendmail", "file"];
/// The values of `[mail.smtp] security`.
pub(crate) const SMTP_SECURITY: [&str; 3] = ["starttls", "tls", "none"];

/// `[mail]`
#[derive(Debug, Clone, PartialEq)]
pub struct MailSection {
    pub transport: MailTransport,
    pub from: Mailbox,
    /// At least one.
    pub to: Vec<Mailbox>,
    pub retry: Retry,
}

/// How a message leaves the machine.
#[derive(Debug, Clone, PartialEq)]
pub enum MailTransport {
    Smtp(SmtpSettings),
    /// A sendmail-compatible command (`-i -f FROM -- TO...`, message on stdin).
    Sendmail {
        command: PathBuf,
    },
    /// One .eml file per message in this directory: dry runs and demos.
    File {
        directory: PathBuf,
    },
}

/// `[mail.smtp]`
#[derive(Debug, Clone, PartialEq)]
pub struct SmtpSettings {
    pub host: String,
    pub port: u16,
    pub security: SmtpSecurity,
    /// With `password`: AUTH (PLAIN or LOGIN, as the server offers).
    pub username: Option<String>,
    pub password: Option<PasswordSource>,
    /// PEM file of a private CA trusted in addition to the system roots.
    pub ca_file: Option<PathBuf>,
    /// Per SMTP command, connection included.
    pub timeout: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmtpSecurity {
    /// Plain connection upgraded with STARTTLS (required, never opportunistic).
    StartTls,
    /// Implicit TLS from the first byte (SMTPS).
    Tls,
    /// Clear text: only to a local MTA.
    None,
}

impl SmtpSecurity {
    pub(crate) fn default_port(self) -> u16 {
        match self {
            SmtpSecurity::StartTls => 587,
            SmtpSecurity::Tls => 465,
            SmtpSecurity::None => 25,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SmtpSecurity::StartTls => "starttls",
            SmtpSecurity::Tls => "tls",
            SmtpSecurity::None => "none",
        }
    }
}

/// Where the SMTP password is read, at each connection (so a rotated file
/// is picked up without a restart).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PasswordSource {
    File(PathBuf),
    Env(String),
}

/// Exponential backoff of a message the server did not accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    pub initial: Duration,
    pub max: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Retry { initial: Duration::from_secs(30), max: Duration::from_secs(30 * 60) }
    }
}

/// `[webhook]`
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookSection {
    /// http:// or https://
    pub url: String,
    pub timeout: Duration,
    /// Environment variable holding a token sent in `header`.
    pub authorization_env: Option<String>,
    /// "Authorization" (the default) carries `"Bearer <token>"`; any other
    /// header carries the token as is (e.g. X-Api-Key).
    pub header: String,
    pub retry: Retry,
}

pub(crate) const DEFAULT_SMTP_TIMEOUT: Duration = Duration::from_secs(30);
pub(crate) const DEFAULT_WEBHOOK_TIMEOUT: Duration = Duration::from_secs(10);
pub(crate) const DEFAULT_SENDMAIL: &str = "/usr/sbin/sendmail";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMail {
    transport: Option<Spanned<String>>,
    from: Option<Spanned<String>>,
    to: Option<Spanned<Vec<Spanned<String>>>>,
    retry_initial: Option<Spanned<String>>,
    retry_max: Option<Spanned<String>>,
    smtp: Option<Spanned<RawSmtp>>,
    sendmail: Option<RawSendmail>,
    file: Option<Spanned<RawFile>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSmtp {
    host: Option<Spanned<String>>,
    port: Option<Spanned<i64>>,
    security: Option<Spanned<String>>,
    username: Option<Spanned<String>>,
    /// Only to reject it with advice: serde's "unknown field" would not say why.
    password: Option<Spanned<toml::Value>>,
    password_file: Option<Spanned<PathBuf>>,
    password_env: Option<Spanned<String>>,
    ca_file: Option<Spanned<PathBuf>>,
    timeout: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSendmail {
    command: Option<Spanned<PathBuf>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    directory: Option<Spanned<PathBuf>>,
}

impl RawMail {
    pub(crate) fn validate(self) -> Result<MailSection, Problem> {
        let transport_name = match &self.transport {
            Some(t) => one_of(t, &MAIL_TRANSPORTS, "mail transport")?,
            None => return Err(missing(&self.from, "[mail] needs `transport`: \"smtp\", \"sendmail\" or \"file\"")),
        };
        let from = match &self.from {
            Some(from) => mailbox(from, "from")?,
            None => return Err(missing(&self.transport, "[mail] needs `from`, the sender address")),
        };
        let to = match &self.to {
            Some(list) if !list.get_ref().is_empty() => list
                .get_ref()
                .iter()
                .enumerate()
                .map(|(i, a)| mailbox(a, &format!("to[{i}]")))
                .collect::<Result<Vec<_>, _>>()?,
            Some(list) => return Err(Problem::at(list, "`to` must name at least one recipient".into())),
            None => return Err(missing(&self.transport, "[mail] needs `to`, a list of recipient addresses")),
        };
        let retry = retry(&self.retry_initial, &self.retry_max)?;
        let transport = match transport_name.as_str() {
            "smtp" => match self.smtp {
                Some(smtp) => MailTransport::Smtp(smtp.into_inner().validate(&self.transport)?),
                None => {
                    return Err(missing(
                        &self.transport,
                        "transport = \"smtp\" needs a [mail.smtp] section with `host`",
                    ))
                }
            },
            "sendmail" => {
                let command = self.sendmail.and_then(|s| s.command);
                let command = command.as_ref().map(absolute).transpose()?.map(|p| p.to_path_buf());
                MailTransport::Sendmail { command: command.unwrap_or_else(|| PathBuf::from(DEFAULT_SENDMAIL)) }
            }
            _ => {
                let directory = self.file.as_ref().and_then(|f| f.get_ref().directory.as_ref());
                match directory {
                    Some(d) => MailTransport::File { directory: absolute(d)?.to_path_buf() },
                    None => {
                        return Err(missing(
                            &self.transport,
                            "transport = \"file\" needs [mail.file] `directory`, where the .eml files are written",
                        ))
                    }
                }
            }
        };
        Ok(MailSection { transport, from, to, retry })
    }
}

impl RawSmtp {
    fn validate(self, transport: &Option<Spanned<String>>) -> Result<SmtpSettings, Problem> {
        if let Some(password) = &self.password {
            return Err(Problem::at(
                password,
                "an inline SMTP password is not accepted (the config file is often readable by others or kept in \
                 version control): put it in a file readable only by walwatch and set `password_file = \"/path\"`, or \
                 set `password_env = \"NAME\"` to read it from that environment variable (e.g. a systemd \
                 EnvironmentFile or LoadCredential)"
                    .into(),
            ));
        }
        let host = match &self.host {
            Some(h) if !h.get_ref().trim().is_empty() => h.get_ref().trim().to_string(),
            Some(h) => return Err(Problem::at(h, "`host` must not be empty".into())),
            None => return Err(missing(transport, "[mail.smtp] needs `host`, the SMTP server's name")),
        };
        let security = match &self.security {
            Some(s) => match one_of(s, &SMTP_SECURITY, "SMTP security")?.as_str() {
                "starttls" => SmtpSecurity::StartTls,
                "tls" => SmtpSecurity::Tls,
                _ if is_loopback(&host) => SmtpSecurity::None,
                _ => {
                    return Err(Problem::at(
                        s,
                        format!(
                            "security = \"none\" is only allowed for localhost or a loopback address, not {host:?}: \
                             without TLS the password and the alerts cross the network in clear text and anyone on \
                             the path can read or change them; use \"starttls\" or \"tls\""
                        ),
                    ))
                }
            },
            None => SmtpSecurity::StartTls,
        };
        let port = match &self.port {
            Some(p) => u16::try_from(*p.get_ref())
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| Problem::at(p, format!("port {} is not between 1 and 65535", p.get_ref())))?,
            None => security.default_port(),
        };
        let password = match (&self.password_file, &self.password_env) {
            (Some(_), Some(env)) => {
                return Err(Problem::at(env, "set either `password_file` or `password_env`, not both".into()))
            }
            (Some(file), None) => Some(PasswordSource::File(absolute(file)?.to_path_buf())),
            (None, Some(env)) => Some(PasswordSource::Env(env_name(env)?)),
            (None, None) => None,
        };
        let username = self.username.as_ref().map(|u| u.get_ref().clone());
        match (&username, &password, &self.username) {
            (Some(_), None, Some(u)) => {
                return Err(Problem::at(u, "`username` needs `password_file` or `password_env`".into()))
            }
            (None, Some(_), _) => {
                let at = self.password_file.as_ref().map(|p| p.span()).or(self.password_env.as_ref().map(|e| e.span()));
                let message = "a password needs `username`".to_string();
                return Err(Problem { span: at.unwrap_or(0..0), message });
            }
            _ => {}
        }
        let ca_file = self.ca_file.as_ref().map(absolute).transpose()?.map(|p| p.to_path_buf());
        let timeout = self.timeout.as_ref().map(interval).transpose()?.unwrap_or(DEFAULT_SMTP_TIMEOUT);
        Ok(SmtpSettings { host, port, security, username, password, ca_file, timeout })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWebhook {
    url: Option<Spanned<String>>,
    timeout: Option<Spanned<String>>,
    authorization_env: Option<Spanned<String>>,
    header: Option<Spanned<String>>,
    retry_initial: Option<Spanned<String>>,
    retry_max: Option<Spanned<String>>,
}

impl RawWebhook {
    pub(crate) fn validate(self) -> Result<WebhookSection, Problem> {
        let url = match &self.url {
            Some(u) if u.get_ref().starts_with("http://") || u.get_ref().starts_with("https://") => u.get_ref().clone(),
            Some(u) => {
                return Err(Problem::at(u, format!("{:?} is not an http:// or https:// URL", u.get_ref())));
            }
            None => {
                let at = self.timeout.as_ref().map(|t| t.span()).unwrap_or(0..0);
                return Err(Problem { span: at, message: "[webhook] needs `url`".into() });
            }
        };
        let timeout = self.timeout.as_ref().map(interval).transpose()?.unwrap_or(DEFAULT_WEBHOOK_TIMEOUT);
        let authorization_env = self.authorization_env.as_ref().map(env_name).transpose()?;
        let header = match &self.header {
            Some(h) => header_name(h)?,
            None => "Authorization".to_string(),
        };
        let retry = retry(&self.retry_initial, &self.retry_max)?;
        Ok(WebhookSection { url, timeout, authorization_env, header, retry })
    }
}

/// An error for a missing key, placed at a sibling key when there is one.
fn missing<T>(near: &Option<Spanned<T>>, message: &str) -> Problem {
    Problem { span: near.as_ref().map(|n| n.span()).unwrap_or(0..0), message: message.into() }
}

/// "Name <a@b>" or "a@b"; parsed by lettre, which is what will send it.
pub(super) fn mailbox(text: &Spanned<String>, key: &str) -> Result<Mailbox, Problem> {
    text.get_ref().trim().parse::<Mailbox>().map_err(|e| {
        Problem::at(
            text,
            format!(
                "{key}: {:?} is not a mail address ({e}); expected \"name@example.com\" or \"Name <name@example.com>\"",
                text.get_ref()
            ),
        )
    })
}

fn retry(initial: &Option<Spanned<String>>, max: &Option<Spanned<String>>) -> Result<Retry, Problem> {
    let mut retry = Retry::default();
    if let Some(text) = initial {
        retry.initial = interval(text)?;
    }
    if let Some(text) = max {
        retry.max = interval(text)?;
        if retry.max < retry.initial {
            return Err(Problem::at(text, "retry_max must not be shorter than retry_initial".into()));
        }
    }
    Ok(retry)
}

fn env_name(name: &Spanned<String>) -> Result<String, Problem> {
    let n = name.get_ref();
    let valid = !n.is_empty()
        && !n.starts_with(|c: char| c.is_ascii_digit())
        && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if valid {
        Ok(n.clone())
    } else {
        Err(Problem::at(name, format!("{n:?} is not an environment variable name (letters, digits and _)")))
    }
}

fn header_name(name: &Spanned<String>) -> Result<String, Problem> {
    let n = name.get_ref();
    let valid = !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if valid {
        Ok(n.clone())
    } else {
        Err(Problem::at(name, format!("{n:?} is not an HTTP header name (letters, digits, - and _)")))
    }
}

/// Only a local MTA may be reached without TLS.
fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}
