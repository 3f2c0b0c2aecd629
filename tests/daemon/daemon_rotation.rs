//! `walwatch run` following live log files through everything that happens
//! to them: logrotate's rename+create and copytruncate, the logging
//! collector switching files, `log_truncate_on_rotation` reusing a name, a
//! file deleted while being read, files that appear later, unfinished last
//! lines, signals, and a crash loop of `kill -9`.
//!
//! Every test runs the real binary (200 ms poll) on a scratch directory,
//! writes the files the way PostgreSQL and logrotate do, waits for the
//! daemon with a deadline (never a fixed sleep, except where a test must
//! show that something does NOT happen), and then requires the store to be
//! exactly what a fresh `walwatch import` of the same content gives: the
//! same summary, the same checkpoint rows, the same stored events. Nothing
//! lost, nothing stored twice. Two scenarios (the collector switching files,
//! the kill -9 loop) also compare the store with the independent counter of
//! tests/support/truth.rs over the raw files, so that a bug shared by the
//! daemon and import cannot pass.

use crate::support;

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::truth::Layout;

use support::daemon::{
    append, assert_matches_truth, assert_same, concat, entry_boundary, fixture, lines, replace, status, status_files,
    Daemon, Rng, Snapshot, Workspace,
};

/// 116 lines: 28 checkpoints, 24 too-frequent warnings, 1 parameter change.
const STD: &str = "15-stderr-default-std";
/// 1.1 MB: every statement logged, 19 checkpoints among them.
const NOISE: &str = "15-stderr-default-noise";

fn glob(dir: &Path, pattern: &str) -> String {
    format!("{}/{pattern}", dir.display())
}

fn len(bytes: &[u8]) -> u64 {
    bytes.len() as u64
}

/// Truncates `path` in place (same inode, as PostgreSQL's O_TRUNC open and
/// logrotate's copytruncate do) and writes `content` into it.
fn truncate_and_write(path: &Path, content: &[u8]) {
    let mut f = OpenOptions::new().write(true).truncate(true).open(path).unwrap();
    f.write_all(content).unwrap();
}

fn ino(path: &Path) -> u64 {
    fs::metadata(path).unwrap().ino()
}

/// Gives `paths` the same mtime (the latest of theirs). Linux stamps writes
/// with a coarse clock (one tick is 1–10 ms; finer only if someone looked at
/// the file in between), so a writer's last line in the old file and its
/// first line in the new one usually carry the same mtime. Making it certain
/// keeps the test deterministic.
fn same_mtime(paths: &[&Path]) {
    let latest = paths.iter().map(|p| fs::metadata(p).unwrap().modified().unwrap()).max().unwrap();
    for p in paths {
        OpenOptions::new().write(true).open(p).unwrap().set_modified(latest).unwrap();
    }
}

/// Rename+create (logrotate's default): the writer keeps writing to the
/// renamed file until it reopens, then goes on in a new file under the old
/// name. Both must be read to their end, in that order.
#[test]
fn rename_and_create_loses_and_doubles_nothing() {
    rename_and_create("postgresql.log*");
}

/// The same with a glob that names only the live file: the renamed one is
/// no longer matched, but it is still open and must be finished first.
#[test]
fn rename_and_create_with_a_glob_of_the_live_name_only() {
    rename_and_create("postgresql.log");
}

fn rename_and_create(pattern: &str) {
    let ws = Workspace::new();
    let dir = ws.dir("log");
    let (log, rotated) = (dir.join("postgresql.log"), dir.join("postgresql.log.1"));
    ws.write_config(&[("c", &glob(&dir, pattern))]);
    let data = fixture(STD);
    let l = lines(&data);
    let half = entry_boundary(&l, l.len() / 2);
    let reopen = entry_boundary(&l, half + 6);
    let (first, late, rest) = (concat(&l[..half]), concat(&l[half..reopen]), concat(&l[reopen..]));

    fs::write(&log, &first).unwrap();
    let mut d = ws.start();
    d.wait_read_to("c", &log, len(&first));
    d.wait_running();

    // logrotate and the writer act between two polls (SIGSTOP makes that
    // certain), within one clock tick, as they usually do.
    d.signal("STOP");
    fs::rename(&log, &rotated).unwrap();
    // The writer still holds the old file: its last lines land there…
    append(&rotated, &late);
    // …and only then does it reopen the name and start a new file.
    append(&log, &rest);
    same_mtime(&[&rotated, &log]);
    d.signal("CONT");

    let want = ws.reference("c", &[&concat(&[&first, &late]), &rest]);
    d.finish("c", &want);
}

/// copytruncate: logrotate copies the file and truncates the original in
/// place; the writer goes on at offset 0 of the same inode. Lines written
/// after the daemon's last read but before the copy exist only in the copy.
#[test]
fn copytruncate_loses_and_doubles_nothing() {
    let ws = Workspace::new();
    let dir = ws.dir("log");
    let (log, rotated) = (dir.join("postgresql.log"), dir.join("postgresql.log.1"));
    ws.write_config(&[("c", &glob(&dir, "postgresql.log*"))]);
    let data = fixture(STD);
    let l = lines(&data);
    let half = entry_boundary(&l, l.len() / 3);
    let copy = entry_boundary(&l, half + 8);
    let (first, unread, rest) = (concat(&l[..half]), concat(&l[half..copy]), concat(&l[copy..]));
    // An equal size is another bug with its own test (truncate_on_rotation_to_the_same_size…).
    assert_ne!(first.len() + unread.len(), rest.len());

    fs::write(&log, &first).unwrap();
    let mut d = ws.start();
    d.wait_read_to("c", &log, len(&first));
    let inode = ino(&log);

    // Everything from here to SIGCONT happens between two polls (stopping
    // the daemon makes that certain instead of likely), within one clock tick.
    d.signal("STOP");
    append(&log, &unread);
    fs::copy(&log, &rotated).unwrap();
    truncate_and_write(&log, &[]);
    append(&log, &rest);
    assert_eq!(ino(&log), inode, "copytruncate keeps the inode");
    same_mtime(&[&rotated, &log]);
    d.signal("CONT");

    let want = ws.reference("c", &[&concat(&[&first, &unread]), &rest]);
    d.finish("c", &want);
}

/// `logging_collector` with `log_filename = 'postgresql-%Y-%m-%d_%H%M%S.log'`:
/// a new file at each rotation; the old one gets its last lines just before
/// the new one starts.
#[test]
fn logging_collector_switching_files_loses_and_doubles_nothing() {
    let ws = Workspace::new();
    let dir = ws.dir("log");
    ws.write_config(&[("c", &glob(&dir, "postgresql-*.log"))]);
    let data = fixture(STD);
    let l = lines(&data);
    let n = l.len();
    let cuts = [0, entry_boundary(&l, n / 4), entry_boundary(&l, n / 2), entry_boundary(&l, 3 * n / 4), n];
    let parts: Vec<Vec<u8>> = cuts.windows(2).map(|w| concat(&l[w[0]..w[1]])).collect();
    // Named after the first line's time, as the collector names them.
    let name = |part: &[u8]| {
        let t = String::from_utf8_lossy(&part[..19]).into_owned(); // 2026-11-22 08:04:20
        format!("postgresql-{}_{}{}{}.log", &t[..10], &t[11..13], &t[14..16], &t[17..19])
    };
    let files: Vec<_> = parts.iter().map(|p| dir.join(name(p))).collect();
    assert!(files.windows(2).all(|w| w[0] < w[1]), "{files:?}");

    let mut daemon: Option<Daemon> = None;
    for (file, part) in files.iter().zip(&parts) {
        let pl = lines(part);
        let mid = entry_boundary(&pl, pl.len() / 2);
        let (head, tail) = (concat(&pl[..mid]), concat(&pl[mid..]));
        append(file, &head);
        let d = daemon.get_or_insert_with(|| ws.start());
        d.wait_read_to("c", file, len(&head));
        // Not waited for: the next file starts right after these lines.
        append(file, &tail);
    }
    let mut d = daemon.unwrap();
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    let want = ws.reference("c", &refs);
    d.finish("c", &want);
    assert_eq!(status_files(&ws.db(), "c").unwrap().len(), 4);
    let t = assert_matches_truth(&ws.db(), "c", &files, &Layout::default_stderr(), "collector switching files");
    // The whole fixture, cut in four: its truth.json counts.
    assert_eq!((t.starts, t.completes, t.too_frequent, t.parameter_changes), (28, 28, 24, 1), "{}", t.brief());
}

/// `log_truncate_on_rotation` with `postgresql-%a.log`: a week later the
/// same name is opened with O_TRUNC (same inode) and filled with new lines.
/// The store must end with the events of both weeks.
#[test]
fn truncate_on_rotation_reusing_a_name_keeps_both_contents() {
    let ws = Workspace::new();
    let dir = ws.dir("log");
    let file = dir.join("postgresql-Mon.log");
    ws.write_config(&[("c", &glob(&dir, "postgresql-*.log"))]);
    let week1 = fixture(STD);
    let week2 = fixture("16-stderr-default-std");
    let l2 = lines(&week2);
    let mid = entry_boundary(&l2, l2.len() / 2);
    let (head, tail) = (concat(&l2[..mid]), concat(&l2[mid..]));

    fs::write(&file, &week1).unwrap();
    let mut d = ws.start();
    d.wait_read_to("c", &file, len(&week1));
    let inode = ino(&file);
    truncate_and_write(&file, &head);
    assert_eq!(ino(&file), inode);
    d.wait_read_to("c", &file, len(&head));
    append(&file, &tail);

    let want = ws.reference("c", &[&week1, &week2]);
    d.finish("c", &want);
}

/// The same, when the new content reaches exactly the size the daemon read
/// last before the daemon looks again (here: the same log one week later,
/// every date shifted by 7 days — the same length). Nothing else tells the
/// daemon the file changed: same inode, same size.
#[test]
fn truncate_on_rotation_to_the_same_size_keeps_both_contents() {
    let ws = Workspace::new();
    let dir = ws.dir("log");
    let file = dir.join("postgresql-Mon.log");
    ws.write_config(&[("c", &glob(&dir, "postgresql-*.log"))]);
    let week1 = fixture(STD);
    let week2 = replace(&week1, "2026-11-22", "2026-11-29");
    assert_eq!(week1.len(), week2.len());
    assert_ne!(week1, week2);

    fs::write(&file, &week1).unwrap();
    let mut d = ws.start();
    d.wait_read_to("c", &file, len(&week1));
    // The rewrite falls between two polls (certain with SIGSTOP; in real life
    // whenever the rewritten file is idle at the size read last).
    d.signal("STOP");
    truncate_and_write(&file, &week2);
    d.signal("CONT");

    let want = ws.reference("c", &[&week1, &week2]);
    d.finish("c", &want);
}

/// A file deleted while the daemon has read only part of it: the daemon
/// holds it open, so the rest is still read.
#[test]
fn a_file_deleted_while_being_read_is_read_to_its_end() {
    let ws = Workspace::new();
    let dir = ws.dir("log");
    let log = dir.join("postgresql.log");
    ws.write_config(&[("c", &glob(&dir, "postgresql.log*"))]);
    let data = fixture(STD);
    let l = lines(&data);
    let half = entry_boundary(&l, l.len() / 2);
    let (first, rest) = (concat(&l[..half]), concat(&l[half..]));

    fs::write(&log, &first).unwrap();
    let mut d = ws.start();
    d.wait_read_to("c", &log, len(&first));
    // Appended and deleted between two polls (SIGSTOP makes that certain):
    // the daemon never sees the second half under any name.
    d.signal("STOP");
    append(&log, &rest);
    fs::remove_file(&log).unwrap();
    d.signal("CONT");

    let want = ws.reference("c", &[&data]);
    d.wait_equal("c", &want);
    let files = status_files(&ws.db(), "c").unwrap();
    assert!(files.len() == 1 && files[0]["size"].is_null(), "status must show the file gone: {files:?}");
    d.finish("c", &want);
}

/// Started before there is anything to read: a glob that matches nothing in
/// an empty directory, and one whose directory does not even exist yet.
#[test]
fn files_that_appear_later_are_followed() {
    let ws = Workspace::new();
    let empty = ws.dir("empty");
    let missing = ws.path().join("missing/log");
    ws.write_config(&[("a", &glob(&empty, "postgresql.log*")), ("b", &glob(&missing, "postgresql-*.log"))]);
    let mut d = ws.start();
    d.wait_running();
    for c in ["a", "b"] {
        assert_eq!(status_files(&ws.db(), c).unwrap(), Vec::<serde_json::Value>::new());
    }

    let std = fixture(STD);
    let l = lines(&std);
    let half = entry_boundary(&l, l.len() / 2);
    let log = empty.join("postgresql.log");
    append(&log, &concat(&l[..half]));
    d.wait_read_to("a", &log, len(&concat(&l[..half])));
    append(&log, &concat(&l[half..]));

    let de = fixture("15-stderr-default-i18n-de");
    fs::create_dir_all(&missing).unwrap();
    fs::write(missing.join("postgresql-2026-11-22_090904.log"), &de).unwrap();

    let want_a = ws.reference("a", &[&std]);
    let want_b = ws.reference_as("b", &[&de], "%m [%p] %q%u@%d ", "de_DE.UTF-8");
    d.wait_equal("a", &want_a);
    d.wait_equal("b", &want_b);
    d.terminate();
    assert_same(&Snapshot::read(&ws.db(), "a").unwrap(), &want_a, "a");
    assert_same(&Snapshot::read(&ws.db(), "b").unwrap(), &want_b, "b");
}

/// A last line without its newline is still being written: it is not
/// stored (even after several polls), and stored once when finished.
#[test]
fn an_unfinished_last_line_waits_and_is_stored_once() {
    let ws = Workspace::new();
    let dir = ws.dir("log");
    let log = dir.join("postgresql.log");
    ws.write_config(&[("c", &glob(&dir, "postgresql.log*"))]);
    let data = fixture(STD);
    let l = lines(&data);
    // A checkpoint complete line in the middle, cut inside its statistics.
    let k = (l.len() / 2..l.len()).find(|&i| String::from_utf8_lossy(l[i]).contains("checkpoint complete:")).unwrap();
    let cut = l[k].len() / 2;
    let before = concat(&l[..k]);

    fs::write(&log, concat(&[&before, &l[k][..cut]])).unwrap();
    let mut d = ws.start();
    d.wait_read_to("c", &log, len(&before));
    // Five polls: time enough to (wrongly) take the unfinished line.
    std::thread::sleep(Duration::from_millis(1100));
    let files = status_files(&ws.db(), "c").unwrap();
    assert_eq!(files[0]["lag_bytes"], cut as u64, "the unfinished line is the lag: {files:?}");
    assert_same(&Snapshot::read(&ws.db(), "c").unwrap(), &ws.reference("c", &[&before]), "before the newline");

    append(&log, &concat(&[&l[k][cut..], &concat(&l[k + 1..])]));
    let want = ws.reference("c", &[&data]);
    d.finish("c", &want);
}

/// SIGTERM while PostgreSQL is writing: exit 0 within 5 s, status says
/// not running, and a restart continues exactly where the commits stopped.
#[test]
fn sigterm_while_lines_are_appended_exits_0_quickly_and_loses_nothing() {
    let ws = Workspace::new();
    let dir = ws.dir("log");
    let log = dir.join("postgresql.log");
    ws.write_config(&[("c", &glob(&dir, "postgresql.log*"))]);
    let data = Arc::new(fixture(NOISE));
    let go = Arc::new(AtomicBool::new(false));
    let writer = {
        let (data, go, log) = (data.clone(), go.clone(), log.clone());
        std::thread::spawn(move || {
            // About 1 KB every 3 ms. The first half is written while the
            // daemon starts; the second half only once the test is about to
            // send SIGTERM, so that appends surely go on during the shutdown.
            let (mut rng, mut at) = (Rng::new(8), 0usize);
            while at < data.len() {
                if at >= data.len() / 2 && !go.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                }
                let n = (rng.range(1, 2048) as usize).min(data.len() - at);
                append(&log, &data[at..at + n]);
                at += n;
                std::thread::sleep(Duration::from_millis(3));
            }
        })
    };
    let mut d = ws.start();
    d.wait_running();
    let db = ws.db();
    d.wait_until("some events stored", || {
        let started = Snapshot::read(&db, "c")?.summary["checkpoints"]["started"].as_u64().unwrap_or(0);
        if started > 0 {
            Ok(())
        } else {
            Err("none yet".into())
        }
    });
    go.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(50)); // a few appends before the signal
    let took = d.terminate();
    eprintln!("exited {took:?} after SIGTERM");
    writer.join().unwrap();

    let mut d = ws.start();
    let want = ws.reference("c", &[&data]);
    d.finish("c", &want);
}

/// Signals that arrive while the daemon is still starting (a logrotate
/// postrotate `kill -HUP` racing a restart, a quick stop) are not fatal:
/// SIGHUP leaves it running, SIGTERM makes it exit 0.
#[test]
fn signals_during_start_up_are_handled() {
    let ws = Workspace::new();
    let dir = ws.dir("log");
    ws.write_config(&[("c", &glob(&dir, "postgresql.log*"))]);
    fs::write(dir.join("postgresql.log"), fixture(STD)).unwrap();
    let mut d = ws.start();
    wait_for_handlers(d.pid());
    d.signal("HUP");
    d.wait_running();
    let want = ws.reference("c", &[&fixture(STD)]);
    d.finish("c", &want);

    let mut d = ws.start();
    wait_for_handlers(d.pid());
    d.signal("TERM");
    let since = Instant::now();
    let st = loop {
        match d.exited() {
            Some(st) => break st,
            None if since.elapsed() < Duration::from_secs(5) => std::thread::sleep(Duration::from_millis(10)),
            None => panic!("no exit 5 s after SIGTERM\n{}", d.log()),
        }
    };
    assert!(st.success(), "SIGTERM during start-up: {st}\n{}", d.log());
}

/// Waits until `pid` catches SIGHUP and SIGTERM (its handlers are
/// installed): a signal sent before the program even runs kills any process.
fn wait_for_handlers(pid: u32) {
    let since = Instant::now();
    while since.elapsed() < Duration::from_secs(10) {
        let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let caught = status.lines().find_map(|l| l.strip_prefix("SigCgt:")).map(str::trim).unwrap_or("0");
        let mask = u64::from_str_radix(caught, 16).unwrap_or(0);
        // SIGHUP is signal 1 (bit 0), SIGTERM signal 15 (bit 14).
        if mask & 1 != 0 && mask & (1 << 14) != 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("pid {pid} never installed its signal handlers");
}

/// SIGHUP with a second [[cluster]] in the config: followed at once, the
/// first cluster's follower carries on (nothing re-read or doubled).
#[test]
fn sighup_adding_a_cluster_follows_it_without_restart() {
    let ws = Workspace::new();
    let (dir_a, dir_b) = (ws.dir("a"), ws.dir("b"));
    let (log_a, log_b) = (dir_a.join("postgresql.log"), dir_b.join("postgresql.log"));
    ws.write_config(&[("a", &glob(&dir_a, "postgresql.log*"))]);
    let std = fixture(STD);
    let l = lines(&std);
    let half = entry_boundary(&l, l.len() / 2);
    fs::write(&log_a, concat(&l[..half])).unwrap();
    let mut d = ws.start();
    d.wait_read_to("a", &log_a, len(&concat(&l[..half])));
    let pid = d.pid();

    let de = fixture("15-stderr-default-i18n-de");
    fs::write(&log_b, &de).unwrap();
    ws.write_config(&[("a", &glob(&dir_a, "postgresql.log*")), ("b", &glob(&dir_b, "postgresql.log*"))]);
    d.signal("HUP");
    let want_b = ws.reference_as("b", &[&de], "%m [%p] %q%u@%d ", "de_DE.UTF-8");
    d.wait_equal("b", &want_b);
    append(&log_a, &concat(&l[half..]));
    let want_a = ws.reference("a", &[&std]);
    d.wait_equal("a", &want_a);
    assert_eq!(d.pid(), pid);
    assert!(d.exited().is_none(), "SIGHUP must not stop the daemon");
    assert_eq!(status(&ws.db()).unwrap()["daemon"]["running"], true);

    d.terminate();
    assert_same(&Snapshot::read(&ws.db(), "a").unwrap(), &want_a, "a");
    assert_same(&Snapshot::read(&ws.db(), "b").unwrap(), &want_b, "b");
}

/// Crash loop: the daemon is killed with SIGKILL at random moments (while
/// reading, while committing, while starting) as a writer appends the 1.1 MB
/// noise log in random pieces that also split lines. Each commit holds the
/// events and the offset they were read to, so after the last restart the
/// store is exactly a fresh import of the final file.
#[test]
fn kill_9_loop_loses_and_doubles_nothing() {
    const KILLS: u32 = 24;
    let ws = Workspace::new();
    let dir = ws.dir("log");
    let log = dir.join("postgresql.log");
    ws.write_config(&[("c", &glob(&dir, "postgresql.log*"))]);
    let data = Arc::new(fixture(NOISE));
    let done = Arc::new(AtomicBool::new(false));
    let kills_so_far = Arc::new(AtomicU32::new(0));
    let writer = {
        let (data, done, log, kills_so_far) = (data.clone(), done.clone(), log.clone(), kills_so_far.clone());
        std::thread::spawn(move || {
            // Pieces of 1 B to 4 KiB every 0–25 ms, but paced by the kills:
            // by the n-th kill at most n/KILLS of the log is written, so
            // every daemon run, however slow the machine, sees the log grow.
            let (mut rng, mut at) = (Rng::new(0x5eed), 0usize);
            while at < data.len() {
                let quota = data.len() * (kills_so_far.load(Ordering::SeqCst) as usize + 1) / KILLS as usize;
                if at >= quota {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                }
                let n = (rng.range(1, 4096) as usize).min(data.len() - at);
                append(&log, &data[at..at + n]);
                at += n;
                std::thread::sleep(Duration::from_millis(rng.range(0, 25)));
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    let started = Instant::now();
    let mut rng = Rng::new(0xdead_beef);
    let (mut kills, mut at_work) = (0, 0);
    // How far the store has read the log (committed offsets).
    let db = ws.db();
    let committed = || -> u64 {
        status_files(&db, "c").map(|files| files.iter().filter_map(|f| f["offset"].as_u64()).sum()).unwrap_or(0)
    };
    while kills < KILLS || !done.load(Ordering::SeqCst) {
        let before = committed();
        let mut d = ws.start();
        if kills % 2 == 1 && before < len(&data) {
            // Every other run is killed at work: once it has committed
            // something (it will: nothing else kills it, and there is more
            // to read), somewhere in its next reads and commits. Without
            // these, a loaded machine could kill every run before its first
            // commit and the test would only ever exercise start-up.
            let since = Instant::now();
            while committed() == before && since.elapsed() < Duration::from_secs(20) {
                std::thread::sleep(Duration::from_millis(5));
            }
            std::thread::sleep(Duration::from_millis(rng.range(0, 400)));
        } else {
            // The others anywhere: in start-up (~0.5 s), the first read of the
            // backlog, or later.
            std::thread::sleep(Duration::from_millis(rng.range(0, 1200)));
        }
        assert!(d.exited().is_none(), "the daemon died by itself\n{}", d.log());
        at_work += u32::from(committed() > before);
        d.kill9();
        kills += 1;
        kills_so_far.store(kills, Ordering::SeqCst);
    }
    writer.join().unwrap();
    // The kills must have hit working daemons, not only starting ones.
    eprintln!("{kills} kills in {:?}, {at_work} of them after the daemon had committed", started.elapsed());
    assert!(at_work >= KILLS / 2 - 2, "only {at_work} of {kills} kills hit a daemon at work");

    let mut d = ws.start();
    let want = ws.reference("c", &[&data]);
    // This writer pauses (waiting for the next kill) in the middle of an
    // entry for longer than entry_settle, which PostgreSQL never does (it
    // writes an entry with its HINT at once); so a warning's HINT flag may
    // legitimately differ here. Holding entries back is tested by
    // a_hint_written_after_its_warning_line_is_stored_with_it. Here every
    // event must be there exactly once, at its place, with its checkpoint row.
    d.wait_equal_ignoring_event_data("c", &want);
    d.terminate();
    assert_same(
        &Snapshot::read(&ws.db(), "c").unwrap().without_event_data(),
        &want.without_event_data(),
        "after the crash loop",
    );
    let t = assert_matches_truth(&ws.db(), "c", &[log], &Layout::default_stderr(), "after the crash loop");
    // The whole noise fixture: its truth.json counts.
    assert_eq!((t.starts, t.completes, t.too_frequent, t.parameter_changes), (19, 19, 18, 1), "{}", t.brief());
}

/// A too-frequent warning's HINT line written after the warning itself (a
/// reader sees PostgreSQL's lines as they are written; with syslog each line
/// is a message of its own): the event must get its HINT like in an import.
#[test]
fn a_hint_written_after_its_warning_line_is_stored_with_it() {
    let ws = Workspace::new();
    let dir = ws.dir("log");
    let log = dir.join("postgresql.log");
    // A wide settle window: the warning is held back until it is quiet for
    // 5 s, and its HINT arrives well within that.
    ws.write_config_with(&[("c", &glob(&dir, "postgresql.log*"))], "entry_settle = \"5s\"\n");
    let data = fixture(STD);
    let l = lines(&data);
    let k = (l.len() / 2..l.len()).find(|&i| String::from_utf8_lossy(l[i]).contains("too frequently")).unwrap();
    assert!(String::from_utf8_lossy(l[k + 1]).contains("HINT:  "));
    let first = concat(&l[..=k]);

    fs::write(&log, &first).unwrap();
    let mut d = ws.start();
    // Read up to the held-back warning, which waits for its HINT.
    d.wait_read_to("c", &log, len(&concat(&l[..k])));
    append(&log, &concat(&l[k + 1..]));

    let want = ws.reference("c", &[&data]);
    d.finish("c", &want);
}

/// A logged statement whose continuation lines (TAB) quote checkpoint
/// lines, written after the statement's first line: the quoted lines must
/// still be recognised as forged (rejected), like in an import.
#[test]
fn continuation_lines_written_after_their_first_line_are_still_checked() {
    let ws = Workspace::new();
    let dir = ws.dir("log");
    let log = dir.join("postgresql.log");
    ws.write_config_with(&[("c", &glob(&dir, "postgresql.log*"))], "entry_settle = \"5s\"\n");
    let data = fixture("15-stderr-default-forged");
    let l = lines(&data);
    let k = l.iter().position(|x| String::from_utf8_lossy(x).contains("statement: SELECT 'forged:")).unwrap();
    assert!(l[k + 1].starts_with(b"\t"));
    let first = concat(&l[..=k]);

    fs::write(&log, &first).unwrap();
    let mut d = ws.start();
    // Read up to the held-back statement, which waits for its continuation lines.
    d.wait_read_to("c", &log, len(&concat(&l[..k])));
    append(&log, &concat(&l[k + 1..]));

    let want = ws.reference("c", &[&data]);
    d.finish("c", &want);
}
