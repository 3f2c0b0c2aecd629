//! The server's uid in a journal export (`journalctl -o json`): entries a
//! local user sent with `logger -t postgres` under another uid are refused,
//! whatever pid they claim, and the uid learnt is kept for the next read.
//! (tests/postgres/journald_postgres.rs does the same with a real server,
//! a real journald and a real `logger`.)

use std::path::Path;

use serde_json::json;

use super::batch::FOREIGN_UID;
use super::{import, ImportReport, Options};
use crate::frame::formats::syslog::FOREIGN_PID;
use crate::frame::time::TimeContext;
use crate::frame::Format;
use crate::store::Store;

const SERVER_UID: u32 = 105;
const FORGER_UID: u32 = 65534;
const POSTMASTER: u32 = 21752;
const CHECKPOINTER: u32 = 21760;

/// One journald entry of a message sent through syslog(3): the sender's
/// real pid and uid in `_PID`/`_UID`, the claimed pid in `SYSLOG_PID`.
fn entry(second: u32, pid: u32, uid: u32, claimed: u32, seq: u32, text: &str) -> String {
    let at = 1_795_334_400_000_000u64 + u64::from(second) * 1_000_000;
    let time = jiff::Timestamp::from_microsecond(at as i64).unwrap().strftime("%Y-%m-%d %H:%M:%S%.3f UTC");
    let message = format!("[{seq}-1] {time} [{claimed}] {text}");
    let e = json!({
        "__REALTIME_TIMESTAMP": at.to_string(), "_PID": pid.to_string(), "_UID": uid.to_string(),
        "SYSLOG_PID": claimed.to_string(), "SYSLOG_IDENTIFIER": "postgres", "_HOSTNAME": "db1",
        "_TRANSPORT": "syslog", "MESSAGE": message,
    });
    format!("{e}\n")
}

const START: &str = "LOG:  checkpoint starting: wal";
const COMPLETE: &str = "LOG:  checkpoint complete: wrote 25 buffers (0.6%); 0 WAL file(s) added, 1 removed, 0 recycled; write=0.192 s, sync=0.082 s, total=0.344 s; sync files=26, longest=0.078 s, average=0.004 s; distance=11499 kB, estimate=11499 kB";

/// A checkpoint of the server's, then one forged under the checkpointer's
/// pid (`logger --id=21760`: _PID is logger's own), then one forged under
/// the forger's own pid, written into %p too (`exec logger` from a shell
/// that knows its pid): only the uid tells that one.
fn export() -> String {
    [
        entry(0, POSTMASTER, SERVER_UID, POSTMASTER, 1, "LOG:  starting PostgreSQL 15.18 on x86_64-pc-linux-gnu"),
        entry(10, CHECKPOINTER, SERVER_UID, CHECKPOINTER, 2, START),
        entry(11, CHECKPOINTER, SERVER_UID, CHECKPOINTER, 3, COMPLETE),
        entry(20, 30001, FORGER_UID, CHECKPOINTER, 91, START),
        entry(21, 30002, FORGER_UID, CHECKPOINTER, 92, COMPLETE),
        entry(30, 30003, FORGER_UID, 30003, 1, START),
        entry(30, 30003, FORGER_UID, 30003, 2, COMPLETE),
    ]
    .concat()
}

fn read(store: &mut Store, cluster: i64, path: &Path) -> ImportReport {
    let opts = Options { format: Some(Format::JournaldJson), ..Options::default() };
    import(store, cluster, path.to_str().unwrap(), &opts, &TimeContext::new(Some("UTC")).unwrap()).unwrap()
}

fn refusals(db: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT json_extract(data, '$.reason') FROM event WHERE kind = 'rejected' ORDER BY offset")
        .unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap()
}

#[test]
fn entries_of_another_uid_are_refused_and_the_servers_uid_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let mut store = Store::open(&db).unwrap();
    let cluster = store.clusters_mut().find_or_create("c").unwrap();
    let first = dir.path().join("first.json");
    std::fs::write(&first, export()).unwrap();
    let r = read(&mut store, cluster, &first);
    let events: Vec<(&str, u64)> = r.events.iter().map(|(k, n)| (*k, *n)).collect();
    assert_eq!(events, [("checkpoint_complete", 1), ("checkpoint_start", 1), ("server_start", 1)]);
    assert_eq!(r.rejected, 4);
    assert_eq!(refusals(&db), [FOREIGN_PID, FOREIGN_PID, FOREIGN_UID, FOREIGN_UID]);
    assert_eq!(store.clusters().server_uid(cluster).unwrap(), Some(SERVER_UID), "learnt from the first event");

    // The next export starts with a forgery: the uid the store learnt decides.
    let next = dir.path().join("next.json");
    std::fs::write(
        &next,
        [entry(40, 30004, FORGER_UID, 30004, 1, START), entry(50, 21760, SERVER_UID, 21760, 4, START)].concat(),
    )
    .unwrap();
    let r = read(&mut store, cluster, &next);
    assert_eq!((r.event_count(), r.rejected, r.first_rejected), (1, 1, Some((1, FOREIGN_UID))));

    // Forgetting all that was read forgets the uid: it is learnt anew, from
    // the first event of the next read — here the forger's, which is why the
    // README asks for exports filtered by the server's unit or uid.
    let ids: Vec<i64> = store.sources().known(Some("c")).unwrap().iter().map(|s| s.id).collect();
    store.sources_mut().forget(&ids).unwrap();
    assert_eq!(store.clusters().server_uid(cluster).unwrap(), None);
    let r = read(&mut store, cluster, &next);
    assert_eq!((r.event_count(), r.rejected), (1, 1));
    assert_eq!(store.clusters().server_uid(cluster).unwrap(), Some(FORGER_UID));
}
