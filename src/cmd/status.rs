//! `walwatch status`: what the daemon follows, how far it read, what is wrong.
//! Takes the config for [alerts.clock_skew] (events dated ahead). Its exit
//! status sums up the state for a monitor ([`health`]).

mod health;

use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use crate::alert::rules::ahead_text;
use crate::alert::rules::ClockSkew;
use crate::catalog::Catalog;
use crate::classify::trust::residual_risk;
use crate::cli::{ReportFormat, StatusArgs};
use crate::frame::prefix::Prefix;
use crate::output;
use crate::output::grouped;
use crate::store::daemon::{ClusterStatus, Heartbeat};
use crate::store::retention::RetentionRecord;
use crate::store::Store;
use crate::timefmt::format_duration;
use crate::timefmt::rfc3339;
use health::{DaemonState, Verdict};

#[derive(Serialize)]
struct Status {
    /// The exit status and why (worst first); 0 and none when all is well.
    #[serde(flatten)]
    verdict: Verdict,
    daemon: DaemonStatus,
    digest: DigestStatus,
    store: StoreStatus,
    /// The daemon's HTTP listeners ([metrics], [ingest]) while it runs.
    listeners: Vec<ListenerReport>,
    clusters: Vec<ClusterReport>,
}

/// A listener as the running daemon last recorded it (every heartbeat).
#[derive(Serialize)]
struct ListenerReport {
    name: String,
    address: String,
    /// false: its port takes no connection, or it does not run.
    up: bool,
    /// Why it is down, or what a reload could not apply (`status` exits
    /// with [`super::EXIT_PROBLEMS`] while there is one).
    problem: Option<String>,
    since: String,
    open_connections: u64,
    requests: u64,
    /// Connections and requests turned away since the daemon started, by reason.
    refused: std::collections::BTreeMap<String, u64>,
}

/// The daily digest: the latest day dealt with and its mail's fate.
#[derive(Serialize)]
struct DigestStatus {
    enabled: bool,
    /// The latest day recorded (YYYY-MM-DD), null before the first start.
    last_day: Option<String>,
    /// "queued", "baseline" (first start: nothing mailed) or "skipped" (a quiet day).
    last_kind: Option<String>,
    sent_at: Option<String>,
    attempts: i64,
    last_error: Option<String>,
    /// When the next digest falls due (RFC 3339), while enabled.
    next_due: Option<String>,
}

/// Retention (`[store] keep`) and what the daemon's daily prune did.
#[derive(Serialize)]
struct StoreStatus {
    /// Days kept (fractional for a keep in hours); null: kept forever.
    keep_days: Option<f64>,
    last_pruned_at: Option<String>,
    last_pruned_rows: u64,
    /// Rows older than this were deleted.
    pruned_before: Option<String>,
    /// The last prune failed (and none succeeded since): when and why.
    prune_failed_at: Option<String>,
    prune_error: Option<String>,
    /// The file shrinks after a prune (incremental vacuum); false for a
    /// store created without it: the space is reused, the file stays.
    shrinks: bool,
}

#[derive(Serialize)]
struct DaemonStatus {
    running: bool,
    /// running, not_running (killed, crashed, hung), stopped (cleanly) or never (no daemon ran on this store).
    state: DaemonState,
    pid: Option<u32>,
    started_at: Option<String>,
    heartbeat_at: Option<String>,
}

#[derive(Serialize)]
struct ClusterReport {
    name: String,
    /// How the newest file is read.
    format: Option<String>,
    prefix: Option<String>,
    files: Vec<FileReport>,
    last_event_at: Option<String>,
    last_commit_at: Option<String>,
    /// What keeps the daemon from reading the cluster's logs (a path it
    /// cannot list, open or read, a file whose lines did not fit): `status`
    /// exits with [`super::EXIT_PROBLEMS`] while there is one.
    problems: Vec<String>,
    /// Followed files the daemon is a megabyte or more behind on
    /// (`status` exits with [`super::EXIT_BEHIND`]); none for a store no daemon ran on.
    behind: Vec<String>,
    warnings: Vec<String>,
    /// Checkpoints stored from a complete line cut short: their figures
    /// after the cut are unknown.
    truncated: i64,
    /// What the log format leaves open to clients, and what closes it.
    advice: Vec<String>,
}

#[derive(Serialize)]
struct FileReport {
    path: String,
    offset: u64,
    /// Current size on disk; null when the file is gone (rotated away, deleted).
    size: Option<u64>,
    lag_bytes: Option<u64>,
}

/// The daemon as `status` judges it, for `doctor`: its line as `status`
/// prints it, whether one ran on this store and is not running now, whether
/// none ever ran, and the followed files it is a megabyte or more behind on.
pub(super) struct DaemonSummary {
    pub(crate) line: String,
    pub(crate) down: bool,
    pub(crate) never: bool,
    pub(crate) behind: Vec<String>,
}

pub(super) fn daemon_summary(store: &Store) -> Result<DaemonSummary> {
    let daemon = daemon(store.daemon().last_heartbeat()?.as_ref(), Timestamp::now());
    let mut behind = Vec::new();
    let shipped = crate::receive::streams::shipped_sizes(store)?;
    for c in store.daemon().cluster_status(None)? {
        let name = c.name.clone();
        behind.extend(report(c, daemon.state, &shipped).behind.into_iter().map(|b| format!("cluster {name}: {b}")));
    }
    let down = daemon.state.expected() && !daemon.running;
    Ok(DaemonSummary { line: daemon_line(&daemon), down, never: !daemon.state.expected(), behind })
}

/// With `-q` nothing is printed: the exit status only.
pub(crate) fn run(args: StatusArgs) -> Result<ExitCode> {
    let super::Loaded { config, rules, db } = super::config_and_db(&args.common)?;
    let store = Store::open_read_only(&db)?;
    super::check_cluster(&store, args.cluster.as_deref())?;
    let heartbeat = store.daemon().last_heartbeat()?;
    let now = Timestamp::now();
    let daemon = daemon(heartbeat.as_ref(), now);
    let mut clusters = Vec::new();
    let shipped = crate::receive::streams::shipped_sizes(&store)?;
    let mut risks = Risks::default();
    for c in store.daemon().cluster_status(args.cluster.as_deref())? {
        let mut r = report(c, daemon.state, &shipped);
        dated_ahead(&store, &mut r, rules.get::<ClockSkew>(), now)?;
        trust(&store, &mut r, now, &mut risks)?;
        unmatched(&store, &mut r)?;
        truncated(&store, &mut r)?;
        damaged(&store, &mut r)?;
        clusters.push(r);
    }
    let store_status = store_status(&store.retention().recorded()?, config.store.keep);
    let listeners = match daemon.state {
        DaemonState::Running => listeners(&store)?,
        _ => Vec::new(),
    };
    let named = |c: &ClusterReport, list: &[String]| -> Vec<String> {
        list.iter().map(|p| format!("cluster {}: {p}", c.name)).collect()
    };
    let mut problems: Vec<String> = listeners
        .iter()
        .filter_map(|l| Some(format!("listener {} ({}): {}", l.name, l.address, l.problem.as_deref()?)))
        .collect();
    problems.extend(clusters.iter().flat_map(|c| named(c, &c.problems)));
    let behind: Vec<String> = clusters.iter().flat_map(|c| named(c, &c.behind)).collect();
    let status = Status {
        verdict: health::verdict(daemon.state, &problems, &behind),
        daemon,
        digest: digest(&store, &config, now)?,
        store: store_status,
        listeners,
        clusters,
    };
    if !super::quiet() {
        let mut out = std::io::stdout().lock();
        match args.format {
            ReportFormat::Json => output::json(&mut out, &status)?,
            ReportFormat::Table => table(&mut out, &status)?,
        }
    }
    Ok(ExitCode::from(status.verdict.exit_status))
}

fn listeners(store: &Store) -> Result<Vec<ListenerReport>> {
    Ok(store
        .listeners()
        .all()?
        .into_iter()
        .map(|l| ListenerReport {
            problem: l.problem.clone().or_else(|| (!l.up).then(|| "takes no connection".into())),
            name: l.name,
            address: l.address,
            up: l.up,
            since: rfc3339(l.since),
            open_connections: l.open,
            requests: l.requests,
            refused: l.refused.into_iter().filter(|(_, n)| *n > 0).collect(),
        })
        .collect())
}

/// Damage to shipped files walwatch could not prevent: a problem until
/// `walwatch forget --damaged` says it was looked at.
fn damaged(store: &Store, r: &mut ClusterReport) -> Result<()> {
    use crate::store::Damage;
    for d in store.streams().damaged(Some(&r.name))? {
        let at = crate::timefmt::table_time(d.at);
        let text = match &d.damage {
            Damage::Spool { reason, kept, unread } => {
                let lost = match unread {
                    0 => "nothing unread was lost".to_string(),
                    n => format!("{} bytes taken but not read yet were lost (an agent sending them again has them taken)", grouped(*n as i64)),
                };
                format!(
                    "its spool was damaged outside walwatch ({reason}) and set aside at {at} as {kept}.log/.idx; the file goes on as content #{}; {lost}",
                    d.generation + 2
                )
            }
            Damage::Gap { offset, bytes } => format!(
                "{} bytes from offset {} were never shipped (seen at {at}): a line longer than the agent's max_line_bytes, or a filter; the lines around them may be read differently than on the host, a forged line among them taken. Ship every line whole: the agent's config from walwatch vector-config",
                grouped(*bytes as i64),
                grouped(*offset as i64)
            ),
        };
        r.problems.push(format!("{}:{}: {text}; once looked at: walwatch forget --damaged", d.host, d.file));
    }
    Ok(())
}

/// Lines that look like events but did not fit their file's format or
/// prefix, in files that were read all the same (below the share that makes
/// a read a misfit): nothing could be said about who wrote them.
fn unmatched(store: &Store, r: &mut ClusterReport) -> Result<()> {
    for (path, n) in store.sources().unmatched(&r.name)? {
        r.warnings.push(format!(
            "{path}: {n} line(s) that look like PostgreSQL events did not fit its format or prefix (counted as unmatched, neither events nor rejected)"
        ));
    }
    Ok(())
}

/// Checkpoints stored from a complete line cut short (a pager's `>`, the
/// end of the input): what the line said before the cut is kept.
fn truncated(store: &Store, r: &mut ClusterReport) -> Result<()> {
    let filter = crate::store::Filter { cluster: Some(r.name.clone()), ..crate::store::Filter::default() };
    r.truncated = store.checkpoints().truncated(&filter)?;
    if r.truncated > 0 {
        r.warnings.push(format!(
            "{} checkpoint(s) stored from a complete line cut short (truncated): the figures after the cut are unknown; \
             read the whole log to have them (`walwatch checkpoints` marks them)",
            r.truncated
        ));
    }
    Ok(())
}

fn digest(store: &Store, config: &crate::config::Config, now: Timestamp) -> Result<DigestStatus> {
    use crate::store::digests::DayRecord;
    let enabled = config.digest.enabled && config.mail.is_some();
    let latest = store.digests().latest()?;
    let schedule = crate::digest::schedule::Schedule::of(&config.digest)?;
    let next_due = enabled.then(|| {
        let from = latest.as_ref().map_or_else(|| schedule.latest_due(now), |l| l.day);
        rfc3339(schedule.next_after(from))
    });
    let kind = |r: &DayRecord| match r {
        DayRecord::Baseline => "baseline",
        DayRecord::Queued { .. } => "queued",
        DayRecord::Skipped => "skipped",
    };
    Ok(DigestStatus {
        enabled,
        last_day: latest.as_ref().map(|l| l.day.to_string()),
        last_kind: latest.as_ref().map(|l| kind(&l.record).to_string()),
        sent_at: latest.as_ref().and_then(|l| l.sent_at).map(rfc3339),
        attempts: latest.as_ref().map_or(0, |l| l.attempts),
        last_error: latest.and_then(|l| l.last_error),
        next_due,
    })
}

fn daemon_line(d: &DaemonStatus) -> String {
    let beat = shown(d.heartbeat_at.as_deref());
    match (d.state, d.pid) {
        (DaemonState::Running, Some(pid)) => format!("daemon: running (pid {pid}, last heartbeat {beat})"),
        (DaemonState::NotRunning, Some(pid)) => {
            format!("daemon: NOT running (pid {pid} gone or its heartbeat too old; last heartbeat {beat})")
        }
        (DaemonState::Stopped, _) => format!("daemon: stopped (cleanly, at {beat})"),
        _ => "daemon: none has run on this store".into(),
    }
}

fn digest_line(d: &DigestStatus) -> String {
    if !d.enabled {
        return "digest: off (needs [mail]; [digest] enabled = false turns it off)".into();
    }
    let next = shown(d.next_due.as_deref());
    let sent_at = d.sent_at.as_deref().map(|t| shown(Some(t)));
    match (d.last_day.as_deref(), d.last_kind.as_deref(), sent_at) {
        (None, ..) => format!("digest: none yet; next due {next}"),
        (Some(day), Some("queued"), Some(sent)) => format!("digest: {day} sent {sent}; next due {next}"),
        (Some(day), Some("queued"), None) => format!(
            "digest: {day} NOT sent yet ({} attempts{}); next due {next}",
            d.attempts,
            d.last_error.as_deref().map(|e| format!(", last error: {e}")).unwrap_or_default()
        ),
        (Some(day), Some(kind), _) => format!("digest: {day} {kind} (not mailed); next due {next}"),
        (Some(day), None, _) => format!("digest: {day}; next due {next}"),
    }
}

/// The keep is the config's (what the daemon will apply next), the rest the store's.
fn store_status(r: &RetentionRecord, keep: Option<std::time::Duration>) -> StoreStatus {
    StoreStatus {
        keep_days: keep.map(|k| k.as_secs_f64() / 86_400.0),
        last_pruned_at: r.pruned_at.map(rfc3339),
        last_pruned_rows: r.rows,
        pruned_before: r.pruned_before().map(rfc3339),
        prune_failed_at: r.failed_at.map(rfc3339),
        prune_error: r.error.clone(),
        shrinks: r.incremental,
    }
}

/// "store: keeps 400 days; last pruned 2026-11-23 04:12:45.123 +01:00, 12,345 rows"
fn store_lines(out: &mut impl Write, s: &StoreStatus) -> Result<()> {
    let keep = match s.keep_days {
        Some(days) => RetentionRecord::keep_text(std::time::Duration::from_secs_f64(days * 86_400.0)),
        None => "keeps everything ([store] keep = \"forever\")".into(),
    };
    let pruned = match (&s.last_pruned_at, s.keep_days) {
        (Some(at), _) => format!("last pruned {}, {} rows", shown(Some(at)), grouped(s.last_pruned_rows as i64)),
        (None, Some(_)) => "not pruned yet (the daemon prunes once a day)".into(),
        (None, None) => "never pruned".into(),
    };
    output::line(out, format!("store: {keep}; {pruned}"))?;
    if let (Some(at), Some(error)) = (&s.prune_failed_at, &s.prune_error) {
        output::line(out, format!("  problem: the daily prune failed at {}: {error}", shown(Some(at))))?;
    }
    if !s.shrinks && s.last_pruned_rows > 0 {
        output::line(out, format!("  note: {}", crate::store::retention::NOT_INCREMENTAL))?;
    }
    Ok(())
}

/// "listener ingest https://0.0.0.0:10188: up; 3 open, 1,204 requests; refused: 2 timeout"
fn listener_lines(out: &mut impl Write, l: &ListenerReport) -> Result<()> {
    let state = match l.up {
        true => "up".to_string(),
        false => format!("DOWN since {}", shown(Some(&l.since))),
    };
    let refused: Vec<String> = l.refused.iter().map(|(why, n)| format!("{} {why}", grouped(*n as i64))).collect();
    let refused = match refused.is_empty() {
        true => String::new(),
        false => format!("; refused: {}", refused.join(", ")),
    };
    let (open, requests) = (grouped(l.open_connections as i64), grouped(l.requests as i64));
    output::line(
        out,
        format!("listener {} {}: {state}; {open} open, {requests} requests{refused}", l.name, l.address),
    )?;
    if let Some(p) = &l.problem {
        output::line(out, format!("  problem: {p}"))?;
    }
    Ok(())
}

/// A time of the JSON (RFC 3339 UTC) as the table shows it: local, or
/// UTC with `--utc`; "-" for none.
fn shown(rfc: Option<&str>) -> String {
    match rfc {
        Some(rfc) => rfc.parse::<Timestamp>().map_or_else(|_| rfc.to_string(), crate::timefmt::table_time),
        None => "-".into(),
    }
}

fn daemon(h: Option<&Heartbeat>, now: Timestamp) -> DaemonStatus {
    let state = health::daemon_state(h, now, health::process);
    DaemonStatus {
        running: state == DaemonState::Running,
        state,
        pid: h.map(|h| h.pid).filter(|&p| p != 0),
        started_at: h.map(|h| rfc3339(h.started_at)),
        heartbeat_at: h.map(|h| rfc3339(h.at)),
    }
}

/// Lag counts as "behind" only where a daemon follows the files: an
/// imported log that grew since is not walwatch's to keep up with.
fn report(c: ClusterStatus, daemon: DaemonState, shipped: &HashMap<String, u64>) -> ClusterReport {
    let files: Vec<FileReport> = c.sources.iter().map(|s| file_report(&s.path, s.read_to, shipped)).collect();
    let behind = match daemon.expected() {
        true => files.iter().filter_map(|f| health::behind(&f.path, f.lag_bytes)).collect(),
        false => Vec::new(),
    };
    let problems: Vec<String> = c.problems.iter().map(|(p, w)| format!("{p}: {w}")).collect();
    let mut warnings = Vec::new();
    let read: u64 = c.sources.iter().map(|s| s.read_to).sum();
    if read > 0 && c.last_checkpoint_event.is_none() {
        warnings.push(format!(
            "{read} bytes of log read but no checkpoint line seen: is log_checkpoints on (off by default before PostgreSQL 15)?"
        ));
    }
    ClusterReport {
        name: c.name,
        format: None,
        prefix: None,
        files,
        last_event_at: c.last_event.map(rfc3339),
        last_commit_at: c.last_commit.map(rfc3339),
        problems,
        behind,
        warnings,
        truncated: 0,
        advice: Vec::new(),
    }
}

/// What each way of reading leaves open ([`residual_risk`]), worked out
/// once per format and prefix: a central's thousand clusters share a few
/// prefixes, and compiling one takes milliseconds.
#[derive(Default)]
struct Risks(HashMap<(String, Option<String>), Option<String>>);

impl Risks {
    fn of(&mut self, format: &str, prefix: Option<&str>) -> Option<String> {
        let key = (format.to_string(), prefix.map(str::to_string));
        self.0
            .entry(key)
            .or_insert_with(|| {
                let compiled = prefix.and_then(|p| Prefix::compile(p, Catalog::global().markers()).ok());
                residual_risk(format, compiled.as_ref())
            })
            .clone()
    }
}

/// How the log is read, what that leaves open to a client, and the lines
/// refused as forged in the files read in the last day (an attack under way
/// shows here).
fn trust(store: &Store, r: &mut ClusterReport, now: Timestamp, risks: &mut Risks) -> Result<()> {
    if let Some((format, prefix)) = store.sources().latest_reading(&r.name)? {
        r.advice.extend(risks.of(&format, prefix.as_deref()));
        (r.format, r.prefix) = (Some(format), prefix);
    }
    let since = now.checked_sub(SignedDuration::from_hours(24)).unwrap_or(Timestamp::MIN);
    if let Some(refused) = store.events().refused_since(&r.name, since)? {
        let lines = if refused.count == 1 { "1 line".to_string() } else { format!("{} lines", refused.count) };
        let at = match refused.line {
            0 => refused.path,
            n => format!("{}:{n}", refused.path),
        };
        r.warnings.push(format!(
            "{lines} refused as forged in the files read in the last 24h, the last at {at}: {}",
            refused.reason
        ));
    }
    Ok(())
}

/// Events dated more than the clock_skew tolerance ahead of this machine's
/// clock when read: never the "last event" (one line dated 2099 would hide
/// when the log really stopped), and a warning while any was read within
/// the rule's window.
fn dated_ahead(store: &Store, r: &mut ClusterReport, rule: &ClockSkew, now: Timestamp) -> Result<()> {
    r.last_event_at = store.events().log_times(&r.name, rule.tolerance)?.newest.map(rfc3339);
    let since = now.checked_sub(SignedDuration::try_from(rule.window)?).unwrap_or(Timestamp::MIN);
    if let Some(a) = store.events().dated_ahead(&r.name, rule.tolerance, since)? {
        let events = if a.count == 1 { "1 event".to_string() } else { format!("{} events", a.count) };
        r.warnings.push(format!(
            "{events} read in the last {} dated up to {} ahead of this machine's clock, latest read at {}; check the server's clock / log_timezone (the alert rules ignore their times)",
            format_duration(rule.window),
            ahead_text(a.most_ahead_read_at, a.most_ahead_at),
            rfc3339(a.latest_read_at)
        ));
    }
    Ok(())
}

/// A followed file's size on disk, or a shipped file's in its spool.
fn file_report(path: &str, offset: u64, shipped: &HashMap<String, u64>) -> FileReport {
    let size = shipped.get(path).copied().or_else(|| std::fs::metadata(path).ok().map(|m| m.len()));
    FileReport { path: path.into(), offset, size, lag_bytes: size.map(|z| z.saturating_sub(offset)) }
}

fn table(out: &mut impl Write, s: &Status) -> Result<()> {
    output::line(out, daemon_line(&s.daemon))?;
    output::line(out, digest_line(&s.digest))?;
    store_lines(out, &s.store)?;
    for l in &s.listeners {
        listener_lines(out, l)?;
    }
    for c in &s.clusters {
        let (event, commit) = (shown(c.last_event_at.as_deref()), shown(c.last_commit_at.as_deref()));
        output::line(out, "")?;
        output::line(out, format!("cluster {}: last event {event}, last commit {commit}", c.name))?;
        let rows: Vec<Vec<String>> = c
            .files
            .iter()
            .map(|f| {
                let bytes = |n: u64| grouped(n as i64);
                let lag = f.lag_bytes.map(bytes).unwrap_or_else(|| "gone".into());
                vec![f.path.clone(), bytes(f.offset), f.size.map(bytes).unwrap_or_default(), lag]
            })
            .collect();
        output::table(out, &["file", "offset", "size", "lag"], &rows, &["offset", "size", "lag"])?;
        for p in &c.problems {
            output::line(out, format!("  problem: {p}"))?;
        }
        for b in &c.behind {
            output::line(out, format!("  behind: {b}"))?;
        }
        for w in &c.warnings {
            output::line(out, format!("  warning: {w}"))?;
        }
        for a in &c.advice {
            output::line(out, format!("  advice: {a}"))?;
        }
    }
    Ok(())
}
