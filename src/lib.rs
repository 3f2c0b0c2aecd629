//! walwatch: PostgreSQL checkpoint history from the server log.
//!
//! The pipeline is visible in the module tree:
//! `source` (bytes: files, .gz, .zst, stdin) → `frame` (records: stderr with
//! any log_line_prefix, csvlog, jsonlog, syslog) → `classify` (typed, trusted
//! events, every language PostgreSQL ships) → `store` (SQLite) → `analyze` (the
//! max_wal_size suggestion, alert rules; `settings` is what they know of the
//! server) → `alert` (lifecycle, mail, webhook) → `cmd` (what a user runs). `event` is the vocabulary they share.

pub mod alert;
pub mod analyze;
pub mod catalog;
pub mod classify;
pub mod cli;
pub mod cmd;
pub mod config;
pub mod daemon;
pub mod evaluate;
pub mod frame;
pub mod guc;
pub mod ingest;
pub mod model;
pub mod output;
pub mod settings;
pub mod source;
pub mod store;
pub mod timefmt;
