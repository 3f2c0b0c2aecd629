//! The settings timeline (tables setting, setting_read) and the log's
//! parameter changes and server versions (table event), for `crate::settings`.

use jiff::Timestamp;
use rusqlite::{params, OptionalExtension};

use super::columns::{from_micros, to_micros};
use super::{Store, StoreError};

/// The two sources walwatch reads itself; the log's changes live in `event`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowSource {
    Config,
    ConfFile,
}

impl RowSource {
    fn as_str(self) -> &'static str {
        match self {
            RowSource::Config => "config",
            RowSource::ConfFile => "conf_file",
        }
    }
}

/// One value of one source as read at `since`; `value` None: no longer set.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SettingRow {
    pub name: String,
    pub value: Option<String>,
    pub source: RowSource,
    pub path: Option<String>,
    pub line: Option<i64>,
    pub since: Timestamp,
}

/// A `parameter "X" changed to "Y"` line.
#[derive(Debug, Clone, PartialEq)]
pub struct LogChange {
    pub at: Timestamp,
    pub name: String,
    pub value: String,
}

/// What a source says of one name now: the value and, for conf files, where.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Observed {
    pub value: Option<String>,
    pub path: Option<String>,
    pub line: Option<i64>,
}

impl Store {
    /// The id of cluster `name` if the store knows it (never creates one).
    pub(crate) fn find_cluster(&self, name: &str) -> Result<Option<i64>, StoreError> {
        self.conn
            .query_row("SELECT id FROM cluster WHERE name = ?1", [name], |r| r.get(0))
            .optional()
            .map_err(|e| self.sql(e))
    }

    /// Records, in one transaction, what `source` says now of each name in
    /// `observed`: a row only where it differs from the latest row of that
    /// name and source. Marks the source as read completely at `now`.
    /// Returns the number of rows added.
    pub(crate) fn record_settings(
        &mut self,
        cluster: &str,
        source: RowSource,
        observed: &[(String, Observed)],
        now: Timestamp,
    ) -> Result<usize, StoreError> {
        let cluster_id = self.cluster_id(cluster)?;
        let latest = self.latest_settings(cluster_id, source)?;
        let path = self.path.clone();
        let sql = |e| StoreError::Sql { path: path.clone(), source: e };
        let tx = self.conn.transaction().map_err(sql)?;
        let mut added = 0;
        for (name, now_says) in observed {
            let before = latest.iter().find(|r| &r.name == name);
            let unchanged = match before {
                Some(r) => r.value == now_says.value && r.path == now_says.path && r.line == now_says.line,
                None => now_says.value.is_none(),
            };
            if unchanged {
                continue;
            }
            tx.execute(
                "INSERT INTO setting(cluster_id, name, value, source, path, line, since) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (cluster_id, name, source, since) DO UPDATE
                 SET value = excluded.value, path = excluded.path, line = excluded.line",
                params![cluster_id, name, now_says.value, source.as_str(), now_says.path, now_says.line, to_micros(now)],
            )
            .map_err(sql)?;
            added += 1;
        }
        tx.execute(
            "INSERT INTO setting_read(cluster_id, source, at) VALUES (?1, ?2, ?3)
             ON CONFLICT (cluster_id, source) DO UPDATE SET at = excluded.at",
            params![cluster_id, source.as_str(), to_micros(now)],
        )
        .map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(added)
    }

    /// The latest row of each name from `source`.
    pub(crate) fn latest_settings(&self, cluster_id: i64, source: RowSource) -> Result<Vec<SettingRow>, StoreError> {
        let rows = self.setting_rows(cluster_id)?;
        let mut latest: Vec<SettingRow> = Vec::new();
        for row in rows.into_iter().filter(|r| r.source == source) {
            // rows come ordered by since, so a later row replaces an earlier one
            match latest.iter_mut().find(|r| r.name == row.name) {
                Some(slot) => *slot = row,
                None => latest.push(row),
            }
        }
        Ok(latest)
    }

    /// Every recorded row of the cluster, oldest first.
    pub(crate) fn setting_rows(&self, cluster_id: i64) -> Result<Vec<SettingRow>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT name, value, source, path, line, since FROM setting WHERE cluster_id = ?1 ORDER BY since, id",
            )
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map([cluster_id], |r| {
                let source: String = r.get("source")?;
                Ok(SettingRow {
                    name: r.get("name")?,
                    value: r.get("value")?,
                    // The table's CHECK allows only these two.
                    source: if source == "config" { RowSource::Config } else { RowSource::ConfFile },
                    path: r.get("path")?,
                    line: r.get("line")?,
                    since: from_micros(r.get("since")?),
                })
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// When `source` was last read completely, if ever.
    pub(crate) fn settings_read_at(&self, cluster_id: i64, source: RowSource) -> Result<Option<Timestamp>, StoreError> {
        self.conn
            .query_row(
                "SELECT at FROM setting_read WHERE cluster_id = ?1 AND source = ?2",
                params![cluster_id, source.as_str()],
                |r| r.get::<_, i64>(0),
            )
            .optional()
            .map(|v| v.map(from_micros))
            .map_err(|e| self.sql(e))
    }

    /// The log's `parameter "X" changed to "Y"` lines, oldest first; rows
    /// whose data is not the expected JSON are skipped.
    pub fn parameter_changes(&self, cluster_id: i64) -> Result<Vec<LogChange>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT at, data FROM event WHERE cluster_id = ?1 AND kind = 'parameter_changed' ORDER BY at, id",
            )
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map(params![cluster_id], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
            .map_err(|e| self.sql(e))?;
        let mut changes = Vec::new();
        for row in rows {
            let (at, data) = row.map_err(|e| self.sql(e))?;
            // The two strings only, no document tree: a digest reads every
            // change of each cluster.
            let Ok(NameValue { name, value }) = serde_json::from_str::<NameValue>(&data) else { continue };
            changes.push(LogChange { at: from_micros(at), name: name.to_ascii_lowercase(), value });
        }
        Ok(changes)
    }

    /// The paths of the cluster's log sources as they were read, the most
    /// recently read first (where the data directory may be found).
    pub(crate) fn source_paths(&self, cluster_id: i64) -> Result<Vec<String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT path FROM source WHERE cluster_id = ?1 GROUP BY path ORDER BY max(last_read) DESC, max(id) DESC")
            .map_err(|e| self.sql(e))?;
        let rows = stmt.query_map([cluster_id], |r| r.get(0)).map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// The version of the latest server start in the log ("15.18"), if any said it.
    pub(crate) fn latest_server_version(&self, cluster_id: i64) -> Result<Option<String>, StoreError> {
        let data: Option<String> = self
            .conn
            .query_row(
                "SELECT data FROM event WHERE cluster_id = ?1 AND kind = 'server_start'
                 AND json_extract(data, '$.version') IS NOT NULL ORDER BY at DESC, id DESC LIMIT 1",
                [cluster_id],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        Ok(data
            .and_then(|d| serde_json::from_str::<serde_json::Value>(&d).ok())
            .and_then(|v| v["version"].as_str().map(String::from)))
    }
}

/// What a `parameter_changed` event's data holds.
#[derive(serde::Deserialize)]
struct NameValue {
    name: String,
    value: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(value: Option<&str>, line: Option<i64>) -> Observed {
        Observed { value: value.map(String::from), path: line.map(|_| "/p.conf".to_string()), line }
    }

    #[test]
    fn only_changes_are_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db")).unwrap();
        let t = |s: i64| Timestamp::from_second(1_800_000_000 + s).unwrap();
        let one = vec![("fsync".to_string(), obs(Some("on"), Some(3))), ("commit_delay".into(), obs(None, None))];
        assert_eq!(store.record_settings("c", RowSource::ConfFile, &one, t(0)).unwrap(), 1);
        assert_eq!(store.record_settings("c", RowSource::ConfFile, &one, t(1)).unwrap(), 0);
        let moved = vec![("fsync".to_string(), obs(Some("on"), Some(4)))];
        assert_eq!(store.record_settings("c", RowSource::ConfFile, &moved, t(2)).unwrap(), 1);
        let gone = vec![("fsync".to_string(), obs(None, None))];
        assert_eq!(store.record_settings("c", RowSource::ConfFile, &gone, t(3)).unwrap(), 1);
        assert_eq!(store.record_settings("c", RowSource::ConfFile, &gone, t(4)).unwrap(), 0);
        let id = store.find_cluster("c").unwrap().unwrap();
        let values: Vec<(Option<String>, Option<i64>)> =
            store.setting_rows(id).unwrap().into_iter().map(|r| (r.value, r.line)).collect();
        assert_eq!(values, [(Some("on".into()), Some(3)), (Some("on".into()), Some(4)), (None, None)]);
        assert_eq!(store.settings_read_at(id, RowSource::ConfFile).unwrap(), Some(t(4)));
        assert_eq!(store.settings_read_at(id, RowSource::Config).unwrap(), None);
        assert_eq!(store.find_cluster("other").unwrap(), None);
    }
}
