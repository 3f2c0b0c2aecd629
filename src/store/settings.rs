//! The settings timeline (tables setting, setting_read): what walwatch read
//! itself of each setting (the config file, postgresql.conf) and when, for
//! `crate::settings`. The log's parameter changes and server versions are
//! events (`events.rs`).

use std::ops::{Deref, DerefMut};

use jiff::Timestamp;
use rusqlite::{params, OptionalExtension};

use super::columns::{from_micros, to_micros};
use super::{Store, StoreError};

/// The settings' handle: [`Store::settings`], [`Store::settings_mut`].
pub struct Settings<S>(pub(super) S);

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
    pub(crate) name: String,
    pub(crate) value: Option<String>,
    pub(crate) source: RowSource,
    pub(crate) path: Option<String>,
    pub(crate) line: Option<i64>,
    pub(crate) since: Timestamp,
}

/// What a source says of one name now: the value and, for conf files, where.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Observed {
    pub(crate) value: Option<String>,
    pub(crate) path: Option<String>,
    pub(crate) line: Option<i64>,
}

impl<S: Deref<Target = Store>> Settings<S> {
    /// The latest row of each name from `source`.
    pub(crate) fn latest(&self, cluster_id: i64, source: RowSource) -> Result<Vec<SettingRow>, StoreError> {
        let rows = self.rows(cluster_id)?;
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
    pub(crate) fn rows(&self, cluster_id: i64) -> Result<Vec<SettingRow>, StoreError> {
        let store = &*self.0;
        let mut stmt = store
            .conn
            .prepare_cached(
                "SELECT name, value, source, path, line, since FROM setting WHERE cluster_id = ?1 ORDER BY since, id",
            )
            .map_err(|e| store.sql(e))?;
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
            .map_err(|e| store.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| store.sql(e))
    }

    /// When `source` was last read completely, if ever.
    pub(crate) fn read_at(&self, cluster_id: i64, source: RowSource) -> Result<Option<Timestamp>, StoreError> {
        self.0
            .conn
            .query_row(
                "SELECT at FROM setting_read WHERE cluster_id = ?1 AND source = ?2",
                params![cluster_id, source.as_str()],
                |r| r.get::<_, i64>(0),
            )
            .optional()
            .map(|v| v.map(from_micros))
            .map_err(|e| self.0.sql(e))
    }
}

impl<S: DerefMut<Target = Store>> Settings<S> {
    /// Records, in one transaction, what `source` says now of each name in
    /// `observed`: a row only where it differs from the latest row of that
    /// name and source. Marks the source as read completely at `now`.
    /// Returns the number of rows added.
    pub(crate) fn record(
        &mut self,
        cluster: &str,
        source: RowSource,
        observed: &[(String, Observed)],
        now: Timestamp,
    ) -> Result<usize, StoreError> {
        let cluster_id = self.0.clusters_mut().find_or_create(cluster)?;
        let latest = self.latest(cluster_id, source)?;
        let store = &mut *self.0;
        let path = store.path.clone();
        let sql = |e| StoreError::Sql { path: path.clone(), source: e };
        let tx = store.conn.transaction().map_err(sql)?;
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
        assert_eq!(store.settings_mut().record("c", RowSource::ConfFile, &one, t(0)).unwrap(), 1);
        assert_eq!(store.settings_mut().record("c", RowSource::ConfFile, &one, t(1)).unwrap(), 0);
        let moved = vec![("fsync".to_string(), obs(Some("on"), Some(4)))];
        assert_eq!(store.settings_mut().record("c", RowSource::ConfFile, &moved, t(2)).unwrap(), 1);
        let gone = vec![("fsync".to_string(), obs(None, None))];
        assert_eq!(store.settings_mut().record("c", RowSource::ConfFile, &gone, t(3)).unwrap(), 1);
        assert_eq!(store.settings_mut().record("c", RowSource::ConfFile, &gone, t(4)).unwrap(), 0);
        let id = store.clusters().find("c").unwrap().unwrap();
        let values: Vec<(Option<String>, Option<i64>)> =
            store.settings().rows(id).unwrap().into_iter().map(|r| (r.value, r.line)).collect();
        assert_eq!(values, [(Some("on".into()), Some(3)), (Some("on".into()), Some(4)), (None, None)]);
        assert_eq!(store.settings().read_at(id, RowSource::ConfFile).unwrap(), Some(t(4)));
        assert_eq!(store.settings().read_at(id, RowSource::Config).unwrap(), None);
        assert_eq!(store.clusters().find("other").unwrap(), None);
    }
}
