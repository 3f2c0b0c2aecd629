//! Driving the real `walwatch run` daemon from a test: a scratch directory
//! with a config, the child process and the signals it is sent, the store
//! read back (through the CLI, plus the event table itself), a reference
//! store made by `walwatch import` of the same content, and waits with a
//! deadline instead of fixed sleeps.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

/// The daemon's poll interval in every test config.
pub const POLL_INTERVAL: &str = "200ms";
/// How long a wait for the daemon may take before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(10);
/// How long the daemon may take to exit after SIGTERM.
pub const EXIT_DEADLINE: Duration = Duration::from_secs(5);

pub fn walwatch() -> Command {
    Command::new(env!("CARGO_BIN_EXE_walwatch"))
}

/// stdout of a walwatch command, or why it failed.
pub fn run(args: &[&str]) -> Result<String, String> {
    let out = walwatch().args(args).output().map_err(|e| format!("walwatch {args:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "walwatch {args:?}: {}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| e.to_string())
}

fn json(args: &[&str]) -> Result<Value, String> {
    let text = run(args)?;
    serde_json::from_str(&text).map_err(|e| format!("walwatch {args:?}: {e}: {text}"))
}

fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

// ---------------------------------------------------------------- content

/// The (first) log file of a fixture run, e.g. `15-stderr-default-std`.
pub fn fixture(run: &str) -> Vec<u8> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(run).join("log");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    fs::read(&files[0]).unwrap()
}

/// The lines of `data`, each with its newline.
pub fn lines(data: &[u8]) -> Vec<&[u8]> {
    data.split_inclusive(|&b| b == b'\n').collect()
}

pub fn concat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// Whether `line` begins a new log entry, i.e. is not one of the lines that
/// PostgreSQL writes together with the entry before it (a TAB continuation
/// line, or DETAIL/HINT/CONTEXT/STATEMENT). Tests that are about rotation
/// cut files only at such lines, so that what they check is the rotation and
/// not how an entry split over two reads is framed (that has its own test).
pub fn starts_entry(line: &[u8]) -> bool {
    let text = String::from_utf8_lossy(line);
    !text.starts_with('\t')
        && !["DETAIL:  ", "HINT:  ", "CONTEXT:  ", "STATEMENT:  ", "QUERY:  ", "LOCATION:  "]
            .iter()
            .any(|k| text.contains(&format!(" {k}")))
}

/// The first index at or after `i` where a new entry begins (a safe cut).
pub fn entry_boundary(lines: &[&[u8]], i: usize) -> usize {
    (i..lines.len()).find(|&j| starts_entry(lines[j])).unwrap_or(lines.len())
}

/// `data` with every `from` replaced by `to` (same length: a shifted date).
pub fn replace(data: &[u8], from: &str, to: &str) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    String::from_utf8(data.to_vec()).unwrap().replace(from, to).into_bytes()
}

/// Appends `bytes` the way a log writer does (O_APPEND, one write).
pub fn append(path: &Path, bytes: &[u8]) {
    let mut f = OpenOptions::new().create(true).append(true).open(path).unwrap();
    f.write_all(bytes).unwrap();
}

/// A small deterministic PRNG (xorshift64*): the same sequence every run.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }
}

// ---------------------------------------------------------------- the store

/// Everything a store says about one cluster, in a form two stores can be
/// compared by: the summary, the checkpoint rows without their cluster name,
/// and every stored event (kind, time, pid, place in its file, data).
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub summary: Value,
    pub checkpoints: Vec<Value>,
    pub events: Vec<StoredEvent>,
    /// A reference's raw files, for the independent counter: a store that
    /// equals the reference must also say what the counter finds in them
    /// (a bug shared by the daemon and `import` passes the first check, not
    /// this one). None for a store read back.
    pub tally: Option<Tally>,
}

/// Raw log files and how the counter (tests/support/truth.rs) reads them.
#[derive(Debug, Clone, PartialEq)]
pub struct Tally {
    pub files: Vec<PathBuf>,
    pub prefix: String,
    /// `lc_messages` of the server that wrote them ("C", "de_DE.UTF-8", …).
    pub lc_messages: String,
}

impl Tally {
    pub fn layout(&self) -> super::truth::Layout {
        let heads = super::truth::Heads::for_lc_messages(&self.lc_messages);
        super::truth::Layout { prefix: self.prefix.clone(), syslog: false, heads }
    }

    /// The counter over these files agrees with `cluster` in `db`.
    pub fn check(&self, db: &Path, cluster: &str, what: &str) -> super::truth::Truth {
        assert_matches_truth(db, cluster, &self.files, &self.layout(), what)
    }
}

/// One row of the event table, without the ids that differ between stores.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct StoredEvent {
    pub at: i64,
    pub offset: i64,
    pub kind: String,
    pub nth: i64,
    pub line: i64,
    pub pid: Option<i64>,
    pub data: String,
}

impl std::fmt::Display for StoredEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let StoredEvent { at, offset, kind, nth, line, pid, data } = self;
        write!(f, "{kind}#{nth} at={at} offset={offset} line={line} pid={pid:?} {data}")
    }
}

impl Snapshot {
    pub fn read(db: &Path, cluster: &str) -> Result<Snapshot, String> {
        let base = ["--db", s(db), "--cluster", cluster, "--format", "json"];
        let summary = json(&[&["summary"][..], &base].concat())?;
        let checkpoints = match json(&[&["checkpoints"][..], &base].concat())? {
            Value::Array(rows) => rows
                .into_iter()
                .map(|mut row| {
                    row.as_object_mut().map(|o| o.remove("cluster"));
                    row
                })
                .collect(),
            other => return Err(format!("checkpoints: not an array: {other}")),
        };
        Ok(Snapshot { summary, checkpoints, events: events(db, cluster)?, tally: None })
    }

    /// The same with every event's data (its kind-specific fields) blanked.
    pub fn without_event_data(mut self) -> Snapshot {
        self.events.iter_mut().for_each(|e| e.data.clear());
        self
    }
}

/// The events and checkpoint lines of one cluster (the view `line`:
/// migrations/0022_point_lines.sql). `summary` and `checkpoints` do not show
/// every event (a too-frequent warning's HINT, server starts, …), so the
/// stored events themselves are compared too; offsets and line numbers are
/// those inside the file the event was read from, the same for the daemon
/// and for an import of the same content.
fn events(db: &Path, cluster: &str) -> Result<Vec<StoredEvent>, String> {
    use rusqlite::{Connection, OpenFlags};
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(|e| e.to_string())?;
    conn.busy_timeout(Duration::from_secs(5)).map_err(|e| e.to_string())?;
    let mut stmt = conn
        .prepare(
            "SELECT e.at, e.offset, e.kind, e.nth, e.line, e.pid, e.data FROM line e
             JOIN cluster c ON c.id = e.cluster_id WHERE c.name = ?1",
        )
        .map_err(|e| e.to_string())?;
    let mut rows: Vec<StoredEvent> = stmt
        .query_map([cluster], |r| {
            Ok(StoredEvent {
                at: r.get(0)?,
                offset: r.get(1)?,
                kind: r.get(2)?,
                nth: r.get(3)?,
                line: r.get(4)?,
                pid: r.get(5)?,
                data: r.get(6)?,
            })
        })
        .and_then(|rows| rows.collect())
        .map_err(|e| e.to_string())?;
    rows.sort();
    Ok(rows)
}

/// What differs between two snapshots, shortly (empty when equal).
pub fn differences(got: &Snapshot, want: &Snapshot) -> String {
    let mut out = String::new();
    if got.summary != want.summary {
        out += &format!("summary:\n  daemon {}\n  import {}\n", got.summary, want.summary);
    }
    if got.checkpoints != want.checkpoints {
        out += &format!("checkpoints: daemon {} rows, import {}\n", got.checkpoints.len(), want.checkpoints.len());
        let n = got.checkpoints.len().max(want.checkpoints.len());
        for (shown, i) in (0..n).filter(|&i| got.checkpoints.get(i) != want.checkpoints.get(i)).enumerate() {
            if shown == 3 {
                out += "  …\n";
                break;
            }
            out += &format!(
                "  row {i}:\n    daemon {}\n    import {}\n",
                got.checkpoints.get(i).map_or("-".into(), Value::to_string),
                want.checkpoints.get(i).map_or("-".into(), Value::to_string)
            );
        }
    }
    if got.events != want.events {
        let only = |a: &[StoredEvent], b: &[StoredEvent]| -> Vec<String> {
            a.iter().filter(|e| !b.contains(e)).take(5).map(ToString::to_string).collect()
        };
        out += &format!(
            "events: daemon {}, import {}\n  only in the daemon's store: {:#?}\n  only in the import: {:#?}\n",
            got.events.len(),
            want.events.len(),
            only(&got.events, &want.events),
            only(&want.events, &got.events)
        );
    }
    out
}

/// `walwatch status --format json`, printed in full whether it found
/// something wrong (exit status 4, 5 or 6, see [`status_exit`]) or not.
pub fn status(db: &Path) -> Result<Value, String> {
    let args = ["status", "--db", s(db), "--format", "json"];
    let out = walwatch().args(args).output().map_err(|e| format!("walwatch {args:?}: {e}"))?;
    if !matches!(out.status.code(), Some(0 | STATUS_PROBLEMS | STATUS_DAEMON_DOWN | STATUS_BEHIND)) {
        return Err(format!("walwatch {args:?}: {}\n{}", out.status, String::from_utf8_lossy(&out.stderr)));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("walwatch {args:?}: {e}"))
}

/// The exit status of `walwatch status` when a cluster has a problem.
pub const STATUS_PROBLEMS: i32 = 4;
/// … when a daemon ran on the store and is not running now.
pub const STATUS_DAEMON_DOWN: i32 = 5;
/// … when a followed file has a megabyte or more not read yet.
pub const STATUS_BEHIND: i32 = 6;

/// The exit status of `walwatch status`.
pub fn status_exit(db: &Path) -> Option<i32> {
    walwatch().args(["status", "--db", s(db)]).output().unwrap().status.code()
}

/// The files status lists for `cluster`.
pub fn status_files(db: &Path, cluster: &str) -> Result<Vec<Value>, String> {
    let st = status(db)?;
    let clusters = st["clusters"].as_array().cloned().unwrap_or_default();
    let c = clusters.iter().find(|c| c["name"] == cluster).ok_or(format!("no cluster {cluster} in status: {st}"))?;
    Ok(c["files"].as_array().cloned().unwrap_or_default())
}

// ---------------------------------------------------------------- scratch space

/// A scratch directory: log directories, a config, the daemon's store, and
/// reference stores.
pub struct Workspace {
    tmp: TempDir,
}

impl Default for Workspace {
    fn default() -> Self {
        Self::new()
    }
}

impl Workspace {
    pub fn new() -> Workspace {
        Workspace { tmp: tempfile::tempdir().unwrap() }
    }

    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// `<tmp>/<name>`, created.
    pub fn dir(&self, name: &str) -> PathBuf {
        let d = self.path().join(name);
        fs::create_dir_all(&d).unwrap();
        d
    }

    pub fn db(&self) -> PathBuf {
        self.path().join("w.db")
    }

    pub fn config_path(&self) -> PathBuf {
        self.path().join("walwatch.toml")
    }

    /// Writes the config: the store, a 200 ms poll, and `(name, glob)` clusters.
    pub fn write_config(&self, clusters: &[(&str, &str)]) {
        self.write_config_with(clusters, "");
    }

    /// Like [`Workspace::write_config`], with extra `[daemon]` lines.
    pub fn write_config_with(&self, clusters: &[(&str, &str)], daemon_extra: &str) {
        let clusters: Vec<(&str, &str, &str)> = clusters.iter().map(|(name, glob)| (*name, *glob, "")).collect();
        self.write_config_of(&clusters, daemon_extra);
    }

    /// Like [`Workspace::write_config_with`], with `(name, glob, extra
    /// [[cluster]] lines)` clusters (e.g. `start_at = "end"\n`).
    pub fn write_config_of(&self, clusters: &[(&str, &str, &str)], daemon_extra: &str) {
        let mut text = format!(
            "[store]\npath = {:?}\n\n[daemon]\npoll_interval = {POLL_INTERVAL:?}\n{daemon_extra}",
            s(&self.db())
        );
        for (name, glob, extra) in clusters {
            text += &format!("\n[[cluster]]\nname = {name:?}\nlogs = [{glob:?}]\n{extra}");
        }
        fs::write(self.config_path(), text).unwrap();
    }

    /// Starts `walwatch run --config <config>`.
    pub fn start(&self) -> Daemon {
        Daemon::start(&self.config_path(), &self.db(), &self.path().join("daemon.log"))
    }

    /// A fresh `walwatch import` of `files` (their contents, in this order)
    /// into a store of its own, read back as cluster `cluster`, with the
    /// files for the independent counter: written by a server with
    /// `log_line_prefix = '%m [%p] %q%u@%d '` (which also reads `%m [%p] `)
    /// and lc_messages C, as stderr, csvlog or jsonlog.
    pub fn reference(&self, cluster: &str, files: &[&[u8]]) -> Snapshot {
        self.reference_as(cluster, files, "%m [%p] %q%u@%d ", "C")
    }

    /// [`Workspace::reference`] without the counter's check, for logs whose
    /// forgeries the counter's simple rule takes for real lines (a client's
    /// lines inside a failed login's user name): the test counts the real
    /// lines its own way.
    pub fn reference_uncounted(&self, cluster: &str, files: &[&[u8]]) -> Snapshot {
        Snapshot { tally: None, ..self.reference(cluster, files) }
    }

    /// [`Workspace::reference`] of logs written with another
    /// `log_line_prefix` or `lc_messages`.
    pub fn reference_as(&self, cluster: &str, files: &[&[u8]], prefix: &str, lc_messages: &str) -> Snapshot {
        let n = fs::read_dir(self.path()).unwrap().count();
        let dir = self.dir(&format!("reference-{n}"));
        let db = dir.join("ref.db");
        let mut raw = Vec::new();
        for (i, content) in files.iter().enumerate() {
            let file = dir.join(format!("{i}.log"));
            fs::write(&file, content).unwrap();
            run(&["import", "--db", s(&db), "--cluster", cluster, s(&file)]).unwrap();
            // The counter tells the formats apart by the file's extension.
            let copy = dir.join(format!("{i}.{}", extension_of(content)));
            fs::write(&copy, content).unwrap();
            raw.push(copy);
        }
        let tally = Tally { files: raw, prefix: prefix.into(), lc_messages: lc_messages.into() };
        Snapshot { tally: Some(tally), ..Snapshot::read(&db, cluster).unwrap() }
    }
}

/// The extension the counter reads `content` by: "json" for jsonlog (a
/// JSON object per line), "csv" for csvlog (a timestamp, then a comma),
/// "log" for stderr.
fn extension_of(content: &[u8]) -> &'static str {
    let first = String::from_utf8_lossy(content.split(|b| *b == b'\n').next().unwrap_or_default()).into_owned();
    // "2026-11-22 08:04:20.708 UTC,,,21752,…": the zone runs into the next field.
    let zone = first.split(' ').nth(2).unwrap_or_default();
    match first.chars().next() {
        Some('{') => "json",
        _ if zone.contains(',') => "csv",
        _ => "log",
    }
}

// ---------------------------------------------------------------- the daemon

/// The walwatch binary run as `user` with its primary group and `groups`
/// (comma-separated; None: the user's own) through setpriv. Needs root.
pub fn as_user(user: &str, groups: Option<&str>) -> Command {
    let gid = Command::new("id").args(["-g", user]).output().unwrap();
    let gid = String::from_utf8_lossy(&gid.stdout).trim().to_string();
    let mut cmd = Command::new("setpriv");
    cmd.args([format!("--reuid={user}"), format!("--regid={gid}")]);
    match groups {
        Some(g) => cmd.arg(format!("--groups={g}")),
        None => cmd.arg("--init-groups"),
    };
    cmd.arg(env!("CARGO_BIN_EXE_walwatch"));
    cmd
}

/// A running `walwatch run`; killed (SIGKILL) when dropped, so a failed
/// test leaves no process behind.
pub struct Daemon {
    child: Child,
    db: PathBuf,
    log: PathBuf,
}

impl Daemon {
    /// Starts the daemon with its stderr appended to `log`.
    pub fn start(config: &Path, db: &Path, log: &Path) -> Daemon {
        Daemon::start_with(walwatch(), config, db, log)
    }

    /// [`Daemon::start`] as `user` (with its own groups, through setpriv,
    /// as tests/support runs PostgreSQL): a daemon that may not read what
    /// the root running the tests may. Needs root.
    pub fn start_as(user: &str, config: &Path, db: &Path, log: &Path) -> Daemon {
        Daemon::start_with(as_user(user, None), config, db, log)
    }

    /// [`Daemon::start_as`] with the supplementary groups `groups` only (a
    /// service's `SupplementaryGroups=`).
    pub fn start_as_in(user: &str, groups: &str, config: &Path, db: &Path, log: &Path) -> Daemon {
        Daemon::start_with(as_user(user, Some(groups)), config, db, log)
    }

    /// [`Daemon::start`] with the open-file limit set to `nofile` (soft and
    /// hard, through util-linux's prlimit, which execs the daemon: its pid
    /// is the daemon's).
    pub fn start_limited(config: &Path, db: &Path, log: &Path, nofile: u64) -> Daemon {
        let mut cmd = Command::new("prlimit");
        cmd.arg(format!("--nofile={nofile}:{nofile}")).arg("--").arg(env!("CARGO_BIN_EXE_walwatch"));
        Daemon::start_with(cmd, config, db, log)
    }

    fn start_with(mut cmd: Command, config: &Path, db: &Path, log: &Path) -> Daemon {
        let err = OpenOptions::new().create(true).append(true).open(log).unwrap();
        let child = cmd
            .args(["run", "--config", s(config)])
            // Log to stderr (our file), never to a journal or a service manager
            // that the test runner itself may be running under.
            .env_remove("JOURNAL_STREAM")
            .env_remove("NOTIFY_SOCKET")
            .env_remove("WATCHDOG_USEC")
            .env_remove("WATCHDOG_PID")
            .env_remove("STATE_DIRECTORY")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .unwrap();
        Daemon { child, db: db.to_path_buf(), log: log.to_path_buf() }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `sig` (TERM, HUP, STOP, CONT, KILL) with kill(1).
    pub fn signal(&self, sig: &str) {
        let st = Command::new("kill").args(["-s", sig, &self.pid().to_string()]).status().unwrap();
        assert!(st.success(), "kill -s {sig} {}", self.pid());
    }

    /// The daemon's log so far (for failure messages).
    pub fn log(&self) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(40).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    }

    /// Exit status, if it has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().unwrap()
    }

    /// Polls `probe` every 50 ms until it is Ok, failing the test with the
    /// last reason (and the daemon's log) after [`DEADLINE`] or as soon as
    /// the daemon has died.
    pub fn wait_until<T>(&mut self, what: &str, mut probe: impl FnMut() -> Result<T, String>) -> T {
        let start = Instant::now();
        loop {
            let last = match probe() {
                Ok(v) => return v,
                Err(e) => e,
            };
            if let Some(st) = self.exited() {
                panic!(
                    "waiting for {what}: the daemon exited ({st}); last: {last}\n--- daemon log ---\n{}",
                    self.log()
                );
            }
            if start.elapsed() > DEADLINE {
                panic!("waiting for {what}: not after {DEADLINE:?}; last: {last}\n--- daemon log ---\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until `walwatch status` says the daemon runs, with this pid.
    pub fn wait_running(&mut self) {
        let (db, pid) = (self.db.clone(), self.pid());
        self.wait_until("status running=true", || {
            let st = status(&db)?;
            match (&st["daemon"]["running"], &st["daemon"]["pid"]) {
                (Value::Bool(true), p) if *p == pid => Ok(()),
                _ => Err(format!("status: {}", st["daemon"])),
            }
        });
    }

    /// Waits until the store has read `path` up to byte `offset` (as
    /// `walwatch status` reports it).
    pub fn wait_read_to(&mut self, cluster: &str, path: &Path, offset: u64) {
        let db = self.db.clone();
        self.wait_until(&format!("{} read to byte {offset}", path.display()), || {
            let files = status_files(&db, cluster)?;
            files
                .iter()
                .find(|f| f["path"] == s(path) && f["offset"] == offset)
                .map(drop)
                .ok_or(format!("status files: {files:?}"))
        });
    }

    /// Waits until the store's `cluster` equals `want`, then checks that
    /// status shows every file still on disk with lag 0.
    pub fn wait_equal(&mut self, cluster: &str, want: &Snapshot) {
        self.wait_equal_by(cluster, want, |s| s);
    }

    /// [`Daemon::wait_equal`] comparing events without their data.
    pub fn wait_equal_ignoring_event_data(&mut self, cluster: &str, want: &Snapshot) {
        self.wait_equal_by(cluster, want, Snapshot::without_event_data);
    }

    fn wait_equal_by(&mut self, cluster: &str, want: &Snapshot, view: impl Fn(Snapshot) -> Snapshot) {
        let db = self.db.clone();
        let want = view(want.clone());
        self.wait_until(&format!("cluster {cluster} to equal a fresh import"), || {
            let got = view(Snapshot::read(&db, cluster)?);
            match differences(&got, &want) {
                d if d.is_empty() => Ok(()),
                d => Err(format!("\n{d}")),
            }
        });
        if let Some(tally) = &want.tally {
            tally.check(&db, cluster, &format!("cluster {cluster} caught up"));
        }
        let files = status_files(&self.db, cluster).unwrap();
        assert!(!files.is_empty(), "status lists no file for {cluster}");
        for f in &files {
            assert!(f["size"].is_null() || f["lag_bytes"] == 0, "caught up, yet status shows a lag: {f}");
        }
    }

    /// SIGTERM: the daemon must exit 0 within [`EXIT_DEADLINE`], and status
    /// must then say it is not running.
    pub fn terminate(&mut self) -> Duration {
        let start = Instant::now();
        self.signal("TERM");
        let st = loop {
            if let Some(st) = self.exited() {
                break st;
            }
            if start.elapsed() > EXIT_DEADLINE {
                panic!("no exit {EXIT_DEADLINE:?} after SIGTERM\n--- daemon log ---\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let took = start.elapsed();
        assert!(st.success(), "exit after SIGTERM: {st}\n--- daemon log ---\n{}", self.log());
        let after = status(&self.db).unwrap();
        assert_eq!(after["daemon"]["running"], false, "status after a clean exit: {after}");
        took
    }

    /// The end of every scenario: the store equals `want`, and still does
    /// after a clean stop (nothing stored twice by the last polls).
    pub fn finish(&mut self, cluster: &str, want: &Snapshot) {
        self.wait_equal(cluster, want);
        self.terminate();
        assert_same(&Snapshot::read(&self.db, cluster).unwrap(), want, cluster);
        if let Some(tally) = &want.tally {
            tally.check(&self.db, cluster, &format!("cluster {cluster} after the stop"));
        }
    }

    /// SIGKILL, reaped.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        self.child.wait().unwrap();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

pub fn assert_same(got: &Snapshot, want: &Snapshot, what: &str) {
    let d = differences(got, want);
    assert!(d.is_empty(), "{what}: the daemon's store differs from a fresh import:\n{d}");
}

// ---------------------------------------------------------------- systemd's side

/// What systemd would receive from the daemon: a unix datagram socket bound
/// by the test, passed as NOTIFY_SOCKET, with every datagram kept and the
/// moment it arrived.
pub struct NotifySocket {
    pub path: PathBuf,
    received: std::sync::Arc<std::sync::Mutex<Vec<(Instant, String)>>>,
}

impl NotifySocket {
    pub fn bind(path: &Path) -> NotifySocket {
        let socket = std::os::unix::net::UnixDatagram::bind(path).unwrap();
        let received = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = received.clone();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 4096];
            // Ends with the test process; the socket file goes with its TempDir.
            while let Ok(n) = socket.recv(&mut buf) {
                let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                sink.lock().unwrap().push((Instant::now(), text));
            }
        });
        NotifySocket { path: path.to_path_buf(), received }
    }

    /// Every datagram so far, with its arrival time.
    pub fn messages(&self) -> Vec<(Instant, String)> {
        self.received.lock().unwrap().clone()
    }

    /// Arrival times of the datagrams that carry `line` (e.g. "READY=1").
    pub fn times_of(&self, line: &str) -> Vec<Instant> {
        self.messages().into_iter().filter(|(_, m)| m.lines().any(|l| l == line)).map(|(t, _)| t).collect()
    }
}

impl Daemon {
    /// Starts the daemon as systemd would with Type=notify and WatchdogSec:
    /// NOTIFY_SOCKET and WATCHDOG_USEC set, plus `env` (e.g. RUST_LOG).
    pub fn start_notified(
        config: &Path,
        db: &Path,
        log: &Path,
        notify: &NotifySocket,
        watchdog: Duration,
        env: &[(&str, &str)],
    ) -> Daemon {
        let err = OpenOptions::new().create(true).append(true).open(log).unwrap();
        let mut cmd = walwatch();
        cmd.args(["run", "--config", s(config)])
            .env_remove("JOURNAL_STREAM")
            .env_remove("WATCHDOG_PID")
            .env_remove("STATE_DIRECTORY")
            .env("NOTIFY_SOCKET", &notify.path)
            .env("WATCHDOG_USEC", watchdog.as_micros().to_string())
            .env("RUST_LOG", "info");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(err).spawn().unwrap();
        Daemon { child, db: db.to_path_buf(), log: log.to_path_buf() }
    }

    /// The daemon's whole log (stderr) so far.
    pub fn full_log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// How many file descriptors the daemon holds now (/proc/PID/fd).
    pub fn open_fds(&self) -> usize {
        fs::read_dir(format!("/proc/{}/fd", self.pid())).map(|d| d.count()).unwrap_or(0)
    }

    /// SIGTERM, then the time until the process exited and its status
    /// (None: still running after `limit`; it is then killed by Drop).
    pub fn terminate_within(&mut self, limit: Duration) -> (Duration, Option<ExitStatus>) {
        let start = Instant::now();
        self.signal("TERM");
        while start.elapsed() <= limit {
            if let Some(st) = self.exited() {
                return (start.elapsed(), Some(st));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        (start.elapsed(), None)
    }
}

/// Rows of `table` in a store (read-only), e.g. `count(db, "line", "kind = 'checkpoint_start'")`.
pub fn count(db: &Path, table: &str, condition: &str) -> i64 {
    let conn = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    conn.query_row(&format!("SELECT count(*) FROM {table} WHERE {condition}"), [], |r| r.get(0)).unwrap()
}

/// The oracle that is not walwatch: the daemon's store for `cluster` says
/// what the dumb counter (tests/support/truth.rs) finds in the raw files —
/// every summary count, rejected included, and one checkpoint row per logged
/// start at the logged time (UTC logs). Returns the counter.
pub fn assert_matches_truth(
    db: &Path,
    cluster: &str,
    files: &[PathBuf],
    layout: &super::truth::Layout,
    what: &str,
) -> super::truth::Truth {
    let t = super::truth::Truth::read(files, layout);
    let json = |cmd: &str| -> Value {
        let out = walwatch()
            .args([cmd, "--db", db.to_str().unwrap(), "--cluster", cluster, "--format", "json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "walwatch {cmd}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let summary = json("summary");
    for (path, want) in t.expected_summary() {
        let got = path.split('.').fold(&summary, |v, k| &v[k]);
        assert_eq!(got.as_i64(), Some(want), "[{what}] summary {path} vs the counter ({}): {summary}", t.brief());
    }
    let cps = json("checkpoints");
    let mut started: Vec<String> = cps
        .as_array()
        .unwrap()
        .iter()
        .filter(|cp| cp["kind"] == "checkpoint")
        .filter_map(|cp| cp["started_at"].as_str().map(super::ts_key))
        .collect();
    started.sort();
    let mut logged: Vec<String> = t.start_list.iter().map(|s| s.ts_key.clone()).collect();
    logged.sort();
    assert_eq!(started, logged, "[{what}] checkpoint start times: store (left) vs the raw log (right)");
    eprintln!("[{what}] store = independent counter: {}", t.brief());
    t
}
