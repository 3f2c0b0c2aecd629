//! The digest's chart and `walwatch history --chart`: one
//! cluster's WAL rate per checkpoint cycle over a range (the digest's day),
//! against the rate the current `max_wal_size` absorbs per
//! `checkpoint_timeout`, as a PNG of [`WIDTH`] × [`HEIGHT`] pixels.
//!
//! # What it shows
//! - The WAL rate of each checkpoint cycle, as a step from the start that
//!   opens the cycle to the start that ends it: the cycles `history` counts
//!   for the same range, from the same pass ([`history::walk`], defined by
//!   `suggest`'s [`sizing::cycle`]); cycles that give no rate (downtime, a
//!   requested checkpoint, no distance) are gaps.
//! - The absorb line (dashed): the WAL distance at which PostgreSQL requests
//!   a checkpoint under the current `max_wal_size` (`Params::trigger_mb`,
//!   the per-version CheckPointSegments rule `suggest` uses) divided by
//!   `checkpoint_timeout`. A cycle above it ran faster than time-driven
//!   checkpoints allow: checkpoints turn forced. The settings are those
//!   `suggest` uses ([`crate::settings::current`]); those walwatch only took
//!   from PostgreSQL's defaults are named in the label.
//! - The suggested line (dotted, teal), when `suggest` has a change: the
//!   rate the suggested `max_wal_size` would absorb by the same rule, so the
//!   peaks the suggestion is sized for are seen below it.
//! - Every checkpoint and restartpoint start as a tick along the bottom, by
//!   trigger (forced = wal in orange, time in grey, any other in purple), and
//!   every "checkpoints are occurring too frequently" warning as a red mark
//!   along the top.
//! - The x axis in hours of the given zone, its abbreviation in the label
//!   (`hour (CET)`; `CET/CEST` on a day that changes it).
//!
//! # Where it is read
//! Mail clients in dark mode show images as they are: the background is
//! opaque white with dark text and lines. Servers have no fonts: DejaVu Sans
//! (assets/fonts, its licence beside it) is compiled in and drawn with
//! ab_glyph; nothing reads fontconfig or a font file at run time.
//!
//! # Never a panic
//! An empty range draws the axes and "no checkpoint cycles"; rates that are
//! NaN, infinite or negative are left out and absurdly large ones clipped; a
//! cluster's name is drawn as text only, control characters replaced and
//! cut to [`NAME_CHARS`] with "…".

use std::io::Write;
use std::sync::OnceLock;

use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp, Zoned};
use plotters::backend::BitMapBackend;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::analyze::history;
use crate::analyze::sizing::{self, Params};
use crate::model::event::Trigger;
use crate::settings::Settings;
use crate::store::{Store, StoreError};

/// The picture's size in pixels: fits a 640 px mail column.
pub(crate) const WIDTH: u32 = 600;
pub(crate) const HEIGHT: u32 = 260;

/// A cluster's name is cut to this many characters on the chart.
pub(crate) const NAME_CHARS: usize = 32;

/// The font, compiled in: DejaVu Sans from Debian's fonts-dejavu-core
/// (licence: assets/fonts/LICENSE-DejaVu).
static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// The family name plotters asks ab_glyph for (its default for labels).
const FAMILY: &str = "sans-serif";

/// Rates above this many kB/s (about 1 PB/s) are clipped: no disk writes
/// WAL that fast, and the axis stays finite.
const RATE_CAP_KB_S: f64 = 1e12;

/// One checkpoint cycle's WAL rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct CyclePoint {
    /// The start that opens the cycle (it may lie before the range).
    pub(crate) from: Timestamp,
    /// The start that ends it: the time history buckets it by.
    pub(crate) at: Timestamp,
    pub(crate) rate_kb_s: f64,
}

/// The rate the current settings absorb per checkpoint_timeout.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Absorb {
    pub(crate) kb_s: f64,
    /// The settings it rests on that walwatch only took from PostgreSQL's
    /// defaults (nothing stated or inferred them).
    pub(crate) assumed: Vec<String>,
}

/// The rate the suggested max_wal_size would absorb per checkpoint_timeout.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SuggestedLine {
    pub(crate) max_wal_size_mb: u64,
    pub(crate) kb_s: f64,
}

/// The suggested line for `max_wal_size_mb` under the other `settings`.
pub(crate) fn suggested_line(settings: &Settings, max_wal_size_mb: u64) -> Option<SuggestedLine> {
    settings.seconds("checkpoint_timeout").filter(|s| s.is_finite() && *s > 0.0)?;
    let params = Params::from_settings(settings);
    let kb_s = params.trigger_mb(max_wal_size_mb as f64) * 1024.0 / params.timeout_s;
    (kb_s.is_finite() && kb_s > 0.0).then_some(SuggestedLine { max_wal_size_mb, kb_s })
}

/// Everything the chart draws, read from the store by [`input`].
#[derive(Debug, Clone)]
pub(crate) struct ChartInput {
    pub(crate) cluster: String,
    pub(crate) tz: TimeZone,
    pub(crate) from: Timestamp,
    pub(crate) to: Timestamp,
    /// In time order.
    pub(crate) cycles: Vec<CyclePoint>,
    /// None when max_wal_size or checkpoint_timeout cannot be read: no line.
    pub(crate) absorb: Option<Absorb>,
    /// The suggested max_wal_size's line; None without a suggested change.
    pub(crate) suggested: Option<SuggestedLine>,
    /// Every checkpoint and restartpoint start read in the range, by the
    /// trigger `history` counts it under.
    pub(crate) starts: Vec<(Timestamp, Trigger)>,
    pub(crate) too_frequent: Vec<Timestamp>,
}

impl ChartInput {
    /// Starts with a `wal` trigger: history's `forced`.
    pub(crate) fn forced(&self) -> usize {
        self.starts.iter().filter(|(_, t)| *t == Trigger::Wal).count()
    }

    /// The highest finite cycle rate, kB/s.
    pub(crate) fn peak_kb_s(&self) -> Option<f64> {
        self.cycles.iter().filter_map(|c| rate(c.rate_kb_s)).reduce(f64::max)
    }
}

/// The chart of `cluster` over `[from, to)` from the store: the cycles and
/// starts as `walwatch history` reads them, the too-frequent warnings, and
/// the absorb line from the settings `suggest` uses.
pub(crate) fn input(
    store: &Store,
    cluster: &str,
    settings: &Settings,
    (from, to): (Timestamp, Timestamp),
    tz: TimeZone,
) -> Result<ChartInput, StoreError> {
    let mut cycles = Vec::new();
    let mut starts = Vec::new();
    history::walk(store, cluster, from, to, |p, cycle| {
        if p.has_start {
            starts.push((p.started_at.unwrap_or(p.at), p.trigger.unwrap_or(Trigger::Manual)));
        }
        cycles.extend(cycle.map(|c| CyclePoint { from: c.from, at: c.at, rate_kb_s: c.rate_kb_s }));
    })?;
    let mut too_frequent = Vec::new();
    store.events().times(cluster, "too_frequent", from, to, |t| too_frequent.push(t))?;
    too_frequent.sort();
    Ok(ChartInput {
        cluster: cluster.to_string(),
        tz,
        from,
        to,
        cycles,
        absorb: absorb(settings),
        suggested: None,
        starts,
        too_frequent,
    })
}

/// The WAL rate (kB/s) at which checkpoints turn forced under `settings`:
/// the distance that requests one divided by checkpoint_timeout. None when
/// max_wal_size or checkpoint_timeout cannot be read.
pub(crate) fn absorb(settings: &Settings) -> Option<Absorb> {
    settings.mb("max_wal_size").filter(|mb| mb.is_finite() && *mb > 0.0)?;
    settings.seconds("checkpoint_timeout").filter(|s| s.is_finite() && *s > 0.0)?;
    let params = Params::from_settings(settings);
    let kb_s = params.trigger_mb(params.max_wal_size_mb) * 1024.0 / params.timeout_s;
    let assumed =
        sizing::SIZING_SETTINGS.iter().filter(|name| settings.assumed(name)).map(|name| name.to_string()).collect();
    kb_s.is_finite().then_some(Absorb { kb_s, assumed })
}

/// Why the chart could not be drawn.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ChartError {
    #[error("the chart's font could not be loaded")]
    Font,
    #[error("drawing the chart: {0}")]
    Draw(String),
    #[error("encoding the chart as PNG: {0}")]
    Encode(#[from] png::EncodingError),
}

fn draw_error<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> ChartError {
    ChartError::Draw(e.to_string())
}

/// Registers the compiled-in font with plotters, once per process.
fn font() -> Result<(), ChartError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_ok());
    if ok {
        Ok(())
    } else {
        Err(ChartError::Font)
    }
}

// --- colours: dark on opaque white, readable whatever the client's theme ---

const BACKGROUND: RGBColor = RGBColor(255, 255, 255);
const INK: RGBColor = RGBColor(33, 33, 33);
const GRID: RGBColor = RGBColor(226, 226, 226);
const RATE: RGBColor = RGBColor(21, 101, 192);
const ABSORB: RGBColor = RGBColor(46, 125, 50);
const FORCED: RGBColor = RGBColor(230, 81, 0);
const TIMED: RGBColor = RGBColor(120, 134, 142);
const OTHER: RGBColor = RGBColor(106, 27, 154);
const WARNING: RGBColor = RGBColor(198, 40, 40);
const SUGGESTED: RGBColor = RGBColor(0, 131, 143);

fn trigger_colour(t: Trigger) -> RGBColor {
    match t {
        Trigger::Wal => FORCED,
        Trigger::Time => TIMED,
        _ => OTHER,
    }
}

/// A rate worth drawing: finite, not negative, clipped at [`RATE_CAP_KB_S`].
fn rate(kb_s: f64) -> Option<f64> {
    (kb_s.is_finite() && kb_s >= 0.0).then(|| kb_s.min(RATE_CAP_KB_S))
}

/// The unit of the y axis: MB/s from 1 MB/s on.
#[derive(Debug, Clone, Copy)]
struct Unit {
    name: &'static str,
    kb: f64,
}

fn unit(max_kb_s: f64) -> Unit {
    if max_kb_s >= 1024.0 {
        Unit { name: "MB/s", kb: 1024.0 }
    } else {
        Unit { name: "kB/s", kb: 1.0 }
    }
}

/// "5.8 MB/s", "640 kB/s", "3.2 kB/s".
pub(crate) fn rate_text(kb_s: f64) -> String {
    let u = unit(kb_s);
    let v = kb_s / u.kb;
    if v < 10.0 {
        format!("{v:.1} {}", u.name)
    } else {
        format!("{v:.0} {}", u.name)
    }
}

/// The name as drawn: control characters replaced, at most `max` characters.
fn short_name(name: &str, max: usize) -> String {
    let clean: Vec<char> = name.chars().map(|c| if c.is_control() { '?' } else { c }).collect();
    if clean.len() <= max {
        clean.into_iter().collect()
    } else {
        clean[..max - 1].iter().chain(['…'].iter()).collect()
    }
}

/// The range as a person names it: one local date for a whole local day
/// (23 or 25 hours long on a DST change), else its two ends.
fn range_text(input: &ChartInput) -> String {
    let (a, b) = (input.from.to_zoned(input.tz.clone()), input.to.to_zoned(input.tz.clone()));
    let midnight = |z: &Zoned| z.start_of_day().is_ok_and(|s| s.timestamp() == z.timestamp());
    if midnight(&a) && midnight(&b) && a.date().tomorrow().is_ok_and(|d| d == b.date()) {
        return a.strftime("%Y-%m-%d").to_string();
    }
    format!("{} – {}", a.strftime("%Y-%m-%d %H:%M"), b.strftime("%Y-%m-%d %H:%M"))
}

/// The zone's name for the title: IANA when it has one, else its offset.
fn zone_name(input: &ChartInput) -> String {
    match input.tz.iana_name() {
        Some(name) => name.to_string(),
        None => input.tz.to_offset(input.from).to_string(),
    }
}

/// The zone's abbreviations over the range ("CET", "CET/CEST").
fn abbreviations(input: &ChartInput) -> String {
    let at = |t: Timestamp| input.tz.to_offset_info(t).abbreviation().to_string();
    let (a, b) = (at(input.from), at(input.to));
    if a == b {
        a
    } else {
        format!("{a}/{b}")
    }
}

/// One sentence for `<img alt>`: what the picture shows, in numbers.
pub(crate) fn alt_text(input: &ChartInput) -> String {
    let mut s = format!(
        "WAL rate per checkpoint cycle on {}, {} ({}): ",
        short_name(&input.cluster, 64),
        range_text(input),
        zone_name(input)
    );
    match input.peak_kb_s() {
        Some(peak) => s.push_str(&format!("peak {}", rate_text(peak))),
        None => s.push_str("no checkpoint cycles"),
    }
    let forced = input.forced();
    s.push_str(&format!(", {forced} forced checkpoint{}", if forced == 1 { "" } else { "s" }));
    if !input.too_frequent.is_empty() {
        let n = input.too_frequent.len();
        s.push_str(&format!(", {n} \"too frequent\" warning{}", if n == 1 { "" } else { "s" }));
    }
    match &input.absorb {
        Some(a) => s.push_str(&format!("; max_wal_size absorbs {}", rate_text(a.kb_s))),
        None => s.push_str("; max_wal_size unknown, so no absorb line"),
    }
    if let Some(line) = &input.suggested {
        let size = crate::guc::units::size_text(line.max_wal_size_mb);
        s.push_str(&format!("; the suggested {size} would absorb {}", rate_text(line.kb_s)));
    }
    s
}

/// The chart as a PNG of [`WIDTH`] × [`HEIGHT`].
pub(crate) fn render_png(input: &ChartInput) -> Result<Vec<u8>, ChartError> {
    font()?;
    let mut rgb = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, HEIGHT)).into_drawing_area();
        draw(&root, input)?;
        root.present().map_err(draw_error)?;
    }
    encode_png(&rgb)
}

/// An RGB image of [`WIDTH`] × [`HEIGHT`] as PNG: png writes the header and
/// the end, the image data is deflated here in one call. png's own path
/// feeds zlib two writes per row, and flate2 zeroes its output buffer's
/// spare room on every write: 40 % of the encoding's CPU. (png's Fast level
/// avoids flate2 but made the charts three times larger.)
/// zlib level 3: measured on the fleet digest (11 charts), 4.6 % fewer
/// instructions than the default 6 for a mail 1.6 % larger; level 1 saves
/// 15 % but makes the mail 37 % larger (docs/dev/benchmarks.md, the digest).
const PNG_LEVEL: flate2::Compression = flate2::Compression::new(3);

fn encode_png(rgb: &[u8]) -> Result<Vec<u8>, ChartError> {
    let filtered = sub_filtered(rgb, WIDTH as usize * 3);
    let mut zlib = flate2::write::ZlibEncoder::new(Vec::with_capacity(filtered.len() / 8), PNG_LEVEL);
    zlib.write_all(&filtered).map_err(png::EncodingError::from)?;
    let idat = zlib.finish().map_err(png::EncodingError::from)?;
    let mut out = Vec::with_capacity(idat.len() + 64);
    let mut encoder = png::Encoder::new(&mut out, WIDTH, HEIGHT);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_chunk(png::chunk::IDAT, &idat)?;
    writer.finish()?;
    Ok(out)
}

/// Each row of `rgb` (`stride` bytes) behind PNG's filter byte 1 (Sub): a
/// byte minus the same channel of the pixel to its left, which turns the
/// chart's runs of one colour into runs of zeros for deflate.
fn sub_filtered(rgb: &[u8], stride: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(rgb.len() + rgb.len() / stride);
    for row in rgb.chunks(stride) {
        out.push(1);
        out.extend(row.iter().enumerate().map(|(i, b)| b.wrapping_sub(if i >= 3 { row[i - 3] } else { 0 })));
    }
    out
}

/// Hours since the range's start: the x coordinate.
/// At most this many steps between x labels (a 600 px axis).
const MAX_X_TICKS: usize = 9;

/// The hours between x labels: the first of a person's steps (3 h on a
/// day: 00:00, 03:00, …) that gives at most [`MAX_X_TICKS`] steps. The x
/// axis is drawn in units of this step, so that plotters, which puts its
/// labels at 1, 2 or 5 × 10ⁿ units, puts them at whole steps.
fn label_step_h(span_h: f64) -> f64 {
    const STEPS_H: [f64; 15] =
        [1.0 / 6.0, 0.25, 0.5, 1.0, 2.0, 3.0, 6.0, 12.0, 24.0, 48.0, 72.0, 168.0, 336.0, 720.0, 2160.0];
    let fits = |step: f64| span_h / step <= MAX_X_TICKS as f64;
    STEPS_H.into_iter().find(|s| fits(*s)).unwrap_or(span_h / MAX_X_TICKS as f64)
}

fn hours(input: &ChartInput, t: Timestamp) -> f64 {
    t.duration_since(input.from).as_secs_f64() / 3600.0
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, input: &ChartInput) -> Result<(), ChartError>
where
    DB::ErrorType: 'static,
{
    root.fill(&BACKGROUND).map_err(draw_error)?;
    let (plot_area, legend_area) = root.split_vertically(HEIGHT - 22);
    let span_h = hours(input, input.to).max(1.0 / 60.0);
    let span_h = if span_h.is_finite() { span_h } else { 24.0 };
    let step_h = label_step_h(span_h);
    let absorb_kb = input.absorb.as_ref().and_then(|a| rate(a.kb_s));
    let suggested_kb = input.suggested.and_then(|l| rate(l.kb_s));
    let top_kb = input.peak_kb_s().into_iter().chain(absorb_kb).chain(suggested_kb).fold(0.0, f64::max);
    let u = unit(top_kb);
    let y_max = if top_kb > 0.0 { top_kb / u.kb * 1.15 } else { 1.0 };
    let title = format!(
        "{} · WAL rate per checkpoint cycle · {} ({})",
        short_name(&input.cluster, NAME_CHARS),
        range_text(input),
        zone_name(input)
    );
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(title, (FAMILY, 14).into_font().color(&INK))
        .margin_top(4)
        .margin_left(6)
        .margin_right(14)
        .x_label_area_size(34)
        .y_label_area_size(48)
        .build_cartesian_2d(0.0..span_h / step_h, 0.0..y_max)
        .map_err(draw_error)?;
    let day = span_h <= 36.0;
    let x_label = |x: &f64| {
        let t = input.from.checked_add(SignedDuration::from_secs_f64((x * step_h * 3600.0).clamp(0.0, 1e10)));
        let Ok(t) = t else { return String::new() };
        let z = t.to_zoned(input.tz.clone());
        if day {
            z.strftime("%H:%M").to_string()
        } else if step_h >= 24.0 {
            z.strftime("%m-%d").to_string()
        } else {
            z.strftime("%m-%d %H:%M").to_string()
        }
    };
    let y_label = |y: &f64| if y_max < 10.0 { format!("{y:.1}") } else { format!("{y:.0}") };
    let x_desc = match (day, step_h >= 24.0) {
        (true, _) => format!("hour ({})", abbreviations(input)),
        (false, true) => format!("date ({})", abbreviations(input)),
        (false, false) => format!("date, hour ({})", abbreviations(input)),
    };
    chart
        .configure_mesh()
        .light_line_style(BACKGROUND)
        .bold_line_style(GRID)
        .axis_style(INK)
        .label_style((FAMILY, 11).into_font().color(&INK))
        .axis_desc_style((FAMILY, 11).into_font().color(&INK))
        .x_labels(MAX_X_TICKS + 1)
        .y_labels(5)
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .x_desc(x_desc)
        .y_desc(format!("WAL {}", u.name))
        .draw()
        .map_err(draw_error)?;

    let x = |t: Timestamp| hours(input, t).clamp(0.0, span_h) / step_h;
    // The rate: a step per cycle, joined where one cycle ends as the next begins.
    let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut last_end: Option<Timestamp> = None;
    for c in &input.cycles {
        let Some(r) = rate(c.rate_kb_s) else {
            last_end = None;
            continue;
        };
        let y = r / u.kb;
        let (a, b) = (x(c.from), x(c.at));
        match runs.last_mut() {
            Some(run) if last_end == Some(c.from) => run.extend([(a, y), (b, y)]),
            _ => runs.push(vec![(a, y), (b, y)]),
        }
        last_end = Some(c.at);
    }
    let rate_style = ShapeStyle::from(&RATE).stroke_width(2);
    for run in runs {
        chart.draw_series(LineSeries::new(run, rate_style)).map_err(draw_error)?;
    }
    let ends = input.cycles.iter().filter_map(|c| rate(c.rate_kb_s).map(|r| (x(c.at), r / u.kb)));
    chart.draw_series(ends.map(|p| Circle::new(p, 2, RATE.filled()))).map_err(draw_error)?;

    if let (Some(a), Some(kb)) = (&input.absorb, absorb_kb) {
        let y = kb / u.kb;
        let style = ShapeStyle::from(&ABSORB).stroke_width(2);
        chart.draw_series(DashedLineSeries::new([(0.0, y), (span_h / step_h, y)], 8, 5, style)).map_err(draw_error)?;
        let assumed = if a.assumed.is_empty() { String::new() } else { " (defaults assumed)".to_string() };
        let label = format!("max_wal_size absorbs {}{assumed}", rate_text(kb));
        let (px, py) = chart.backend_coord(&(span_h / step_h, y));
        let style = (FAMILY, 11).into_font().color(&ABSORB).pos(Pos::new(HPos::Right, VPos::Bottom));
        plot_area.draw(&Text::new(label, (px - 4, py - 3), style)).map_err(draw_error)?;
    }

    if let (Some(line), Some(kb)) = (&input.suggested, suggested_kb) {
        let y = kb / u.kb;
        let style = ShapeStyle::from(&SUGGESTED).stroke_width(2);
        chart.draw_series(DashedLineSeries::new([(0.0, y), (span_h / step_h, y)], 3, 4, style)).map_err(draw_error)?;
        let size = crate::guc::units::size_text(line.max_wal_size_mb);
        let label = format!("suggested {size} absorbs {}", rate_text(kb));
        // Left-aligned: the absorb line's label is at the right.
        let (px, py) = chart.backend_coord(&(0.0, y));
        let style = (FAMILY, 11).into_font().color(&SUGGESTED).pos(Pos::new(HPos::Left, VPos::Bottom));
        plot_area.draw(&Text::new(label, (px + 4, py - 3), style)).map_err(draw_error)?;
    }

    // Starts as ticks along the bottom, too-frequent warnings along the top.
    let bottom = chart.backend_coord(&(0.0, 0.0)).1;
    let top = chart.backend_coord(&(0.0, y_max)).1;
    for (t, trigger) in &input.starts {
        let (px, _) = chart.backend_coord(&(x(*t), 0.0));
        let style = trigger_colour(*trigger).filled();
        plot_area.draw(&Rectangle::new([(px - 1, bottom - 9), (px + 1, bottom - 1)], style)).map_err(draw_error)?;
    }
    for t in &input.too_frequent {
        let (px, _) = chart.backend_coord(&(x(*t), 0.0));
        let mark = Polygon::new(vec![(px - 4, top + 1), (px + 4, top + 1), (px, top + 8)], WARNING.filled());
        plot_area.draw(&mark).map_err(draw_error)?;
    }
    if input.peak_kb_s().is_none() {
        let (cx, _) = chart.backend_coord(&(span_h / step_h / 2.0, 0.0));
        let (_, cy) = chart.backend_coord(&(0.0, y_max / 2.0));
        let style = (FAMILY, 14).into_font().color(&INK).pos(Pos::new(HPos::Center, VPos::Center));
        plot_area.draw(&Text::new("no checkpoint cycles", (cx, cy), style)).map_err(draw_error)?;
    }
    legend(&legend_area, input)
}

/// One row under the chart: what each colour and mark means.
fn legend<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, input: &ChartInput) -> Result<(), ChartError>
where
    DB::ErrorType: 'static,
{
    let text = (FAMILY, 11).into_font().color(&INK).pos(Pos::new(HPos::Left, VPos::Center));
    let y = 10;
    let mut x = 56;
    let mut item = |mark: &dyn Fn(i32) -> Result<(), ChartError>, label: &str| -> Result<(), ChartError> {
        mark(x)?;
        area.draw(&Text::new(label.to_string(), (x + 14, y), text.clone())).map_err(draw_error)?;
        let (w, _) = area.estimate_text_size(label, &text).map_err(draw_error)?;
        x += 14 + w as i32 + 14;
        Ok(())
    };
    let line =
        |x: i32| area.draw(&PathElement::new(vec![(x, y), (x + 10, y)], RATE.stroke_width(2))).map_err(draw_error);
    item(&line, "WAL rate per cycle")?;
    for (colour, label) in [(FORCED, "forced (wal)"), (TIMED, "timed"), (OTHER, "other start")] {
        let tick =
            |x: i32| area.draw(&Rectangle::new([(x + 4, y - 5), (x + 6, y + 4)], colour.filled())).map_err(draw_error);
        item(&tick, label)?;
    }
    let warning = |x: i32| {
        area.draw(&Polygon::new(vec![(x + 1, y - 4), (x + 9, y - 4), (x + 5, y + 3)], WARNING.filled()))
            .map_err(draw_error)
    };
    item(&warning, "too frequent")?;
    if input.absorb.is_none() {
        let none = |_: i32| Ok(());
        item(&none, "max_wal_size unknown: no absorb line")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
