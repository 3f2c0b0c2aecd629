//! `walwatch digest`: any day's digest on demand — printed (text part),
//! written as a whole mail (`--eml`) or as HTML with its charts beside it
//! (`--html`), or sent now (`--to`). The daemon's daily mail is the same
//! rendering (digest::queue).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use jiff::{Timestamp, Zoned};
use lettre::message::Mailbox;

use crate::cli::DigestArgs;
use crate::digest::render::{self, Picture};
use crate::digest::report::{self, Inputs, Report};
use crate::digest::schedule::Schedule;
use crate::store::Store;

pub(crate) fn run(args: DigestArgs) -> Result<ExitCode> {
    let super::Loaded { config, rules, db } = super::config_and_db(&args.common)?;
    let store = Store::open_existing(&db)?;
    let mut schedule = Schedule::of(&config.digest).context("[digest] timezone")?;
    if let Some(name) = &args.tz {
        schedule.tz = jiff::tz::TimeZone::get(name)
            .with_context(|| format!("--tz {name:?}: not a time zone (an IANA name such as Europe/Berlin)"))?;
    }
    let now = Timestamp::now();
    let day = match args.date {
        Some(day) => day,
        None => Zoned::new(now, schedule.tz.clone()).date().yesterday()?,
    };
    let clusters = if args.cluster.is_empty() { config.digest.clusters.clone() } else { args.cluster.clone() };
    let advices = config.advices();
    let inputs = Inputs {
        day,
        tz: schedule.tz.clone(),
        clusters: &clusters,
        advice: &advices,
        skew_tolerance: rules.clock_skew_tolerance(),
        missed: Vec::new(),
        missed_total: 0,
        max_charts: config.digest.max_charts,
    };
    let report = report::build(&store, &inputs)?;
    warn_if_empty(&report);
    let pictures = crate::digest::queue::pictures(&store, &report);
    let out = &args.output;
    if let Some(address) = &out.to {
        send(&config, &report, &pictures, address, now)?;
    } else if let Some(path) = &out.eml {
        let (from, to) = eml_addresses(&config)?;
        let id = render::message_id(&report, &to);
        let mail = render::mail(&report, &pictures, &from, &to, &id, now).map_err(anyhow::Error::msg)?;
        write(path, mail.as_bytes())?;
    } else if let Some(path) = &out.html {
        write_html(path, &report, &pictures)?;
    } else {
        crate::output::lines(&mut std::io::stdout().lock(), &render::text(&report))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A digest of a day with nothing stored for any cluster is legal (a quiet
/// or unlogged day) but most often a wrong --date or zone: said on stderr.
fn warn_if_empty(report: &Report) {
    if !report.clusters.is_empty() && report.clusters.iter().all(|c| c.day.is_empty()) {
        tracing::warn!(
            "nothing is stored for {} ({}) in any cluster: is --date right, and the log read that far?",
            report.day,
            report.zone
        );
    }
}

fn send(
    config: &crate::config::Config,
    report: &Report,
    pictures: &[Option<Picture>],
    address: &str,
    now: Timestamp,
) -> Result<()> {
    let Some(mail) = &config.mail else {
        bail!("--to sends through [mail], and the configuration has no [mail] section (see config/walwatch.toml)")
    };
    let to: Mailbox = address.parse().with_context(|| format!("--to {address:?} is not a mail address"))?;
    // Not the day's scheduled message: an id of its own, so the daily one is not taken for a duplicate.
    let id = format!("<walwatch.digest.{}.now.{}@{}>", report.day, now.as_microsecond(), crate::outbox::host_name());
    let payload =
        render::mail(report, pictures, &mail.from, std::slice::from_ref(&to), &id, now).map_err(anyhow::Error::msg)?;
    crate::outbox::send_now(mail, &payload, std::slice::from_ref(&to))?;
    super::note(format_args!("digest of {} sent to {} ({id})", report.day, to.email));
    Ok(())
}

/// From and To of a saved mail: the configured ones, else placeholders
/// (the file is for looking at, not for sending).
fn eml_addresses(config: &crate::config::Config) -> Result<(Mailbox, Vec<Mailbox>)> {
    let to = crate::digest::queue::recipients(config);
    match &config.mail {
        Some(mail) => Ok((mail.from.clone(), to)),
        None => Ok(("walwatch <walwatch@localhost>".parse()?, vec!["dba <dba@localhost>".parse()?])),
    }
}

/// The HTML part with each `cid:` pointing at a PNG written beside it, so a
/// browser shows what the mail client will.
fn write_html(path: &Path, report: &Report, pictures: &[Option<Picture>]) -> Result<()> {
    let mut html = render::html(report, pictures);
    for (i, p) in pictures.iter().enumerate() {
        let Some(p) = p else { continue };
        let png = png_path(path, i);
        write(&png, &p.png)?;
        let name = png.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        html = html.replace(&format!("cid:{}", render::content_id(i)), &name);
    }
    write(path, html.as_bytes())
}

fn png_path(html: &Path, i: usize) -> PathBuf {
    let stem = html.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "digest".into());
    html.with_file_name(format!("{stem}-{i}.png"))
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    super::note(format_args!("wrote {}", path.display()));
    Ok(())
}
