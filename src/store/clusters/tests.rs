//! The cluster's own columns on real store files.

use crate::store::Store;

/// Migration 8 on a store of schema 7: every source counts no unmatched
/// line, and no cluster has a daemon setting yet; the first setting
/// recorded is not a change, another one is.
#[test]
fn the_migration_starts_every_count_at_zero_and_the_first_setting_is_no_change() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    for sql in &crate::store::MIGRATIONS[..7] {
        conn.execute_batch(sql).unwrap();
    }
    conn.pragma_update(None, "user_version", 7).unwrap();
    conn.execute_batch(
        "INSERT INTO cluster(id, name) VALUES (1, 'main');
         INSERT INTO source(id, cluster_id, path, fp_len, fp_hash, format, first_read, last_read)
           VALUES (1, 1, '/log', 0, 0, 'stderr', 1, 2);",
    )
    .unwrap();
    drop(conn);
    let mut store = Store::open(&path).unwrap();
    let unmatched: i64 = store.conn.query_row("SELECT unmatched FROM source", [], |r| r.get(0)).unwrap();
    assert_eq!(unmatched, 0);
    assert_eq!(store.clusters_mut().record_follow_setting(1, "auto", "auto").unwrap(), None);
    assert_eq!(store.clusters_mut().record_follow_setting(1, "auto", "auto").unwrap(), None);
    assert_eq!(
        store.clusters_mut().record_follow_setting(1, "stderr", "%m [%p] ").unwrap(),
        Some(("auto".to_string(), "auto".to_string()))
    );
}
