//! `walwatch forget`: forget what was read of log files — their events and
//! how far they were read — so the next import (or the daemon) reads them
//! again from the start, e.g. after reading them with the wrong prefix.

use std::collections::BTreeSet;
use std::io::Write;
use std::process::ExitCode;

use anyhow::{bail, Result};

use crate::cli::ForgetArgs;
use crate::output;
use crate::source::Source;
use crate::store::sources::KnownSource;
use crate::store::{Damage, Store};

pub(crate) fn run(args: ForgetArgs) -> Result<ExitCode> {
    if args.damaged {
        return damaged(&args);
    }
    if args.cluster.is_none() && args.files.is_empty() {
        bail!("say what to forget: --cluster C (all of its files), FILE..., or both; or --damaged");
    }
    let mut store = Store::open_existing(&super::config_and_db(&args.common)?.db)?;
    if let Some(c) = &args.cluster {
        super::clusters(&store, Some(c))?;
    }
    let known = store.sources().known(args.cluster.as_deref())?;
    let (chosen, unknown) = match args.files.is_empty() {
        true => (known, Vec::new()),
        false => pick(&store, &known, &args.files)?,
    };
    let (mut stdout, mut stderr) = (std::io::stdout().lock(), std::io::stderr().lock());
    for file in &unknown {
        output::line(
            &mut stderr,
            format!("walwatch: {file}: no source {}was read from it; nothing to forget", in_cluster(&args)),
        )?;
    }
    if chosen.is_empty() {
        if args.files.is_empty() {
            let cluster = args.cluster.unwrap_or_default();
            output::line(&mut stderr, format!("walwatch: cluster {cluster} has no source; nothing to forget"))?;
        }
        return Ok(ExitCode::from(super::EXIT_FAILURE));
    }
    let ids: Vec<i64> = chosen.iter().map(|s| s.id).collect();
    let gone = store.sources_mut().forget(&ids)?;
    if !super::quiet() {
        for s in &chosen {
            output::line(&mut stdout, format!("forgot {} (cluster {})", s.path, s.cluster))?;
        }
        writeln!(
            stdout,
            "{} source(s), {} event(s), {} checkpoint row(s) forgotten; the next import or daemon read takes them from the start",
            gone.sources, gone.events, gone.checkpoints
        )?;
    }
    Ok(if unknown.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(super::EXIT_FAILURE) })
}

/// `--damaged`: the damage to shipped files was looked at; status stops naming it.
fn damaged(args: &ForgetArgs) -> Result<ExitCode> {
    let mut store = Store::open_existing(&super::config_and_db(&args.common)?.db)?;
    let records = store.streams().damaged(None)?;
    let n = store.streams_mut().forget_damage()?;
    if !super::quiet() {
        for d in &records {
            match &d.damage {
                Damage::Spool { kept, .. } => {
                    println!("forgot the damaged spool of {}:{} (kept in {kept}.log/.idx)", d.host, d.file)
                }
                Damage::Gap { offset, bytes } => {
                    println!(
                        "forgot the {bytes} bytes of {}:{} at offset {offset} that were never shipped",
                        d.host, d.file
                    )
                }
            }
        }
        println!("{n} damage record(s) forgotten; files set aside stay where they are");
    }
    Ok(ExitCode::SUCCESS)
}

fn in_cluster(args: &ForgetArgs) -> String {
    args.cluster.as_ref().map(|c| format!("of cluster {c} ")).unwrap_or_default()
}

/// The known sources each of `files` is: by content (a source is its first
/// bytes, whatever its name now), or by the path it was read under when the
/// file cannot be opened (rotated away). Returns them and the files that
/// are none.
fn pick(store: &Store, known: &[KnownSource], files: &[String]) -> Result<(Vec<KnownSource>, Vec<String>)> {
    let clusters: BTreeSet<&str> = known.iter().map(|s| s.cluster.as_str()).collect();
    let mut ids = BTreeSet::new();
    let mut unknown = Vec::new();
    for file in files {
        let mut found: Vec<i64> = known.iter().filter(|s| same_path(&s.path, file)).map(|s| s.id).collect();
        // "-" would read standard input: only its recorded name can match.
        if let Some(source) = Some(file).filter(|f| *f != "-").and_then(|f| Source::open(f).ok()) {
            for cluster in &clusters {
                found.extend(store.sources().with_content(cluster, source.head())?);
            }
        }
        if found.is_empty() {
            unknown.push(file.clone());
        }
        ids.extend(found);
    }
    Ok((known.iter().filter(|s| ids.contains(&s.id)).cloned().collect(), unknown))
}

/// Whether a recorded path and a path given now name the same file.
fn same_path(recorded: &str, given: &str) -> bool {
    recorded == given
        || std::fs::canonicalize(recorded).ok().zip(std::fs::canonicalize(given).ok()).is_some_and(|(a, b)| a == b)
}
