//! The shipped files a central walwatch keeps: each batch's lines taken
//! once per (host, file, offset) into the file's spool, committed, then read
//! by the same pipeline as a local log (framing, prefix, classification,
//! the store), its last entry held until the file goes quiet.

use std::collections::HashMap;
use std::fs::File;
use std::time::{Duration, Instant};

use thiserror::Error;
use xxhash_rust::xxh3::xxh3_64;

use super::body::Shipped;
use super::naming::{place, Placement};
use super::spool::{self, Pending, Spool};
use super::spool_dir::SpoolDir;
use crate::config::IngestCluster;
use crate::frame::time::TimeContext;
use crate::frame::Format;
use crate::ingest::{self, ImportReport, IngestError, Options};
use crate::source::Source;
use crate::store::{Damage, Store, StoreError};

#[derive(Debug, Error)]
pub(crate) enum ReceiveError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("spool {path}: {source}")]
    Spool { path: String, source: std::io::Error },
}

impl ReceiveError {
    /// The store is locked by another writer: the sender should try again soon.
    pub(crate) fn busy(&self) -> bool {
        use rusqlite::ErrorCode::{DatabaseBusy, DatabaseLocked};
        matches!(self, ReceiveError::Store(StoreError::Sql { source, .. })
            if matches!(source.sqlite_error_code(), Some(DatabaseBusy | DatabaseLocked)))
    }
}

/// What one batch did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Taken {
    /// Lines new to walwatch, written to their spool.
    pub(crate) lines: u64,
    /// Lines already taken (a batch sent again).
    pub(crate) duplicates: u64,
    /// Events stored from the lines read.
    pub(crate) events: u64,
}

/// A shipped file being kept.
struct Stream {
    spool: Spool,
    placement: Placement,
    time: TimeContext,
    /// Its last entry is held back, waiting for lines that may belong to it.
    pending: bool,
    written_at: Instant,
    /// When it was last used, in [`Streams::clock`] ticks: the least
    /// recently used spools are closed first.
    used: u64,
}

/// Spools kept open at once (three descriptors each at most); the others
/// are opened again when their file sends lines.
const OPEN_SPOOLS: usize = 64;

/// Every shipped file, by (host, file).
pub(crate) struct Streams {
    dir: SpoolDir,
    rules: Vec<IngestCluster>,
    open: HashMap<(String, String), Stream>,
    /// How long a file must stay quiet before its held-back last entry is read.
    settle: Duration,
    /// Events stored since [`Streams::take_stored`].
    stored: u64,
    clock: u64,
}

impl Streams {
    /// The streams of the store, each spool cut back to what was committed
    /// and read up to its end (what the last run committed but did not read).
    /// A stream whose spool was damaged outside walwatch is quarantined
    /// and goes on in a new generation; one that cannot be opened now is
    /// said and tried again at its next batch. Neither stops the others.
    pub(crate) fn recover(
        store: &mut Store,
        dir: SpoolDir,
        rules: Vec<IngestCluster>,
        settle: Duration,
    ) -> Result<Streams, ReceiveError> {
        let mut streams = Streams { dir, rules, open: HashMap::new(), settle, stored: 0, clock: 0 };
        for row in store.streams().all()? {
            let key = (row.host.clone(), row.file.clone());
            let placement = place(&streams.rules, &row.host, &row.file);
            match streams.opened(store, row, placement) {
                Ok(stream) => {
                    streams.open.insert(key.clone(), stream);
                    streams.read(store, &key, true)?;
                    streams.limit_open(&key);
                }
                Err(ReceiveError::Store(e)) => return Err(e.into()),
                Err(e) => {
                    tracing::error!(host = %key.0, file = %key.1, error = %e, "Cannot open a shipped file's spool; trying again at its next batch.")
                }
            }
        }
        Ok(streams)
    }

    pub(crate) fn take_stored(&mut self) -> u64 {
        std::mem::take(&mut self.stored)
    }

    /// Takes a batch: new lines into their spools (committed before this
    /// returns), then read into the store.
    pub(crate) fn take(&mut self, store: &mut Store, batch: Vec<Shipped>) -> Result<Taken, ReceiveError> {
        let mut taken = Taken::default();
        let mut order: Vec<(String, String)> = Vec::new();
        let mut groups: HashMap<(String, String), Vec<Shipped>> = HashMap::new();
        for line in batch {
            let key = (line.host.clone(), line.file.clone());
            if !groups.contains_key(&key) {
                order.push(key.clone());
            }
            groups.entry(key).or_default().push(line);
        }
        for key in order {
            let lines = groups.remove(&key).unwrap_or_default();
            self.ensure(store, &key)?;
            let (new, dup) = match self.append(store, &key, &lines) {
                Err(ReceiveError::Spool { source, .. }) if spool::damaged(&source) => {
                    // Cut or replaced since it was opened: kept aside, and the
                    // batch goes to the stream's next generation.
                    self.quarantine_open(store, &key, &source.to_string())?;
                    self.append(store, &key, &lines)?
                }
                other => other?,
            };
            taken.lines += new;
            taken.duplicates += dup;
            if new > 0 {
                taken.events += self.read(store, &key, true)?;
            }
            self.limit_open(&key);
        }
        Ok(taken)
    }

    /// Reads the held-back last entry of every file quiet for the settle time.
    pub(crate) fn settle(&mut self, store: &mut Store) -> Result<u64, ReceiveError> {
        let due: Vec<_> = self
            .open
            .iter()
            .filter(|(_, s)| s.pending && s.written_at.elapsed() >= self.settle)
            .map(|(k, _)| k.clone())
            .collect();
        let mut events = 0;
        for key in due {
            events += self.read(store, &key, false)?;
        }
        Ok(events)
    }

    /// Whether some file's last entry is held back (settle it soon).
    pub(crate) fn pending(&self) -> bool {
        self.open.values().any(|s| s.pending)
    }

    fn ensure(&mut self, store: &mut Store, key: &(String, String)) -> Result<(), ReceiveError> {
        self.clock += 1;
        if let Some(stream) = self.open.get_mut(key) {
            stream.used = self.clock;
            return Ok(());
        }
        let placement = place(&self.rules, &key.0, &key.1);
        let row = store.streams_mut().find_or_create(&key.0, &key.1, &placement.cluster)?;
        let stream = self.opened(store, row, placement)?;
        self.open.insert(key.clone(), stream);
        Ok(())
    }

    /// The stream of `row`, its spool opened; a damaged spool is
    /// quarantined and a new generation opened in its place.
    fn opened(
        &mut self,
        store: &mut Store,
        row: crate::store::StreamRow,
        placement: Placement,
    ) -> Result<Stream, ReceiveError> {
        let spool = match Spool::open(self.dir.path(), row.clone()) {
            Ok(spool) => spool,
            Err(e) if spool::damaged(&e) => {
                let row = self.quarantine(store, &row, &e.to_string())?;
                Spool::open(self.dir.path(), row).map_err(|e| spool_dir_error(&self.dir, e))?
            }
            Err(e) => return Err(spool_dir_error(&self.dir, e)),
        };
        // The zone was checked when the config was read.
        let time = TimeContext::new(placement.timezone.as_deref())
            .or_else(|_| TimeContext::new(None))
            .expect("no zone is UTC");
        crate::ingest::remember_zone(store, row.cluster_id, &time)?;
        self.clock += 1;
        Ok(Stream { spool, placement, time, pending: false, written_at: Instant::now(), used: self.clock })
    }

    /// Quarantines the open stream `key` and opens its next generation.
    fn quarantine_open(&mut self, store: &mut Store, key: &(String, String), reason: &str) -> Result<(), ReceiveError> {
        let stream = self.open.remove(key).expect("opened");
        let row = self.quarantine(store, &stream.spool.row, reason)?;
        drop(stream.spool);
        let spool = Spool::open(self.dir.path(), row).map_err(|e| spool_dir_error(&self.dir, e))?;
        self.clock += 1;
        let fresh = Stream { spool, used: self.clock, pending: false, ..stream };
        self.open.insert(key.clone(), fresh);
        Ok(())
    }

    /// Moves a damaged spool aside (kept for inspection, recorded in the
    /// store, said in `status`) and starts the stream's next generation:
    /// the agent's next lines are taken as usual. The index stays for the
    /// next generation when it is whole, so that a batch sent again is
    /// still known. Returns the new generation's row, committed.
    fn quarantine(
        &mut self,
        store: &mut Store,
        row: &crate::store::StreamRow,
        reason: &str,
    ) -> Result<crate::store::StreamRow, ReceiveError> {
        let kept_dir = self.dir.quarantine();
        let at = jiff::Timestamp::now();
        let kept = super::quarantine::set_aside(self.dir.path(), &kept_dir, row, at)
            .map_err(|e| spool_dir_error(&self.dir, e))?;
        let shown = shown(&row.host, &row.file, row.generation);
        let read = store.sources().read_position(row.cluster_id, &shown)?.unwrap_or(0);
        let unread = row.spool_len.saturating_sub(read);
        let damage = Damage::Spool { reason: reason.to_string(), kept: kept.display().to_string(), unread };
        store.streams_mut().record_damage(row, &damage, at)?;
        tracing::error!(host = %row.host, file = %row.file, reason, kept = %kept.display(), unread, "A shipped file's spool was damaged outside walwatch: kept aside; the file goes on in a new generation.");
        let mut next = row.clone();
        (next.generation, next.accepted_end, next.spool_len, next.index_len) = (row.generation + 1, 0, 0, 0);
        // The new generation goes on where the agent is: no gap is claimed
        // for what the damaged spool held.
        next.next_offset = None;
        store.streams_mut().commit(&next)?;
        Ok(next)
    }

    /// Closes the least recently used spools beyond [`OPEN_SPOOLS`], never `keep`'s.
    fn limit_open(&mut self, keep: &(String, String)) {
        let mut open: Vec<(u64, &(String, String))> =
            self.open.iter().filter(|(k, s)| s.spool.is_open() && *k != keep).map(|(k, s)| (s.used, k)).collect();
        let over = (open.len() + 1).saturating_sub(OPEN_SPOOLS);
        if over == 0 {
            return;
        }
        open.sort_unstable();
        let closing: Vec<(String, String)> = open[..over].iter().map(|(_, k)| (*k).clone()).collect();
        for key in closing {
            if let Some(stream) = self.open.get_mut(&key) {
                stream.spool.close();
            }
        }
    }

    /// Writes the lines of one file that are new and commits them; a line
    /// below what was taken that the index does not know is new content
    /// under the same path (the file was truncated and written again): the
    /// old content is read to its end and a new generation begins.
    fn append(
        &mut self,
        store: &mut Store,
        key: &(String, String),
        lines: &[Shipped],
    ) -> Result<(u64, u64), ReceiveError> {
        let (mut new, mut dup, mut total) = (0, 0, (0, 0));
        let mut pending = Pending::default();
        let mut accepted_end = self.stream(key).spool.row.accepted_end;
        // A batch sent again across a change of content starts with the old
        // content's lines: known by the index of the generation before.
        let mut old_content = self.stream(key).spool.row.generation > 0;
        for line in lines {
            let hash = xxh3_64(&line.message);
            if old_content {
                let spool = &mut self.stream_mut(key).spool;
                old_content = spool.recorded_before(line.offset).map_err(|e| spool_error(spool, e))? == Some(hash);
                if old_content {
                    dup += 1;
                    continue;
                }
            }
            if line.offset < accepted_end {
                let spool = &mut self.stream_mut(key).spool;
                let known = spool.recorded(line.offset, &pending).map_err(|e| spool_error(spool, e))?;
                if known == Some(hash) {
                    dup += 1;
                    continue;
                }
                self.commit(store, key, &pending, accepted_end, new, dup)?;
                total = (total.0 + new, total.1 + dup);
                (pending, new, dup) = (Pending::default(), 0, 0);
                self.next_generation(store, key)?;
            }
            let expected = self.stream(key).spool.row.next_offset;
            pending.push(line.offset, hash, &line.message, expected);
            accepted_end = line.offset + 1;
            new += 1;
        }
        self.commit(store, key, &pending, accepted_end, new, dup)?;
        Ok((total.0 + new, total.1 + dup))
    }

    /// Writes `pending` and records it in the store; on failure the spool
    /// is cut back and nothing of it counts.
    fn commit(
        &mut self,
        store: &mut Store,
        key: &(String, String),
        pending: &Pending,
        accepted_end: u64,
        new: u64,
        dup: u64,
    ) -> Result<(), ReceiveError> {
        if pending.is_empty() && dup == 0 {
            return Ok(());
        }
        let stream = self.open.get_mut(key).expect("opened");
        let spool = &mut stream.spool;
        let mut row = match spool.write(pending) {
            Ok(row) => row,
            Err(e) => {
                // A write cut short (a full disk, a file-size limit) leaves
                // bytes past what is committed, which a read of the spool
                // before the next write would take. A damaged spool is
                // left as it is: it is set aside.
                if !spool::damaged(&e) {
                    take_back(spool);
                }
                return Err(spool_error(spool, e));
            }
        };
        (row.accepted_end, row.lines, row.duplicates) = (accepted_end, row.lines + new, row.duplicates + dup);
        row.next_offset = pending.next_offset.or(row.next_offset);
        if let Err(e) = store.streams_mut().commit(&row) {
            take_back(spool);
            return Err(e.into());
        }
        spool.row = row;
        let row = spool.row.clone();
        for &(offset, bytes) in &pending.gaps {
            tracing::error!(host = %key.0, file = %key.1, offset, bytes, "Bytes of a shipped file were never shipped (a line longer than the agent's max_line_bytes, or a filter): the lines around them may be read differently than on the host.");
            store.streams_mut().record_damage(&row, &Damage::Gap { offset, bytes }, jiff::Timestamp::now())?;
        }
        Ok(())
    }

    /// Reads the current generation to its end and starts the next one.
    fn next_generation(&mut self, store: &mut Store, key: &(String, String)) -> Result<(), ReceiveError> {
        let report = self.read_report(store, key, false)?;
        let stream = self.open.remove(key).expect("opened");
        let mut row = stream.spool.row.clone();
        tracing::info!(host = %key.0, file = %key.1, generation = row.generation + 1, "A shipped file starts again from offset 0 (truncated and written anew): new content kept apart.");
        (row.generation, row.accepted_end, row.spool_len, row.index_len) = (row.generation + 1, 0, 0, 0);
        row.next_offset = None;
        store.streams_mut().commit(&row)?;
        // Read to its end: its lines are in the store; kept when it did not fit.
        if report.as_ref().is_some_and(|r| r.misfit.is_none()) {
            let path = stream.spool.log_path.display().to_string();
            if let Err(e) = stream.spool.remove() {
                tracing::warn!(path, error = %e, "Cannot remove a spool read to its end.");
            }
        }
        let placement = stream.placement;
        let fresh = self.opened(store, row, placement)?;
        self.open.insert(key.clone(), fresh);
        Ok(())
    }

    fn stream(&self, key: &(String, String)) -> &Stream {
        self.open.get(key).expect("opened by ensure")
    }

    fn stream_mut(&mut self, key: &(String, String)) -> &mut Stream {
        self.open.get_mut(key).expect("opened by ensure")
    }

    /// Reads what is new in the spool of `key`; the events stored.
    fn read(&mut self, store: &mut Store, key: &(String, String), hold: bool) -> Result<u64, ReceiveError> {
        Ok(self.read_report(store, key, hold)?.map_or(0, |r| r.stored))
    }

    fn read_report(
        &mut self,
        store: &mut Store,
        key: &(String, String),
        hold: bool,
    ) -> Result<Option<ImportReport>, ReceiveError> {
        let stream = self.open.get_mut(key).expect("opened");
        let row = &stream.spool.row;
        let shown = shown(&key.0, &key.1, row.generation);
        let opts = Options {
            format: Format::named(&stream.placement.format),
            prefix: Some(stream.placement.prefix.clone()).filter(|p| p != "auto"),
            hold_last_entry: hold,
            ..Options::default()
        };
        let result = File::open(&stream.spool.log_path)
            .map_err(|e| IngestError::Read { path: shown.clone(), source: e })
            .and_then(|f| Source::from_file(f, &shown).map_err(IngestError::from))
            .and_then(|src| ingest::import_source(store, row.cluster_id, src, &opts, &stream.time));
        let report = match result {
            Ok(report) => report,
            Err(IngestError::Store(e)) => return Err(e.into()),
            Err(e) => {
                // Kept in the spool: read again with the next batch, or after
                // a reload that fixes [[ingest.cluster]].
                store.daemon_mut().set_problem(row.cluster_id, &shown, Some(&e.to_string()))?;
                stream.pending = false;
                return Ok(None);
            }
        };
        let problem = report
            .misfit
            .as_ref()
            .map(|m| format!("{m}; kept in the spool: set format/prefix in [[ingest.cluster]] and reload"));
        if let Some(p) = &problem {
            tracing::warn!(host = %key.0, file = %key.1, problem = %p, "Shipped lines did not fit the cluster's format or prefix.");
        }
        store.daemon_mut().set_problem(row.cluster_id, &shown, problem.as_deref())?;
        stream.pending = hold && report.misfit.is_none() && report.resumed_at + report.bytes < row.spool_len;
        // A read that did not fit took back what it stored: its bytes are read again.
        let read_to = if report.misfit.is_none() { report.resumed_at + report.bytes } else { 0 };
        if let Err(e) = stream.spool.release_read(read_to) {
            // The bytes stay on disk: nothing is lost, the spool is only larger.
            tracing::warn!(host = %key.0, file = %key.1, error = %e, "Cannot give the read part of a spool back to the filesystem.");
        }
        // Quiet from now: the time this read took is no time the agent had.
        stream.written_at = Instant::now();
        self.stored += report.stored;
        Ok(Some(report))
    }
}

/// The size of each shipped file's spool (what is committed), by the name
/// its source has in the store: what `status` and the metrics' lag compare
/// the read position with, where a local file's size on disk is used.
pub(crate) fn shipped_sizes(store: &Store) -> Result<HashMap<String, u64>, StoreError> {
    Ok(store.streams().all()?.iter().map(|s| (shown(&s.host, &s.file, s.generation), s.spool_len)).collect())
}

/// How a shipped file is named in `status` and the daemon's log (its
/// source's path in the store).
pub(crate) fn shown(host: &str, file: &str, generation: i64) -> String {
    match generation {
        0 => format!("{host}:{file}"),
        g => format!("{host}:{file} (content #{})", g + 1),
    }
}

/// Cuts `spool` back to what is committed after a write that does not
/// count; what cannot be cut now is cut off at the next open.
fn take_back(spool: &mut Spool) {
    if let Err(cut) = spool.cut_back() {
        tracing::warn!(path = %spool.log_path.display(), error = %cut, "Cannot take back a write that does not count; it is cut off at the next open.");
    }
}

fn spool_error(spool: &Spool, source: std::io::Error) -> ReceiveError {
    ReceiveError::Spool { path: spool.log_path.display().to_string(), source }
}

fn spool_dir_error(dir: &SpoolDir, source: std::io::Error) -> ReceiveError {
    ReceiveError::Spool { path: dir.path().display().to_string(), source }
}

#[cfg(test)]
mod tests;
