//! Several processes on one store, and stores that cannot be written.
//!
//! Everything here runs the real walwatch binary on real PostgreSQL logs
//! (tests/fixtures) and real SQLite files: `walwatch import` of a log the
//! daemon follows while it grows; a second daemon on the same store; eight
//! processes opening a new store at the same instant; queries on a store the
//! user may not write (another user, a read-only bind mount); a clock stepped
//! back between a checkpoint's start and complete lines; and a store written
//! by an older walwatch that counted one log twice.

use crate::support;

use std::fs::{self, File, Permissions};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};
use serde_json::Value;

use support::daemon::{append, assert_same, concat, entry_boundary, fixture, lines, Daemon, Rng, Snapshot, Workspace};
use support::{describe, walwatch};

/// 180 lines, 24 kB: 44 checkpoints (each start and complete), 40
/// too-frequent warnings, UTC timestamps.
const LOG: &str = "14-stderr-default-std";
/// Its log_line_prefix, given to every reader of a file that may still hold
/// only a few lines (too few to infer the prefix from).
const PREFIX: &str = "%m [%p] %q%u@%d ";

fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// The fixture's own count of checkpoints (truth.json, made without walwatch).
fn truth_checkpoints(run: &str) -> i64 {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(run);
    let truth: Value = serde_json::from_str(&fs::read_to_string(dir.join("truth.json")).unwrap()).unwrap();
    let (starts, completes) = (&truth["counts"]["checkpoint_start"]["total"], &truth["counts"]["checkpoint_complete"]);
    assert_eq!(starts, completes, "{run}: every checkpoint of this log has both lines");
    starts.as_i64().unwrap()
}

fn is_root() -> bool {
    let out = Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

fn output(mut cmd: Command) -> Output {
    cmd.stdin(Stdio::null()).output().unwrap()
}

fn ok(cmd: Command) -> String {
    let shown = format!("{cmd:?}");
    let out = output(cmd);
    assert!(out.status.success(), "{shown}: {}", describe(&out));
    String::from_utf8(out.stdout).unwrap()
}

fn cmd(args: &[&str]) -> Command {
    let mut c = walwatch();
    c.args(args);
    c
}

fn import_cmd(db: &Path, log: &Path) -> Command {
    cmd(&["import", "--db", s(db), "--cluster", "c", "--prefix", PREFIX, s(log)])
}

fn spawn(mut cmd: Command) -> Child {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

/// Waits for `child`; it must have exited 0. Returns its stdout.
fn succeeded(child: Child, what: &str) -> String {
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{what}: {}", describe(&out));
    String::from_utf8(out.stdout).unwrap()
}

fn query_i64(db: &Path, sql: &str) -> i64 {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

fn source_rows(db: &Path) -> i64 {
    query_i64(db, "SELECT count(*) FROM source")
}

/// The schema version a store gets: one step per migration file.
fn migration_count() -> i64 {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store/migrations");
    fs::read_dir(dir).unwrap().filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "sql")).count()
        as i64
}

/// The counts a store must show for the whole fixture log, checked three
/// ways: the summary, the checkpoint rows (each with both halves), and
/// everything (events included) against a fresh import of the same log.
fn assert_counted_once(db: &Path, want: &Snapshot, checkpoints: i64, what: &str) {
    assert_counted_once_by(db, want, checkpoints, what, |s| s);
}

/// [`assert_counted_once`] comparing the stores through `view`.
fn assert_counted_once_by(db: &Path, want: &Snapshot, checkpoints: i64, what: &str, view: fn(Snapshot) -> Snapshot) {
    let got = view(Snapshot::read(db, "c").unwrap());
    let want = view(want.clone());
    assert_eq!(got.summary["checkpoints"]["started"], checkpoints, "{what}: summary {}", got.summary);
    assert_eq!(got.summary["checkpoints"]["completed"], checkpoints, "{what}: summary {}", got.summary);
    assert_eq!(got.checkpoints.len() as i64, checkpoints, "{what}: checkpoint rows");
    for row in &got.checkpoints {
        assert!(!row["started_at"].is_null() && !row["completed_at"].is_null(), "{what}: a half row: {row}");
    }
    assert_same(&got, &want, what);
}

fn write_config(ws: &Workspace, logs: &Path) {
    let text = format!(
        "[store]\npath = {:?}\n\n[daemon]\npoll_interval = \"200ms\"\n\n[[cluster]]\nname = \"c\"\nlogs = [{:?}]\nprefix = {PREFIX:?}\n",
        s(&ws.db()),
        format!("{}/*.log", s(logs)),
    );
    fs::write(ws.config_path(), text).unwrap();
}

// ---------------------------------------------------------------- (a) import beside the daemon

/// `walwatch import` of a log that the daemon follows while PostgreSQL (here:
/// the test, appending the real log piece by piece) is still writing it.
/// Five trials with different timings; in each, imports start right after
/// appends, so the daemon (woken by the same append) and up to two imports
/// meet the new content at once. The first piece is shorter than a
/// fingerprint (4 KiB): readers meet the file while its recorded fingerprint
/// still grows. Every trial must end with one source and every checkpoint
/// of the log counted exactly once.
#[test]
fn import_of_a_log_the_daemon_follows_counts_every_checkpoint_once() {
    let data = fixture(LOG);
    let checkpoints = truth_checkpoints(LOG);
    let l = lines(&data);
    for trial in 1..=5u64 {
        let ws = Workspace::new();
        let dir = ws.dir("log");
        let log = dir.join("postgresql.log");
        write_config(&ws, &dir);
        let want = ws.reference("c", &[&data]);
        let mut daemon = ws.start();
        daemon.wait_running();

        let mut rng = Rng::new(trial);
        let mut imports = Vec::new();
        let mut at = entry_boundary(&l, 4);
        append(&log, &concat(&l[..at]));
        assert!(at < l.len() && fs::metadata(&log).unwrap().len() < 4096);
        imports.push(spawn(import_cmd(&ws.db(), &log)));
        while at < l.len() {
            let next = entry_boundary(&l, at + rng.range(5, 30) as usize);
            append(&log, &concat(&l[at..next]));
            at = next;
            for _ in 0..rng.range(0, 2) {
                imports.push(spawn(import_cmd(&ws.db(), &log)));
            }
            // The writer's pace: sometimes the readers finish, sometimes not.
            std::thread::sleep(Duration::from_millis(rng.range(0, 60)));
        }
        imports.push(spawn(import_cmd(&ws.db(), &log)));
        let n = imports.len();
        for (i, child) in imports.into_iter().enumerate() {
            succeeded(child, &format!("trial {trial}: import {i} of {n}"));
        }
        daemon.wait_read_to("c", &log, data.len() as u64);
        let what = format!("trial {trial} ({n} imports beside the daemon)");
        assert_eq!(source_rows(&ws.db()), 1, "{what}: one log, one source row");
        // Event data aside: an import may store a too-frequent warning before
        // its HINT line is written (it does not wait for more lines of the
        // last entry, the daemon does); that is not what this test is about.
        assert_counted_once_by(&ws.db(), &want, checkpoints, &what, Snapshot::without_event_data);
        daemon.terminate();
    }
}

// ---------------------------------------------------------------- (b) one daemon per store

/// Waits (with a deadline) for a daemon that must exit by itself.
fn exit_of(daemon: &mut Daemon, what: &str) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = daemon.exited() {
            return status;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{what} still runs after 10 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A second `walwatch run` on the store of a running daemon exits non-zero
/// at once, naming the running daemon's pid and the store, and the first
/// goes on working. After `kill -9` of the first (no chance to clean up), a
/// new daemon starts: the kernel released the lock with the process.
#[test]
fn a_second_daemon_on_a_store_is_refused_and_the_lock_dies_with_the_first() {
    let ws = Workspace::new();
    let dir = ws.dir("log");
    let log = dir.join("postgresql.log");
    write_config(&ws, &dir);
    let data = fixture(LOG);
    let l = lines(&data);
    let (a, b) = (entry_boundary(&l, 60), entry_boundary(&l, 120));
    append(&log, &concat(&l[..a]));
    let mut first = ws.start();
    first.wait_running();
    first.wait_read_to("c", &log, fs::metadata(&log).unwrap().len());

    let second_log = ws.path().join("second.log");
    let mut second = Daemon::start(&ws.config_path(), &ws.db(), &second_log);
    let status = exit_of(&mut second, "the second daemon");
    let said = fs::read_to_string(&second_log).unwrap();
    assert_eq!(status.code(), Some(1), "second daemon: {status}\n{said}");
    let expected =
        format!("another walwatch daemon (pid {}) is already running on the store {}", first.pid(), s(&ws.db()));
    assert!(said.contains(&expected), "the refusal names the daemon and the store:\n{said}");
    assert!(said.contains(&format!("{}.lock", s(&ws.db()))), "and the lock file:\n{said}");

    // The first one is unaffected: still running, still reading.
    assert!(first.exited().is_none(), "the first daemon exited:\n{}", first.log());
    append(&log, &concat(&l[a..b]));
    first.wait_read_to("c", &log, fs::metadata(&log).unwrap().len());

    first.kill9();
    append(&log, &concat(&l[b..]));
    let mut third = ws.start();
    third.wait_running();
    third.wait_read_to("c", &log, data.len() as u64);
    let want = ws.reference("c", &[&data]);
    assert_counted_once(&ws.db(), &want, truth_checkpoints(LOG), "after kill -9 and a new daemon");
    third.terminate();
}

// ---------------------------------------------------------------- (c) a new store, many openers

/// Eight imports of one real log into one store path that does not exist
/// yet, released at the same instant (they wait on a shared flock that the
/// test holds exclusively, then all get it at once). All succeed; the schema
/// is complete; the log is one source; each event was stored by exactly one
/// of them. Three rounds, each on a new path.
#[test]
fn eight_processes_opening_a_new_store_at_once_all_succeed() {
    let checkpoints = truth_checkpoints(LOG);
    let ws = Workspace::new();
    let log = ws.dir("log").join("postgresql.log");
    fs::write(&log, fixture(LOG)).unwrap();
    let want = ws.reference("c", &[&fixture(LOG)]);
    let gate_path = ws.path().join("gate");
    for round in 1..=3 {
        let db = ws.dir(&format!("round-{round}")).join("w.db");
        let gate = File::create(&gate_path).unwrap();
        gate.lock().unwrap();
        let children: Vec<Child> = (0..8)
            .map(|_| {
                let mut c = Command::new("flock");
                c.arg("--shared").arg(&gate_path).arg(env!("CARGO_BIN_EXE_walwatch"));
                c.args(["import", "--db", s(&db), "--cluster", "c", s(&log)]);
                spawn(c)
            })
            .collect();
        // Time for all eight to reach the gate; one that is late only starts less at once.
        std::thread::sleep(Duration::from_millis(500));
        assert!(!db.exists(), "round {round}: someone passed the gate early");
        drop(gate);
        let mut stored = 0;
        for (i, child) in children.into_iter().enumerate() {
            let out = succeeded(child, &format!("round {round}: process {i}"));
            stored += new_in_store(&out);
        }
        let what = format!("round {round}");
        assert_eq!(query_i64(&db, "PRAGMA user_version"), migration_count(), "{what}: schema version");
        assert_eq!(source_rows(&db), 1, "{what}: source rows");
        assert_eq!(stored, query_i64(&db, "SELECT count(*) FROM line"), "{what}: each event stored by one process");
        assert_counted_once(&db, &want, checkpoints, &what);
    }
}

/// "new in store N" from an import's report.
fn new_in_store(report: &str) -> i64 {
    let n = report.split("new in store ").nth(1).unwrap_or_else(|| panic!("no 'new in store' in {report}"));
    n.split_whitespace().next().unwrap().parse().unwrap()
}

// ---------------------------------------------------------------- (d) read-only stores

/// Makes `dir` and the files in it unwritable (0555/0444): a user other than
/// root cannot create, change or delete anything there.
fn make_read_only(dir: &Path, read_only: bool) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        fs::set_permissions(&path, Permissions::from_mode(if read_only { 0o444 } else { 0o644 })).unwrap();
    }
    fs::set_permissions(dir, Permissions::from_mode(if read_only { 0o555 } else { 0o755 })).unwrap();
}

/// walwatch run as a user who may not write the store: the `postgres` user
/// when we are root (root may write anything), else ourselves.
fn unprivileged(args: &[&str]) -> Command {
    let mut c = if is_root() {
        let ok = Command::new("id").arg("postgres").output().is_ok_and(|o| o.status.success());
        assert!(ok, "running as root but there is no `postgres` user to run the read-only queries as");
        let mut c = Command::new("setpriv");
        c.args(["--reuid=postgres", "--regid=postgres", "--init-groups", env!("CARGO_BIN_EXE_walwatch")]);
        c
    } else {
        walwatch()
    };
    c.args(args).current_dir("/");
    c
}

/// walwatch run with `dir` bind-mounted read-only over itself, in a private
/// mount namespace (the mount disappears with the process; the rest of the
/// machine never sees it). Not root: in a user namespace of our own.
fn on_read_only_mount(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new("unshare");
    if !is_root() {
        c.arg("--map-root-user");
    }
    c.args(["--mount", "sh", "-c", r#"mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@""#]);
    c.args(["sh", s(dir), env!("CARGO_BIN_EXE_walwatch")]).args(args);
    c
}

/// The three queries, as JSON texts. `status` exits 5 on the store of a
/// killed daemon (it is not running), 0 on one only imported into.
fn queries(db: &Path, run: impl Fn(&[&str]) -> Command) -> Vec<String> {
    let q = |what: &str| ok(run(&[what, "--db", s(db), "--format", "json"]));
    let status = {
        let mut c = run(&["status", "--db", s(db), "--format", "json"]);
        let out = c.stdin(Stdio::null()).output().unwrap();
        assert!(matches!(out.status.code(), Some(0 | 5)), "{c:?}: {}", describe(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    vec![q("summary"), status, q("checkpoints")]
}

fn sidecar(db: &Path, suffix: &str) -> PathBuf {
    PathBuf::from(format!("{}{suffix}", s(db)))
}

/// A store whose directory and file the user may not write, and the same
/// store on a read-only mount: `summary`, `status` and `checkpoints` print
/// exactly what they print on the writable store; `import` (and the daemon)
/// fail with a message that says the store is read-only, and change nothing.
/// The store was closed cleanly, so there is no -wal or -shm file, and none
/// can be created: SQLite cannot open it normally (SQLite's "unable to
/// open database file"); walwatch opens it as immutable.
#[test]
fn a_store_nobody_may_write_answers_queries_and_refuses_writes() {
    let ws = Workspace::new();
    fs::set_permissions(ws.path(), Permissions::from_mode(0o755)).unwrap();
    let store = ws.dir("store");
    let db = store.join("w.db");
    let log = ws.dir("log").join("postgresql.log");
    fs::write(&log, fixture(LOG)).unwrap();
    ok(import_cmd(&db, &log));
    assert!(!sidecar(&db, "-wal").exists() && !sidecar(&db, "-shm").exists(), "a cleanly closed store");
    let before = fs::read(&db).unwrap();

    make_read_only(&store, true);
    let as_user = queries(&db, unprivileged);
    let on_mount = queries(&db, |a| on_read_only_mount(&store, a));
    assert!(!sidecar(&db, "-shm").exists(), "nothing could be created beside the store");

    let import = ["import", "--db", s(&db), "--prefix", PREFIX, s(&log)];
    let refused = [output(unprivileged(&import)), output(on_read_only_mount(&store, &import))];
    for out in &refused {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{}", describe(out));
        assert!(err.contains(&format!("cannot write the store {}", s(&db))), "{err}");
        assert!(err.contains("read-only") && err.contains("`summary`, `status`, `checkpoints`"), "{err}");
    }
    let daemon = output(on_read_only_mount(&store, &["run", "--db", s(&db), "--config", "/dev/null"]));
    let err = String::from_utf8_lossy(&daemon.stderr);
    assert_eq!(daemon.status.code(), Some(1), "{}", describe(&daemon));
    assert!(err.contains(&format!("cannot take the daemon lock {}.lock: Read-only file system", s(&db))), "{err}");
    assert_eq!(fs::read(&db).unwrap(), before, "the refused writers changed the store file");

    make_read_only(&store, false);
    let writable = queries(&db, cmd);
    assert_eq!(as_user, writable, "as a user who may not write the store");
    assert_eq!(on_mount, writable, "on a read-only mount");
    assert_eq!(query_i64(&db, "SELECT count(*) FROM checkpoint"), truth_checkpoints(LOG));
}

/// The store of a daemon killed with `kill -9`: its last changes are still
/// in the -wal file, with the -shm index beside it. A user who may not
/// write them, and a read-only mount, read those changes too (SQLite reads
/// through an existing index without writing it). Without the index, a -wal
/// with content cannot be read without write access: that is refused with
/// a message, not answered from the store file alone (it would silently
/// miss the latest events).
#[test]
fn a_store_left_by_a_killed_daemon_is_read_without_write_access() {
    let ws = Workspace::new();
    fs::set_permissions(ws.path(), Permissions::from_mode(0o755)).unwrap();
    let dir = ws.dir("log");
    let log = dir.join("postgresql.log");
    write_config(&ws, &dir);
    let data = fixture(LOG);
    fs::write(&log, &data).unwrap();
    let mut daemon = ws.start();
    daemon.wait_read_to("c", &log, data.len() as u64);
    daemon.kill9();
    let db = ws.db();
    let store = ws.path().to_path_buf();
    assert!(fs::metadata(sidecar(&db, "-wal")).unwrap().len() > 0, "the daemon's last commits are in the WAL");
    assert!(sidecar(&db, "-shm").exists());

    // Only the store's own files: the scratch directory holds the logs too.
    let files = [db.clone(), sidecar(&db, "-wal"), sidecar(&db, "-shm")];
    let mode = |m| files.iter().for_each(|f| fs::set_permissions(f, Permissions::from_mode(m)).unwrap());
    mode(0o444);
    fs::set_permissions(&store, Permissions::from_mode(0o555)).unwrap();
    let as_user = queries(&db, unprivileged);
    let on_mount = queries(&db, |a| on_read_only_mount(&store, a));

    fs::set_permissions(&store, Permissions::from_mode(0o755)).unwrap();
    mode(0o644);
    let writable = queries(&db, cmd);
    // status says whether the daemon runs from its heartbeat's age, which
    // changes between the runs: compare its clusters only.
    let clusters = |q: &[String]| serde_json::from_str::<Value>(&q[1]).unwrap()["clusters"].clone();
    for (got, who) in [(&as_user, "as another user"), (&on_mount, "on a read-only mount")] {
        assert_eq!(got[0], writable[0], "summary {who}");
        assert_eq!(got[2], writable[2], "checkpoints {who}");
        assert_eq!(clusters(got), clusters(&writable), "status {who}");
    }
    let rows: Vec<Value> = serde_json::from_str(&writable[2]).unwrap();
    assert_eq!(rows.len() as i64, truth_checkpoints(LOG));

    // No index: refused, with the reason.
    fs::remove_file(sidecar(&db, "-shm")).unwrap();
    assert!(fs::metadata(sidecar(&db, "-wal")).unwrap().len() > 0);
    fs::set_permissions(&store, Permissions::from_mode(0o555)).unwrap();
    let out = output(unprivileged(&["summary", "--db", s(&db)]));
    fs::set_permissions(&store, Permissions::from_mode(0o755)).unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(err.contains(&format!("{}-wal holds changes not yet copied into the store file", s(&db))), "{err}");
    // Nothing was lost: with write access the index is rebuilt from the WAL.
    assert_eq!(queries(&db, cmd), writable);
}

// ---------------------------------------------------------------- (e) a clock step

/// A real log in which one `checkpoint complete:` line is dated a minute
/// before its own `checkpoint starting:` line. That is what a clock stepped
/// back (NTP, a VM resumed) between the two lines writes; a real server's
/// clock cannot be stepped here, so the timestamp is edited in the real log.
/// The complete line pairs with the start before it in the log (same
/// process): one row with both halves, not a start-only and a complete-only
/// row; every other row is as in the unedited log.
#[test]
fn a_clock_step_back_between_start_and_complete_still_pairs_them() {
    let data = String::from_utf8(fixture(LOG)).unwrap();
    let text: Vec<&str> = data.split_inclusive('\n').collect();
    // The 10th complete line, well inside the log (its start is a few lines up).
    let (i, complete) =
        text.iter().enumerate().filter(|(_, l)| l.contains("LOG:  checkpoint complete:")).nth(9).unwrap();
    let start = text[..i].iter().rev().find(|l| l.contains("LOG:  checkpoint starting:")).unwrap();
    let (pid_of, time_of) = (|l: &str| l.split(' ').nth(3).unwrap().to_string(), |l: &str| l[..23].to_string());
    assert_eq!(pid_of(start), pid_of(complete), "the checkpointer wrote both");
    let stepped = minus_a_minute(&time_of(complete));
    assert!(stepped < time_of(start), "the edited complete line is dated before its start");
    let mut edited: Vec<String> = text.iter().map(|l| l.to_string()).collect();
    edited[i] = format!("{stepped}{}", &complete[23..]);

    let ws = Workspace::new();
    let (plain, stepped_log) = (ws.dir("plain").join("postgresql.log"), ws.dir("stepped").join("postgresql.log"));
    fs::write(&plain, &data).unwrap();
    fs::write(&stepped_log, edited.concat()).unwrap();
    let (db_plain, db_stepped) = (ws.path().join("plain.db"), ws.path().join("stepped.db"));
    ok(import_cmd(&db_plain, &plain));
    ok(import_cmd(&db_stepped, &stepped_log));

    let rows = |db: &Path| -> Vec<Value> {
        serde_json::from_str(&ok(cmd(&["checkpoints", "--db", s(db), "--format", "json"]))).unwrap()
    };
    let (want, got) = (rows(&db_plain), rows(&db_stepped));
    assert_eq!(got.len() as i64, truth_checkpoints(LOG), "one row per checkpoint");
    let rfc = |t: &str| format!("{}T{}+00:00", &t[..10], &t[11..]);
    let moved: Vec<&Value> = got.iter().filter(|r| r["completed_at"] == rfc(&stepped)).collect();
    assert_eq!(moved.len(), 1, "the stepped complete line is in one row: {moved:?}");
    assert_eq!(moved[0]["started_at"], rfc(&time_of(start)), "paired with its own start: {}", moved[0]);
    // Apart from that one time, the history is the unedited log's.
    let mut fixed = moved[0].clone();
    fixed["completed_at"] = Value::from(rfc(&time_of(complete)));
    let mut got_fixed: Vec<Value> = got.iter().map(|r| if r == moved[0] { fixed.clone() } else { r.clone() }).collect();
    let key = |r: &Value| r["started_at"].as_str().unwrap_or_default().to_string();
    got_fixed.sort_by_key(key);
    let mut want = want;
    want.sort_by_key(key);
    assert_eq!(got_fixed, want);
}

/// "2026-11-22 08:19:03.123" one minute earlier (UTC, no date change here).
fn minus_a_minute(t: &str) -> String {
    let dt: jiff::civil::DateTime = t.replace(' ', "T").parse().unwrap();
    let e = dt.checked_sub(jiff::Span::new().minutes(1)).unwrap();
    assert_eq!(e.date(), dt.date());
    format!("{} {:02}:{:02}:{:02}.{:03}", e.date(), e.hour(), e.minute(), e.second(), e.millisecond())
}

// ---------------------------------------------------------------- (f) stores counted twice before

/// `source` columns that find a row by its content.
struct Identity {
    id: i64,
    fp_hash: i64,
    head: Option<Vec<u8>>,
}

/// Hides a source from the lookup (a fingerprint nothing matches) and back.
fn hide(conn: &Connection, row: &Identity, hidden: bool) {
    let (hash, head) = if hidden { (!row.fp_hash, None) } else { (row.fp_hash, row.head.clone()) };
    conn.execute("UPDATE source SET fp_hash = ?2, head = ?3 WHERE id = ?1", rusqlite::params![row.id, hash, head])
        .unwrap();
}

fn identities(conn: &Connection) -> Vec<Identity> {
    let mut stmt = conn.prepare("SELECT id, fp_hash, head FROM source ORDER BY id").unwrap();
    let rows = stmt.query_map([], |r| Ok(Identity { id: r.get(0)?, fp_hash: r.get(1)?, head: r.get(2)? })).unwrap();
    rows.map(Result::unwrap).collect()
}

/// A store written by walwatch before source identities were unique
/// (schema 5), in which an import and the daemon each had a row for one
/// log: every event twice, every checkpoint counted twice. Opening it for
/// writing repairs it: one source, each event once, the checkpoint rows of
/// a single reader — exactly a fresh import's store.
///
/// That walwatch is not at hand, so its store is rebuilt: two readers
/// (real imports) take turns on the growing log, each finding only its own
/// row (the other one's fingerprint is hidden during its turn; this
/// version's unique index is dropped first). Reader B reads the last piece
/// alone, so it is ahead when the store is repaired. The old pairing (by
/// time, newest row first) also left, for a checkpoint whose start and
/// complete were read in different turns, a lone start row, a row pairing
/// one reader's start with the other's complete, and a lone complete row;
/// one checkpoint is rewritten into that shape by SQL. Finally the schema
/// is taken back to version 5 (the indexes, the columns and the version
/// that 0006, 0007 and 0008 add removed).
#[test]
fn a_store_that_counted_a_log_twice_is_repaired_when_opened() {
    let ws = Workspace::new();
    let log = ws.dir("log").join("postgresql.log");
    let db = ws.path().join("old.db");
    let data = fixture(LOG);
    let l = lines(&data);
    // Cut right after a start line: that checkpoint's complete comes in the next turn.
    let cut_after_start = |from: usize| {
        (from..l.len()).find(|&i| String::from_utf8_lossy(l[i]).contains("checkpoint starting:")).unwrap() + 1
    };
    let cuts = [cut_after_start(40), cut_after_start(100), l.len()];
    let mut from = 0;
    for (turn, &to) in cuts.iter().enumerate() {
        append(&log, &concat(&l[from..to]));
        from = to;
        let readers: &[usize] = if turn + 1 == cuts.len() { &[1] } else { &[0, 1] };
        for &reader in readers {
            let hidden: Vec<Identity> = if db.exists() {
                let conn = Connection::open(&db).unwrap();
                conn.execute_batch("DROP INDEX IF EXISTS source_identity").unwrap();
                let others: Vec<Identity> =
                    identities(&conn).into_iter().enumerate().filter(|(i, _)| *i != reader).map(|(_, r)| r).collect();
                others.iter().for_each(|r| hide(&conn, r, true));
                others
            } else {
                Vec::new()
            };
            ok(import_cmd(&db, &log));
            let conn = Connection::open(&db).unwrap();
            hidden.iter().for_each(|r| hide(&conn, r, false));
            let want_rows = if turn == 0 { reader + 1 } else { 2 };
            assert_eq!(identities(&conn).len(), want_rows, "turn {turn}: reader {reader} has its own row");
        }
    }
    let conn = Connection::open(&db).unwrap();
    let rows = identities(&conn);
    let (a, b) = (&rows[0], &rows[1]);
    assert_eq!((a.fp_hash, &a.head), (b.fp_hash, &b.head), "two rows, one content");
    lines_as_events(&conn);
    split_one_checkpoint_like_the_old_pairing(&conn, a.id, b.id, cuts[0] as i64);
    conn.execute_batch(
        "DROP INDEX event_ahead; ALTER TABLE event DROP COLUMN ahead_us;
         ALTER TABLE source DROP COLUMN head; ALTER TABLE source DROP COLUMN unmatched;
         ALTER TABLE cluster DROP COLUMN follow_format; ALTER TABLE cluster DROP COLUMN follow_prefix;
         DROP INDEX checkpoint_waiting;
         DROP TRIGGER point_tally_insert; DROP TRIGGER point_tally_delete; DROP TRIGGER point_tally_update;
         DROP TABLE point_tally; ALTER TABLE source DROP COLUMN rejected_lines;
         DROP TABLE digest; DROP TABLE retention; ALTER TABLE alert DROP COLUMN resolution;
         DROP TABLE listener; DROP TABLE ingest_damage; DROP TABLE store_identity;
         DROP TABLE ingest_stream; ALTER TABLE cluster DROP COLUMN server_uid;
         ALTER TABLE cluster DROP COLUMN forgets;
         DROP INDEX checkpoint_truncated; ALTER TABLE checkpoint DROP COLUMN truncated;
         PRAGMA user_version = 5;",
    )
    .unwrap();
    drop(conn);
    let checkpoints = truth_checkpoints(LOG);
    // Read with SQL: any walwatch command opening the old store upgrades it.
    let started = query_i64(&db, "SELECT count(*) FROM checkpoint WHERE start_event_id IS NOT NULL");
    assert!(started > checkpoints, "counted twice: {started} starts");
    assert!(query_i64(&db, "SELECT count(*) FROM checkpoint") > checkpoints + 1);

    // Any writer opening the store migrates it; this import finds nothing new.
    let report = ok(import_cmd(&db, &log));
    assert_eq!(new_in_store(&report), 0, "{report}");
    assert_eq!(query_i64(&db, "PRAGMA user_version"), migration_count());
    assert_eq!(source_rows(&db), 1);
    assert_eq!(query_i64(&db, "SELECT read_to FROM source"), data.len() as i64, "the row read furthest wins");
    let want = ws.reference("c", &[&data]);
    assert_counted_once(&db, &want, checkpoints, "the repaired store");
}

/// Each checkpoint line as an event its row points at by id, as stores
/// before migrations/0022_point_lines.sql kept them (which the migrations
/// after version 5 read back into places).
fn lines_as_events(conn: &Connection) {
    conn.execute_batch(
        "DROP VIEW line;
         ALTER TABLE checkpoint ADD COLUMN start_event_id INTEGER;
         ALTER TABLE checkpoint ADD COLUMN complete_event_id INTEGER;
         INSERT INTO event(cluster_id, source_id, offset, line, at, pid, kind, data, ahead_us)
           SELECT cluster_id, start_source_id, start_offset, start_line, started_at, pid, kind || '_start', '{}',
                  start_ahead_us
           FROM checkpoint WHERE start_source_id IS NOT NULL ORDER BY id;
         INSERT INTO event(cluster_id, source_id, offset, line, at, pid, kind, data, ahead_us)
           SELECT cluster_id, complete_source_id, complete_offset, complete_line, completed_at, pid,
                  kind || '_complete', '{}', complete_ahead_us
           FROM checkpoint WHERE complete_source_id IS NOT NULL ORDER BY id;
         UPDATE checkpoint SET
           start_event_id = (SELECT e.id FROM event e WHERE e.source_id = checkpoint.start_source_id
                               AND e.offset = checkpoint.start_offset AND e.kind = checkpoint.kind || '_start'),
           complete_event_id = (SELECT e.id FROM event e WHERE e.source_id = checkpoint.complete_source_id
                                  AND e.offset = checkpoint.complete_offset AND e.kind = checkpoint.kind || '_complete');",
    )
    .unwrap();
}

/// For the checkpoint whose start line ends the first turn, the rows the
/// old time-based pairing made when reader A read the start, then reader B
/// the start, then A the complete, then B the complete: A's start alone
/// (still waiting), B's start with A's complete, and B's complete alone.
fn split_one_checkpoint_like_the_old_pairing(conn: &Connection, a: i64, b: i64, start_line: i64) {
    let row_of = |source: i64| -> (i64, i64) {
        conn.query_row(
            "SELECT c.id, c.complete_event_id FROM checkpoint c JOIN event e ON e.id = c.start_event_id
             WHERE e.source_id = ?1 AND e.line = ?2",
            [source, start_line],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
    };
    let ((row_a, complete_a), (row_b, complete_b)) = (row_of(a), row_of(b));
    let stats = "buffers_written, buffers_pct, slru_buffers_written, wal_files_added, wal_files_removed,
        wal_files_recycled, write_s, sync_s, total_s, sync_files, sync_longest_s, sync_average_s, distance_kb,
        estimate_kb, lsn, redo_lsn";
    let nulls = stats.split(',').map(|c| format!("{} = NULL", c.trim())).collect::<Vec<_>>().join(", ");
    conn.execute_batch(&format!(
        "INSERT INTO checkpoint(cluster_id, kind, pid, pairable, complete_event_id, completed_at, {stats})
           SELECT cluster_id, kind, pid, 1, complete_event_id, completed_at, {stats} FROM checkpoint WHERE id = {row_b};
         UPDATE checkpoint SET complete_event_id = {complete_a} WHERE id = {row_b};
         UPDATE checkpoint SET complete_event_id = NULL, completed_at = NULL, pairable = 1, {nulls} WHERE id = {row_a};"
    ))
    .unwrap();
    assert_ne!(complete_a, complete_b);
}

// ---------------------------------------------------------------- the read position

/// The read position only moves forward (so that a reader behind another
/// never takes it back), except for a file rewritten in place shorter than
/// what was read: that one is read again from the start, and the store must
/// remember it. Otherwise, once the file grew past the old position again,
/// reading would resume there and skip everything written in between.
#[test]
fn a_log_rewritten_shorter_is_read_from_its_start_again() {
    let ws = Workspace::new();
    let log = ws.dir("log").join("postgresql.log");
    let db = ws.db();
    let data = fixture(LOG);
    let l = lines(&data);
    fs::write(&log, &data).unwrap();
    ok(import_cmd(&db, &log));
    let offset = || query_i64(&db, "SELECT read_to FROM source");
    assert_eq!(offset(), data.len() as i64);

    // Rewritten in place with its first 60 lines only: same first bytes, shorter.
    let short = concat(&l[..entry_boundary(&l, 60)]);
    fs::write(&log, &short).unwrap();
    let report = ok(import_cmd(&db, &log));
    assert!(report.contains(&format!("shrank below byte {}", data.len())), "{report}");
    assert_eq!(new_in_store(&report), 0, "the same lines at the same places: {report}");
    assert_eq!(offset(), short.len() as i64, "the store remembers the new, shorter position");

    // Another server's log follows, growing the file well past the old end.
    let more = fixture("16-stderr-default-std");
    assert!(short.len() + more.len() > data.len());
    let alone = ws.path().join("more.log");
    fs::write(&alone, &more).unwrap();
    let events_in_more = new_in_store(&ok(import_cmd(&ws.path().join("alone.db"), &alone)));
    append(&log, &more);
    let report = ok(import_cmd(&db, &log));
    assert_eq!(new_in_store(&report), events_in_more, "every event of the appended log: {report}");
    assert_eq!(offset(), (short.len() + more.len()) as i64);
}
