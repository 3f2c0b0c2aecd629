//! Retention: rows older than `[store] keep` are deleted, in
//! small transactions so that the daemon's readers and writers (another
//! connection, another process) wait at most one batch, and the freed pages
//! are then given back to the file system by incremental vacuum, in bounded
//! steps for the same reason.
//!
//! What grows with the log goes: checkpoint rows, events, superseded setting
//! rows, resolved alerts and their sent notices, expired silences. What must
//! survive stays whatever its age: the sources (read positions), open alerts
//! and anything still queued, the value in effect at the cutoff of every
//! setting (the newest row before it, and the newest `parameter changed`
//! line per name) and the newest `starting PostgreSQL` line with a version.
//! `point_tally` follows the checkpoint rows through its delete trigger
//! (migration 0009); the day rows that drop to zero are removed here.

use std::ops::{Deref, DerefMut};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use rusqlite::{params, OptionalExtension, TransactionBehavior};

use super::columns::{opt_from_micros, to_micros};
use super::{Store, StoreError};

/// Retention's handle: [`Store::retention`], [`Store::retention_mut`].
pub struct Retention<S>(pub(super) S);

/// Rows deleted per transaction: a batch of checkpoint rows (each firing the
/// tally trigger) takes a few tens of milliseconds.
pub const BATCH: usize = 5_000;

/// The daemon prunes this often (and at start when the last prune is older).
pub(crate) const PRUNE_EVERY: SignedDuration = SignedDuration::from_hours(24);

/// Pages freed per incremental vacuum step (8 MiB at SQLite's 4 KiB pages).
pub(crate) const VACUUM_STEP_PAGES: u64 = 2_000;

/// Said by the daemon after a prune and by `status`, for a store created
/// before walwatch set auto_vacuum (it can only be set on an empty file).
pub(crate) const NOT_INCREMENTAL: &str =
    "the store was created without incremental vacuum: pruned rows' space is reused by \
    new rows, but the file does not shrink; to convert it, stop the daemon and run `sqlite3 STORE 'PRAGMA auto_vacuum \
    = INCREMENTAL; VACUUM;'` (it rewrites the file, and needs as much free space again)";

/// The µs in a UTC day, as `point_tally.day` counts them.
const DAY_US: i64 = 86_400_000_000;

/// Rows one prune deleted, per table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    pub checkpoints: u64,
    pub events: u64,
    pub(crate) settings: u64,
    pub(crate) alerts: u64,
    pub(crate) outbox: u64,
    pub(crate) silences: u64,
    /// Transactions committed, and the most rows one of them deleted.
    pub batches: u64,
    pub largest_batch: u64,
    /// A stop request ended the prune early (the rest is pruned next time).
    pub(crate) stopped: bool,
    /// Rows that earlier prunes deleted without their result being
    /// recorded — killed or stopped between two batches, each batch
    /// committed — which this one reports with its own.
    pub(crate) earlier: u64,
}

impl Pruned {
    /// Rows deleted: this prune's and those of unrecorded earlier ones.
    pub fn rows(&self) -> u64 {
        self.own_rows() + self.earlier
    }

    /// Rows this prune deleted itself.
    pub(crate) fn own_rows(&self) -> u64 {
        self.checkpoints + self.events + self.settings + self.alerts + self.outbox + self.silences
    }
}

/// What the incremental vacuum gave back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reclaimed {
    /// False for a store created before walwatch set auto_vacuum: its free
    /// pages are reused by new rows, but the file does not shrink.
    pub incremental: bool,
    pub(crate) pages: u64,
    pub steps: u64,
}

/// A prune and the vacuum after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PruneOutcome {
    pub cutoff: Timestamp,
    pub pruned: Pruned,
    pub(crate) reclaimed: Reclaimed,
}

/// What the store records about retention, for `status`, `history` and `suggest`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RetentionRecord {
    pub(crate) keep: Option<Duration>,
    /// Rows older than this were deleted (by the last successful prune).
    pub(crate) cutoff: Option<Timestamp>,
    pub(crate) pruned_at: Option<Timestamp>,
    pub(crate) rows: u64,
    pub(crate) pruned_total: u64,
    pub(crate) failed_at: Option<Timestamp>,
    pub(crate) error: Option<String>,
    /// The store gives freed pages back to the file system (auto_vacuum = INCREMENTAL).
    pub(crate) incremental: bool,
}

impl RetentionRecord {
    /// The cutoff, when rows before it were actually deleted: the start of
    /// what a range asked for can show.
    pub(crate) fn pruned_before(&self) -> Option<Timestamp> {
        self.cutoff.filter(|_| self.pruned_total > 0)
    }

    /// "keeps 400 days" / "keeps 36h" (config owns the wording of `keep`).
    pub(crate) fn keep_text(keep: Duration) -> String {
        crate::config::keep_text(keep)
    }

    /// The note `history` and `suggest` print on stderr when the range they
    /// were asked for starts before what was pruned.
    pub(crate) fn note_for_range(&self, since: Timestamp, consequence: &str) -> Option<String> {
        let cutoff = self.pruned_before().filter(|c| since < *c)?;
        let keeps = self.keep.map(RetentionRecord::keep_text).unwrap_or_else(|| "keeps a limited history".into());
        Some(format!(
            "note: the store {keeps}; rows before {} were pruned, so {consequence}",
            cutoff.strftime("%Y-%m-%d %H:%M UTC")
        ))
    }
}

impl<S: Deref<Target = Store>> Retention<S> {
    /// Whether the store was created with `auto_vacuum = INCREMENTAL`.
    pub(crate) fn incremental(&self) -> Result<bool, StoreError> {
        Ok(self.pragma_u64("auto_vacuum")? == 2)
    }

    fn pragma_u64(&self, name: &str) -> Result<u64, StoreError> {
        self.0.conn.pragma_query_value(None, name, |r| r.get::<_, i64>(0)).map(|v| v as u64).map_err(|e| self.0.sql(e))
    }

    /// Due when neither a prune nor a failed one happened in the last [`PRUNE_EVERY`].
    pub(crate) fn due(&self, now: Timestamp) -> Result<bool, StoreError> {
        let r = self.recorded()?;
        let last = r.pruned_at.into_iter().chain(r.failed_at).max();
        Ok(last.is_none_or(|t| now.duration_since(t) >= PRUNE_EVERY))
    }

    /// When the next prune is due (now when none was made).
    pub(crate) fn next_due(&self, now: Timestamp) -> Result<Timestamp, StoreError> {
        let r = self.recorded()?;
        let last = r.pruned_at.into_iter().chain(r.failed_at).max();
        Ok(last.map_or(now, |t| (t + PRUNE_EVERY).max(now)))
    }

    /// Rows deleted by prunes not recorded yet (see migrations/0019_prune_progress.sql).
    fn unrecorded_prunes(&self) -> Result<u64, StoreError> {
        self.0
            .conn
            .query_row("SELECT unrecorded FROM retention WHERE id = 1", [], |r| r.get::<_, i64>(0))
            .optional()
            .map(|n| n.unwrap_or(0) as u64)
            .map_err(|e| self.0.sql(e))
    }

    /// What the last prunes did; the default (nothing) before the first.
    pub(crate) fn recorded(&self) -> Result<RetentionRecord, StoreError> {
        let row = self
            .0
            .conn
            .query_row(
                "SELECT keep_s, cutoff, pruned_at, rows, pruned_total, failed_at, error FROM retention WHERE id = 1",
                [],
                |r| {
                    Ok(RetentionRecord {
                        keep: r.get::<_, Option<i64>>(0)?.map(|s| Duration::from_secs(s as u64)),
                        cutoff: opt_from_micros(r.get(1)?),
                        pruned_at: opt_from_micros(r.get(2)?),
                        rows: r.get::<_, i64>(3)? as u64,
                        pruned_total: r.get::<_, i64>(4)? as u64,
                        failed_at: opt_from_micros(r.get(5)?),
                        error: r.get(6)?,
                        incremental: false,
                    })
                },
            )
            .optional()
            .map_err(|e| self.0.sql(e))?;
        Ok(RetentionRecord { incremental: self.incremental()?, ..row.unwrap_or_default() })
    }
}

impl<S: DerefMut<Target = Store>> Retention<S> {
    /// Deletes what is older than `cutoff`, at most `batch` rows per
    /// transaction; `stop` is asked between transactions.
    pub fn prune(&mut self, cutoff: Timestamp, batch: usize, stop: &dyn Fn() -> bool) -> Result<Pruned, StoreError> {
        let mut pruned = Pruned { earlier: self.unrecorded_prunes()?, ..Pruned::default() };
        let mut run =
            Batches { store: &mut self.0, cutoff: to_micros(cutoff), batch: batch.max(1), stop, pruned: &mut pruned };
        run.checkpoints_and_events()?;
        run.settings()?;
        run.alerts()?;
        Ok(pruned)
    }

    /// Gives free pages back to the file system, [`VACUUM_STEP_PAGES`] per
    /// transaction, when the store was created with incremental auto_vacuum.
    pub fn reclaim(&mut self, stop: &dyn Fn() -> bool) -> Result<Reclaimed, StoreError> {
        let mut reclaimed = Reclaimed { incremental: self.incremental()?, ..Reclaimed::default() };
        if !reclaimed.incremental {
            return Ok(reclaimed);
        }
        loop {
            let free = self.pragma_u64("freelist_count")?;
            if free == 0 || stop() {
                break;
            }
            let step = free.min(VACUUM_STEP_PAGES);
            self.vacuum_step(step)?;
            reclaimed.pages += step;
            reclaimed.steps += 1;
        }
        // In WAL mode the file is truncated when the WAL is copied back into
        // it; PASSIVE never waits for (or blocks) the readers.
        self.0.conn.execute_batch("PRAGMA wal_checkpoint(PASSIVE)").map_err(|e| self.0.sql(e))?;
        Ok(reclaimed)
    }

    /// One transaction freeing `pages` pages. The pragma frees one page per
    /// step of its statement: it must be stepped to the end (execute_batch
    /// steps it once).
    fn vacuum_step(&self, pages: u64) -> Result<(), StoreError> {
        let mut stmt =
            self.0.conn.prepare(&format!("PRAGMA incremental_vacuum({pages})")).map_err(|e| self.0.sql(e))?;
        let mut rows = stmt.query([]).map_err(|e| self.0.sql(e))?;
        while rows.next().map_err(|e| self.0.sql(e))?.is_some() {}
        Ok(())
    }

    /// The daemon's daily step, with the clock injected: prunes to
    /// `now - keep` and reclaims the space when the last prune (successful
    /// or not) is [`PRUNE_EVERY`] old or there was none; records the result
    /// either way. None: not due. A stopped prune is not recorded (it is
    /// due again at the next start).
    pub fn prune_if_due(
        &mut self,
        keep: Duration,
        now: Timestamp,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<PruneOutcome>, StoreError> {
        if !self.due(now)? {
            return Ok(None);
        }
        let span = SignedDuration::try_from(keep).unwrap_or(SignedDuration::MAX);
        let cutoff = now.checked_sub(span).unwrap_or(Timestamp::MIN);
        match self.prune(cutoff, BATCH, stop).and_then(|pruned| Ok((pruned, self.reclaim(stop)?))) {
            Ok((pruned, _)) if pruned.stopped => {
                Ok(Some(PruneOutcome { cutoff, pruned, reclaimed: Reclaimed::default() }))
            }
            Ok((pruned, reclaimed)) => {
                self.record_prune(keep, cutoff, now)?;
                Ok(Some(PruneOutcome { cutoff, pruned, reclaimed }))
            }
            Err(e) => {
                // Recorded so that `status` shows it; the error still goes up to be logged.
                self.record_prune_failure(now, &e.to_string())?;
                Err(e)
            }
        }
    }

    /// Records a finished prune: the rows its batches counted as they were
    /// committed (with those of unrecorded earlier prunes) become its rows.
    fn record_prune(&mut self, keep: Duration, cutoff: Timestamp, now: Timestamp) -> Result<(), StoreError> {
        self.0
            .conn
            .execute(
                "INSERT INTO retention(id, keep_s, cutoff, pruned_at, rows, pruned_total, failed_at, error)
                 VALUES (1, ?1, ?2, ?3, 0, 0, NULL, NULL)
                 ON CONFLICT(id) DO UPDATE SET keep_s = ?1, cutoff = max(IFNULL(cutoff, ?2), ?2), pruned_at = ?3,
                    rows = unrecorded, pruned_total = pruned_total + unrecorded, unrecorded = 0,
                    failed_at = NULL, error = NULL",
                params![keep.as_secs() as i64, to_micros(cutoff), to_micros(now)],
            )
            .map(drop)
            .map_err(|e| self.0.sql(e))
    }

    fn record_prune_failure(&mut self, now: Timestamp, error: &str) -> Result<(), StoreError> {
        self.0
            .conn
            .execute(
                "INSERT INTO retention(id, failed_at, error) VALUES (1, ?1, ?2)
                 ON CONFLICT(id) DO UPDATE SET failed_at = ?1, error = ?2",
                params![to_micros(now), error],
            )
            .map(drop)
            .map_err(|e| self.0.sql(e))
    }
}

/// One prune's state: every delete goes through [`Batches::delete`].
struct Batches<'a> {
    store: &'a mut Store,
    cutoff: i64,
    batch: usize,
    stop: &'a dyn Fn() -> bool,
    pruned: &'a mut Pruned,
}

impl Batches<'_> {
    /// Runs `sql` (a DELETE of at most `{batch}` rows, parameters `params`)
    /// in its own transaction until it deletes fewer than a batch.
    fn delete(&mut self, sql: &str, params: &[&dyn rusqlite::ToSql]) -> Result<u64, StoreError> {
        let sql = sql.replace("{batch}", &self.batch.to_string());
        let mut total = 0;
        loop {
            if (self.stop)() {
                self.pruned.stopped = true;
                return Ok(total);
            }
            let path = self.store.path.clone();
            let fail = |source| StoreError::Sql { path: path.clone(), source };
            let tx = self.store.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(fail)?;
            let n = tx.execute(&sql, params).map_err(fail)? as u64;
            if n > 0 {
                // Counted with the deletions, in their transaction: a prune
                // killed after this commit still has them reported.
                tx.execute(
                    "INSERT INTO retention(id, unrecorded) VALUES (1, ?1)
                     ON CONFLICT(id) DO UPDATE SET unrecorded = unrecorded + ?1",
                    [n as i64],
                )
                .map_err(fail)?;
            }
            tx.commit().map_err(fail)?;
            if n > 0 {
                self.pruned.batches += 1;
                self.pruned.largest_batch = self.pruned.largest_batch.max(n);
            }
            total += n;
            if n < self.batch as u64 {
                return Ok(total);
            }
        }
    }

    fn cluster_ids(&self) -> Result<Vec<i64>, StoreError> {
        let store = &*self.store;
        let mut stmt = store.conn.prepare("SELECT id FROM cluster ORDER BY id").map_err(|e| store.sql(e))?;
        let ids = stmt.query_map([], |r| r.get(0)).map_err(|e| store.sql(e))?;
        ids.collect::<Result<_, _>>().map_err(|e| store.sql(e))
    }

    /// Each cluster's old checkpoint rows (their lines with them), then its old events.
    fn checkpoints_and_events(&mut self) -> Result<(), StoreError> {
        for cluster in self.cluster_ids()? {
            self.checkpoints(cluster)?;
            for kind in self.event_kinds(cluster)? {
                self.events(cluster, &kind)?;
            }
        }
        Ok(())
    }

    /// Through the index the range queries use (cluster, row time), so each
    /// batch is a seek, not a scan; then the tally's days that are now empty.
    fn checkpoints(&mut self, cluster: i64) -> Result<(), StoreError> {
        let cutoff = self.cutoff;
        self.pruned.checkpoints += self.delete(
            "DELETE FROM checkpoint WHERE id IN (SELECT id FROM checkpoint
             WHERE cluster_id = ?1 AND COALESCE(started_at, completed_at) < ?2 LIMIT {batch})",
            &[&cluster, &cutoff],
        )?;
        let last_day = cutoff.div_euclid(DAY_US);
        let store = &*self.store;
        store
            .conn
            .execute(
                "DELETE FROM point_tally WHERE cluster_id = ?1 AND day <= ?2 AND started = 0 AND completed = 0",
                params![cluster, last_day],
            )
            .map(drop)
            .map_err(|e| store.sql(e))
    }

    /// The cluster's event kinds, one index seek each (a skip-scan by hand:
    /// SELECT DISTINCT would read every entry).
    fn event_kinds(&self, cluster: i64) -> Result<Vec<String>, StoreError> {
        let store = &*self.store;
        let mut stmt = store
            .conn
            .prepare("SELECT kind FROM event WHERE cluster_id = ?1 AND kind > ?2 ORDER BY kind LIMIT 1")
            .map_err(|e| store.sql(e))?;
        let mut kinds: Vec<String> = Vec::new();
        loop {
            let after = kinds.last().cloned().unwrap_or_default();
            let next = stmt.query_row(params![cluster, after], |r| r.get::<_, String>(0)).optional();
            match next.map_err(|e| store.sql(e))? {
                Some(kind) => kinds.push(kind),
                None => return Ok(kinds),
            }
        }
    }

    /// A kind's old events, except those that say what is in effect at the
    /// cutoff ([`Batches::keepers`]). (Checkpoint lines go with their rows.)
    fn events(&mut self, cluster: i64, kind: &str) -> Result<(), StoreError> {
        let keep = self.keepers(cluster, kind)?;
        let except = if keep.is_empty() {
            String::new()
        } else {
            let ids: Vec<String> = keep.iter().map(i64::to_string).collect();
            format!("AND e.id NOT IN ({})", ids.join(","))
        };
        let sql = format!(
            "DELETE FROM event WHERE id IN (SELECT e.id FROM event e
             WHERE e.cluster_id = ?1 AND e.kind = ?2 AND e.at < ?3 {except}
             LIMIT {{batch}})"
        );
        let cutoff = self.cutoff;
        self.pruned.events += self.delete(&sql, &[&cluster, &kind, &cutoff])?;
        Ok(())
    }

    /// Old events that stay: the newest `parameter changed` line per name
    /// before the cutoff (the log's value of each setting) and the newest
    /// `starting PostgreSQL` line with a version (the server's version).
    fn keepers(&self, cluster: i64, kind: &str) -> Result<Vec<i64>, StoreError> {
        let sql = match kind {
            "parameter_changed" => {
                "SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY lower(json_extract(data, '$.name'))
                                                             ORDER BY at DESC, id DESC) AS n
                                 FROM event WHERE cluster_id = ?1 AND kind = 'parameter_changed' AND at < ?2)
                 WHERE n = 1"
            }
            "server_start" => {
                "SELECT id FROM event WHERE cluster_id = ?1 AND kind = 'server_start' AND at < ?2
                   AND json_extract(data, '$.version') IS NOT NULL ORDER BY at DESC, id DESC LIMIT 1"
            }
            _ => return Ok(Vec::new()),
        };
        let store = &*self.store;
        let mut stmt = store.conn.prepare(sql).map_err(|e| store.sql(e))?;
        let ids = stmt.query_map(params![cluster, self.cutoff], |r| r.get(0)).map_err(|e| store.sql(e))?;
        ids.collect::<Result<_, _>>().map_err(|e| store.sql(e))
    }

    /// Setting rows another row of the same setting replaced before the cutoff.
    fn settings(&mut self) -> Result<(), StoreError> {
        let cutoff = self.cutoff;
        self.pruned.settings += self.delete(
            "DELETE FROM setting WHERE id IN (SELECT s.id FROM setting s WHERE s.since < ?1
               AND EXISTS (SELECT 1 FROM setting n WHERE n.cluster_id = s.cluster_id AND n.name = s.name
                           AND n.source = s.source AND n.since > s.since AND n.since <= ?1)
             LIMIT {batch})",
            &[&cutoff],
        )?;
        Ok(())
    }

    /// Sent notices of alerts resolved before the cutoff (and old test
    /// messages), then those alerts once nothing of theirs is queued, then
    /// silences that ended before it. Open alerts stay, however old.
    fn alerts(&mut self) -> Result<(), StoreError> {
        let cutoff = self.cutoff;
        self.pruned.outbox += self.delete(
            "DELETE FROM outbox WHERE id IN (SELECT o.id FROM outbox o
             WHERE o.sent_at IS NOT NULL AND o.sent_at < ?1
               AND (o.alert_id IS NULL
                    OR o.alert_id IN (SELECT a.id FROM alert a WHERE a.state = 'resolved' AND a.resolved_at < ?1))
             LIMIT {batch})",
            &[&cutoff],
        )?;
        self.pruned.alerts += self.delete(
            "DELETE FROM alert WHERE id IN (SELECT a.id FROM alert a
             WHERE a.state = 'resolved' AND a.resolved_at < ?1
               AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.alert_id = a.id)
             LIMIT {batch})",
            &[&cutoff],
        )?;
        self.pruned.silences += self.delete(
            "DELETE FROM silence WHERE id IN (SELECT id FROM silence WHERE until < ?1 LIMIT {batch})",
            &[&cutoff],
        )?;
        Ok(())
    }
}

/// Seconds as the status line shows a prune's time.
pub(crate) fn prune_time(t: Timestamp) -> String {
    t.strftime("%Y-%m-%d %H:%M UTC").to_string()
}

#[cfg(test)]
mod tests;
