//! walwatch: PostgreSQL checkpoint history from the server log.
//!
//! The pipeline, as data flows:
//! `source` (bytes: files, .gz, .zst, stdin) → [`frame`] (records: stderr
//! with any log_line_prefix, csvlog, jsonlog, syslog) → [`classify`] (typed,
//! trusted events, every language PostgreSQL ships) → [`store`] (SQLite) →
//! `analyze` (the max_wal_size suggestion, with what `settings` knows of
//! the server) → [`alert`] (the rules, their evaluation and lifecycle, the
//! notices) and [`digest`] (the daily mail with its chart), both sending
//! through the [`outbox`] (mail, webhook, retries).
//! [`ingest`] drives one source through frame → classify → store;
//! `receive` takes the lines Vector agents ship to a central walwatch and
//! hands each shipped file to `ingest`; [`metrics`] serves the store as
//! Prometheus series. On top: [`daemon`] (`walwatch run`) and [`cmd`] (one
//! module per subcommand; [`cli`] only declares them).
//!
//! Beneath the pipeline, imported by it and importing none of it: [`model`]
//! (the vocabulary: events, alert words), [`catalog`] (the messages and
//! levels PostgreSQL writes, as data), [`guc`] (PostgreSQL's settings, their
//! units and defaults), [`config`] (the TOML file), [`timefmt`],
//! [`output`] and `serve` (the HTTP listener under [`metrics`] and
//! `receive`). No module imports one above it: there is no import cycle.

// A `pub` item is one the binary, a test, the benchmark or the example
// uses; everything else is pub(crate) (docs/dev/architecture.md).
#![warn(unreachable_pub)]
// The library serves walwatch's own binary and tests; its docs are read
// with `cargo doc --document-private-items`, where links to crate-private
// items resolve.
#![allow(rustdoc::private_intra_doc_links)]

// Bottom: vocabulary and knowledge.
pub mod catalog;
pub mod config;
pub mod guc;
pub mod model;
pub mod output;
pub mod timefmt;
// The HTTP listener the endpoints run on, bounded against every peer.
pub(crate) mod serve;

// The pipeline, in order.
pub(crate) mod source;
pub mod frame;
pub mod classify;
pub mod store;
pub mod ingest;
// Lines shipped by Vector agents, through `ingest` like a local log.
pub(crate) mod receive;
pub(crate) mod settings;
pub(crate) mod analyze;
// What leaves walwatch: alerts and the digest queue their mails here.
pub mod outbox;
pub mod alert;
pub mod digest;
// The store as Prometheus series (the daemon's endpoint).
pub mod metrics;

// What a user runs.
pub mod cli;
pub mod cmd;
pub mod daemon;
