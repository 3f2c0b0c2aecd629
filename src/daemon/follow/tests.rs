//! The follower on real log files in a temporary directory, each
//! behaviour on its own: rotation order, links, start_at, zones, the held-back
//! last entry, the open-file cap, misfits, refusals, stops and forgets.

use super::*;

#[test]
fn rotated_copies_sort_before_the_live_file() {
    assert_eq!(rotation_number(Path::new("/l/postgresql-15-main.log")), 0);
    assert_eq!(rotation_number(Path::new("/l/postgresql-15-main.log.1")), 1);
    assert_eq!(rotation_number(Path::new("/l/postgresql-15-main.log.12.gz")), 12);
    assert_eq!(rotation_number(Path::new("/l/postgresql-2026-11-22_080420.log")), 0);
}

#[test]
fn links_are_followed_only_into_the_globs_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let (logs, etc) = (tmp.path().join("log"), tmp.path().join("etc"));
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::create_dir_all(&etc).unwrap();
    std::fs::write(logs.join("pg.log"), "x\n").unwrap();
    std::fs::write(etc.join("shadow"), "x\n").unwrap();
    std::os::unix::fs::symlink(logs.join("pg.log"), logs.join("current.log")).unwrap();
    std::os::unix::fs::symlink(etc.join("shadow"), logs.join("evil.log")).unwrap();
    std::os::unix::fs::symlink("../etc/shadow", logs.join("relative.log")).unwrap();
    let glob = format!("{}/*.log", logs.display());
    let roots = vec![leading_dir(&glob).canonicalize().unwrap()];
    assert!(inside(&logs.join("pg.log"), &roots));
    assert!(inside(&logs.join("current.log"), &roots));
    assert!(!inside(&logs.join("evil.log"), &roots));
    assert!(!inside(&logs.join("relative.log"), &roots));
    assert!(!inside(&logs.join("missing.log"), &roots), "what cannot be resolved is not inside");
}

/// The lines of the real PostgreSQL 15 log (116 lines, 28 checkpoints)
/// cut after `checkpoint complete` lines near `near`: no checkpoint has
/// its start in one part and its complete in another.
fn std_parts(near: &[usize]) -> Vec<Vec<u8>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/15-stderr-default-std/log/postgresql-2026-11-22_080420.log");
    let data = std::fs::read(path).unwrap();
    let lines: Vec<&[u8]> = data.split_inclusive(|b| *b == b'\n').collect();
    let after = |i: usize| (i..lines.len()).find(|&k| lines[k - 1].windows(20).any(|w| w == b"checkpoint complete:"));
    let mut cuts: Vec<usize> = near.iter().map(|&i| after(i).unwrap()).collect();
    cuts.insert(0, 0);
    cuts.push(lines.len());
    cuts.windows(2).map(|w| lines[w[0]..w[1]].concat()).collect()
}

/// Checkpoint starts in `parts`, by the raw text.
fn starts_in(parts: &[&Vec<u8>]) -> i64 {
    parts.iter().map(|p| p.windows(25).filter(|w| *w == b"LOG:  checkpoint starting").count() as i64).sum()
}

fn stored_starts(store: &Store) -> i64 {
    let filter = crate::store::Filter { cluster: Some("c".into()), ..Default::default() };
    store.checkpoints().counts(&filter, "checkpoint").unwrap().started
}

fn append(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap().write_all(bytes).unwrap();
}

/// `start_at = "end"` skips what the files present at the cluster's
/// first follow hold, nothing else: lines appended to them, a file
/// rotated in, and, after a restart (a new follower on the same store),
/// the lines and the file written while no follower looked.
#[test]
fn start_at_end_applies_to_the_files_present_when_the_cluster_is_first_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("log");
    std::fs::create_dir(&dir).unwrap();
    let (log, rotated) = (dir.join("postgresql.log"), dir.join("postgresql.log.1"));
    let mut store = Store::open(&tmp.path().join("w.db")).unwrap();
    let config = ClusterConfig {
        name: "c".into(),
        logs: vec![format!("{}/postgresql.log*", dir.display())],
        start_at: StartAt::End,
        ..ClusterConfig::default()
    };
    let p = std_parts(&[20, 34, 50, 70, 94]);
    let (old, live, appended, rotated_in, while_down, new_while_down) = (&p[0], &p[1], &p[2], &p[3], &p[4], &p[5]);
    std::fs::write(&rotated, old).unwrap();
    std::fs::write(&log, live).unwrap();
    let mut f = Follower::new(&mut store, &config, None).unwrap();
    f.poll(&mut store).unwrap();
    assert_eq!(stored_starts(&store), 0);
    // Recorded as read to their end: a later read goes on from there.
    let sources = &store.daemon().cluster_status(Some("c")).unwrap()[0].sources;
    let read: Vec<(String, u64)> = sources.iter().map(|s| (s.path.clone(), s.read_to)).collect();
    let want = [(log.display().to_string(), live.len() as u64), (rotated.display().to_string(), old.len() as u64)];
    assert_eq!(read, want);

    append(&log, appended);
    f.poll(&mut store).unwrap();
    assert_eq!(stored_starts(&store), starts_in(&[appended]));
    std::fs::rename(&log, &rotated).unwrap();
    std::fs::write(&log, rotated_in).unwrap();
    f.poll(&mut store).unwrap();
    assert_eq!(stored_starts(&store), starts_in(&[appended, rotated_in]));

    drop(f);
    append(&log, while_down);
    std::fs::rename(&rotated, dir.join("postgresql.log.2")).unwrap();
    std::fs::rename(&log, &rotated).unwrap();
    std::fs::write(&log, new_while_down).unwrap();
    let mut f = Follower::new(&mut store, &config, None).unwrap();
    f.poll(&mut store).unwrap();
    let read = [appended, rotated_in, while_down, new_while_down];
    assert_eq!(stored_starts(&store), starts_in(&read));
    assert_eq!((starts_in(&read), starts_in(&[old, live])), (21, 7));
}

/// A follower stopped after the postmaster's reload of log_timezone
/// (tests/fixtures/cst/reload-asia-shanghai.log) and a new one on the
/// same store: the lines written while none ran say `CST`, read in
/// Asia/Shanghai as the first follower learned, not as US Central.
#[test]
fn a_zone_the_log_set_holds_after_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("log");
    std::fs::create_dir(&dir).unwrap();
    let (text, cut) = reload_log();
    let log = dir.join("postgresql.log");
    std::fs::write(&log, &text[..cut]).unwrap();
    let mut store = Store::open(&tmp.path().join("w.db")).unwrap();
    let config = ClusterConfig {
        name: "c".into(),
        logs: vec![format!("{}/postgresql.log", dir.display())],
        ..ClusterConfig::default()
    };
    let mut f = Follower::new(&mut store, &config, None).unwrap();
    f.poll(&mut store).unwrap();
    drop(f);
    append(&log, &text[cut..]);
    let mut f = Follower::new(&mut store, &config, None).unwrap();
    f.poll(&mut store).unwrap();
    f.poll(&mut store).unwrap();
    assert_eq!(last_event(&store), Some("2026-11-28T19:34:09.902Z".to_string()));
}

/// A cluster whose postgresql.conf sets log_timezone = 'Asia/Shanghai'
/// (as initdb writes it) and whose log says `CST` without ever
/// reloading: the lines are China's.
#[test]
fn the_conf_files_log_timezone_reads_the_logs_abbreviation() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, dir) = (tmp.path().join("data"), tmp.path().join("data/log"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(data.join("postgresql.conf"), "log_timezone = 'Asia/Shanghai'\n").unwrap();
    let (text, after) = reload_log();
    std::fs::write(dir.join("postgresql.log"), &text[after..]).unwrap();
    let mut store = Store::open(&tmp.path().join("w.db")).unwrap();
    let config = ClusterConfig {
        name: "c".into(),
        logs: vec![format!("{}/postgresql.log", dir.display())],
        data_directory: Some(data.clone()),
        ..ClusterConfig::default()
    };
    let mut f = Follower::new(&mut store, &config, None).unwrap();
    f.poll(&mut store).unwrap();
    f.poll(&mut store).unwrap();
    assert_eq!(last_event(&store), Some("2026-11-28T19:34:09.902Z".to_string()));
}

/// The real log reloaded into Asia/Shanghai (tests/fixtures/cst), and
/// where its first line after the reload starts (the rest says `CST`).
fn reload_log() -> (Vec<u8>, usize) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cst/reload-asia-shanghai.log");
    let text = std::fs::read(path).unwrap();
    let after = text.windows(28).position(|w| w == b"\n2026-11-29 03:22:51.993 CST").unwrap() + 1;
    (text, after)
}

/// The newest event time stored of cluster "c", UTC. The log's last
/// line is the shutdown's, 03:34:09.902 CST: 19:34:09.902 UTC when read
/// as China's (as US Central it is ahead of the clock and left out).
fn last_event(store: &Store) -> Option<String> {
    let filter = crate::store::Filter { cluster: Some("c".into()), ..Default::default() };
    store.events().last_time(&filter, std::time::Duration::from_secs(300)).unwrap().map(|t| t.to_string())
}

fn stored_too_frequent(store: &Store) -> i64 {
    let filter = crate::store::Filter { cluster: Some("c".into()), ..Default::default() };
    store.events().count(&filter, "too_frequent").unwrap()
}

/// A followed file's last entry waits for the lines of it a later write
/// may bring (a warning's HINT) while the file is younger than the
/// settle time: the round says something is held back, and an unchanged
/// file is not read again. Once the rest comes, it is read with it; a
/// file quiet for the settle time gives its last entry at once.
#[test]
fn the_last_entry_waits_until_the_file_is_quiet_for_the_settle_time() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("log");
    std::fs::create_dir(&dir).unwrap();
    let log = dir.join("postgresql.log");
    let mut store = Store::open(&tmp.path().join("w.db")).unwrap();
    let config = ClusterConfig {
        name: "c".into(),
        logs: vec![format!("{}/postgresql.log*", dir.display())],
        ..ClusterConfig::default()
    };
    let whole = std_parts(&[]).remove(0);
    let lines: Vec<&[u8]> = whole.split_inclusive(|b| *b == b'\n').collect();
    let warning = |l: &[u8]| l.windows(24).any(|w| w == b"occurring too frequently");
    let k = (lines.len() / 2..lines.len()).find(|&i| warning(lines[i])).unwrap();
    let (first, rest) = (lines[..=k].concat(), lines[k + 1..].concat());
    let warnings = |b: &[u8]| b.split(|c| *c == b'\n').filter(|l| warning(l)).count() as i64;
    std::fs::write(&log, &first).unwrap();

    let mut f = Follower::new(&mut store, &config, None).unwrap().with_settle(Duration::from_secs(3600));
    assert!(f.poll(&mut store).unwrap(), "the warning is held back for its HINT");
    assert_eq!(stored_too_frequent(&store), warnings(&first) - 1);
    assert!(f.take_stored() > 0);
    assert!(f.poll(&mut store).unwrap(), "still held: the file is young");
    assert_eq!((stored_too_frequent(&store), f.take_stored()), (warnings(&first) - 1, 0));

    append(&log, &rest);
    f.poll(&mut store).unwrap();
    assert_eq!(stored_too_frequent(&store), 24);
    assert!(f.take_stored() > 0);
    // Written two hours ago: quiet, its last entry is taken, nothing is held.
    let old = std::time::SystemTime::now() - Duration::from_secs(7200);
    std::fs::OpenOptions::new().write(true).open(&log).unwrap().set_modified(old).unwrap();
    assert!(!f.poll(&mut store).unwrap(), "a quiet file holds nothing back");
    assert_eq!(f.take_stored(), 1, "the log's last line, a shutdown");
}

#[test]
fn static_dirs_of_globs() {
    assert_eq!(static_dir("/var/log/postgresql/postgresql-15-main.log*"), Some("/var/log/postgresql".into()));
    assert_eq!(static_dir("/var/lib/pgsql/*/data/log/*.log"), Some("/var/lib/pgsql".into()));
    assert_eq!(static_dir("/srv/log/pg.log"), Some("/srv/log".into()));
    assert_eq!(static_dir("relative/*.log"), None);
    assert_eq!(leading_dir("relative/*.log"), PathBuf::from("relative"));
    assert_eq!(leading_dir("*.log"), PathBuf::from("."));
}

/// Lines 8 and 9 of the real PostgreSQL 15 log: one checkpoint, its start
/// and its complete line, re-dated to day `n` after 2026-01-01 so that
/// every file has content of its own (a copy of another file is the same
/// source to the store).
fn one_checkpoint(n: u32) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/15-stderr-default-std/log/postgresql-2026-11-22_080420.log");
    let text = std::fs::read_to_string(path).unwrap();
    let pair: String = text.lines().skip(7).take(2).map(|l| format!("{l}\n")).collect();
    assert!(pair.contains("checkpoint starting: wal") && pair.contains("checkpoint complete: wrote 100 buffers"));
    let day = jiff::civil::date(2026, 1, 1).checked_add(jiff::Span::new().days(i64::from(n))).unwrap();
    pair.replace("2026-11-22", &day.to_string()).into_bytes()
}

/// Cluster "c", following `dir/*.log`.
fn cluster_of(dir: &Path) -> ClusterConfig {
    ClusterConfig { name: "c".into(), logs: vec![format!("{}/*.log", dir.display())], ..ClusterConfig::default() }
}

/// `n` files `pg-<i>.log` in `dir`, one checkpoint each.
fn write_files(dir: &Path, n: u32) {
    for i in 0..n {
        std::fs::write(dir.join(format!("pg-{i:03}.log")), one_checkpoint(i)).unwrap();
    }
}

/// A follower of `dir/*.log` as cluster "c", on a store in `tmp`.
fn follower_of(tmp: &Path, dir: &Path) -> (Store, ClusterConfig, Follower) {
    let mut store = Store::open(&tmp.join("w.db")).unwrap();
    let config = cluster_of(dir);
    let f = Follower::new(&mut store, &config, None).unwrap();
    (store, config, f)
}

fn problems(store: &Store) -> Vec<(String, String)> {
    store.daemon().cluster_status(Some("c")).unwrap()[0].problems.clone()
}

fn log_dir(tmp: &Path) -> PathBuf {
    let dir = tmp.join("log");
    std::fs::create_dir(&dir).unwrap();
    dir
}

/// More files than MAX_OPEN: the longest-unchanged ones read to their end
/// are closed, exactly down to the cap; one of them that grows is opened
/// again and read on from where the store stopped, nothing read twice.
#[test]
fn files_beyond_the_cap_are_closed_and_read_on_once_they_change() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = log_dir(tmp.path());
    let n = MAX_OPEN as u32 + 6;
    write_files(&dir, n);
    let (mut store, _, mut f) = follower_of(tmp.path(), &dir);
    f.poll(&mut store).unwrap();
    assert_eq!(stored_starts(&store), i64::from(n));
    assert_eq!((f.files.len(), f.closed.len(), f.take_stored()), (MAX_OPEN, 6, 2 * u64::from(n)));

    // A closed file grows: opened again, read from its stored end.
    let (&closed_key, _) = f.closed.iter().next().unwrap();
    let path = (0..n)
        .map(|i| dir.join(format!("pg-{i:03}.log")))
        .find(|p| key_of(&std::fs::metadata(p).unwrap()) == closed_key)
        .unwrap();
    append(&path, &one_checkpoint(n));
    f.poll(&mut store).unwrap();
    assert_eq!(stored_starts(&store), i64::from(n) + 1);
    assert_eq!((f.files.len(), f.closed.len(), f.take_stored()), (MAX_OPEN, 6, 2));
    assert!(f.files.contains_key(&closed_key), "the grown file is open again, another closed");
    // Another round with nothing new stores nothing and leaves the same
    // files closed.
    let closed: HashSet<FileKey> = f.closed.keys().copied().collect();
    f.poll(&mut store).unwrap();
    assert_eq!((stored_starts(&store), f.take_stored()), (i64::from(n) + 1, 0));
    assert_eq!(f.closed.keys().copied().collect::<HashSet<_>>(), closed);
}

/// A file whose last entry is held back is never closed to make room: it
/// must be read again once quiet.
#[test]
fn a_file_holding_back_its_last_entry_stays_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = log_dir(tmp.path());
    let (mut store, config, _) = follower_of(tmp.path(), &dir);
    let mut f = Follower::new(&mut store, &config, None).unwrap().with_settle(Duration::from_secs(3600));
    write_files(&dir, MAX_OPEN as u32 + 2);
    assert!(f.poll(&mut store).unwrap(), "each file's complete line waits for more");
    assert_eq!((f.files.len(), f.closed.len()), (MAX_OPEN + 2, 0));
    assert!(f.files.values().all(|t| t.pending));
}

/// A file the configured prefix does not fit: named in the problems, with
/// nothing recorded as read, and read again only once it has doubled.
#[test]
fn a_misfit_is_named_and_read_again_only_once_doubled() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = log_dir(tmp.path());
    let log = dir.join("pg.log");
    let first = one_checkpoint(0);
    std::fs::write(&log, &first).unwrap();
    let mut store = Store::open(&tmp.path().join("w.db")).unwrap();
    let config = ClusterConfig { prefix: "%t [%p]: [%l-1] user=%u,db=%d ".into(), ..cluster_of(&dir) };
    let mut f = Follower::new(&mut store, &config, None).unwrap();
    f.poll(&mut store).unwrap();
    let p = problems(&store);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, log.display().to_string());
    assert!(p[0].1.contains("nothing of it was recorded as read; first such line (line 1): 2026-01-01"), "{}", p[0].1);
    let t = f.files.values().next().unwrap();
    assert_eq!(t.misfit_at, Some(first.len() as u64));
    assert!(store.daemon().cluster_status(Some("c")).unwrap()[0].sources.is_empty());

    // Grown, but not doubled: not read again (the misfit stays as it was).
    append(&log, &one_checkpoint(1)[..first.len() - 1]);
    f.poll(&mut store).unwrap();
    assert_eq!(f.files.values().next().unwrap().misfit_at, Some(first.len() as u64));
    // Doubled: read again, still a misfit, at the new size.
    append(&log, b"\n");
    f.poll(&mut store).unwrap();
    assert_eq!(f.files.values().next().unwrap().misfit_at, Some(2 * first.len() as u64));
    assert_eq!(stored_starts(&store), 0);
}

/// A directory the glob matches is no log: passed over, nothing said.
#[test]
fn a_directory_the_glob_matches_is_passed_over() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = log_dir(tmp.path());
    std::fs::create_dir(dir.join("old.log")).unwrap();
    std::fs::write(dir.join("pg.log"), one_checkpoint(0)).unwrap();
    let (mut store, _, mut f) = follower_of(tmp.path(), &dir);
    f.poll(&mut store).unwrap();
    assert_eq!((stored_starts(&store), f.files.len()), (1, 1));
    assert_eq!(problems(&store), []);
}

/// A glob that also matches walwatch's own database: refused, named, never read.
#[test]
fn the_store_itself_is_never_read_as_a_log() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = log_dir(tmp.path());
    std::fs::write(dir.join("pg.log"), one_checkpoint(0)).unwrap();
    let mut store = Store::open(&dir.join("w.db")).unwrap();
    let config =
        ClusterConfig { name: "c".into(), logs: vec![format!("{}/*", dir.display())], ..ClusterConfig::default() };
    let mut f = Follower::new(&mut store, &config, None).unwrap();
    f.poll(&mut store).unwrap();
    assert_eq!(stored_starts(&store), 1);
    let refused = |name: &str| (dir.join(name).display().to_string(), "refused: walwatch's own store".to_string());
    assert_eq!(problems(&store), [refused("w.db"), refused("w.db-shm"), refused("w.db-wal")]);
}

/// A link out of the glob's directory: refused without being opened, named
/// once in the problems; the files inside are read.
#[test]
fn a_link_out_of_the_directory_is_refused_and_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = log_dir(tmp.path());
    let outside = tmp.path().join("secret.log");
    std::fs::write(&outside, one_checkpoint(1)).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("evil.log")).unwrap();
    std::fs::write(dir.join("pg.log"), one_checkpoint(0)).unwrap();
    let (mut store, _, mut f) = follower_of(tmp.path(), &dir);
    f.poll(&mut store).unwrap();
    assert_eq!(stored_starts(&store), 1, "only pg.log");
    let p = problems(&store);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].0, dir.join("evil.log").display().to_string());
    assert!(p[0].1.starts_with("refused: a symlink to a file outside the configured log directory"), "{}", p[0].1);
    assert!(f.refused.contains(&dir.join("evil.log")));
    assert_eq!(f.files.len(), 1);
}

/// A stop request ends a round before the next file, and the next round
/// goes on with what is left; a passed deadline still reads one file a round.
#[test]
fn a_round_ends_at_a_stop_or_a_deadline_and_the_next_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = log_dir(tmp.path());
    write_files(&dir, 3);
    let mut store = Store::open(&tmp.path().join("w.db")).unwrap();
    let config = cluster_of(&dir);
    let stop = Arc::new(AtomicBool::new(true));
    let mut f = Follower::new(&mut store, &config, Some(stop.clone())).unwrap();
    let round = f.poll_until(&mut store, None).unwrap();
    assert!(round.unfinished);
    assert_eq!((stored_starts(&store), f.queue.len()), (0, 3));

    stop.store(false, Ordering::Relaxed);
    let past = Some(Instant::now() - Duration::from_secs(1));
    for read in 1..=3 {
        let round = f.poll_until(&mut store, past).unwrap();
        assert_eq!(stored_starts(&store), read);
        assert_eq!(round.unfinished, read < 3, "{read}");
    }
    assert!(f.queue.is_empty());
}

/// start_at = "end" holds until the first round has seen every file: a
/// first round cut short by its deadline leaves the rest skipped too.
#[test]
fn start_at_end_spans_a_first_round_cut_short() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = log_dir(tmp.path());
    write_files(&dir, 2);
    let mut store = Store::open(&tmp.path().join("w.db")).unwrap();
    let config = ClusterConfig { start_at: StartAt::End, ..cluster_of(&dir) };
    let mut f = Follower::new(&mut store, &config, None).unwrap();
    let past = Some(Instant::now() - Duration::from_secs(1));
    assert!(f.poll_until(&mut store, past).unwrap().unfinished);
    assert!(!f.poll_until(&mut store, past).unwrap().unfinished);
    assert_eq!(stored_starts(&store), 0);
    std::fs::write(dir.join("pg-new.log"), one_checkpoint(2)).unwrap();
    f.poll(&mut store).unwrap();
    assert_eq!(stored_starts(&store), 1, "a file appearing later is read from its start");
}

/// `walwatch forget` in another process: the follower notices and reads
/// the forgotten file again from its start, the others not at all.
#[test]
fn a_forget_by_another_process_makes_the_file_read_again() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = log_dir(tmp.path());
    std::fs::write(dir.join("a.log"), one_checkpoint(0)).unwrap();
    std::fs::write(dir.join("b.log"), one_checkpoint(1)).unwrap();
    let (mut store, _, mut f) = follower_of(tmp.path(), &dir);
    f.poll(&mut store).unwrap();
    assert_eq!((stored_starts(&store), f.take_stored()), (2, 4));
    f.poll(&mut store).unwrap();
    assert_eq!(f.take_stored(), 0);

    let mut other = Store::open(&tmp.path().join("w.db")).unwrap();
    let a = other.sources().known(Some("c")).unwrap().into_iter().find(|s| s.path.ends_with("a.log")).unwrap();
    other.sources_mut().forget(&[a.id]).unwrap();
    assert_eq!(stored_starts(&store), 1);
    f.poll(&mut store).unwrap();
    assert_eq!((stored_starts(&store), f.take_stored()), (2, 2));
}

/// A file renamed out of the globs with its last entry held back is read
/// to its end (the entry taken) and let go.
#[test]
fn a_file_renamed_out_of_the_globs_is_finished() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = log_dir(tmp.path());
    let log = dir.join("pg.log");
    std::fs::write(&log, one_checkpoint(0)).unwrap();
    let (mut store, config, _) = follower_of(tmp.path(), &dir);
    let mut f = Follower::new(&mut store, &config, None).unwrap().with_settle(Duration::from_secs(3600));
    assert!(f.poll(&mut store).unwrap());
    assert_eq!(f.take_stored(), 1, "the start; the complete line waits");
    std::fs::rename(&log, dir.join("pg.log.old")).unwrap();
    assert!(!f.poll(&mut store).unwrap());
    assert_eq!((f.take_stored(), f.files.len()), (1, 0));
}

/// A glob matching nothing is named, its problem gone once a file appears;
/// a directory that does not exist is named as such.
#[test]
fn listing_problems_come_and_go() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = log_dir(tmp.path());
    let (mut store, _, mut f) = follower_of(tmp.path(), &dir);
    f.poll(&mut store).unwrap();
    let glob = format!("{}/*.log", dir.display());
    assert_eq!(problems(&store), [(glob, access::no_match_problem())]);
    std::fs::write(dir.join("pg.log"), one_checkpoint(0)).unwrap();
    f.poll(&mut store).unwrap();
    assert_eq!(problems(&store), []);

    let missing = ClusterConfig {
        name: "c".into(),
        logs: vec![format!("{}/nowhere/*.log", tmp.path().display())],
        ..ClusterConfig::default()
    };
    let (paths, found) = listing(&missing);
    assert!(paths.is_empty());
    assert_eq!(listing_problems(&missing), found);
    let (path, problem) = found.iter().next().unwrap();
    assert_eq!(path, &tmp.path().join("nowhere").display().to_string());
    assert_eq!(problem, "cannot list the directory: No such file or directory (os error 2)");
}

/// Without globs, `$PGDATA/current_logfiles` names the log directory: the
/// jsonlog file's first, then csvlog's, then stderr's; without it, why.
#[test]
fn current_logfiles_names_the_directory_to_follow() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("da[ta]");
    std::fs::create_dir(&data).unwrap();
    let config = ClusterConfig { name: "c".into(), data_directory: Some(data.clone()), ..ClusterConfig::default() };
    let (patterns, problems) = patterns_checked(&config);
    assert!(patterns.is_empty());
    assert_eq!(problems.keys().collect::<Vec<_>>(), [&data.join("current_logfiles").display().to_string()]);

    let dir = data.join("log");
    std::fs::write(data.join("current_logfiles"), format!("stderr {0}/p.log\ncsvlog {0}/p.csv\n", dir.display()))
        .unwrap();
    let escaped = glob::Pattern::escape(&dir.display().to_string());
    assert_eq!(patterns_checked(&config), (vec![format!("{escaped}/*.csv")], Problems::new()));
    std::fs::write(
        data.join("current_logfiles"),
        format!("stderr {0}/p.log\njsonlog {0}/p.json\ncsvlog {0}/p.csv\n", dir.display()),
    )
    .unwrap();
    assert_eq!(patterns_checked(&config).0, [format!("{escaped}/*.json")]);
    std::fs::write(data.join("current_logfiles"), format!("stderr {0}/p\n", dir.display())).unwrap();
    assert_eq!(patterns_checked(&config).0, [format!("{escaped}/*")]);
}

/// What wakes the daemon: each glob's fixed directory and the data
/// directory (for current_logfiles), once each, in order.
#[test]
fn the_watched_directories_are_the_globs_and_the_data_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let mut store = Store::open(&tmp.path().join("w.db")).unwrap();
    let config = ClusterConfig {
        name: "c".into(),
        logs: vec!["/var/log/pg/*.log".into(), "/var/log/pg/*.csv".into(), "/a/*.log".into(), "rel/*.log".into()],
        data_directory: Some(PathBuf::from("/srv/data")),
        ..ClusterConfig::default()
    };
    let f = Follower::new(&mut store, &config, None).unwrap();
    let want: Vec<PathBuf> = ["/a", "/srv/data", "/var/log/pg"].iter().map(PathBuf::from).collect();
    assert_eq!(f.watch_dirs(), want);
    assert_eq!(f.config(), &config);
}

/// A central (an [ingest] listener, no [[cluster]]) follows nothing of the
/// machine it runs on; configured clusters are followed as configured.
#[test]
fn a_central_discovers_no_local_cluster() {
    let mut cfg = config::Config::default();
    cfg.ingest.listen = Some("127.0.0.1:0".parse().unwrap());
    assert!(clusters(&cfg).is_empty());
    cfg.clusters = vec![ClusterConfig { name: "x".into(), ..ClusterConfig::default() }];
    assert_eq!(clusters(&cfg).iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["x"]);
    cfg.ingest.listen = None;
    assert_eq!(clusters(&cfg).iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["x"]);
}

/// One follower per cluster, each with the settle time; a cluster that
/// cannot be followed (a zone no one knows) is left out, the others not.
#[test]
fn followers_are_built_for_every_cluster_that_can_be_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let mut store = Store::open(&tmp.path().join("w.db")).unwrap();
    let cluster = |name: &str, timezone: Option<&str>| ClusterConfig {
        name: name.into(),
        logs: vec![format!("{}/{name}/*.log", tmp.path().display())],
        timezone: timezone.map(String::from),
        ..ClusterConfig::default()
    };
    let all = [cluster("a", None), cluster("b", Some("Mars/Olympus_Mons")), cluster("c", Some("Europe/Berlin"))];
    let stop = Arc::new(AtomicBool::new(false));
    let built = followers(&mut store, &all, &stop, Duration::from_secs(7));
    let names: Vec<(&str, Duration)> = built.iter().map(|f| (f.name.as_str(), f.settle)).collect();
    assert_eq!(names, [("a", Duration::from_secs(7)), ("c", Duration::from_secs(7))]);
}

/// How a prefix that cannot be detected and a misfit read are shown: what
/// to do, the first line with its control characters blanked.
#[test]
fn problems_say_what_to_set() {
    let e = IngestError::Prefix { path: "/l/x.log".into(), message: "no line".into() };
    assert!(problem_of(&e).starts_with("cannot detect the log_line_prefix: no line at the start of the file"));
    let report = ImportReport {
        misfit: Some("no line fits the prefix".into()),
        first_unmatched: Some((3, "a\x1b[31mb\tc".into())),
        ..ImportReport::default()
    };
    assert_eq!(
        misfit_problem(&report),
        "no line fits the prefix; nothing of it was recorded as read; first such line (line 3): a [31mb c; set \
         format and prefix in the cluster's [[cluster]] table (the server's log_destination and `SHOW \
         log_line_prefix;`): the daemon then reads it again"
    );
}

/// A file rewritten to the same size changes its ctime: read again.
#[test]
fn the_state_of_a_file_is_its_size_and_change_time() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("f");
    std::fs::write(&path, b"abc").unwrap();
    let md = std::fs::metadata(&path).unwrap();
    assert_eq!(state_of(&md), (3, md.ctime() * 1_000_000_000 + md.ctime_nsec()));
    assert_eq!(key_of(&md), (md.dev(), md.ino()));
}

/// A name listed a moment ago that leads to another file now (rotated in
/// between): not taken for the listed one; the next listing finds it.
#[test]
fn a_name_that_leads_to_another_file_by_now_is_left_to_the_next_listing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = log_dir(tmp.path());
    let log = dir.join("pg.log");
    std::fs::write(&log, one_checkpoint(0)).unwrap();
    let (mut store, _, mut f) = follower_of(tmp.path(), &dir);
    let listed = key_of(&std::fs::metadata(&log).unwrap());
    std::fs::rename(&log, dir.join("pg.log.1")).unwrap();
    std::fs::write(&log, one_checkpoint(1)).unwrap();
    let roots = f.roots();
    assert!(!f.track(&mut store, &log, listed, &roots).unwrap());
    assert!(f.files.is_empty());
    assert!(f.track(&mut store, &log, key_of(&std::fs::metadata(&log).unwrap()), &roots).unwrap());
    assert_eq!(f.files.len(), 1);
}

/// A file dated ahead of the clock (copied with its times, a skewed
/// writer) is never "quiet" by its mtime: its held-back last entry is taken
/// once the file has not changed for the settle time.
#[test]
fn a_file_dated_ahead_settles_by_staying_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = log_dir(tmp.path());
    let log = dir.join("pg.log");
    std::fs::write(&log, one_checkpoint(0)).unwrap();
    let ahead = std::time::SystemTime::now() + Duration::from_secs(3600);
    std::fs::OpenOptions::new().write(true).open(&log).unwrap().set_modified(ahead).unwrap();
    let (mut store, config, _) = follower_of(tmp.path(), &dir);
    let mut f = Follower::new(&mut store, &config, None).unwrap().with_settle(Duration::from_millis(300));
    assert!(f.poll(&mut store).unwrap(), "the complete line waits");
    assert_eq!(f.take_stored(), 1);
    assert!(f.poll(&mut store).unwrap(), "unchanged for less than the settle time");
    std::thread::sleep(Duration::from_millis(400));
    assert!(!f.poll(&mut store).unwrap());
    assert_eq!(f.take_stored(), 1, "the complete line, once settled");
    // Again for lines appended (a read that resumes inside the file).
    append(&log, &one_checkpoint(1));
    std::fs::OpenOptions::new().write(true).open(&log).unwrap().set_modified(ahead).unwrap();
    assert!(f.poll(&mut store).unwrap());
    assert_eq!(f.take_stored(), 1);
    std::thread::sleep(Duration::from_millis(400));
    assert!(!f.poll(&mut store).unwrap());
    assert_eq!(f.take_stored(), 1);
}

/// The directory renamed away (its files' change times unchanged): each
/// file it held is read to its end, the held-back entry taken, and let go.
#[test]
fn files_of_a_directory_renamed_away_are_finished() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = log_dir(tmp.path());
    std::fs::write(dir.join("pg.log"), one_checkpoint(0)).unwrap();
    let (mut store, config, _) = follower_of(tmp.path(), &dir);
    let mut f = Follower::new(&mut store, &config, None).unwrap().with_settle(Duration::from_secs(3600));
    assert!(f.poll(&mut store).unwrap());
    assert_eq!(f.take_stored(), 1);
    std::fs::rename(&dir, tmp.path().join("log.old")).unwrap();
    assert!(!f.poll(&mut store).unwrap());
    assert_eq!((f.take_stored(), f.files.len()), (1, 0));
}

/// An empty file has nothing to fingerprint: not read, nothing recorded.
#[test]
fn an_empty_file_is_not_read_until_it_has_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = log_dir(tmp.path());
    let log = dir.join("pg.log");
    std::fs::write(&log, b"").unwrap();
    let (mut store, _, mut f) = follower_of(tmp.path(), &dir);
    f.poll(&mut store).unwrap();
    let status = &store.daemon().cluster_status(Some("c")).unwrap()[0];
    assert!(status.sources.is_empty() && status.problems.is_empty(), "{:?}", status.problems);
    std::fs::write(&log, one_checkpoint(0)).unwrap();
    f.poll(&mut store).unwrap();
    assert_eq!(stored_starts(&store), 1);
}
