//! The mail transports (lettre) and the webhook (ureq), each sending the
//! stored bytes as they are: a retry re-sends the identical message.

use lettre::address::Envelope;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{FileTransport, SendmailTransport, SmtpTransport, Transport};

use super::DeliverError;
use lettre::message::Mailbox;

use crate::config::{MailSection, MailTransport, PasswordSource, SmtpSecurity, SmtpSettings, WebhookSection};

/// A mail transport built from `[mail]`, its envelope checked once when it
/// is built (From, and `[mail] to`: a mail goes nowhere without them).
pub(crate) struct MailSender {
    kind: MailKind,
    envelope: Envelope,
}

enum MailKind {
    Smtp(SmtpTransport),
    Sendmail(SendmailTransport),
    File(FileTransport),
}

impl MailSender {
    pub(crate) fn new(mail: &MailSection) -> Result<MailSender, DeliverError> {
        let to = mail.to.iter().map(|m| m.email.clone()).collect();
        let envelope = Envelope::new(Some(mail.from.email.clone()), to)
            .map_err(|e| DeliverError::Setup(format!("mail envelope: {e}")))?;
        let kind = match &mail.transport {
            MailTransport::Smtp(smtp) => MailKind::Smtp(smtp_transport(smtp)?),
            MailTransport::Sendmail { command } => MailKind::Sendmail(SendmailTransport::new_with_command(command)),
            MailTransport::File { directory } => {
                // lettre writes into the directory; a missing one would fail every send with a bare ENOENT.
                std::fs::create_dir_all(directory).map_err(|e| {
                    DeliverError::Setup(format!("cannot create the mail directory {}: {e}", directory.display()))
                })?;
                MailKind::File(FileTransport::new(directory))
            }
        };
        Ok(MailSender { kind, envelope })
    }

    /// Sends `payload` exactly to `to` (the configuration's recipients for
    /// its kind, or `walwatch digest --to`), with `[mail] from` as the
    /// envelope sender; the payload's To header names the same addresses.
    /// Err is the reason, fit for the outbox's last_error.
    pub(crate) fn send_to(&self, payload: &str, to: &[Mailbox]) -> Result<(), String> {
        let envelope = Envelope::new(self.envelope.from().cloned(), to.iter().map(|m| m.email.clone()).collect())
            .map_err(|e| format!("mail envelope: {e}"))?;
        self.send_with(&envelope, payload)
    }

    fn send_with(&self, envelope: &Envelope, payload: &str) -> Result<(), String> {
        let bytes = payload.as_bytes();
        match &self.kind {
            MailKind::Smtp(t) => t.send_raw(envelope, bytes).map(drop).map_err(|e| chain(&e)),
            MailKind::Sendmail(t) => t.send_raw(envelope, bytes).map_err(|e| chain(&e)),
            MailKind::File(t) => t.send_raw(envelope, bytes).map(drop).map_err(|e| chain(&e)),
        }
    }
}

/// Whether `[mail]` could send now, without sending anything (`walwatch
/// doctor`): the SMTP server is connected to and greeted (EHLO, then
/// STARTTLS or TLS and AUTH as configured), the sendmail command must be an
/// executable file, the file transport's directory must exist. Ok says
/// what answered; Err why it would fail.
pub(crate) fn probe(mail: &MailSection) -> Result<String, DeliverError> {
    match &mail.transport {
        MailTransport::Smtp(smtp) => {
            let transport = smtp_transport(smtp)?;
            let at = format!("{}:{}", smtp.host, smtp.port);
            match transport.test_connection() {
                Ok(true) => Ok(format!("the SMTP server at {at} answered EHLO")),
                Ok(false) => Err(DeliverError::TestFailed(format!("the SMTP server at {at} closed the connection"))),
                Err(e) => Err(DeliverError::TestFailed(format!("the SMTP server at {at}: {}", chain(&e)))),
            }
        }
        MailTransport::Sendmail { command } => {
            use std::os::unix::fs::PermissionsExt;
            let meta = std::fs::metadata(command)
                .map_err(|e| DeliverError::Setup(format!("sendmail command {}: {e}", command.display())))?;
            match meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
                true => Ok(format!("the sendmail command {} is executable", command.display())),
                false => Err(DeliverError::Setup(format!("sendmail command {} is not executable", command.display()))),
            }
        }
        MailTransport::File { directory } => match directory.is_dir() {
            true => Ok(format!("messages are written to {}", directory.display())),
            false => Err(DeliverError::Setup(format!("the mail directory {} does not exist", directory.display()))),
        },
    }
}

fn smtp_transport(smtp: &SmtpSettings) -> Result<SmtpTransport, DeliverError> {
    let tls = match smtp.security {
        SmtpSecurity::None => Tls::None,
        SmtpSecurity::StartTls => Tls::Required(tls_parameters(smtp)?),
        SmtpSecurity::Tls => Tls::Wrapper(tls_parameters(smtp)?),
    };
    let mut builder =
        SmtpTransport::builder_dangerous(smtp.host.as_str()).port(smtp.port).tls(tls).timeout(Some(smtp.timeout));
    if let (Some(user), Some(source)) = (&smtp.username, &smtp.password) {
        builder = builder.credentials(Credentials::new(user.clone(), password(source)?));
    }
    Ok(builder.build())
}

/// The system roots (webpki) plus the private CA of `ca_file`, if any.
fn tls_parameters(smtp: &SmtpSettings) -> Result<TlsParameters, DeliverError> {
    let mut builder = TlsParameters::builder(smtp.host.clone());
    if let Some(path) = &smtp.ca_file {
        let pem = std::fs::read(path)
            .map_err(|e| DeliverError::Setup(format!("cannot read [mail.smtp] ca_file {}: {e}", path.display())))?;
        let cert = Certificate::from_pem(&pem).map_err(|e| {
            DeliverError::Setup(format!(
                "[mail.smtp] ca_file {} is not a PEM certificate: {}",
                path.display(),
                chain(&e)
            ))
        })?;
        builder = builder.add_root_certificate(cert);
    }
    builder.build().map_err(|e| DeliverError::Setup(format!("TLS setup for {}: {}", smtp.host, chain(&e))))
}

/// Read at each connection so a rotated secret needs no restart. A file's
/// trailing newline (what `echo secret > file` leaves) is not part of it.
pub(crate) fn password(source: &PasswordSource) -> Result<String, DeliverError> {
    match source {
        PasswordSource::File(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                DeliverError::Setup(format!(
                    "cannot read the SMTP password file {} ([mail.smtp] password_file): {e}; it must be readable by \
                     the user walwatch runs as",
                    path.display()
                ))
            })?;
            Ok(text.trim_end_matches(['\n', '\r']).to_string())
        }
        PasswordSource::Env(name) => std::env::var(name).map_err(|_| {
            DeliverError::Setup(format!(
                "the environment variable {name} ([mail.smtp] password_env) is not set or not UTF-8"
            ))
        }),
    }
}

/// POSTs the stored JSON. Any 2xx is acceptance; anything else is retried.
pub(crate) struct WebhookSender {
    agent: ureq::Agent,
    url: String,
    authorization: Option<(String, String)>,
}

impl WebhookSender {
    pub(crate) fn new(webhook: &WebhookSection) -> Result<WebhookSender, DeliverError> {
        let config = ureq::Agent::config_builder().timeout_global(Some(webhook.timeout)).build();
        let authorization = match &webhook.authorization_env {
            Some(name) => {
                let token = std::env::var(name).map_err(|_| {
                    DeliverError::Setup(format!(
                        "the environment variable {name} ([webhook] authorization_env) is not set or not UTF-8"
                    ))
                })?;
                let value = if webhook.header.eq_ignore_ascii_case("authorization") {
                    format!("Bearer {token}")
                } else {
                    token
                };
                Some((webhook.header.clone(), value))
            }
            None => None,
        };
        Ok(WebhookSender { agent: config.into(), url: webhook.url.clone(), authorization })
    }

    pub(crate) fn send(&self, message_id: &str, payload: &str) -> Result<(), String> {
        let mut request = self
            .agent
            .post(&self.url)
            .header("Content-Type", "application/json")
            // Lets the receiver drop a re-sent copy.
            .header("Idempotency-Key", message_id);
        if let Some((name, value)) = &self.authorization {
            request = request.header(name.as_str(), value.as_str());
        }
        request.send(payload).map(drop).map_err(|e| format!("webhook {}: {}", self.url, chain(&e)))
    }
}

/// An error with its causes: lettre's top-level messages ("network error")
/// say little without them.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}
