//! Following one cluster's log files: which files, how far each was read,
//! and reading what is new — including files renamed or deleted since (they
//! stay open until read to the end, as logrotate's rename+create expects).
//!
//! Identity and resume positions come from the store (content fingerprints,
//! offsets committed with the events), so a restart — or a `kill -9` —
//! continues exactly where the last commit stopped.
//!
//! Bounded work: a round (`Follower::poll_until`) ends at a deadline or a
//! stop request, between two files, and the next round resumes the listing
//! (files read to the end are skipped by their size and ctime). At most
//! [`MAX_OPEN`] files stay open: beyond that the longest-unchanged file that
//! was read to its end is closed, remembered by (device, inode, size, ctime),
//! and reopened by path once it changes — the store's offset for its content
//! says where to go on, so nothing is lost or read twice.
//!
//! Symlinks: a matched path is followed only if it resolves to a file inside
//! the directory its glob names (the glob's leading part without wildcards);
//! a link leading elsewhere is refused, without opening it, and named in
//! `walwatch status`.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::{File, Metadata};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::access::{self, Problems};
use crate::config::{self, ClusterConfig, StartAt};
use crate::frame::time::TimeContext;
use crate::frame::Format;
use crate::ingest::{self, ImportReport, IngestError, Options};
use crate::source::Source;
use crate::store::{Store, StoreError};

/// (device, inode): how an open file is told apart from a new one at the same path.
type FileKey = (u64, u64);

/// (size, ctime in ns): both unchanged means nothing new in a file.
type FileState = (u64, i64);

/// Files one follower keeps open at most (besides those whose last entry is
/// held back, which must be re-read once quiet). Enough for any logrotate
/// scheme; a directory of thousands of logs no longer exhausts descriptors.
pub const MAX_OPEN: usize = 64;

/// How a round ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Round {
    /// Some file's last entry is held back (poll again soon to flush it).
    pub(crate) pending: bool,
    /// The deadline or a stop request ended the round before every file was
    /// read: poll again at once.
    pub(crate) unfinished: bool,
}

struct Tracked {
    file: File,
    path: PathBuf,
    /// Size and change time when it was last read: both unchanged means
    /// nothing new (a rewrite to the same size still changes the ctime).
    state_read: Option<FileState>,
    /// Its last entry was held back (more lines of it may come).
    pending: bool,
    /// When it was last seen to change.
    changed_at: Instant,
    /// Why the last read failed: warned about once, not at every poll.
    problem: Option<String>,
    /// Its lines did not fit the cluster's format or prefix when it had this
    /// size: read again only once it has doubled (or the setting changes,
    /// which makes a new follower), so a wrong setting costs a bounded
    /// number of reads of a growing file, not one per poll.
    misfit_at: Option<u64>,
}

pub struct Follower {
    pub(crate) name: String,
    cluster_id: i64,
    config: ClusterConfig,
    opts: Options,
    time: TimeContext,
    files: HashMap<FileKey, Tracked>,
    /// Files closed to stay under [`MAX_OPEN`], read to the end at this state.
    closed: HashMap<FileKey, FileState>,
    /// Paths refused (a symlink leading out of its directory): warned about once.
    refused: HashSet<PathBuf>,
    /// What an unfinished round has yet to read, in order: the next round
    /// goes on with it instead of listing thousands of files again.
    queue: VecDeque<(PathBuf, std::io::Result<Metadata>)>,
    first_round: bool,
    /// How long a file must stay unchanged before its held-back last entry is taken.
    settle: Duration,
    /// Events stored since [`Follower::take_stored`] was last called.
    stored: u64,
    /// What the last listing could not find or read (directories, globs,
    /// current_logfiles): warned about once, then on change.
    listing_problems: Problems,
    /// Files that cannot be opened, by path: warned about once, then on change.
    unopened: HashMap<PathBuf, String>,
    /// The store's count of forgets of the cluster's sources when last
    /// looked at: `walwatch forget` while the daemon runs moves it.
    forgets: u64,
}

impl Follower {
    /// `stop` is raised at SIGTERM: a long read then ends at its next commit.
    pub fn new(store: &mut Store, config: &ClusterConfig, stop: Option<Arc<AtomicBool>>) -> Result<Follower> {
        let format = Format::named(&config.format);
        let cluster_id = store.clusters_mut().find_or_create(&config.name)?;
        // start_at = "end" is for the files present when a daemon first
        // follows the cluster. A file it has never seen at a later start (a
        // restart, or a reload that rebuilt this follower) appeared while no
        // daemon looked: read from its first byte, like one appearing now.
        let first_follow = !store.clusters().followed_before(cluster_id)?;
        let opts = Options {
            format,
            prefix: Some(config.prefix.clone()).filter(|p| p != "auto"),
            new_files_from_end: config.start_at == StartAt::End && first_follow,
            hold_last_entry: true,
            // A followed file is live: an unterminated line waits for its end.
            finished_after: None,
            stop,
            alive: Some(super::notify::watchdog_now_and_then),
        };
        reread_if_setting_changed(store, cluster_id, config)?;
        // Problems are found again by the first round; those of an earlier run may be gone.
        store.daemon_mut().clear_problems(cluster_id)?;
        let forgets = store.clusters().forgets(cluster_id)?;
        let time = TimeContext::new(config.timezone.as_deref())?;
        // What the conf files say first, what the log said over it.
        learn_zone_from_conf(config, &time);
        crate::ingest::remember_zone(store, cluster_id, &time)?;
        Ok(Follower {
            name: config.name.clone(),
            cluster_id,
            config: config.clone(),
            opts,
            time,
            files: HashMap::new(),
            closed: HashMap::new(),
            refused: HashSet::new(),
            queue: VecDeque::new(),
            first_round: true,
            settle: Duration::ZERO,
            stored: 0,
            listing_problems: Problems::new(),
            unopened: HashMap::new(),
            forgets,
        })
    }

    /// Sets how long a file must stay unchanged before its last entry is taken as complete.
    pub(crate) fn with_settle(mut self, settle: Duration) -> Follower {
        self.settle = settle;
        self
    }

    /// How many events were stored since the last call: the alert rules run
    /// again only when something new arrived.
    pub(crate) fn take_stored(&mut self) -> u64 {
        std::mem::take(&mut self.stored)
    }

    pub(crate) fn config(&self) -> &ClusterConfig {
        &self.config
    }

    /// The files to follow now, oldest first, so a rotated file is finished
    /// before its successor: logrotate's numbered copies (`.2` before `.1`
    /// before the live name) whatever their mtimes (a coarse clock often
    /// gives the old and the new file the same one), then by mtime and name;
    /// and what keeps the cluster's logs from being found: a current_logfiles
    /// that cannot be read, a directory that cannot be listed, a glob
    /// matching nothing.
    fn listing(&self) -> (Vec<PathBuf>, Problems) {
        listing(&self.config)
    }

    /// The globs to expand: the configured ones, or the log directory named
    /// by `$PGDATA/current_logfiles`.
    fn patterns(&self) -> Vec<String> {
        patterns_checked(&self.config).0
    }

    /// Directories whose changes should wake the daemon.
    pub(crate) fn watch_dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = self.patterns().iter().filter_map(|p| static_dir(p)).collect();
        if let Some(d) = &self.config.data_directory {
            dirs.push(d.clone());
        }
        dirs.sort();
        dirs.dedup();
        dirs
    }

    /// Reads whatever is new in every followed file. Returns whether some
    /// file's last entry is held back (poll again soon to flush it).
    pub fn poll(&mut self, store: &mut Store) -> Result<bool, StoreError> {
        Ok(self.poll_until(store, None)?.pending)
    }

    /// One round: finishes files rotated away, then reads the followed files
    /// oldest first until `deadline` passes or a stop is requested (checked
    /// between files, so one round never outlasts a file's read by much).
    pub(crate) fn poll_until(&mut self, store: &mut Store, deadline: Option<Instant>) -> Result<Round, StoreError> {
        self.notice_forget(store)?;
        if self.queue.is_empty() {
            self.list(store)?;
        }
        let roots = self.roots();
        // Our own database, whatever path or link leads to it: never a log.
        let own: HashSet<FileKey> = config::store_files(store.path())
            .iter()
            .filter_map(|f| std::fs::metadata(f).ok())
            .map(|m| key_of(&m))
            .collect();
        let mut round = Round::default();
        let mut seen = HashSet::new();
        let mut read_any = false;
        while let Some((path, md)) = self.queue.pop_front() {
            let md = match md {
                Ok(md) if md.is_file() => md,
                Ok(_) => continue,
                Err(e) => {
                    store.daemon_mut().set_problem(
                        self.cluster_id,
                        &path.to_string_lossy(),
                        Some(&format!("cannot stat: {e}")),
                    )?;
                    continue;
                }
            };
            let key = key_of(&md);
            if own.contains(&key) {
                store.daemon_mut().set_problem(
                    self.cluster_id,
                    &path.to_string_lossy(),
                    Some("refused: walwatch's own store"),
                )?;
                continue;
            }
            if !seen.insert(key) || self.closed.get(&key) == Some(&state_of(&md)) {
                continue; // a second glob's match, or closed and unchanged since
            }
            // At least one file per round: a round whose listing alone takes
            // the whole budget still moves on.
            if self.stopping() || (read_any && deadline.is_some_and(|d| Instant::now() >= d)) {
                self.queue.push_front((path, Ok(md)));
                round.unfinished = true;
                break;
            }
            if self.track(store, &path, key, &roots)? {
                read_any = true;
                self.read(store, key, false)?;
                round.pending |= self.files.get(&key).is_some_and(|t| t.pending);
                self.close_idle();
            }
        }
        // start_at = "end" applies to the files present at start: the first
        // round is over only once it has seen all of them.
        self.first_round &= round.unfinished;
        Ok(round)
    }

    /// `walwatch forget` (another process) dropped some of the cluster's
    /// sources: what this follower remembers of its files — read to the end
    /// at this size and ctime, closed unchanged, a misfit at this size —
    /// no longer says what the store has. Forget it all, so that the next
    /// round opens and reads every file from the store's position: the start
    /// for a forgotten source, the end (nothing to do) for the others.
    fn notice_forget(&mut self, store: &Store) -> Result<(), StoreError> {
        let forgets = store.clusters().forgets(self.cluster_id)?;
        if forgets == self.forgets {
            return Ok(());
        }
        tracing::info!(cluster = %self.name, "Sources of the cluster were forgotten: reading its files again.");
        self.forgets = forgets;
        for t in self.files.values_mut() {
            (t.state_read, t.misfit_at) = (None, None);
        }
        self.closed.clear();
        self.queue.clear();
        Ok(())
    }

    /// Lists the matched files for a new round, and finishes the files that
    /// are no longer matched (renamed out of the globs or deleted: older
    /// than anything matched now, so read to their end first, then let go).
    fn list(&mut self, store: &mut Store) -> Result<(), StoreError> {
        let (paths, problems) = self.listing();
        self.report_listing(store, problems)?;
        let listed: VecDeque<(PathBuf, std::io::Result<Metadata>)> =
            paths.into_iter().map(|p| (p.clone(), std::fs::metadata(p))).collect();
        let keys: HashSet<FileKey> =
            listed.iter().filter_map(|(_, md)| md.as_ref().ok().filter(|m| m.is_file()).map(key_of)).collect();
        let gone: Vec<FileKey> = self.files.keys().filter(|k| !keys.contains(k)).copied().collect();
        for key in gone {
            self.read(store, key, true)?;
            self.files.remove(&key);
        }
        self.closed.retain(|k, _| keys.contains(k));
        self.queue = listed;
        Ok(())
    }

    /// Records the listing's problems for `status` and the alert rules, and
    /// warns in the daemon's log about each new or changed one (once: the
    /// listing runs every round) and says when one is gone.
    fn report_listing(&mut self, store: &mut Store, now: Problems) -> Result<(), StoreError> {
        for (path, problem) in &now {
            if self.listing_problems.get(path) != Some(problem) {
                tracing::warn!(cluster = %self.name, path = %path, problem = %problem, "Cannot follow the cluster's logs there.");
                store.daemon_mut().set_problem(self.cluster_id, path, Some(problem))?;
            }
        }
        for path in self.listing_problems.keys().filter(|p| !now.contains_key(*p)) {
            tracing::info!(cluster = %self.name, path = %path, "A problem with the cluster's logs is gone.");
            store.daemon_mut().set_problem(self.cluster_id, path, None)?;
        }
        self.listing_problems = now;
        Ok(())
    }

    fn stopping(&self) -> bool {
        self.opts.stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed))
    }

    /// The configured directories, resolved: where a matched file must lie.
    fn roots(&self) -> Vec<PathBuf> {
        self.patterns().iter().filter_map(|p| leading_dir(p).canonicalize().ok()).collect()
    }

    /// Closes the longest-unchanged files read to their end while more than
    /// [`MAX_OPEN`] are open; a file whose last entry is held back stays open.
    fn close_idle(&mut self) {
        while self.files.len() > MAX_OPEN {
            let idle = self
                .files
                .iter()
                .filter(|(_, t)| !t.pending && t.state_read.is_some())
                .min_by_key(|(_, t)| t.changed_at)
                .map(|(k, t)| (*k, t.state_read));
            let Some((key, Some(state))) = idle else { return };
            self.files.remove(&key);
            self.closed.insert(key, state);
        }
    }

    /// Opens (or finds) the file `key` at `path`; false when it cannot be followed now.
    fn track(&mut self, store: &mut Store, path: &Path, key: FileKey, roots: &[PathBuf]) -> Result<bool, StoreError> {
        let shown = path.to_string_lossy();
        if let Some(t) = self.files.get_mut(&key) {
            t.path = path.to_path_buf();
            return Ok(true);
        }
        if !inside(path, roots) {
            // Never opened: nothing of the target can reach a log line or status.
            let problem = "refused: a symlink to a file outside the configured log directory \
                           (walwatch follows links only within the directory its glob names)";
            if self.refused.insert(path.to_path_buf()) {
                tracing::warn!(cluster = %self.name, path = %shown, "{problem}");
            }
            store.daemon_mut().set_problem(self.cluster_id, &shown, Some(problem))?;
            return Ok(false);
        }
        self.refused.remove(path);
        match File::open(path) {
            // Listed a while ago: the name may lead to another file by now
            // (rotated); that one is read once a new listing finds it.
            Ok(file) if file.metadata().is_ok_and(|m| key_of(&m) != key) => Ok(false),
            Ok(file) => {
                store.daemon_mut().set_problem(self.cluster_id, &shown, None)?;
                self.unopened.remove(path);
                // A closed file comes back unread: the store's offset for its content says where to go on.
                self.closed.remove(&key);
                let tracked = Tracked {
                    file,
                    path: path.to_path_buf(),
                    state_read: None,
                    pending: false,
                    changed_at: Instant::now(),
                    problem: None,
                    misfit_at: None,
                };
                self.files.insert(key, tracked);
                Ok(true)
            }
            Err(e) => {
                let problem = access::cannot("open", path, &e);
                if self.unopened.insert(path.to_path_buf(), problem.clone()).as_ref() != Some(&problem) {
                    tracing::warn!(cluster = %self.name, path = %shown, problem = %problem, "Cannot open a log file.");
                }
                store.daemon_mut().set_problem(self.cluster_id, &shown, Some(&problem))?;
                Ok(false)
            }
        }
    }

    /// Reads one tracked file from where the store says it stopped. A file
    /// that did not change since the last read is read again only to take
    /// its held-back last entry (it has been quiet for a poll), or when
    /// `finish` says no more lines will come (it was rotated away).
    fn read(&mut self, store: &mut Store, key: FileKey, finish: bool) -> Result<u64, StoreError> {
        let Some(t) = self.files.get_mut(&key) else { return Ok(0) };
        let md = t.file.metadata().ok();
        let state = md.as_ref().map(state_of).unwrap_or((0, 0));
        let unchanged = t.state_read == Some(state);
        if !unchanged {
            t.changed_at = Instant::now();
        }
        // A file nobody wrote for `settle` is complete as it is, also on the
        // first read: catching up on an old log takes its last entry at once.
        let quiet =
            md.and_then(|m| m.modified().ok()).and_then(|m| m.elapsed().ok()).is_some_and(|age| age >= self.settle);
        let settled = quiet || (unchanged && t.changed_at.elapsed() >= self.settle);
        let waits_after_misfit = t.misfit_at.is_some_and(|size| state.0 < size.saturating_mul(2));
        if state.0 == 0 || waits_after_misfit || (unchanged && !finish && !(t.pending && settled)) {
            // Nothing yet to fingerprint, or nothing new.
            t.state_read = Some(state);
            return Ok(0);
        }
        let shown = t.path.to_string_lossy().into_owned();
        let opts = Options {
            new_files_from_end: self.first_round && self.opts.new_files_from_end,
            hold_last_entry: !(finish || settled),
            ..self.opts.clone()
        };
        let result = t
            .file
            .try_clone()
            .map_err(|e| IngestError::Read { path: shown.clone(), source: e })
            .and_then(|f| Source::from_file(f, &shown).map_err(IngestError::from))
            .and_then(|src| ingest::import_source(store, self.cluster_id, src, &opts, &self.time));
        match result {
            Ok(report) if report.misfit.is_some() => {
                let problem = misfit_problem(&report);
                if t.problem.as_deref() != Some(problem.as_str()) {
                    tracing::warn!(cluster = %self.name, path = %shown, problem = %problem, "A log file did not fit the cluster's format or prefix; nothing of it was recorded as read.");
                }
                store.daemon_mut().set_problem(self.cluster_id, &shown, Some(&problem))?;
                (t.state_read, t.pending, t.misfit_at, t.problem) = (Some(state), false, Some(state.0), Some(problem));
                Ok(0)
            }
            Ok(report) => {
                t.state_read = Some(state);
                // Held back only if this read held something back; after a
                // flush, what is left is an unterminated line that waits.
                t.pending = opts.hold_last_entry && report.resumed_at + report.bytes < state.0;
                for w in &report.warnings {
                    tracing::debug!(cluster = %self.name, path = %shown, "{w}");
                }
                self.stored += report.stored;
                if report.stored > 0 {
                    tracing::debug!(cluster = %self.name, path = %shown, events = report.stored, bytes = report.bytes, "Stored new events.");
                }
                store.daemon_mut().set_problem(self.cluster_id, &shown, None)?;
                (t.problem, t.misfit_at) = (None, None);
                Ok(report.stored)
            }
            Err(IngestError::Store(e)) => Err(e),
            Err(e) => {
                let problem = problem_of(&e);
                if t.problem.as_deref() != Some(problem.as_str()) {
                    tracing::warn!(cluster = %self.name, path = %shown, error = %problem, "Cannot read a log file.");
                }
                store.daemon_mut().set_problem(self.cluster_id, &shown, Some(&problem))?;
                t.problem = Some(problem);
                Ok(0)
            }
        }
    }
}

/// A failed read as the log and `status` show it. A file whose prefix
/// cannot be detected may be no PostgreSQL log at all (a stray or linked
/// file): its lines are never quoted, only what to do.
fn problem_of(e: &IngestError) -> String {
    match e {
        IngestError::Prefix { .. } => "cannot detect the log_line_prefix: no line at the start of the file looks like \
                                       a PostgreSQL log line; if it is one, set prefix in its [[cluster]] (the value \
                                       of `SHOW log_line_prefix;`)"
            .into(),
        other => other.to_string(),
    }
}

/// What a cluster's globs find now (see [`Follower::paths`]) and what keeps
/// its logs from being found: a current_logfiles that cannot be read, a
/// directory that cannot be listed, a glob that matches nothing.
pub(crate) fn listing(cluster: &ClusterConfig) -> (Vec<PathBuf>, Problems) {
    let (patterns, mut problems) = patterns_checked(cluster);
    let mut paths: Vec<PathBuf> = Vec::new();
    for pattern in &patterns {
        let (found, unlisted) = expand_checked(pattern);
        if found.is_empty() && unlisted.is_empty() {
            let dir = leading_dir(pattern);
            match access::listing_problem(&dir) {
                Some(problem) => problems.insert(dir.to_string_lossy().into_owned(), problem),
                None => problems.insert(pattern.clone(), access::no_match_problem()),
            };
        }
        problems.extend(unlisted);
        paths.extend(found);
    }
    paths.sort_by_cached_key(|p| {
        let mtime = std::fs::metadata(p).and_then(|m| m.modified()).ok();
        (std::cmp::Reverse(rotation_number(p)), mtime, p.clone())
    });
    paths.dedup();
    (paths, problems)
}

/// The globs of a cluster (see [`Follower::patterns`]), and why there are
/// none when current_logfiles cannot say.
fn patterns_checked(cluster: &ClusterConfig) -> (Vec<String>, Problems) {
    if !cluster.logs.is_empty() {
        return (cluster.logs.clone(), Problems::new());
    }
    let Some(data_dir) = &cluster.data_directory else { return (Vec::new(), Problems::new()) };
    let read = config::current_logfiles(data_dir);
    if let Some(problem) = access::current_logfiles_problem(data_dir, &read) {
        let path = data_dir.join("current_logfiles").to_string_lossy().into_owned();
        return (Vec::new(), Problems::from([(path, problem)]));
    }
    let current = read.unwrap_or_default();
    let preferred = ["jsonlog", "csvlog", "stderr"].iter().find_map(|f| current.iter().find(|(fmt, _)| fmt == f));
    let patterns = preferred
        .and_then(|(_, path)| {
            let dir = path.parent()?;
            let ext = path.extension().map(|e| format!("*.{}", e.to_string_lossy())).unwrap_or("*".into());
            Some(vec![format!("{}/{ext}", glob::Pattern::escape(&dir.to_string_lossy()))])
        })
        .unwrap_or_default();
    (patterns, Problems::new())
}

/// Why the daemon could not follow all of `config`'s logs now, as it would
/// record them (`walwatch config check` shows them too).
pub(crate) fn listing_problems(cluster: &ClusterConfig) -> Problems {
    listing(cluster).1
}

/// A read whose lines did not fit, as the log and `status` show it: why,
/// the first such line (control characters blanked: it is log text), and
/// what to set.
fn misfit_problem(r: &ImportReport) -> String {
    let why = r.misfit.as_deref().unwrap_or_default();
    let first = match (&r.first_unmatched, r.first_rejected) {
        (Some((line, text)), _) => {
            let text: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
            format!("; first such line (line {line}): {text}")
        }
        (None, Some((line, reason))) => format!("; first line refused (line {line}): {reason}"),
        (None, None) => String::new(),
    };
    format!(
        "{why}; nothing of it was recorded as read{first}; set format and prefix in the cluster's [[cluster]] table \
         (the server's log_destination and `SHOW log_line_prefix;`): the daemon then reads it again"
    )
}

/// A cluster followed before with another `format` or `prefix` setting had
/// its files read the wrong way: say so, and forget what was read of the
/// files still there, so that they are read again with the new setting.
/// Files gone since keep their events: nothing could read them again.
fn reread_if_setting_changed(store: &mut Store, cluster_id: i64, config: &ClusterConfig) -> Result<(), StoreError> {
    let Some((format, prefix)) =
        store.clusters_mut().record_follow_setting(cluster_id, &config.format, &config.prefix)?
    else {
        return Ok(());
    };
    let (present, gone): (Vec<_>, Vec<_>) =
        store.sources().known(Some(&config.name))?.into_iter().partition(|s| Path::new(&s.path).is_file());
    tracing::warn!(
        cluster = %config.name,
        was = format!("format {format:?}, prefix {prefix:?}"),
        now = format!("format {:?}, prefix {:?}", config.format, config.prefix),
        "The cluster's format or prefix setting changed: forgetting what was read of its {} file(s) still present, to read them again ({} gone keep their events).",
        present.len(),
        gone.len()
    );
    let ids: Vec<i64> = present.iter().map(|s| s.id).collect();
    let forgotten = store.sources_mut().forget(&ids)?;
    tracing::info!(cluster = %config.name, sources = forgotten.sources, events = forgotten.events, "Forgot them.");
    Ok(())
}

/// N of a logrotate-style name ending in `.N` (or `.N.gz`, `.N.zst`); 0 otherwise.
fn rotation_number(path: &Path) -> u32 {
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let name = name.trim_end_matches(".gz").trim_end_matches(".zst");
    name.rsplit_once('.').and_then(|(_, n)| n.parse().ok()).unwrap_or(0)
}

fn key_of(md: &Metadata) -> FileKey {
    (md.dev(), md.ino())
}

fn state_of(md: &Metadata) -> FileState {
    (md.len(), md.ctime() * 1_000_000_000 + md.ctime_nsec())
}

/// Whether `path` resolves (symlinks and `..` followed) into one of `roots`.
fn inside(path: &Path, roots: &[PathBuf]) -> bool {
    path.canonicalize().is_ok_and(|real| roots.iter().any(|r| real.starts_with(r)))
}

/// Paths matching a glob (an invalid pattern matches nothing; config check
/// reports it), and the directories it could not list on the way.
fn expand_checked(pattern: &str) -> (Vec<PathBuf>, Problems) {
    let (mut found, mut unlisted) = (Vec::new(), Problems::new());
    for entry in glob::glob(pattern).into_iter().flatten() {
        match entry {
            Ok(path) => found.push(path),
            Err(e) => {
                let problem = access::cannot("list the directory", e.path(), e.error());
                unlisted.insert(e.path().to_string_lossy().into_owned(), problem);
            }
        }
    }
    (found, unlisted)
}

/// The longest leading absolute directory of a glob that has no wildcard.
fn static_dir(pattern: &str) -> Option<PathBuf> {
    Some(leading_dir(pattern)).filter(|d| d.is_absolute())
}

/// The longest leading directory of a glob that has no wildcard ("." for none).
fn leading_dir(pattern: &str) -> PathBuf {
    let mut dir = PathBuf::new();
    for part in Path::new(pattern).components() {
        let text = part.as_os_str().to_string_lossy();
        if text.contains(['*', '?', '[']) {
            break;
        }
        dir.push(part);
    }
    // The last component is the file name unless a wildcard stopped us earlier.
    if dir == Path::new(pattern) {
        dir.pop();
    }
    if dir.as_os_str().is_empty() {
        dir.push(".");
    }
    dir
}

/// Loads the clusters to follow: the configured ones, or the discovered ones.
pub(crate) fn clusters(cfg: &config::Config) -> Vec<ClusterConfig> {
    // A central walwatch ([ingest] without [[cluster]]) reads what agents
    // ship, not whatever PostgreSQL happens to run beside it.
    if !cfg.clusters.is_empty() || cfg.ingest.listen.is_some() {
        return cfg.clusters.clone();
    }
    let found = config::discover(Path::new("/"));
    for line in found.to_string().lines() {
        tracing::info!("{line}");
    }
    found.clusters
}

/// Builds a follower per cluster, logging (not failing on) a broken one.
pub(crate) fn followers(
    store: &mut Store,
    clusters: &[ClusterConfig],
    stop: &Arc<AtomicBool>,
    settle: Duration,
) -> Vec<Follower> {
    clusters
        .iter()
        .filter_map(|c| {
            Follower::new(store, c, Some(stop.clone()))
                .map(|f| f.with_settle(settle))
                .with_context(|| format!("cluster {}", c.name))
                .map_err(|e| tracing::error!(error = format!("{e:#}"), "Cannot follow a cluster."))
                .ok()
        })
        .collect()
}

/// The log_timezone the cluster's conf files set (initdb writes the
/// machine's zone into postgresql.conf): an ambiguous abbreviation such as
/// `CST` is read in it until the log itself says otherwise.
fn learn_zone_from_conf(config: &ClusterConfig, time: &TimeContext) {
    let conf = crate::settings::read_server_conf(config.config_file.as_deref(), config.data_directory.as_deref());
    if let Some(entry) = conf.as_ref().and_then(|c| c.parsed.get("log_timezone")) {
        time.learn_zone_from_conf(&entry.value, &entry.path);
    }
}

#[cfg(test)]
mod tests;
