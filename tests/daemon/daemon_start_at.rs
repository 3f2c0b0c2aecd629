//! `[[cluster]] start_at = "end"` with the real daemon on a real rotation:
//! it skips what the files present at the daemon's first start already
//! hold, and nothing else. A file that appears later — rotated in while the
//! daemon runs, or while it is stopped — is read from its first byte, and a
//! restart goes on where the store says: what was written while the daemon
//! was down is read, what was read is not read again.
//!
//! The oracle is the independent counter (tests/support/truth.rs) over
//! exactly the lines that must be read, not a walwatch import: an import
//! reads whole files, and the point here is which parts are read.

use crate::support;

use std::fs;
use std::path::{Path, PathBuf};

use support::daemon::{append, assert_matches_truth, concat, fixture, lines, walwatch, Workspace};
use support::truth::Layout;

/// 116 lines: 28 checkpoints, 24 too-frequent warnings, 1 parameter change.
const STD: &str = "15-stderr-default-std";

/// The first line index at or after `i` that follows a `checkpoint
/// complete` line: a cut there leaves no checkpoint with its start on one
/// side and its complete on the other, so each part counts on its own.
fn after_complete(l: &[&[u8]], i: usize) -> usize {
    (i.max(1)..l.len()).find(|&k| String::from_utf8_lossy(l[k - 1]).contains("checkpoint complete:")).unwrap()
}

/// `parts` written to files of their own (the counter reads files), in order.
fn scratch(ws: &Workspace, name: &str, parts: &[&[u8]]) -> Vec<PathBuf> {
    let dir = ws.dir(name);
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let f = dir.join(format!("{i}.log"));
            fs::write(&f, p).unwrap();
            f
        })
        .collect()
}

fn len(bytes: &[u8]) -> u64 {
    bytes.len() as u64
}

/// logrotate's numbered scheme: `.N` -> `.N+1` from the oldest, the live
/// file -> `.1`; the writer then starts a new live file.
fn rotate(dir: &Path, keep: usize) {
    let log = dir.join("postgresql.log");
    for n in (1..keep).rev() {
        let from = dir.join(format!("postgresql.log.{n}"));
        if from.exists() {
            fs::rename(&from, dir.join(format!("postgresql.log.{}", n + 1))).unwrap();
        }
    }
    fs::rename(&log, dir.join("postgresql.log.1")).unwrap();
}

#[test]
fn start_at_end_skips_only_what_the_files_present_at_the_first_start_hold() {
    let ws = Workspace::new();
    let dir = ws.dir("log");
    let glob = format!("{}/postgresql.log*", dir.display());
    ws.write_config_of(&[("c", &glob, "start_at = \"end\"\n")], "");
    let data = fixture(STD);
    let l = lines(&data);
    let cut: Vec<usize> = [16, 24, 34, 50, 70, 94].iter().map(|&i| after_complete(&l, i)).collect();
    let part = |a: usize, b: usize| concat(&l[a..b]);
    // A rotated file present at the first start, never read: skipped.
    let old = part(0, cut[0]);
    // The live file: imported up to here before the daemon ever ran, then
    // written on. walwatch has seen it: the daemon goes on from the import.
    let (imported, unread) = (part(cut[0], cut[1]), part(cut[1], cut[2]));
    // Appended to the live file while the daemon runs; then a new live file.
    let (appended, rotated_in) = (part(cut[2], cut[3]), part(cut[3], cut[4]));
    // While the daemon is stopped: more lines in that file, then another new one.
    let (while_down, new_while_down) = (part(cut[4], cut[5]), part(cut[5], l.len()));
    let parts = [&old, &imported, &unread, &appended, &rotated_in, &while_down, &new_while_down];
    assert!(parts.iter().all(|p| !p.is_empty()));
    let layout = Layout::default_stderr();

    let log = dir.join("postgresql.log");
    fs::write(dir.join("postgresql.log.1"), &old).unwrap();
    fs::write(&log, &imported).unwrap();
    let out = walwatch()
        .args(["import", "--db", ws.db().to_str().unwrap(), "--cluster", "c", log.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "walwatch import: {}", String::from_utf8_lossy(&out.stderr));
    append(&log, &unread);
    let mut d = ws.start();
    d.wait_read_to("c", &dir.join("postgresql.log.1"), len(&old));
    d.wait_read_to("c", &log, len(&imported) + len(&unread));
    d.wait_running();
    let files = scratch(&ws, "truth-0", &[&imported, &unread]);
    assert_matches_truth(&ws.db(), "c", &files, &layout, "the first start");

    append(&log, &appended);
    d.wait_read_to("c", &log, len(&imported) + len(&unread) + len(&appended));
    rotate(&dir, 2);
    fs::write(&log, &rotated_in).unwrap();
    d.wait_read_to("c", &log, len(&rotated_in));
    let files = scratch(&ws, "truth-1", &[&imported, &unread, &appended, &rotated_in]);
    let t = assert_matches_truth(&ws.db(), "c", &files, &layout, "appended, then a file rotated in");
    assert!(t.starts > 0 && t.too_frequent > 0, "{}", t.brief());

    d.terminate();
    append(&log, &while_down);
    rotate(&dir, 3);
    fs::write(&log, &new_while_down).unwrap();
    let mut d = ws.start();
    d.wait_read_to("c", &dir.join("postgresql.log.1"), len(&rotated_in) + len(&while_down));
    d.wait_read_to("c", &log, len(&new_while_down));
    let read: [&[u8]; 6] = [&imported, &unread, &appended, &rotated_in, &while_down, &new_while_down];
    let t = assert_matches_truth(&ws.db(), "c", &scratch(&ws, "truth-2", &read), &layout, "after a restart");
    // The fixture's 28 checkpoints but those of the skipped file.
    let skipped = support::truth::Truth::read(&scratch(&ws, "skipped", &[&old]), &layout);
    assert_eq!((t.starts, skipped.starts), (25, 3), "{} / skipped {}", t.brief(), skipped.brief());
    assert_eq!(t.parameter_changes, 1, "{}", t.brief());
    d.terminate();
}
