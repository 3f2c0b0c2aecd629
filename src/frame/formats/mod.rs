//! The log formats, each a [`Scan`](super::Scan)ner of its own: the ones
//! PostgreSQL writes (stderr with its `log_line_prefix`, csvlog, jsonlog,
//! syslog), and the envelopes around them of log collectors and managed
//! services (`envelope` is what they share: an outer line unwrapped, the
//! server's line read by the format inside).

pub(crate) mod azure;
pub(crate) mod cloudsql;
pub(crate) mod cnpg;
pub mod csvlog;
pub(crate) mod envelope;
pub(crate) mod journald;
pub mod jsonlog;
pub mod stderr;
pub(crate) mod syslog;
pub(crate) mod wrapper;
pub(crate) mod zone_evidence;
