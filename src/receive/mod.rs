//! Receive: the log lines Vector agents ship from a fleet's hosts to a
//! central walwatch (`[ingest]`). Another source for the same pipeline:
//! each shipped file is kept in a spool of its own, taken once per (host,
//! file, offset), and read by `ingest` exactly like a local log.
//!
//! tokens (who may write which host) → body (decode a request) → naming
//! (which cluster) → spool (keep the lines once, in a directory of the
//! store's own; damaged ones set aside by quarantine) → streams (commit,
//! then read into the store) ← server (the `serve` listener's handler).

pub(crate) mod body;
pub(crate) mod naming;
mod quarantine;
pub(crate) mod server;
mod spool;
mod spool_dir;
pub(crate) mod streams;
pub(crate) mod tokens;

pub(crate) use server::{check, Receiver, PATH};
pub(crate) use tokens::{read_tokens, Token};
