//! `walwatch history`: the history per cluster and hour, day, week or month
//! (analyze/history.rs counts; this file picks the range and prints).
//!
//! The range is `--since`/`--until`, else each cluster's first to last
//! checkpoint or counted event (those dated beyond the clock-skew tolerance
//! left out), widened to whole buckets in `--tz`. A cluster without data in it still gets its
//! zero rows, and a note on stderr: an empty table must not read as a quiet
//! server when the log simply does not reach that far.
//!
//! `--chart FILE.png` draws one cluster's WAL rate per checkpoint cycle over
//! the rows' range (digest/chart.rs, the digest's picture) and says on
//! stderr where it went; stdout keeps the table, JSON or CSV.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use jiff::{tz::TimeZone, SignedDuration, Timestamp};
use serde::Serialize;

use crate::analyze::buckets::{self, Bucket, By};
use crate::analyze::history::change;
use crate::analyze::history::{self, Row};
use crate::analyze::storm::PacingTimeline;
use crate::cli::{ByArg, HistoryArgs, OutputFormat};
use crate::digest::chart;
use crate::digest::render::Picture as Chart;
use crate::output::{self, grouped, grouped_f, spark};
use crate::store::fan_out::fan_out;
use crate::store::Store;
use crate::timefmt::{parse_when, rfc3339};

pub(crate) fn run(args: HistoryArgs) -> Result<ExitCode> {
    let tz = zone(args.tz.as_deref())?;
    let by = by(args.by);
    let super::Loaded { rules, db, .. } = super::config_and_db(&args.common)?;
    let store = Store::open_read_only(&db)?;
    let asked = asked_range(&args.window, Timestamp::now())?;
    let tolerance = rules.clock_skew_tolerance();
    let mut out = std::io::stdout().lock();
    let mut periods = Vec::new();
    let clusters = super::clusters(&store, args.window.cluster.as_deref())?;
    if args.chart.is_some() && clusters.len() != 1 {
        bail!("--chart draws one cluster: add --cluster, one of: {}", clusters.join(", "));
    }
    let mut chart = None;
    let mut earliest: Option<Timestamp> = None;
    let mut partial = Partial::default();
    let mut work = Vec::new();
    for cluster in clusters {
        let Some(buckets) = cluster_buckets(&store, &cluster, asked, by, &tz, tolerance, &mut partial)? else {
            continue;
        };
        let start = buckets.first().map(|b| b.start.timestamp());
        earliest = earliest.into_iter().chain(start).min();
        if args.chart.is_some() {
            chart = Some(draw_chart(&store, &cluster, &buckets, &tz)?);
        }
        work.push((cluster, buckets));
    }
    partial.finish();
    // Each cluster's rows are an independent read: a central's clusters
    // are read on every core.
    let read = |store: &Store, (cluster, buckets): &(String, Vec<Bucket>)| -> Result<Period> {
        let pacing = PacingTimeline::load(store, cluster)?;
        let rows = history::rows_paced(store, cluster, buckets, &pacing)?;
        let compare = if args.compare { Some(compare(store, cluster, buckets, by, &pacing)?) } else { None };
        Ok(Period { rows, compare })
    };
    for ((cluster, _), period) in work.iter().zip(fan_out(&store, &work, read)?) {
        note_empty(cluster, &period.rows);
        periods.push(period);
    }
    note_pruned(&store, earliest, "buckets before it are empty")?;
    match (args.format, args.compare) {
        (OutputFormat::Json, false) => {
            output::json(&mut out, &periods.iter().flat_map(|p| &p.rows).collect::<Vec<_>>())?
        }
        (OutputFormat::Json, true) => {
            output::json(&mut out, &periods.iter().filter_map(|p| p.compare.as_ref()).collect::<Vec<_>>())?
        }
        (OutputFormat::Csv, compare) => csv(&mut out, &periods, compare)?,
        (OutputFormat::Table, _) => table(&mut out, &periods, by, &tz)?,
    }
    if let Some(path) = &args.chart {
        write_chart(path, chart)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `--chart`: the PNG of one cluster over the rows' range, and what it shows.
fn draw_chart(store: &Store, cluster: &str, buckets: &[Bucket], tz: &TimeZone) -> Result<Chart> {
    let (from, to) = match (buckets.first(), buckets.last()) {
        (Some(first), Some(last)) => (first.start.timestamp(), last.end.timestamp()),
        _ => bail!("--chart: cluster {cluster:?} has no range to draw"),
    };
    let settings = crate::settings::current(store, cluster)?;
    let input = chart::input(store, cluster, &settings, (from, to), tz.clone())?;
    let png = chart::render_png(&input)?;
    Ok(Chart { png, alt: chart::alt_text(&input) })
}

/// Writes the chart, saying where on stderr (stdout is the table's or the JSON's).
fn write_chart(path: &std::path::Path, chart: Option<Chart>) -> Result<()> {
    let Some(chart) = chart else {
        bail!("--chart: the cluster has no history to draw; nothing written to {}", path.display());
    };
    std::fs::write(path, &chart.png).with_context(|| format!("writing the chart to {}", path.display()))?;
    super::note(format_args!(
        "walwatch: chart written to {} ({} bytes): {}",
        path.display(),
        chart.png.len(),
        chart.alt
    ));
    Ok(())
}

/// One cluster's rows, and with `--compare` the whole range against the one before.
struct Period {
    rows: Vec<Row>,
    compare: Option<Comparison>,
}

fn by(arg: ByArg) -> By {
    match arg {
        ByArg::Hour => By::Hour,
        ByArg::Day => By::Day,
        ByArg::Week => By::Week,
        ByArg::Month => By::Month,
    }
}

/// `--tz`, else the tables' zone: UTC with `--utc`, else the system's.
fn zone(name: Option<&str>) -> Result<TimeZone> {
    match name {
        Some(name) => TimeZone::get(name)
            .with_context(|| format!("unknown --tz {name:?}: use an IANA name such as Europe/Berlin or UTC")),
        None => Ok(crate::timefmt::table_zone().clone()),
    }
}

/// `--since` and `--until` as given (either may be absent).
#[derive(Debug, Clone, Copy)]
struct Asked {
    since: Option<Timestamp>,
    until: Option<Timestamp>,
}

fn asked_range(window: &crate::cli::WindowArgs, now: Timestamp) -> Result<Asked> {
    let when = |v: &Option<String>| v.as_deref().map(|t| parse_when(t, now).map_err(anyhow::Error::msg)).transpose();
    let asked = Asked { since: when(&window.since)?, until: when(&window.until)? };
    super::check_range(asked.since, asked.until)?;
    Ok(asked)
}

/// The buckets of one cluster's range; None (said on stderr) when the
/// cluster has no events and no range was asked for.
fn cluster_buckets(
    store: &Store,
    cluster: &str,
    asked: Asked,
    by: By,
    tz: &TimeZone,
    tolerance: Duration,
    partial: &mut Partial,
) -> Result<Option<Vec<Bucket>>> {
    let (oldest, newest) = store.checkpoints().history_span(cluster, tolerance)?;
    // The newest event is inside the range: `until` is exclusive.
    let end = newest.map(|t| t + SignedDuration::from_micros(1));
    let (Some(since), Some(until)) = (asked.since.or(oldest), asked.until.or(end)) else {
        tracing::warn!("cluster {cluster:?}: no events stored, so no history to show");
        return Ok(None);
    };
    if since >= until {
        tracing::warn!(
            "cluster {cluster:?}: no events between {} and {}; its stored history spans {} to {}",
            rfc3339(since),
            rfc3339(until),
            opt(oldest),
            opt(newest)
        );
        return Ok(None);
    }
    let outside = oldest.is_some_and(|o| since < o) || end.is_some_and(|e| until > e);
    if (asked.since.is_some() || asked.until.is_some()) && outside {
        partial.note(cluster, oldest, newest);
    }
    Ok(Some(buckets::cover(since, until, by, tz)?))
}

/// Clusters whose stored history covers only part of the range asked: the
/// first few named, the rest counted, so that a central's thousand
/// clusters give a few lines on stderr rather than a thousand.
#[derive(Default)]
struct Partial {
    named: usize,
    more: usize,
}

impl Partial {
    const NAMED: usize = 3;

    fn note(&mut self, cluster: &str, oldest: Option<Timestamp>, newest: Option<Timestamp>) {
        if self.named == Self::NAMED {
            self.more += 1;
            return;
        }
        self.named += 1;
        tracing::warn!(
            "cluster {cluster:?}: its stored history spans {} to {} only: buckets outside that show no data, not no activity",
            opt(oldest),
            opt(newest)
        );
    }

    fn finish(self) {
        if self.more > 0 {
            tracing::warn!(
                "{} more cluster(s) with a stored history that covers only part of the range: buckets outside it show no data, not no activity",
                self.more
            );
        }
    }
}

fn opt(t: Option<Timestamp>) -> String {
    t.map_or_else(|| "nothing".into(), rfc3339)
}

/// "Never fail silently": a range of zeros gets a sentence on stderr.
/// Said on stderr (the JSON and CSV keys are fixed) when the range starts
/// before rows the daily prune deleted: those buckets are empty for that reason.
pub(super) fn note_pruned(store: &Store, since: Option<Timestamp>, consequence: &str) -> Result<()> {
    let Some(since) = since else { return Ok(()) };
    if let Some(note) = store.retention().recorded()?.note_for_range(since, consequence) {
        super::note(note);
    }
    Ok(())
}

fn note_empty(cluster: &str, rows: &[Row]) {
    if let (Some(first), Some(last)) = (rows.first(), rows.last()) {
        if rows.iter().all(Row::is_empty) {
            tracing::warn!(
                "cluster {cluster:?}: no checkpoints or events from {} to {}",
                buckets::rfc3339_local(&first.bucket_start),
                buckets::rfc3339_local(&last.bucket_end)
            );
        }
    }
}

// --- --compare ---

/// `--compare --format json`: one object per cluster.
#[derive(Debug, Serialize)]
struct Comparison {
    cluster: String,
    /// The whole range as one row.
    period: Row,
    /// The as many buckets just before it, as one row.
    previous: Row,
    /// (period - previous) / previous in %; null when previous is 0 or absent.
    change_pct: Changes,
}

/// The changes by figure, serialized as one object in [`COMPARED`]'s order
/// (a `serde_json::Map` would sort the keys alphabetically).
#[derive(Debug)]
struct Changes(Vec<(&'static str, Option<f64>)>);

impl Serialize for Changes {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, change) in &self.0 {
            map.serialize_entry(name, change)?;
        }
        map.end()
    }
}

/// One figure of a row, when it has one.
type Figure = fn(&Row) -> Option<f64>;

/// The figures compared, by name (the JSON keys, or key_subkey).
const COMPARED: [(&str, Figure); 14] = [
    ("checkpoints", |r| Some((r.checkpoints.total() + r.restartpoints.total()) as f64)),
    ("forced", |r| Some(r.forced() as f64)),
    ("forced_share", |r| r.forced_share),
    ("too_frequent", |r| Some(r.too_frequent as f64)),
    ("wal_written_mb", |r| Some(r.wal_written_mb)),
    ("wal_rate_kb_s_p95", |r| r.wal_rate_kb_s.p95),
    ("wal_rate_kb_s_max", |r| r.wal_rate_kb_s.max),
    ("sync_s_max", |r| r.sync_s_max),
    ("buffers_written", |r| Some(r.buffers_written as f64)),
    ("wal_files_added", |r| Some(r.wal_files_added as f64)),
    ("server_starts", |r| Some(r.server_starts as f64)),
    ("crashes", |r| Some(r.crashes as f64)),
    ("parameter_changes", |r| Some(r.parameter_changes as f64)),
    ("alerts_fired", |r| Some(r.alerts_fired as f64)),
];

fn compare(store: &Store, cluster: &str, buckets: &[Bucket], by: By, pacing: &PacingTimeline) -> Result<Comparison> {
    let (first, last) = (&buckets[0], &buckets[buckets.len() - 1]);
    let whole = Bucket { start: first.start.clone(), end: last.end.clone() };
    let before = Bucket { start: buckets::back(&first.start, by, buckets.len())?, end: first.start.clone() };
    let one = |b: Bucket| history::rows_paced(store, cluster, &[b], pacing).map(|mut r| r.remove(0));
    let (period, previous) = (one(whole)?, one(before)?);
    let change_pct =
        Changes(COMPARED.iter().map(|(name, value)| (*name, change(value(&previous), value(&period)))).collect());
    Ok(Comparison { cluster: cluster.to_string(), period, previous, change_pct })
}

// --- CSV ---

const CSV_HEADER: [&str; 33] = [
    "cluster",
    "bucket_start",
    "bucket_end",
    "checkpoints_shutdown",
    "checkpoints_end-of-recovery",
    "checkpoints_wal",
    "checkpoints_time",
    "checkpoints_manual",
    "restartpoints_shutdown",
    "restartpoints_end-of-recovery",
    "restartpoints_wal",
    "restartpoints_time",
    "restartpoints_manual",
    "forced_share",
    "too_frequent",
    "wal_written_mb",
    "wal_rate_kb_s_p50",
    "wal_rate_kb_s_p95",
    "wal_rate_kb_s_max",
    "write_s_p95",
    "write_mb_s_p95",
    "pace_ratio_p95",
    "sync_s_p95",
    "sync_s_max",
    "sync_longest_s_max",
    "buffers_written",
    "wal_files_added",
    "wal_files_removed",
    "wal_files_recycled",
    "server_starts",
    "crashes",
    "parameter_changes",
    "alerts_fired",
];

/// The JSON's fields flattened (`checkpoints_wal`), in its order; with
/// `--compare`, the two periods of each cluster, named in a first column.
fn csv(out: &mut impl Write, periods: &[Period], compare: bool) -> Result<()> {
    let mut rows = Vec::new();
    for p in periods {
        match (&p.compare, compare) {
            (Some(c), true) => {
                rows.push([vec!["period".to_string()], cells(&c.period)].concat());
                rows.push([vec!["previous".to_string()], cells(&c.previous)].concat());
            }
            _ => rows.extend(p.rows.iter().map(cells)),
        }
    }
    let header: Vec<&str> = if compare { [&["period"][..], &CSV_HEADER[..]].concat() } else { CSV_HEADER.to_vec() };
    output::csv(out, &header, &rows)?;
    Ok(())
}

fn cells(r: &Row) -> Vec<String> {
    let o = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    let t = |t: &history::Triggers| [t.shutdown, t.end_of_recovery, t.wal, t.time, t.manual].map(|n| n.to_string());
    let mut c = vec![r.cluster.clone(), buckets::rfc3339_local(&r.bucket_start), buckets::rfc3339_local(&r.bucket_end)];
    c.extend(t(&r.checkpoints));
    c.extend(t(&r.restartpoints));
    c.extend([o(r.forced_share), r.too_frequent.to_string(), r.wal_written_mb.to_string()]);
    c.extend([r.wal_rate_kb_s.p50, r.wal_rate_kb_s.p95, r.wal_rate_kb_s.max].map(o));
    c.extend(
        [r.write_s_p95, r.write_mb_s_p95, r.pace_ratio_p95, r.sync_s_p95, r.sync_s_max, r.sync_longest_s_max].map(o),
    );
    c.extend(
        [
            r.buffers_written,
            r.wal_files_added,
            r.wal_files_removed,
            r.wal_files_recycled,
            r.server_starts,
            r.crashes,
            r.parameter_changes,
            r.alerts_fired,
        ]
        .map(|n| n.to_string()),
    );
    c
}

// --- table ---

const TABLE_HEADER: [&str; 19] = [
    "cluster",
    "bucket",
    "ckpts",
    "forced",
    "timed",
    "forced %",
    "too freq",
    "WAL MB",
    "rate p95 kB/s",
    "rate max kB/s",
    "write p95 s",
    "write p95 MB/s",
    "pace p95",
    "sync max s",
    "buffers",
    "WAL files +/-/recycled",
    "starts",
    "crashes",
    "alerts",
];

fn table(out: &mut impl Write, periods: &[Period], by: By, tz: &TimeZone) -> Result<()> {
    let zone = tz.iana_name().unwrap_or("the system's zone");
    writeln!(out, "buckets: {} in {zone}; ckpts counts checkpoints and restartpoints started", by_name(by))?;
    let rows: Vec<Vec<String>> = periods.iter().flat_map(|p| &p.rows).map(|r| table_cells(r, by)).collect();
    output::table(out, &TABLE_HEADER, &rows, &TABLE_HEADER[2..])?;
    for p in periods {
        sparklines(out, &p.rows)?;
        if let Some(c) = &p.compare {
            comparison(out, c)?;
        }
    }
    Ok(())
}

fn by_name(by: By) -> &'static str {
    match by {
        By::Hour => "hours",
        By::Day => "days",
        By::Week => "weeks from Monday",
        By::Month => "months",
    }
}

/// A bucket as a person names it; an hour carries its offset, as an autumn
/// night has two 02:00 hours.
fn label(r: &Row, by: By) -> String {
    let z = &r.bucket_start;
    let long = z.timestamp().duration_until(r.bucket_end.timestamp());
    let odd = match by {
        By::Day if long != SignedDuration::from_hours(24) => format!(" ({}h)", long.as_hours()),
        _ => String::new(),
    };
    match by {
        By::Hour => z.strftime("%Y-%m-%d %H:%M %:z").to_string(),
        By::Day => format!("{}{odd}", z.strftime("%Y-%m-%d %a")),
        By::Week => z.strftime("%Y-%m-%d W%V").to_string(),
        By::Month => z.strftime("%Y-%m").to_string(),
    }
}

fn table_cells(r: &Row, by: By) -> Vec<String> {
    let all = r.checkpoints.total() + r.restartpoints.total();
    let num = |v: Option<f64>, decimals: usize| v.map_or_else(|| "-".into(), |v| grouped_f(v, decimals));
    vec![
        r.cluster.clone(),
        label(r, by),
        grouped(all),
        grouped(r.forced()),
        grouped(r.checkpoints.time + r.restartpoints.time),
        num(r.forced_share.map(|s| s * 100.0), 0),
        grouped(r.too_frequent),
        grouped_f(r.wal_written_mb, 1),
        num(r.wal_rate_kb_s.p95, 1),
        num(r.wal_rate_kb_s.max, 1),
        num(r.write_s_p95, 3),
        num(r.write_mb_s_p95, 1),
        num(r.pace_ratio_p95, 1),
        num(r.sync_s_max, 3),
        grouped(r.buffers_written),
        format!("{}/{}/{}", grouped(r.wal_files_added), grouped(r.wal_files_removed), grouped(r.wal_files_recycled)),
        grouped(r.server_starts),
        grouped(r.crashes),
        grouped(r.alerts_fired),
    ]
}

/// One line per figure across a cluster's rows, oldest first.
fn sparklines(out: &mut impl Write, rows: &[Row]) -> Result<()> {
    let Some(first) = rows.first() else { return Ok(()) };
    let rates: Vec<Option<f64>> = rows.iter().map(|r| r.wal_rate_kb_s.p95).collect();
    let forced: Vec<Option<f64>> = rows.iter().map(|r| Some(r.forced() as f64)).collect();
    let peak = |v: &[Option<f64>]| v.iter().flatten().fold(0.0f64, |m, x| m.max(*x));
    writeln!(out)?;
    let from = buckets::rfc3339_local(&first.bucket_start);
    output::line(out, format!("{} over {} rows from {from}:", first.cluster, rows.len()))?;
    writeln!(
        out,
        "  WAL rate p95  {}  max {} kB/s (blank: no usable cycle)",
        spark(&rates),
        grouped_f(peak(&rates), 1)
    )?;
    writeln!(out, "  forced        {}  max {}", spark(&forced), grouped(peak(&forced) as i64))?;
    Ok(())
}

fn comparison(out: &mut impl Write, c: &Comparison) -> Result<()> {
    let span =
        |r: &Row| format!("{} to {}", buckets::rfc3339_local(&r.bucket_start), buckets::rfc3339_local(&r.bucket_end));
    writeln!(out, "  compared: {} against {}", span(&c.period), span(&c.previous))?;
    let header = ["", "previous", "this period", "change"];
    let rows: Vec<Vec<String>> = COMPARED
        .iter()
        .map(|(name, value)| {
            let cell = |v: Option<f64>| {
                v.map_or_else(
                    || "-".into(),
                    |v| grouped_f(v, 3).trim_end_matches('0').trim_end_matches('.').to_string(),
                )
            };
            let pct = change(value(&c.previous), value(&c.period)).map_or_else(|| "-".into(), |p| format!("{p:+.1}%"));
            vec![format!("  {name}"), cell(value(&c.previous)), cell(value(&c.period)), pct]
        })
        .collect();
    output::table(out, &header, &rows, &header[1..])?;
    if c.previous.is_empty() {
        writeln!(out, "  (nothing is stored for the previous period: no change can be given)")?;
    }
    Ok(())
}
