//! Integration tests, fast group. No server and no root: every real fixture against its truth, import behaviour, the config file, the CLI, the tailer model, names shown escaped on a terminal, the alert rules on the fixtures, `history` against truth.json, bounded memory, delivery to files.
//!
//! One test binary per group (not one per file), so that `tests/support`
//! and the library are compiled and linked four times, not once per file.

#[path = "../support/mod.rs"]
mod support;

mod alerts_delivery;
mod advice_shapes;
mod alerts_fixtures;
mod bounded_memory;
mod clock_skew_tolerance;
mod config;
mod config_reference;
mod cst_evidence;
mod cut_lines;
mod doc_links;
mod file_size_limit;
mod fixtures_truth;
mod history;
mod import_behaviour;
mod import_progress;
mod layers;
mod local_time;
mod managed_samples;
mod mail_config;
mod never_silent;
mod readme_formats;
mod recovery;
mod retention;
mod settings_cli;
mod store_compact;
mod store_found;
mod tailer_model;
mod terminal_text;
mod undated;
mod whatif;
mod wild_old_servers;
mod wrapped_logs;
mod write_storm;
