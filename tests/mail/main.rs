//! Integration tests, mail group. Alert mail through a real SMTP server (aiosmtpd): delivery, TLS, AUTH, header injection, bidi markers, the transports, `doctor`'s SMTP check.
//!
//! One test binary per group (not one per file), so that `tests/support`
//! and the library are compiled and linked four times, not once per file.

#[path = "../support/mod.rs"]
mod support;

mod mail_bidi;
mod mail_digest;
mod mail_doctor;
mod mail_lifecycle;
mod mail_smtp;
mod mail_transports;
