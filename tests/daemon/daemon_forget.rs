//! `walwatch forget --cluster C` while the daemon follows C: the daemon reads
//! the forgotten files again from their start — the rotated ones, which no
//! longer change, as well as the live one — and ends with the whole history,
//! exactly what a fresh import of the same files gives.
//!
//! The daemon remembers which files it has read to their end (by size and
//! ctime) and does not open them again until they change; `forget` runs in
//! another process, and only the store tells the daemon what it did.

use crate::support;

use std::fs;
use std::path::Path;

use support::daemon::{append, concat, entry_boundary, fixture, lines, run, status_files, Snapshot, Workspace};

/// 116 lines: 28 checkpoints, 24 too-frequent warnings, 1 parameter change.
const STD: &str = "15-stderr-default-std";

fn checkpoints(snapshot: &Snapshot) -> usize {
    snapshot.checkpoints.len()
}

#[test]
fn forget_while_the_daemon_runs_reads_every_file_again() {
    let ws = Workspace::new();
    let dir = ws.dir("log");
    let (live, rotated) = (dir.join("postgresql.log"), dir.join("postgresql.log.1"));
    ws.write_config(&[("c", &format!("{}/postgresql.log*", dir.display()))]);
    let data = fixture(STD);
    let l = lines(&data);
    // Most of the history in the rotated file, the rest in the live one,
    // whose last part is written after the forget.
    let (a, b) = (entry_boundary(&l, 3 * l.len() / 4), entry_boundary(&l, 7 * l.len() / 8));
    let (old, now, later) = (concat(&l[..a]), concat(&l[a..b]), concat(&l[b..]));
    fs::write(&rotated, &old).unwrap();
    fs::write(&live, &now).unwrap();

    let mut d = ws.start();
    let before = ws.reference("c", &[&old, &now]);
    d.wait_equal("c", &before);
    d.wait_running();
    println!("before the forget: {} checkpoints", checkpoints(&before));

    let out = run(&["forget", "--db", s(&ws.db()), "--cluster", "c"]).unwrap();
    println!("{}", out.trim());
    assert!(out.contains("2 source(s)"), "{out}");
    append(&live, &later);

    let whole = ws.reference("c", &[&old, &concat(&[&now, &later])]);
    assert_eq!(checkpoints(&whole), 28, "the fixture's checkpoints");
    d.finish("c", &whole);
    let files = status_files(&ws.db(), "c").unwrap();
    let read: Vec<(String, u64)> =
        files.iter().map(|f| (f["path"].as_str().unwrap().to_string(), f["offset"].as_u64().unwrap())).collect();
    let size = |p: &Path| fs::metadata(p).unwrap().len();
    let mut want = vec![(s(&live).to_string(), size(&live)), (s(&rotated).to_string(), size(&rotated))];
    want.sort();
    let mut read = read;
    read.sort();
    assert_eq!(read, want, "both files read to their end again");
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}
