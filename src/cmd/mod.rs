//! One module per subcommand; this one dispatches and holds what they share.

mod alerts;
mod analyze;
mod checkpoints;
mod completions;
pub mod config;
mod digest;
mod doctor;
mod forget;
mod history;
mod import;
mod man;
mod run;
mod settings;
mod status;
mod suggest;
mod summary;
mod vector_config;
mod whatif;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;

use crate::alert::rules::RuleSet;
use crate::cli::{Cli, Command, ConfigDbArgs, WindowArgs};
use crate::config::{Config, StoreUser};
use crate::store::Filter;

/// Exit status for an error; 0 is success (2 is clap's, for a usage error).
pub const EXIT_FAILURE: u8 = 1;

/// `import`: a file held lines that look like PostgreSQL events but did not
/// fit the format or prefix it was read with; nothing of it was recorded as read.
pub(crate) const EXIT_MISFIT: u8 = 3;

/// `status`: a cluster has a problem — a log the daemon cannot read, or one
/// whose lines did not fit its format or prefix. `import`: a file was read
/// with problems — complete lines cut short, stored as far as they go and
/// marked truncated.
pub(crate) const EXIT_PROBLEMS: u8 = 4;

/// `status`: a daemon ran on this store and is not running now (stopped,
/// killed, crashed or hung).
pub(crate) const EXIT_DAEMON_DOWN: u8 = 5;

/// `status`: a followed log holds a megabyte or more that the daemon has
/// not read yet.
pub(crate) const EXIT_BEHIND: u8 = 6;

pub fn run(cli: Cli) -> Result<ExitCode> {
    survive_file_size_limit();
    QUIET.store(cli.quiet, Ordering::Relaxed);
    crate::timefmt::set_table_zone(cli.utc);
    match cli.command {
        Command::Import(args) => import::run(args),
        Command::Checkpoints(args) => checkpoints::run(args),
        Command::Summary(args) => summary::run(args),
        Command::History(args) => history::run(args),
        Command::Digest(args) => digest::run(args),
        Command::Config(cmd) => config::run(cmd),
        Command::Run(args) => run::run(args),
        Command::Status(args) => status::run(args),
        Command::Settings(args) => settings::run(args),
        Command::Suggest(args) => suggest::run(args),
        Command::Whatif(args) => whatif::run(args),
        Command::Analyze(args) => analyze::run(args),
        Command::Alerts(args) => alerts::run(args),
        Command::Forget(args) => forget::run(args),
        Command::Doctor(args) => doctor::run(args),
        Command::Completions(args) => completions::run(args),
        Command::Man(args) => man::run(args),
        Command::VectorConfig(args) => vector_config::run(args),
    }
}

/// A file-size limit (RLIMIT_FSIZE; systemd's `LimitFSIZE=`) reached by the
/// store or a spool is a failed write that walwatch reports and recovers
/// from, as from a full disk, rather than SIGXFSZ's default action: killing
/// the process in the middle of a write. With a handler installed, the write
/// fails with EFBIG instead (PostgreSQL's postmaster ignores SIGXFSZ too).
fn survive_file_size_limit() {
    let flag = std::sync::Arc::new(AtomicBool::new(false));
    if let Err(e) = signal_hook::flag::register(signal_hook::consts::SIGXFSZ, flag) {
        tracing::warn!(error = %e, "Cannot catch SIGXFSZ: a file-size limit would end the process.");
    }
}

/// `-q`: set once before the command runs, like the log level it also sets.
static QUIET: AtomicBool = AtomicBool::new(false);

/// Whether `-q` asked for errors only: a command then prints no notes
/// (what it wrote, sent or forgot, an import's report, `status`'s table),
/// only the data it was asked for and its errors.
pub(crate) fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// A note on stderr, unless `-q`.
pub(crate) fn note(text: impl std::fmt::Display) {
    if !quiet() {
        let _ = crate::output::lines(&mut std::io::stderr().lock(), &text.to_string());
    }
}

/// tracing: human-readable to stderr, structured to journald under systemd.
/// One-shot commands: RUST_LOG, else -v/-q (warnings by default). The
/// daemon: -v/-q, else the config's `[daemon] log_level`, else RUST_LOG,
/// else info.
pub fn init_logging(cli: &Cli) {
    use tracing_subscriber::EnvFilter;
    let level = match (cli.quiet, cli.verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, _) => "debug",
    };
    let from_env = || EnvFilter::try_from_default_env().ok();
    let filter = match &cli.command {
        Command::Run(args) if cli.verbose == 0 && !cli.quiet => {
            configured_log_level(args).map(EnvFilter::new).or_else(from_env).unwrap_or_else(|| EnvFilter::new("info"))
        }
        Command::Run(_) => EnvFilter::new(level),
        _ => from_env().unwrap_or_else(|| EnvFilter::new(level)),
    };
    // Under systemd (JOURNAL_STREAM set), structured records go to the journal.
    if std::env::var_os("JOURNAL_STREAM").is_some() {
        if let Ok(journald) = tracing_journald::layer() {
            use tracing_subscriber::prelude::*;
            let journald = journald.with_syslog_identifier("walwatch".into());
            let _ = tracing_subscriber::registry().with(filter).with(journald).try_init();
            return;
        }
    }
    use std::io::IsTerminal;
    let ansi = std::io::stderr().is_terminal();
    let fmt = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    let _ = fmt.with_target(false).try_init();
}

/// The daemon's `[daemon] log_level`, when its config sets one. A config
/// that does not load is the daemon's to report, once logging is up.
fn configured_log_level(args: &crate::cli::RunArgs) -> Option<String> {
    let (config, _) = crate::config::load_or_default(args.config.as_deref()).ok()?;
    config.daemon.log_level
}

/// Whether an error is only a closed stdout (`walwatch … | head`).
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe))
}

/// The error as one line: the message and each cause it does not already
/// say. Many errors (SQLite's, the OS's, jiff's) repeat their source in
/// their own text; `{:#}` printed such a cause twice ("Is a directory (os
/// error 21): Is a directory (os error 21)").
pub fn error_text(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let said = cause.to_string();
        if said.is_empty() || text.contains(&said) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&said);
    }
    text
}

/// An existing store, for writing where this user may (a query that
/// records what it learnt on the way), else for reading: the writes it
/// would have made then fail and are said as warnings.
fn writable_or_read_only(db: &std::path::Path) -> Result<crate::store::Store> {
    use crate::store::{Store, StoreError};
    match Store::open_existing(db) {
        Err(StoreError::ReadOnly { .. }) => Ok(Store::open_read_only(db)?),
        other => Ok(other?),
    }
}

/// A command's configuration, its alert rules and its store.
struct Loaded {
    config: Config,
    rules: RuleSet,
    db: PathBuf,
}

/// The configuration (built-in defaults when the default file is absent,
/// or unreadable to this user), its rules' `[alerts.<id>]` tables read, and
/// the store it names: `--db` (or WALWATCH_DB) wins, then the config
/// file's `[store] path`, then the per-user default. The same in every command.
fn config_and_db(args: &ConfigDbArgs) -> Result<Loaded> {
    let (config, source) = readable_config(args.config.as_deref())?;
    let rules = RuleSet::configure(&config.alerts)?;
    let db = crate::config::store_path(args.db.db.as_deref(), &config, &source, StoreUser::Command);
    Ok(Loaded { config, rules, db })
}

/// `--config`/WALWATCH_CONFIG must be readable; the default file (root:walwatch
/// 0640 in the packages) may not be, to a user outside group walwatch: then
/// the defaults apply, said in a warning, rather than no command working.
fn readable_config(flag: Option<&std::path::Path>) -> Result<(Config, crate::config::ConfigSource)> {
    use crate::config::{ConfigError, ConfigSource};
    match crate::config::load_or_default(flag) {
        Err(ConfigError::Read { path, source })
            if flag.is_none() && source.kind() == std::io::ErrorKind::PermissionDenied =>
        {
            tracing::warn!(
                "cannot read {} ({source}): using the defaults, and its [store] path is not known; \
                 pass --db, or ask to be added to group walwatch",
                path.display()
            );
            Ok((Config::default(), ConfigSource::Defaults(path)))
        }
        other => Ok(other?),
    }
}

/// The clusters a command covers: `--cluster`, else every cluster in the store.
fn clusters(store: &crate::store::Store, only: Option<&str>) -> Result<Vec<String>> {
    let known = store.clusters().names()?;
    match only {
        Some(c) if known.iter().any(|k| k == c) => Ok(vec![c.to_string()]),
        Some(c) => anyhow::bail!("no cluster {c:?} in {} (known: {})", store.path().display(), known.join(", ")),
        None => Ok(known),
    }
}

fn filter(window: &WindowArgs, trigger: Option<crate::model::event::Trigger>) -> Result<Filter> {
    let now = jiff::Timestamp::now();
    let when = |v: &Option<String>| -> Result<_> {
        v.as_deref().map(|t| crate::timefmt::parse_when(t, now).map_err(anyhow::Error::msg)).transpose()
    };
    let (since, until) = (when(&window.since)?, when(&window.until)?);
    check_range(since, until)?;
    Ok(Filter { cluster: window.cluster.clone(), since, until, trigger })
}

/// An empty range is a mistake to say, not an empty table to print.
fn check_range(since: Option<jiff::Timestamp>, until: Option<jiff::Timestamp>) -> Result<()> {
    use crate::timefmt::rfc3339;
    match (since, until) {
        (Some(s), Some(u)) if s >= u => anyhow::bail!("--since {} is not before --until {}", rfc3339(s), rfc3339(u)),
        _ => Ok(()),
    }
}

/// `--cluster` names a cluster of the store (an unknown name is an error
/// listing the known ones, never an empty result).
fn check_cluster(store: &crate::store::Store, only: Option<&str>) -> Result<()> {
    clusters(store, only).map(drop)
}

#[cfg(test)]
mod tests {
    use super::error_text;

    /// A cause the message already says is not said again; one it does
    /// not say is kept, in order.
    #[test]
    fn error_text_says_each_cause_once() {
        let io = std::io::Error::from_raw_os_error(21);
        let said = io.to_string();
        let err = anyhow::Error::new(io).context(format!("reading /etc: {said}")).context("loading the config");
        assert_eq!(error_text(&err), format!("loading the config: reading /etc: {said}"));
        let err = anyhow::anyhow!("root cause").context("outer");
        assert_eq!(error_text(&err), "outer: root cause");
    }
}
