//! The daemon's listeners (table listener): whether each takes
//! connections, what it refused, as the daemon last saw them; `status`,
//! `doctor` and the metrics read them.

use std::ops::{Deref, DerefMut};

use jiff::Timestamp;
use rusqlite::params;

use super::columns::{from_micros, to_micros};
use super::{Store, StoreError};

/// The listeners' handle: [`Store::listeners`], [`Store::listeners_mut`].
pub struct Listeners<S>(pub(super) S);

/// One listener as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ListenerRow {
    /// "metrics" or "ingest".
    pub(crate) name: String,
    /// `http://127.0.0.1:9187`
    pub(crate) address: String,
    pub(crate) up: bool,
    /// Why it is down, or what a reload could not apply while it serves on.
    pub(crate) problem: Option<String>,
    /// Since when it is in this state.
    pub(crate) since: Timestamp,
    pub(crate) open: u64,
    pub(crate) accepted: u64,
    pub(crate) requests: u64,
    /// Refusals by reason.
    pub(crate) refused: Vec<(String, u64)>,
    pub(crate) updated_at: Timestamp,
}

impl<S: Deref<Target = Store>> Listeners<S> {
    /// Every listener recorded, by name.
    pub(crate) fn all(&self) -> Result<Vec<ListenerRow>, StoreError> {
        let read = || -> rusqlite::Result<Vec<ListenerRow>> {
            self.0
                .conn
                .prepare_cached(
                    "SELECT name, address, up, problem, since, open, accepted, requests, refused, updated_at
                     FROM listener ORDER BY name",
                )?
                .query_map([], |r| {
                    let refused: String = r.get(8)?;
                    let refused: std::collections::BTreeMap<String, u64> =
                        serde_json::from_str(&refused).unwrap_or_default();
                    Ok(ListenerRow {
                        name: r.get(0)?,
                        address: r.get(1)?,
                        up: r.get(2)?,
                        problem: r.get(3)?,
                        since: from_micros(r.get(4)?),
                        open: r.get::<_, i64>(5)? as u64,
                        accepted: r.get::<_, i64>(6)? as u64,
                        requests: r.get::<_, i64>(7)? as u64,
                        refused: refused.into_iter().collect(),
                        updated_at: from_micros(r.get(9)?),
                    })
                })?
                .collect()
        };
        read().map_err(|e| self.0.sql(e))
    }
}

impl<S: DerefMut<Target = Store>> Listeners<S> {
    /// Records `row` (replacing the listener's row of the same name); its
    /// `since` is kept while `up` and `problem` stay the same.
    pub(crate) fn record(&mut self, row: &ListenerRow) -> Result<(), StoreError> {
        let refused = serde_json::to_string(&row.refused.iter().cloned().collect::<std::collections::BTreeMap<_, _>>())
            .unwrap_or_else(|_| "{}".into());
        self.0
            .conn
            .prepare_cached(
                "INSERT INTO listener(name, address, up, problem, since, open, accepted, requests, refused, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
                 ON CONFLICT(name) DO UPDATE SET address = ?2, up = ?3, problem = ?4,
                    since = CASE WHEN up = ?3 AND problem IS ?4 THEN since ELSE ?5 END,
                    open = ?6, accepted = ?7, requests = ?8, refused = ?9, updated_at = ?10",
            )
            .and_then(|mut s| {
                s.execute(params![
                    row.name,
                    row.address,
                    row.up,
                    row.problem,
                    to_micros(row.since),
                    row.open as i64,
                    row.accepted as i64,
                    row.requests as i64,
                    refused,
                    to_micros(row.updated_at),
                ])
            })
            .map(drop)
            .map_err(|e| self.0.sql(e))
    }

    /// Forgets the listeners not in `names` (turned off by a reload, or all
    /// at a clean stop with none).
    pub(crate) fn keep(&mut self, names: &[&str]) -> Result<(), StoreError> {
        let names = serde_json::to_string(names).unwrap_or_else(|_| "[]".into());
        self.0
            .conn
            .execute("DELETE FROM listener WHERE name NOT IN (SELECT value FROM json_each(?1))", [names])
            .map(drop)
            .map_err(|e| self.0.sql(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(up: bool, problem: Option<&str>, at: i64) -> ListenerRow {
        let t = Timestamp::from_second(at).unwrap();
        ListenerRow {
            name: "ingest".into(),
            address: "http://127.0.0.1:10188".into(),
            up,
            problem: problem.map(String::from),
            since: t,
            open: 3,
            accepted: 9,
            requests: 12,
            refused: vec![("timeout".into(), 2)],
            updated_at: t,
        }
    }

    #[test]
    fn a_listener_keeps_its_since_while_its_state_stays() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("w.db")).unwrap();
        store.listeners_mut().record(&row(true, None, 100)).unwrap();
        store.listeners_mut().record(&row(true, None, 200)).unwrap();
        let got = store.listeners().all().unwrap();
        assert_eq!((got.len(), got[0].since.as_second(), got[0].updated_at.as_second()), (1, 100, 200));
        assert_eq!(got[0].refused, vec![("timeout".to_string(), 2)]);
        store.listeners_mut().record(&row(false, Some("cannot accept connections: Too many open files"), 300)).unwrap();
        store.listeners_mut().record(&row(false, Some("cannot accept connections: Too many open files"), 400)).unwrap();
        let got = &store.listeners().all().unwrap()[0];
        assert_eq!((got.up, got.since.as_second()), (false, 300));
        store.listeners_mut().keep(&["metrics"]).unwrap();
        assert!(store.listeners().all().unwrap().is_empty());
    }
}
