//! `walwatch checkpoints`: one row per checkpoint or restartpoint.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{bail, Result};

use crate::analyze::storm::{self, PacingTimeline};
use crate::cli::{CheckpointsArgs, OutputFormat};
use crate::model::event::{CompleteStats, Trigger};
use crate::output::{self, cell, grouped};
use crate::store::{CheckpointRow, Filter, Store};
use crate::timefmt::{rfc3339, table_time};
use serde::Serialize;

/// The CSV header: what the start line says, the complete line's figures,
/// whether that line was cut short, then the write storm the figures show
/// (the JSON keys are the same names).
fn header() -> Vec<&'static str> {
    let head = ["cluster", "kind", "trigger", "flags", "started_at", "completed_at"];
    [&head[..], CompleteStats::FIGURES, &["truncated"], &STORM].concat()
}

/// The write storm's figures, after the log's own ([`storm`]).
const STORM: [&str; 2] = ["write_mb_s", "pace_ratio"];

/// A row as `--format json` prints it: the row's keys, whether its
/// complete line was cut short (its figures after the cut are null), and
/// its write storm.
#[derive(Serialize)]
struct Listed {
    #[serde(flatten)]
    row: CheckpointRow,
    truncated: bool,
    write_mb_s: Option<f64>,
    pace_ratio: Option<f64>,
}

/// The write-storm figures of each row, judged by its cluster's settings
/// at the time it ran (each cluster's timeline read once).
struct Storms<'s> {
    store: &'s Store,
    timelines: std::collections::HashMap<String, PacingTimeline>,
}

impl<'s> Storms<'s> {
    fn new(store: &'s Store) -> Self {
        Storms { store, timelines: Default::default() }
    }

    fn of(&mut self, row: CheckpointRow, truncated: bool) -> Result<Listed> {
        if !self.timelines.contains_key(&row.cluster) {
            self.timelines.insert(row.cluster.clone(), PacingTimeline::load(self.store, &row.cluster)?);
        }
        let pacing = row.started_at.or(row.completed_at).and_then(|at| self.timelines[&row.cluster].at(at));
        let write_mb_s = storm::write_mb_s(row.buffers_written, row.write_s).map(round1);
        let pace_ratio = pacing.and_then(|p| storm::pace_ratio(p, row.trigger, row.write_s)).map(round1);
        Ok(Listed { row, truncated, write_mb_s, pace_ratio })
    }
}

/// One decimal: a rate and a ratio worth reading, not float noise.
fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// How a table marks the completion time of a checkpoint whose complete
/// line was cut short, and the note under the table that says so.
const CUT_MARK: &str = " (cut)";
const CUT_NOTE: &str =
    "(cut): its complete line was cut short (a pager's `>`, the end of the input); the figures after the cut are unknown";

pub(crate) fn run(args: CheckpointsArgs) -> Result<ExitCode> {
    let trigger = match args.trigger.as_deref().map(|t| (t, Trigger::parse(t))) {
        Some((t, None)) => {
            let names: Vec<&str> = Trigger::ALL.iter().map(|t| t.as_str()).collect();
            bail!("unknown --trigger {t:?}: use one of {}", names.join(", "));
        }
        Some((_, known)) => known,
        None => None,
    };
    let filter = super::filter(&args.window, trigger)?;
    let store = Store::open_read_only(&super::config_and_db(&args.common)?.db)?;
    super::check_cluster(&store, filter.cluster.as_deref())?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    render(&store, &filter, args.format, &mut out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

const TABLE_HEADER: [&str; 13] = [
    "cluster",
    "kind",
    "trigger",
    "started_at",
    "completed_at",
    "buffers",
    "write_s",
    "sync_s",
    "total_s",
    "distance_kb",
    "estimate_kb",
    "write_mb_s",
    "pace_ratio",
];

/// The rows of `filter` in `format`, streamed from the store: one row in
/// memory at a time, whatever their number. A table learns its column
/// widths in a first pass over the rows and prints in a second, both in one
/// read transaction so that they see the same rows.
fn render(store: &Store, filter: &Filter, format: OutputFormat, out: &mut impl Write) -> Result<()> {
    let mut storms = Storms::new(store);
    match format {
        OutputFormat::Json => output::json_array(out, |push| {
            store
                .checkpoints()
                .each_marked(filter, |row, truncated| push(&storms.of(row, truncated)?).map_err(anyhow::Error::from))
        }),
        OutputFormat::Csv => output::csv_rows(out, &header(), |push| {
            store.checkpoints().each_marked(filter, |row, truncated| {
                push(&cells(&storms.of(row, truncated)?)).map_err(anyhow::Error::from)
            })
        }),
        OutputFormat::Table => store.in_snapshot(|| {
            let mut layout = output::TableLayout::new(&TABLE_HEADER, &TABLE_HEADER[5..]);
            let mut cut = false;
            store.checkpoints().each_marked(filter, |row, truncated| {
                cut |= truncated;
                layout.widen(&table_cells(&storms.of(row, truncated)?));
                Ok::<(), anyhow::Error>(())
            })?;
            layout.header(out)?;
            store.checkpoints().each_marked(filter, |row, truncated| {
                Ok::<(), anyhow::Error>(layout.line(out, &table_cells(&storms.of(row, truncated)?))?)
            })?;
            if cut {
                writeln!(out, "{CUT_NOTE}")?;
            }
            Ok(())
        }),
    }
}

fn time(t: &Option<jiff::Timestamp>) -> String {
    t.map(rfc3339).unwrap_or_default()
}

fn cells(listed: &Listed) -> Vec<String> {
    let r = &listed.row;
    let storm = [listed.write_mb_s, listed.pace_ratio].map(|v| v.map(|v| v.to_string()).unwrap_or_default());
    let head = [
        r.cluster.clone(),
        r.kind.to_string(),
        cell(&r.trigger),
        r.flags.join(" "),
        time(&r.started_at),
        time(&r.completed_at),
    ];
    let figures = r.figures().iter().map(ToString::to_string).collect::<Vec<_>>();
    head.into_iter().chain(figures).chain([listed.truncated.to_string()]).chain(storm).collect()
}

/// A table's row: local times (or `--utc`), seconds to the millisecond
/// as PostgreSQL logs them, counts grouped by thousands.
fn table_cells(listed: &Listed) -> Vec<String> {
    let (r, truncated) = (&listed.row, listed.truncated);
    let tenth = |v: Option<f64>| v.map(|v| format!("{v:.1}")).unwrap_or_default();
    let local = |t: &Option<jiff::Timestamp>| t.map(table_time).unwrap_or_default();
    let secs = |v: &Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_default();
    let count = |v: Option<i64>| v.map(grouped).unwrap_or_default();
    vec![
        r.cluster.clone(),
        r.kind.to_string(),
        r.trigger.map_or_else(|| "?".into(), |t| t.to_string()),
        local(&r.started_at),
        local(&r.completed_at) + if truncated { CUT_MARK } else { "" },
        count(r.buffers_written),
        secs(&r.write_s),
        secs(&r.sync_s),
        secs(&r.total_s),
        count(r.distance_kb),
        count(r.estimate_kb),
        tenth(listed.write_mb_s),
        tenth(listed.pace_ratio),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreError;

    /// What `walwatch checkpoints` printed before it streamed: every row
    /// collected, then written whole.
    fn collected(store: &Store, filter: &Filter, format: OutputFormat) -> Vec<u8> {
        let mut rows = Vec::new();
        store
            .checkpoints()
            .each_marked(filter, |row, truncated| {
                rows.push((row, truncated));
                Ok::<(), StoreError>(())
            })
            .unwrap();
        let mut storms = Storms::new(store);
        let listed: Vec<Listed> = rows.iter().map(|(row, t)| storms.of(row.clone(), *t).unwrap()).collect();
        let mut out = Vec::new();
        match format {
            OutputFormat::Json => output::json(&mut out, &listed).unwrap(),
            OutputFormat::Csv => {
                let cells: Vec<_> = listed.iter().map(cells).collect();
                output::csv(&mut out, &header(), &cells).unwrap()
            }
            OutputFormat::Table => {
                let table: Vec<Vec<String>> = listed.iter().map(table_cells).collect();
                output::table(&mut out, &TABLE_HEADER, &table, &TABLE_HEADER[5..]).unwrap();
                if rows.iter().any(|(_, t)| *t) {
                    out.extend_from_slice(format!("{CUT_NOTE}\n").as_bytes());
                }
            }
        }
        out
    }

    #[test]
    fn streamed_output_is_the_collected_output_byte_for_byte() {
        use crate::frame::time::TimeContext;
        use crate::ingest::{self, Options};
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("w.db")).unwrap();
        let time = TimeContext::new(Some("UTC")).unwrap();
        for (cluster, file) in [
            ("crash", "tests/fixtures/15-stderr-default-crashimm/log/postgresql-2026-11-22_081334.log"),
            ("crash", "tests/fixtures/15-stderr-default-crashimm/log/postgresql-2026-11-22_081730.log"),
            ("standby", "tests/fixtures/15-stderr-default-standby/log/postgresql-2026-11-22_081258.log"),
            ("noise", "tests/fixtures/15-stderr-default-noise/log/postgresql-2026-11-22_080841.log"),
        ] {
            let id = store.clusters_mut().find_or_create(cluster).unwrap();
            let opts = Options { prefix: Some("%m [%p] %q%u@%d ".into()), ..Options::default() };
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
            ingest::import(&mut store, id, path.to_str().unwrap(), &opts, &time).unwrap();
        }
        let since = "2026-11-22T08:15:00Z".parse().ok();
        let filters = [
            Filter::default(),
            Filter { cluster: Some("crash".into()), ..Filter::default() },
            Filter { since, ..Filter::default() },
            Filter { trigger: Some(Trigger::Time), ..Filter::default() },
            Filter { cluster: Some("nothing".into()), ..Filter::default() },
        ];
        for filter in &filters {
            for format in [OutputFormat::Json, OutputFormat::Csv, OutputFormat::Table] {
                let mut streamed = Vec::new();
                render(&store, filter, format, &mut streamed).unwrap();
                assert_eq!(
                    String::from_utf8(streamed).unwrap(),
                    String::from_utf8(collected(&store, filter, format)).unwrap(),
                    "{filter:?} {format:?}"
                );
            }
        }
        let mut all = Vec::new();
        render(&store, &Filter::default(), OutputFormat::Csv, &mut all).unwrap();
        assert_eq!(
            all.iter().filter(|&&b| b == b'\n').count(),
            1 + store.checkpoints().list(&Filter::default()).unwrap().len()
        );
        let mut none = Vec::new();
        render(&store, &filters[4], OutputFormat::Json, &mut none).unwrap();
        assert_eq!(none, b"[]\n");
    }
}
