//! What the Prometheus endpoint (crate::metrics) reads: counts over the
//! whole store, so that a counter is the same number before and after a
//! daemon restart, and the completed checkpoints read incrementally by
//! the id of their complete line.

use rusqlite::params;

use super::{Store, StoreError};

/// Started points of one cluster, kind and trigger ("" when unknown),
/// from the tally that `summary` reads for whole days.
#[derive(Debug, Clone, PartialEq)]
pub struct PointTotal {
    pub cluster: String,
    pub kind: String,
    pub trigger: String,
    pub started: i64,
}

/// The figures of one completed checkpoint that the histograms count.
#[derive(Debug, Clone, PartialEq)]
pub struct Completed {
    pub cluster: String,
    /// The id of its complete line's event: rows are read in this order.
    pub complete_event_id: i64,
    pub completed_at_us: Option<i64>,
    pub write_s: Option<f64>,
    pub sync_s: Option<f64>,
    pub total_s: Option<f64>,
    pub distance_kb: Option<i64>,
    pub estimate_kb: Option<i64>,
}

impl Store {
    /// Every cluster's started points by kind and trigger, over all time.
    pub fn point_totals(&self) -> Result<Vec<PointTotal>, StoreError> {
        // Grouped by id, then named: grouping by the joined name sorts
        // twice as long (a week of 50 clusters: 3.4 ms against 1.8 ms).
        let sql = "SELECT c.name, g.kind, g.trigger, g.started
                   FROM (SELECT cluster_id, kind, trigger, sum(started) AS started FROM point_tally
                         GROUP BY cluster_id, kind, trigger) g
                   JOIN cluster c ON c.id = g.cluster_id";
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(PointTotal { cluster: r.get(0)?, kind: r.get(1)?, trigger: r.get(2)?, started: r.get(3)? })
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// Every cluster's number of events of `kind`, each a range of the
    /// event_cluster_kind_at index.
    pub fn event_totals(&self, kind: &str) -> Result<Vec<(String, i64)>, StoreError> {
        let sql = "SELECT c.name, (SELECT count(*) FROM event e WHERE e.cluster_id = c.id AND e.kind = ?1)
                   FROM cluster c ORDER BY c.name";
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.sql(e))?;
        let rows = stmt.query_map([kind], |r| Ok((r.get(0)?, r.get(1)?))).map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// How many stored checkpoints have a complete line, from the day
    /// tally (kept in step by triggers whatever inserts, pairs or deletes).
    pub fn completed_total(&self) -> Result<i64, StoreError> {
        self.conn
            .query_row("SELECT IFNULL(sum(completed), 0) FROM point_tally", [], |r| r.get(0))
            .map_err(|e| self.sql(e))
    }

    /// The highest complete-line id of any stored checkpoint.
    pub fn last_completed(&self) -> Result<Option<i64>, StoreError> {
        self.conn.query_row("SELECT max(complete_event_id) FROM checkpoint", [], |r| r.get(0)).map_err(|e| self.sql(e))
    }

    /// Checkpoints whose complete line was stored after event `after`, in
    /// that order (a range of the checkpoint_complete_event index). A
    /// complete line gets its figures in the statement that records it, so
    /// a row read here never changes its figures later.
    pub fn completed_after(&self, after: i64) -> Result<Vec<Completed>, StoreError> {
        let sql = "SELECT c.name, k.complete_event_id, k.completed_at, k.write_s, k.sync_s, k.total_s,
                          k.distance_kb, k.estimate_kb
                   FROM checkpoint k JOIN cluster c ON c.id = k.cluster_id
                   WHERE k.complete_event_id > ?1 ORDER BY k.complete_event_id";
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map(params![after], |r| {
                Ok(Completed {
                    cluster: r.get(0)?,
                    complete_event_id: r.get(1)?,
                    completed_at_us: r.get(2)?,
                    write_s: r.get(3)?,
                    sync_s: r.get(4)?,
                    total_s: r.get(5)?,
                    distance_kb: r.get(6)?,
                    estimate_kb: r.get(7)?,
                })
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }
}

impl Store {
    /// The newest source of each (cluster, path): the file as it is now, and
    /// how far walwatch read it (`status` reads the same rows).
    pub fn followed_files(&self) -> Result<Vec<(String, String, u64)>, StoreError> {
        let sql = "SELECT c.name, s.path, s.read_to FROM source s JOIN cluster c ON c.id = s.cluster_id
                   WHERE s.id IN (SELECT max(id) FROM source GROUP BY cluster_id, path)
                   ORDER BY c.name, s.path";
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)?.max(0) as u64)))
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }
}

impl Store {
    /// The lowest event id: it moves up only when events are deleted.
    pub fn first_event(&self) -> Result<Option<i64>, StoreError> {
        self.conn.query_row("SELECT min(id) FROM event", [], |r| r.get(0)).map_err(|e| self.sql(e))
    }

    /// The highest event id (None: no event): below what was read, the
    /// newest events were deleted (`forget` of the file read last).
    pub fn last_event(&self) -> Result<Option<i64>, StoreError> {
        self.conn.query_row("SELECT max(id) FROM event", [], |r| r.get(0)).map_err(|e| self.sql(e))
    }

    /// For each cluster with events stored after event `after`: the
    /// highest such id and the newest log time among them of a recognised
    /// event not dated more than `tolerance_us` ahead (the rule of
    /// `log_times`), read as a range of the primary key.
    pub fn newest_events_after(
        &self,
        after: i64,
        tolerance_us: i64,
    ) -> Result<Vec<(String, i64, Option<i64>)>, StoreError> {
        let sql = "SELECT c.name, max(e.id),
                          max(CASE WHEN e.kind <> 'rejected' AND (e.ahead_us IS NULL OR e.ahead_us <= ?2)
                                   THEN e.at END)
                   FROM event e JOIN cluster c ON c.id = e.cluster_id WHERE e.id > ?1 GROUP BY c.name";
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map(params![after, tolerance_us], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }
}
