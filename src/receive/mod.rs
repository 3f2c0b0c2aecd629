//! Receive: the log lines Vector agents ship from a fleet's hosts to a
//! central walwatch (`[ingest]`, issue 14 §2). Another source for the same
//! pipeline: each shipped file is kept in a spool of its own, taken once per
//! (host, file, offset), and read by `ingest` exactly like a local log.
//!
//! body (decode a request) → naming (which cluster) → spool (keep the lines
//! once) → streams (commit, then read into the store) ← server (HTTP).

pub mod body;
pub mod naming;
pub mod server;
mod spool;
pub mod streams;
mod tls;

pub use server::{read_tokens, Receiver, StartError, PATH};

/// Whether `cert` and `key` make a certificate the receiver can serve
/// (`walwatch doctor`), with the reason when not.
pub fn check_tls(cert: &std::path::Path, key: &std::path::Path) -> Result<(), String> {
    tls::server_config(cert, key).map(drop)
}
