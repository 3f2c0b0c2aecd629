//! A [`Report`] as a mail: a plain-text part (text sparklines) and an HTML
//! part (tables and inline styles only, at most 640 px wide, no scripts, no
//! external resources: it must read the same in Gmail, Outlook and on a
//! phone) with each cluster's chart as an inline PNG (`multipart/related`,
//! `cid:`). Every string that can come from a log or a config (cluster
//! names, alert summaries, setting values, paths) goes through the
//! outbox's mail-safe text, as an alert's does: [`body_text`] in both
//! parts, [`escape_html`] in HTML, [`header_text`] in the one header it
//! could reach (none does today: the subject holds only counts and the
//! date).

use std::fmt::Write as _;

use jiff::Timestamp;
use lettre::message::header::ContentType;
use lettre::message::{Attachment, Mailbox, MultiPart, SinglePart};

use super::bursts::Burst;
use super::report::{median, ClusterDay, Report};
use crate::analyze::history::{change, Row};
use crate::analyze::sizing::pg_size;
use crate::outbox::{body_text, compose, escape_html, header_text, host_name, Head};
use crate::output::{grouped_f, spark};
use crate::store::alerts::AlertRow;

/// A cluster's chart, ready to embed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Picture {
    pub(crate) png: Vec<u8>,
    pub(crate) alt: String,
}

/// `[walwatch] digest <date>: <N> of <M> clusters need attention` or `…: all healthy`.
pub(crate) fn subject(report: &Report) -> String {
    let n = report.attention();
    let verdict = match n {
        _ if report.clusters.is_empty() => "no cluster's log read yet".to_string(),
        0 => "all healthy".to_string(),
        n => format!("{n} of {} clusters need attention", report.clusters.len()),
    };
    header_text(&format!("[walwatch] digest {}: {verdict}", report.day), 200)
}

/// The stable Message-ID of `report`'s digest: the same day to the same
/// recipients is the same message, so a re-render after a crash is
/// recognised by the outbox, and a client threads nothing together.
pub(crate) fn message_id(report: &Report, to: &[Mailbox]) -> String {
    let recipients: Vec<String> = to.iter().map(|m| m.email.to_string()).collect();
    let hash = xxhash_rust::xxh3::xxh3_64(recipients.join(",").as_bytes()) as u32;
    format!("<walwatch.digest.{}.{hash:08x}@{}>", report.day, host_name())
}

/// The figures compared in both parts: name, value of a row, decimals.
type Figure = (&'static str, fn(&Row) -> Option<f64>, usize);

const FIGURES: [Figure; 11] = [
    ("checkpoints", |r| Some((r.checkpoints.total() + r.restartpoints.total()) as f64), 0),
    ("forced (wal)", |r| Some(r.forced() as f64), 0),
    ("forced share %", |r| r.forced_share.map(|s| s * 100.0), 1),
    ("too frequent warnings", |r| Some(r.too_frequent as f64), 0),
    ("WAL written MB", |r| Some(r.wal_written_mb), 1),
    ("WAL rate p95 kB/s", |r| r.wal_rate_kb_s.p95, 1),
    ("write p95 s", |r| r.write_s_p95, 1),
    ("write p95 MB/s", |r| r.write_mb_s_p95, 1),
    ("pace p95 x timed", |r| r.pace_ratio_p95, 1),
    ("sync max s", |r| r.sync_s_max, 3),
    ("buffers written", |r| Some(r.buffers_written as f64), 0),
];

/// One figure's cells: the day, the day before, the 7-day median, the change against the day before.
fn figure_cells(c: &ClusterDay, (_, value, decimals): &Figure) -> [String; 4] {
    let cell = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| grouped_f(v, *decimals));
    let pct = change(value(&c.previous), value(&c.day)).map_or_else(|| "-".into(), |p| format!("{p:+.1}%"));
    [cell(value(&c.day)), cell(value(&c.previous)), cell(median(&c.week, value)), pct]
}

fn verdict(c: &ClusterDay) -> String {
    match c.healthy() {
        true => "healthy".into(),
        false => format!("needs attention: {}", c.reasons.join("; ")),
    }
}

fn alert_line(a: &AlertRow) -> String {
    format!("#{} {} ({}): {}", a.id, a.rule, a.severity.as_str(), a.summary)
}

fn burst_line(b: &Burst) -> String {
    let days = format!("on {} of the last {} days", b.days.len(), b.of_days);
    let peak = b.peak_kb_s.map(|r| format!(", peak {} kB/s", grouped_f(r, 1))).unwrap_or_default();
    let size = b
        .absorbing_max_wal_size_mb
        .map(|mb| format!("; max_wal_size = '{}' would absorb them", pg_size(mb)))
        .unwrap_or_default();
    format!("{} forced checkpoints between {:02}:00 and {:02}:00 {days}{peak}{size}", b.forced, b.from_hour, b.to_hour)
}

fn restarts_line(r: &Row) -> Option<String> {
    (r.server_starts + r.crashes + r.checkpoints.shutdown > 0).then(|| {
        format!(
            "server starts {}, shutdown checkpoints {}, crash recoveries {}",
            r.server_starts, r.checkpoints.shutdown, r.crashes
        )
    })
}

fn missed_line(report: &Report) -> Option<String> {
    (report.missed_total > 0).then(|| {
        let named: Vec<String> = report.missed.iter().map(|d| d.to_string()).collect();
        let more = report.missed_total.saturating_sub(named.len());
        let more = if more > 0 { format!(" and {more} more") } else { String::new() };
        format!(
            "walwatch was not running when the digests of {}{more} were due; they were not sent \
             (`walwatch digest --date D` renders any day).",
            named.join(", ")
        )
    })
}

/// The whole text part.
pub(crate) fn text(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "walwatch digest of {} ({})", report.day.strftime("%A %Y-%m-%d"), report.zone);
    let _ = writeln!(out, "{}\n", summary_line(report));
    if let Some(line) = missed_line(report) {
        let _ = writeln!(out, "{line}\n");
    }
    if report.clusters.len() > 1 {
        for c in &report.clusters {
            let _ = writeln!(out, "  {:<20} {}", c.name, verdict(c));
        }
        out.push('\n');
    }
    for c in &report.clusters {
        text_cluster(&mut out, c);
    }
    let _ = write!(out, "-- \nwalwatch {} on {}\n", env!("CARGO_PKG_VERSION"), host_name());
    body_text(&out)
}

fn summary_line(report: &Report) -> String {
    if report.clusters.is_empty() {
        return "walwatch has not read any cluster's log yet: see `walwatch status`.".into();
    }
    match report.attention() {
        0 => format!("All {} clusters healthy.", report.clusters.len()),
        n => format!("{n} of {} clusters need attention.", report.clusters.len()),
    }
}

fn text_cluster(out: &mut String, c: &ClusterDay) {
    let _ = writeln!(out, "== {}: {}", c.name, verdict(c));
    let _ = writeln!(out, "  {:<22}{:>12}{:>12}{:>14}{:>10}", "", "day", "day before", "7-day median", "change");
    for figure in &FIGURES {
        let [day, before, median, pct] = figure_cells(c, figure);
        let _ = writeln!(out, "  {:<22}{day:>12}{before:>12}{median:>14}{pct:>10}", figure.0);
    }
    let rates: Vec<Option<f64>> = c.hours.iter().map(|r| r.wal_rate_kb_s.p95).collect();
    let forced: Vec<Option<f64>> = c.hours.iter().map(|r| Some(r.forced() as f64)).collect();
    let _ = writeln!(out, "  by hour, WAL rate p95  |{}|", spark(&rates));
    let _ = writeln!(out, "  by hour, forced        |{}|", spark(&forced));
    let mut list = |title: &str, lines: Vec<String>| {
        if !lines.is_empty() {
            let _ = writeln!(out, "  {title}:");
            lines.iter().for_each(|l| {
                let _ = writeln!(out, "    - {l}");
            });
        }
    };
    for (title, lines) in sections(c) {
        list(title, lines);
    }
    if let Some(s) = &c.suggestion {
        let _ = writeln!(out, "  Suggestion: {}", suggestion_line(s));
        for line in s.sql.iter().flat_map(|sql| sql.lines()) {
            let _ = writeln!(out, "      {line}");
        }
    }
    out.push('\n');
}

/// The listed sections of a cluster, in order, as both parts show them
/// (an empty one is left out by the renderer).
fn sections(c: &ClusterDay) -> [(&'static str, Vec<String>); 6] {
    let tz = c.day.bucket_start.time_zone().clone();
    [
        ("Alerts fired", c.fired.iter().map(alert_line).collect()),
        ("Alerts resolved", c.resolved.iter().map(alert_line).collect()),
        ("Settings changed", c.changes.iter().map(|ch| change_line(ch, &tz)).collect()),
        ("Restarts", restarts_line(&c.day).into_iter().collect()),
        ("Recurring bursts", c.bursts.iter().map(burst_line).collect()),
        ("walwatch's own problems", c.problems.clone()),
    ]
}

/// "14:02:11 max_wal_size = 2GB", the time in the digest's zone.
fn change_line(c: &crate::store::events::LogChange, tz: &jiff::tz::TimeZone) -> String {
    format!("{} {} = {}", c.at.to_zoned(tz.clone()).strftime("%H:%M:%S"), c.name, c.value)
}

fn suggestion_line(s: &crate::analyze::sizing::Suggestion) -> String {
    let size = s.suggested.max_wal_size_mb.map(pg_size).unwrap_or_else(|| "-".into());
    let current = s.current.values.get("max_wal_size").map(|v| v.value.clone()).unwrap_or_else(|| "?".into());
    format!(
        "max_wal_size {current} -> {size} ({} confidence, from {} cycles over {})",
        s.confidence, s.basis.samples, s.basis.window
    )
}

/// The whole HTML part; `pictures[i]` is cluster i's chart (`cid:` of [`content_id`]).
pub(crate) fn html(report: &Report, pictures: &[Option<Picture>]) -> String {
    let h = |s: &str| escape_html(&body_text(s));
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{}</title></head>\n\
         <body style=\"margin:0;padding:0;background:#f4f5f7;\">\n\
         <table role=\"presentation\" width=\"100%\" cellpadding=\"0\" cellspacing=\"0\" style=\"background:#f4f5f7;\"><tr><td align=\"center\">\n\
         <table role=\"presentation\" width=\"640\" cellpadding=\"0\" cellspacing=\"0\" style=\"width:100%;max-width:640px;\
         background:#ffffff;color:#1f2328;font-family:Arial,Helvetica,sans-serif;font-size:14px;line-height:1.4;\">\n",
        h(&subject(report))
    );
    let _ = writeln!(
        out,
        "<tr><td style=\"padding:16px 16px 4px 16px;\"><h1 style=\"margin:0;font-size:20px;\">walwatch digest of {}</h1>\
         <p style=\"margin:4px 0 0 0;color:#57606a;\">{} &middot; {}</p></td></tr>",
        h(&report.day.strftime("%A %Y-%m-%d").to_string()),
        h(&report.zone),
        h(&summary_line(report))
    );
    if let Some(line) = missed_line(report) {
        let _ = writeln!(out, "<tr><td style=\"padding:8px 16px;color:#9a6700;\">{}</td></tr>", h(&line));
    }
    html_overview(&mut out, report);
    if let Some(line) = charts_line(report) {
        let _ = writeln!(out, "<tr><td style=\"padding:8px 16px;color:#57606a;\">{}</td></tr>", h(&line));
    }
    for (i, c) in report.clusters.iter().enumerate() {
        html_cluster(&mut out, c, pictures.get(i).and_then(|p| p.as_ref()).map(|p| (content_id(i), p)));
    }
    let _ = write!(
        out,
        "<tr><td style=\"padding:12px 16px;color:#57606a;font-size:12px;\">walwatch {} on {}</td></tr>\n\
         </table></td></tr></table>\n</body></html>\n",
        env!("CARGO_PKG_VERSION"),
        h(&host_name())
    );
    out
}

/// Said when some clusters get no chart: they were left out, not broken.
fn charts_line(report: &Report) -> Option<String> {
    let total = report.clusters.len();
    (total > report.max_charts).then(|| {
        format!(
            "Charts for the first {} of {total} clusters (those needing attention first); \
             [digest] max_charts sets how many.",
            report.max_charts
        )
    })
}

/// One line per cluster before the details: a fleet's digest is read top down.
fn html_overview(out: &mut String, report: &Report) {
    if report.clusters.len() < 2 {
        return;
    }
    let h = |s: &str| escape_html(&body_text(s));
    out.push_str(
        "<tr><td style=\"padding:8px 16px;\"><table role=\"presentation\" cellpadding=\"0\" cellspacing=\"0\" \
         style=\"width:100%;border-collapse:collapse;font-size:13px;\">",
    );
    for c in &report.clusters {
        let (colour, word) = if c.healthy() { ("#1a7f37", "healthy") } else { ("#bc4c00", "needs attention") };
        let why = if c.healthy() { String::new() } else { format!(": {}", h(&c.reasons.join("; "))) };
        let _ = write!(
            out,
            "<tr><td style=\"padding:2px 6px;vertical-align:top;\"><strong>{}</strong></td>\
             <td style=\"padding:2px 6px;color:{colour};\">{word}{why}</td></tr>",
            h(&c.name)
        );
    }
    out.push_str("</table></td></tr>\n");
}

fn html_cluster(out: &mut String, c: &ClusterDay, picture: Option<(String, &Picture)>) {
    let h = |s: &str| escape_html(&body_text(s));
    let (colour, badge) = match c.healthy() {
        true => ("#1a7f37", "healthy"),
        false => ("#bc4c00", "needs attention"),
    };
    let _ = write!(
        out,
        "<tr><td style=\"padding:12px 16px 4px 16px;border-top:1px solid #d0d7de;\">\
         <h2 style=\"margin:0;font-size:17px;\">{} <span style=\"color:{colour};font-size:14px;\">&#9679; {badge}</span></h2>",
        h(&c.name)
    );
    if !c.healthy() {
        let _ = write!(out, "<p style=\"margin:4px 0;color:{colour};\">{}</p>", h(&c.reasons.join("; ")));
    }
    out.push_str("</td></tr>\n<tr><td style=\"padding:4px 16px;\">");
    html_figures(out, c);
    out.push_str("</td></tr>\n");
    if let Some((cid, p)) = picture {
        let _ = writeln!(
            out,
            "<tr><td style=\"padding:4px 16px;\"><img src=\"cid:{cid}\" alt=\"{}\" width=\"600\" \
             style=\"display:block;width:100%;max-width:600px;height:auto;border:0;\"></td></tr>",
            h(&p.alt)
        );
    }
    let mut list = |title: &str, lines: Vec<String>| {
        if !lines.is_empty() {
            let items: String = lines.iter().map(|l| format!("<li>{}</li>", h(l))).collect();
            let _ = writeln!(
                out,
                "<tr><td style=\"padding:4px 16px;\"><strong>{title}</strong><ul style=\"margin:2px 0;padding-left:20px;\">{items}</ul></td></tr>"
            );
        }
    };
    for (title, lines) in sections(c) {
        list(title, lines);
    }
    if let Some(s) = &c.suggestion {
        let _ =
            write!(out, "<tr><td style=\"padding:4px 16px;\"><strong>Suggestion</strong>: {}", h(&suggestion_line(s)));
        if let Some(sql) = &s.sql {
            let _ = write!(
                out,
                "<pre style=\"margin:4px 0;padding:8px;background:#f6f8fa;border:1px solid #d0d7de;\
                 white-space:pre-wrap;font-size:12px;\">{}</pre>",
                h(sql)
            );
        }
        out.push_str("</td></tr>\n");
    }
}

fn html_figures(out: &mut String, c: &ClusterDay) {
    let th = "style=\"text-align:right;padding:2px 6px;color:#57606a;font-weight:normal;\"";
    let _ = write!(
        out,
        "<table role=\"presentation\" cellpadding=\"0\" cellspacing=\"0\" style=\"width:100%;border-collapse:collapse;font-size:13px;\">\
         <tr><th style=\"text-align:left;padding:2px 6px;\"></th><th {th}>day</th><th {th}>day before</th><th {th}>7-day median</th><th {th}>change</th></tr>"
    );
    for (i, figure) in FIGURES.iter().enumerate() {
        let shade = if i % 2 == 0 { "background:#f6f8fa;" } else { "" };
        let td = format!("style=\"text-align:right;padding:2px 6px;{shade}\"");
        let [day, before, median, pct] = figure_cells(c, figure);
        let _ = write!(
            out,
            "<tr><td style=\"padding:2px 6px;{shade}\">{}</td><td {td}><strong>{day}</strong></td><td {td}>{before}</td>\
             <td {td}>{median}</td><td {td}>{pct}</td></tr>",
            figure.0
        );
    }
    out.push_str("</table>");
}

/// The `cid:` of cluster i's chart.
pub(crate) fn content_id(i: usize) -> String {
    format!("chart{i}@walwatch")
}

/// The RFC 5322 message: text and HTML alternatives, the charts related to the HTML.
pub(crate) fn mail(
    report: &Report,
    pictures: &[Option<Picture>],
    from: &Mailbox,
    to: &[Mailbox],
    message_id: &str,
    now: Timestamp,
) -> Result<String, String> {
    let png = ContentType::parse("image/png").map_err(|e| e.to_string())?;
    let mut related = MultiPart::related().singlepart(SinglePart::html(html(report, pictures)));
    for (i, p) in pictures.iter().enumerate() {
        if let Some(p) = p {
            related = related.singlepart(Attachment::new_inline(content_id(i)).body(p.png.clone(), png.clone()));
        }
    }
    let body = MultiPart::alternative().singlepart(SinglePart::plain(text(report))).multipart(related);
    compose(Head { from, to, subject: subject(report), message_id, date: now }, body, "digest")
}
