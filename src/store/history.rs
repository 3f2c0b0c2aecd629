//! What the max_wal_size model reads: checkpoint cycles, server restarts,
//! warnings and crash-recovery replay, for one cluster and time window.

use jiff::Timestamp;
use rusqlite::params;

use super::columns::{from_micros, to_micros};
use super::{Store, StoreError};
use crate::model::event::{PointKind, Trigger};

/// One checkpoint or restartpoint that has a start time.
#[derive(Debug, Clone, PartialEq)]
pub struct PointStart {
    pub kind: PointKind,
    pub started_at: Timestamp,
    pub trigger: Option<Trigger>,
    pub distance_kb: Option<i64>,
    pub wal_files_added: Option<i64>,
}

/// One crash (or archive) recovery: WAL replayed and how long it took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Replay {
    pub bytes: u64,
    pub seconds: f64,
}

/// The inputs of the sizing model, in time order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SizingHistory {
    pub points: Vec<PointStart>,
    /// Server starts, crash restarts and recoveries: a cycle spanning one is
    /// not a measure of the WAL rate.
    pub restarts: Vec<Timestamp>,
    pub too_frequent: i64,
    pub replays: Vec<Replay>,
    /// Checkpoints and restartpoints whose complete line logged no WAL
    /// distance (PostgreSQL 9.4 and older): they cannot be sized from.
    pub without_distance: i64,
}

/// The newest checkpoint and restartpoint starts, with the server restarts
/// among them: what the settings inference reads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecentStarts {
    /// Oldest first.
    pub points: Vec<PointStart>,
    pub restarts: Vec<Timestamp>,
}

/// The starts of cluster ?1 in `[?2, ?3)` and the one before ?2, in time order.
/// The cluster and the lower bound are uncorrelated scalar subqueries,
/// computed once; as CTEs joined to the rows, bundled SQLite re-ran the
/// bound's co-routine for every row (13 ms for a week of 5-minute
/// checkpoints instead of 0.4). Both the bound and the rows are ranges of the
/// index checkpoint_cluster_started (migrations/0009_scale.sql).
const POINT_STARTS: &str = "SELECT k.kind, k.started_at, k.trigger, k.distance_kb, k.wal_files_added
     FROM checkpoint k
     WHERE k.cluster_id = (SELECT id FROM cluster WHERE name = ?1)
       AND k.started_at IS NOT NULL AND k.started_at < ?3
       AND k.started_at >= COALESCE((SELECT max(k2.started_at) FROM checkpoint k2
                                     WHERE k2.cluster_id = (SELECT id FROM cluster WHERE name = ?1)
                                       AND k2.started_at < ?2), ?2)
     ORDER BY k.started_at, k.id";

/// The newest ?3 starts of cluster ?1 at or after ?2, newest first. Ordered
/// by the start itself (for a row with a start, the same order as the
/// point's time): the index checkpoint_cluster_started then yields them in
/// that order and the LIMIT stops the read; ordered by the point's time,
/// SQLite read every start of the cluster since ?2 and sorted them.
const RECENT_STARTS: &str = "SELECT k.kind, k.started_at, k.trigger, k.distance_kb, k.wal_files_added
     FROM checkpoint k JOIN cluster c ON c.id = k.cluster_id
     WHERE c.name = ?1 AND k.started_at IS NOT NULL AND k.started_at >= ?2
     ORDER BY k.started_at DESC, k.id DESC LIMIT ?3";

/// The crash recoveries whose replay speed `suggest` reads (the newest).
const REPLAYS_KEPT: i64 = 100;

/// Markers of a server (re)start in the event table.
const RESTART_KINDS: &str = "'server_start', 'server_ready', 'crash_reinit', 'redo_start'";

impl Store {
    /// The history of `cluster` in `[since, until)`, plus the checkpoint
    /// just before `since` so that the first cycle in the window has a start.
    pub(crate) fn sizing_history(
        &self,
        cluster: &str,
        since: Timestamp,
        until: Timestamp,
    ) -> Result<SizingHistory, StoreError> {
        let (since, until) = (to_micros(since), to_micros(until));
        let q = || -> rusqlite::Result<SizingHistory> {
            Ok(SizingHistory {
                points: self.point_starts(cluster, since, until)?,
                restarts: self.restarts(cluster, since, until)?,
                too_frequent: self.conn.query_row(
                    "SELECT count(*) FROM event e JOIN cluster c ON c.id = e.cluster_id
                     WHERE c.name = ?1 AND e.kind = 'too_frequent' AND e.at >= ?2 AND e.at < ?3",
                    params![cluster, since, until],
                    |r| r.get(0),
                )?,
                replays: self.replays(cluster)?,
                without_distance: self.conn.query_row(
                    "SELECT count(*) FROM checkpoint k JOIN cluster c ON c.id = k.cluster_id
                     WHERE c.name = ?1 AND k.completed_at IS NOT NULL AND k.distance_kb IS NULL
                     AND COALESCE(k.started_at, k.completed_at) >= ?2
                     AND COALESCE(k.started_at, k.completed_at) < ?3",
                    params![cluster, since, until],
                    |r| r.get(0),
                )?,
            })
        };
        q().map_err(|e| self.sql(e))
    }

    fn point_starts(&self, cluster: &str, since: i64, until: i64) -> rusqlite::Result<Vec<PointStart>> {
        // The lower bound is computed once (see POINT_STARTS), not per row:
        // a subquery correlated with the outer row rescans the cluster's
        // checkpoints for every row, quadratic in a long history (minutes at
        // 80 000 points).
        let mut stmt = self.conn.prepare_cached(POINT_STARTS)?;
        let rows = stmt.query_map(params![cluster, since, until], point_start)?;
        rows.collect()
    }

    /// The newest `limit` starts of `cluster` at or after `since`, oldest
    /// first, and the restarts from the first of them on.
    pub(crate) fn recent_starts(
        &self,
        cluster: &str,
        since: Option<Timestamp>,
        limit: usize,
    ) -> Result<RecentStarts, StoreError> {
        let since = since.map_or(i64::MIN, to_micros);
        let q = || -> rusqlite::Result<RecentStarts> {
            let mut stmt = self.conn.prepare_cached(RECENT_STARTS)?;
            let rows = stmt.query_map(params![cluster, since, limit as i64], point_start)?;
            let mut points = rows.collect::<rusqlite::Result<Vec<PointStart>>>()?;
            points.reverse();
            let restarts = match points.first() {
                Some(first) => self.restarts(cluster, to_micros(first.started_at), i64::MAX)?,
                None => Vec::new(),
            };
            Ok(RecentStarts { points, restarts })
        };
        q().map_err(|e| self.sql(e))
    }

    fn restarts(&self, cluster: &str, since: i64, until: i64) -> rusqlite::Result<Vec<Timestamp>> {
        let sql = format!(
            "SELECT e.at FROM event e JOIN cluster c ON c.id = e.cluster_id
             WHERE c.name = ?1 AND e.kind IN ({RESTART_KINDS}) AND e.at < ?3 AND e.at >= ?2 - 86400000000 * 30
             ORDER BY e.at"
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map(params![cluster, since, until], |r| Ok(from_micros(r.get(0)?)))?;
        rows.collect()
    }

    /// Every `redo starts at` followed by its `redo done at … elapsed: S s`.
    fn replays(&self, cluster: &str) -> rusqlite::Result<Vec<Replay>> {
        // The newest recoveries only: a replay speed is a property of today's
        // hardware, and a store of years with a crash a day would otherwise
        // read (and JSON-decode) thousands of rows at every suggestion.
        let mut stmt = self.conn.prepare_cached(
            "SELECT e.kind, json_extract(e.data, '$.lsn'), json_extract(e.data, '$.elapsed_s')
             FROM event e JOIN cluster c ON c.id = e.cluster_id
             WHERE c.name = ?1 AND e.kind IN ('redo_start', 'redo_done') ORDER BY e.at DESC, e.id DESC LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![cluster, 2 * REPLAYS_KEPT], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?, r.get::<_, Option<f64>>(2)?))
        })?;
        let mut newest_first = rows.collect::<rusqlite::Result<Vec<_>>>()?;
        newest_first.reverse();
        let mut replays = Vec::new();
        let mut start: Option<u64> = None;
        for (kind, lsn, elapsed) in newest_first {
            let lsn = lsn.as_deref().and_then(parse_lsn);
            match (kind.as_str(), start, lsn, elapsed) {
                ("redo_start", _, _, _) => start = lsn,
                ("redo_done", Some(from), Some(to), Some(seconds)) if to > from && seconds > 0.0 => {
                    replays.push(Replay { bytes: to - from, seconds });
                    start = None;
                }
                _ => start = None,
            }
        }
        Ok(replays)
    }
}

/// A row of [`POINT_STARTS`] or [`RECENT_STARTS`], whose columns are in this
/// order (a test checks it). By position: a column read by name is a scan of
/// the statement's names with strcmp on every row, a tenth of a digest's CPU
/// when it read 5 000 starts per cluster.
fn point_start(r: &rusqlite::Row<'_>) -> rusqlite::Result<PointStart> {
    Ok(PointStart {
        kind: r.get(0)?,
        started_at: from_micros(r.get(1)?),
        trigger: r.get(2)?,
        distance_kb: r.get(3)?,
        wal_files_added: r.get(4)?,
    })
}

/// "1A/4F1A2B60" -> the 64-bit WAL position.
pub(crate) fn parse_lsn(text: &str) -> Option<u64> {
    let (hi, lo) = text.trim().split_once('/')?;
    Some((u64::from_str_radix(hi, 16).ok()? << 32) | u64::from_str_radix(lo, 16).ok()?)
}

#[cfg(test)]
mod tests {
    use super::{parse_lsn, POINT_STARTS, RECENT_STARTS};

    /// point_start reads its columns by position: both queries must name
    /// them in that order.
    #[test]
    fn the_start_queries_select_the_columns_point_start_reads_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::open(&dir.path().join("w.db")).unwrap();
        for sql in [POINT_STARTS, RECENT_STARTS] {
            let stmt = store.conn.prepare(sql).unwrap();
            assert_eq!(
                stmt.column_names(),
                ["kind", "started_at", "trigger", "distance_kb", "wal_files_added"],
                "{sql}"
            );
        }
    }

    /// The cycles the model reads, on a store imported from a real log:
    /// the same starts as the definition (the start before the window, then
    /// every start in it, in time order), read through the index of
    /// migration 0009 (checkpoint_cluster_started), never a scan.
    #[test]
    fn point_starts_are_the_window_and_the_start_before_it_through_the_index() {
        use crate::frame::time::TimeContext;
        use crate::ingest::{self, Options};
        use crate::store::Store;
        use jiff::Timestamp;
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("w.db")).unwrap();
        let opts = Options { prefix: Some("%m [%p] %q%u@%d ".into()), ..Options::default() };
        let time = TimeContext::new(Some("UTC")).unwrap();
        for (cluster, file) in [
            ("a", "tests/fixtures/15-stderr-default-crashimm/log/postgresql-2026-11-22_081334.log"),
            ("a", "tests/fixtures/15-stderr-default-crashimm/log/postgresql-2026-11-22_081730.log"),
            ("b", "tests/fixtures/15-stderr-default-noise/log/postgresql-2026-11-22_080841.log"),
        ] {
            let id = store.cluster_id(cluster).unwrap();
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
            ingest::import(&mut store, id, path.to_str().unwrap(), &opts, &time).unwrap();
        }
        let all = |cluster: &str| -> Vec<(i64, i64)> {
            let mut stmt = store
                .conn
                .prepare(
                    "SELECT k.started_at, k.id FROM checkpoint k JOIN cluster c ON c.id = k.cluster_id
                     WHERE c.name = ?1 AND k.started_at IS NOT NULL",
                )
                .unwrap();
            let mut v: Vec<(i64, i64)> =
                stmt.query_map([cluster], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect();
            v.sort();
            v
        };
        let t = |s: &str| s.parse::<Timestamp>().unwrap().as_microsecond();
        let mut checked = 0;
        for cluster in ["a", "b", "none"] {
            let starts = all(cluster);
            for (since, until) in [
                (t("2026-11-22T00:00:00Z"), t("2026-11-23T00:00:00Z")),
                (t("2026-11-22T08:14:00Z"), t("2026-11-22T08:18:00Z")),
                (t("2026-11-22T08:09:05Z"), t("2026-11-22T08:09:30Z")),
                (t("2026-11-23T00:00:00Z"), t("2026-11-24T00:00:00Z")),
            ] {
                let lo = starts.iter().map(|s| s.0).filter(|&s| s < since).max().unwrap_or(since);
                let want: Vec<i64> = starts.iter().filter(|s| s.0 >= lo && s.0 < until).map(|s| s.0).collect();
                let got: Vec<i64> = store
                    .point_starts(cluster, since, until)
                    .unwrap()
                    .iter()
                    .map(|p| p.started_at.as_microsecond())
                    .collect();
                assert_eq!(got, want, "{cluster} {since} {until}");
                checked += got.len();
            }
        }
        assert!(checked > 50, "{checked}");
        let plan: Vec<String> = {
            let mut stmt = store.conn.prepare(&format!("EXPLAIN QUERY PLAN {POINT_STARTS}")).unwrap();
            let rows = stmt.query_map(rusqlite::params!["a", 0, 1], |r| r.get::<_, String>(3)).unwrap();
            rows.map(Result::unwrap).collect()
        };
        assert!(plan.iter().all(|step| !step.starts_with("SCAN k")), "{plan:?}");
        assert!(plan.iter().any(|step| step.contains("checkpoint_cluster_started")), "{plan:?}");
        assert!(!plan.iter().any(|step| step.contains("TEMP B-TREE")), "no sort: {plan:?}");
        let plan: Vec<String> = {
            let mut stmt = store.conn.prepare(&format!("EXPLAIN QUERY PLAN {RECENT_STARTS}")).unwrap();
            let rows = stmt.query_map(rusqlite::params!["a", 0, 10], |r| r.get::<_, String>(3)).unwrap();
            rows.map(Result::unwrap).collect()
        };
        assert!(plan.iter().any(|step| step.contains("checkpoint_cluster_started")), "{plan:?}");
        assert!(!plan.iter().any(|step| step.contains("TEMP B-TREE")), "no sort: {plan:?}");
        // The newest starts, oldest first, as the settings inference reads them.
        let recent = store.recent_starts("b", None, 5).unwrap();
        let newest: Vec<i64> = all("b").iter().rev().take(5).rev().map(|s| s.0).collect();
        assert_eq!(recent.points.iter().map(|p| p.started_at.as_microsecond()).collect::<Vec<_>>(), newest);
    }

    #[test]
    fn lsn_halves_are_hex() {
        assert_eq!(parse_lsn("1A/4F1A2B60"), Some((0x1A << 32) | 0x4F1A2B60));
        assert_eq!(parse_lsn("0/0"), Some(0));
        assert_eq!(parse_lsn("xyz"), None);
        assert_eq!(parse_lsn("1/G"), None);
    }
}
