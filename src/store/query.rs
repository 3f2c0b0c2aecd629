//! Reading: the checkpoint history and its summary, for the CLI.

use jiff::Timestamp;
use rusqlite::{params_from_iter, types::Value, Row};
use serde::Serialize;

use super::{Store, StoreError};

/// Which rows a query covers. Times are UTC microseconds, `until` exclusive.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub cluster: Option<String>,
    pub since: Option<Timestamp>,
    pub until: Option<Timestamp>,
    pub trigger: Option<String>,
}

impl Filter {
    /// SQL conditions on `cluster c` and the time expression `time`, with their values.
    fn conditions(&self, time: &str) -> (String, Vec<Value>) {
        let mut sql = String::new();
        let mut values = Vec::new();
        if let Some(c) = &self.cluster {
            sql.push_str(" AND c.name = ?");
            values.push(Value::Text(c.clone()));
        }
        if let Some(t) = self.since {
            sql.push_str(&format!(" AND {time} >= ?"));
            values.push(Value::Integer(t.as_microsecond()));
        }
        if let Some(t) = self.until {
            sql.push_str(&format!(" AND {time} < ?"));
            values.push(Value::Integer(t.as_microsecond()));
        }
        (sql, values)
    }
}

/// One checkpoint or restartpoint, as `walwatch checkpoints` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckpointRow {
    pub cluster: String,
    pub kind: String,
    pub trigger: Option<String>,
    pub flags: Vec<String>,
    #[serde(serialize_with = "crate::timefmt::serialize_opt")]
    pub started_at: Option<Timestamp>,
    #[serde(serialize_with = "crate::timefmt::serialize_opt")]
    pub completed_at: Option<Timestamp>,
    pub buffers_written: Option<i64>,
    pub buffers_pct: Option<f64>,
    pub slru_buffers_written: Option<i64>,
    pub wal_files_added: Option<i64>,
    pub wal_files_removed: Option<i64>,
    pub wal_files_recycled: Option<i64>,
    pub write_s: Option<f64>,
    pub sync_s: Option<f64>,
    pub total_s: Option<f64>,
    pub sync_files: Option<i64>,
    pub sync_longest_s: Option<f64>,
    pub sync_average_s: Option<f64>,
    pub distance_kb: Option<i64>,
    pub estimate_kb: Option<i64>,
    pub lsn: Option<String>,
    pub redo_lsn: Option<String>,
}

const CHECKPOINT_COLUMNS: &str = "c.name, k.kind, k.trigger, k.flags, k.started_at, k.completed_at,
    k.buffers_written, k.buffers_pct, k.slru_buffers_written, k.wal_files_added, k.wal_files_removed,
    k.wal_files_recycled, k.write_s, k.sync_s, k.total_s, k.sync_files, k.sync_longest_s, k.sync_average_s,
    k.distance_kb, k.estimate_kb, k.lsn, k.redo_lsn";

fn ts(v: Option<i64>) -> Option<Timestamp> {
    v.and_then(|us| Timestamp::from_microsecond(us).ok())
}

fn checkpoint_row(r: &Row<'_>) -> rusqlite::Result<CheckpointRow> {
    let flags: Option<String> = r.get(3)?;
    Ok(CheckpointRow {
        cluster: r.get(0)?,
        kind: r.get(1)?,
        trigger: r.get(2)?,
        flags: flags.map(|f| f.split_whitespace().map(String::from).collect()).unwrap_or_default(),
        started_at: ts(r.get(4)?),
        completed_at: ts(r.get(5)?),
        buffers_written: r.get(6)?,
        buffers_pct: r.get(7)?,
        slru_buffers_written: r.get(8)?,
        wal_files_added: r.get(9)?,
        wal_files_removed: r.get(10)?,
        wal_files_recycled: r.get(11)?,
        write_s: r.get(12)?,
        sync_s: r.get(13)?,
        total_s: r.get(14)?,
        sync_files: r.get(15)?,
        sync_longest_s: r.get(16)?,
        sync_average_s: r.get(17)?,
        distance_kb: r.get(18)?,
        estimate_kb: r.get(19)?,
        lsn: r.get(20)?,
        redo_lsn: r.get(21)?,
    })
}

/// Counts for one kind of point (checkpoints or restartpoints).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PointCounts {
    pub started: i64,
    pub completed: i64,
    pub by_trigger: ByTrigger,
}

/// Started points by trigger, in the documented order.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ByTrigger {
    pub shutdown: i64,
    #[serde(rename = "end-of-recovery")]
    pub end_of_recovery: i64,
    pub wal: i64,
    pub time: i64,
    pub manual: i64,
}

impl ByTrigger {
    pub fn get(&self, trigger: &str) -> Option<i64> {
        Some(match trigger {
            "shutdown" => self.shutdown,
            "end-of-recovery" => self.end_of_recovery,
            "wal" => self.wal,
            "time" => self.time,
            "manual" => self.manual,
            _ => return None,
        })
    }

    fn add(&mut self, trigger: &str, n: i64) {
        let slot = match trigger {
            "shutdown" => &mut self.shutdown,
            "end-of-recovery" => &mut self.end_of_recovery,
            "wal" => &mut self.wal,
            "time" => &mut self.time,
            _ => &mut self.manual,
        };
        *slot += n;
    }
}

/// What `walwatch summary` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub checkpoints: PointCounts,
    pub restartpoints: PointCounts,
    pub too_frequent: i64,
    pub parameter_changes: i64,
    pub rejected: i64,
    #[serde(serialize_with = "crate::timefmt::serialize_opt")]
    pub first_at: Option<Timestamp>,
    #[serde(serialize_with = "crate::timefmt::serialize_opt")]
    pub last_at: Option<Timestamp>,
}

const POINT_TIME: &str = "COALESCE(k.started_at, k.completed_at)";

impl Store {
    /// Checkpoints and restartpoints in time order.
    pub fn checkpoints(&self, filter: &Filter) -> Result<Vec<CheckpointRow>, StoreError> {
        let (mut cond, mut values) = filter.conditions(POINT_TIME);
        if let Some(t) = &filter.trigger {
            cond.push_str(" AND k.trigger = ?");
            values.push(Value::Text(t.clone()));
        }
        let sql = format!(
            "SELECT {CHECKPOINT_COLUMNS} FROM checkpoint k JOIN cluster c ON c.id = k.cluster_id
             WHERE 1 = 1 {cond} ORDER BY {POINT_TIME}, k.id"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.sql(e))?;
        let rows = stmt.query_map(params_from_iter(values), checkpoint_row).map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    pub fn summary(&self, filter: &Filter) -> Result<Summary, StoreError> {
        Ok(Summary {
            checkpoints: self.point_counts(filter, "checkpoint")?,
            restartpoints: self.point_counts(filter, "restartpoint")?,
            too_frequent: self.count_events(filter, "too_frequent")?,
            parameter_changes: self.count_events(filter, "parameter_changed")?,
            rejected: self.count_events(filter, "rejected")?,
            first_at: self.event_time(filter, "MIN")?,
            last_at: self.event_time(filter, "MAX")?,
        })
    }

    fn point_counts(&self, filter: &Filter, kind: &str) -> Result<PointCounts, StoreError> {
        let (cond, mut values) = filter.conditions(POINT_TIME);
        values.insert(0, Value::Text(kind.into()));
        let sql = format!(
            "SELECT k.trigger, count(k.start_event_id), count(k.complete_event_id)
             FROM checkpoint k JOIN cluster c ON c.id = k.cluster_id
             WHERE k.kind = ? {cond} GROUP BY k.trigger"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map(params_from_iter(values), |r| {
                Ok((r.get::<_, Option<String>>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
            })
            .map_err(|e| self.sql(e))?;
        let mut counts = PointCounts::default();
        for row in rows {
            let (trigger, started, completed) = row.map_err(|e| self.sql(e))?;
            counts.started += started;
            counts.completed += completed;
            if let Some(t) = trigger {
                counts.by_trigger.add(&t, started);
            }
        }
        Ok(counts)
    }

    fn count_events(&self, filter: &Filter, kind: &str) -> Result<i64, StoreError> {
        let (cond, mut values) = filter.conditions("e.at");
        values.insert(0, Value::Text(kind.into()));
        let sql = format!("SELECT count(*) FROM event e JOIN cluster c ON c.id = e.cluster_id WHERE e.kind = ? {cond}");
        self.conn.query_row(&sql, params_from_iter(values), |r| r.get(0)).map_err(|e| self.sql(e))
    }

    fn event_time(&self, filter: &Filter, agg: &str) -> Result<Option<Timestamp>, StoreError> {
        let (cond, values) = filter.conditions("e.at");
        let sql = format!(
            "SELECT {agg}(e.at) FROM event e JOIN cluster c ON c.id = e.cluster_id WHERE e.kind <> 'rejected' {cond}"
        );
        let v: Option<i64> =
            self.conn.query_row(&sql, params_from_iter(values), |r| r.get(0)).map_err(|e| self.sql(e))?;
        Ok(ts(v))
    }

    /// Names of all clusters in the store.
    pub fn clusters(&self) -> Result<Vec<String>, StoreError> {
        let mut stmt = self.conn.prepare("SELECT name FROM cluster ORDER BY name").map_err(|e| self.sql(e))?;
        let rows = stmt.query_map([], |r| r.get(0)).map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }
}
