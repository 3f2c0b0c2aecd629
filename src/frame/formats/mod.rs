//! The log formats, each a [`Scan`](super::Scan)ner of its own: the ones
//! PostgreSQL writes (stderr with its `log_line_prefix`, csvlog, jsonlog,
//! syslog), and the envelopes around them of log collectors and managed
//! services (`envelope` is what they share: an outer line unwrapped, the
//! server's line read by the format inside).

pub mod azure;
pub mod cloudsql;
pub mod cnpg;
pub mod csvlog;
pub mod envelope;
pub mod journald;
pub mod jsonlog;
pub mod stderr;
pub mod syslog;
pub mod wrapper;
pub(crate) mod zone_evidence;
