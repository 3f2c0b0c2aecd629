//! `walwatch import --report json`: each file's report as one object of
//! an array printed at the end. The keys are a public interface.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::ingest::ImportReport;

/// One file: what its import did, or why it failed.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum FileJson {
    Read(Box<ImportJson>),
    Failed { file: String, cluster: String, error: String },
}

/// A line the report names: its number and what it was.
#[derive(Debug, Serialize)]
pub(super) struct Named {
    line: u64,
    text: String,
}

/// The text report's figures, one key each.
#[derive(Debug, Serialize)]
pub(super) struct ImportJson {
    file: String,
    cluster: String,
    format: &'static str,
    prefix: Option<String>,
    /// Where reading started: non-zero when the file was imported before.
    resumed_at: u64,
    bytes: u64,
    lines: u64,
    entries: u64,
    seconds: f64,
    /// Events read, by kind (rejected ones excluded).
    events: BTreeMap<&'static str, u64>,
    rejected: u64,
    /// The first line refused, and why.
    first_rejected: Option<Named>,
    unmatched: u64,
    first_unmatched: Option<Named>,
    unparsed: u64,
    unreadable: u64,
    /// Complete lines cut short (also in `events`).
    truncated: u64,
    /// Events new to the store.
    stored: u64,
    warnings: Vec<String>,
    /// Why nothing of the file was recorded as read (null: it was).
    misfit: Option<String>,
}

impl FileJson {
    pub(super) fn of(cluster: &str, r: &ImportReport) -> FileJson {
        let named = |(line, text): (u64, String)| Named { line, text };
        FileJson::Read(Box::new(ImportJson {
            file: r.name.clone(),
            cluster: cluster.to_string(),
            format: r.format,
            prefix: r.prefix.clone(),
            resumed_at: r.resumed_at,
            bytes: r.bytes,
            lines: r.frame.lines,
            entries: r.frame.entries,
            seconds: (r.seconds * 1000.0).round() / 1000.0,
            events: r.events.clone(),
            rejected: r.rejected,
            first_rejected: r.first_rejected.map(|(line, why)| named((line, why.to_string()))),
            unmatched: r.unmatched,
            first_unmatched: r.first_unmatched.clone().map(named),
            unparsed: r.unparsed,
            unreadable: r.unreadable,
            truncated: r.truncated,
            stored: r.stored,
            warnings: r.warnings.clone(),
            misfit: r.misfit.clone(),
        }))
    }
}
