//! Test support: a throwaway PostgreSQL cluster (`PgCluster`) and a
//! `Command` for the walwatch binary under test.
//!
//! Every integration test that says `mod support;` compiles this file, and
//! not all of them use every helper.
#![allow(dead_code)]

pub mod central;
pub mod daemon;
pub mod journald;
pub mod smtp;
pub mod syslog;
pub mod truth;
pub mod vector;

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

/// The walwatch binary built by cargo for this test run.
pub fn walwatch() -> Command {
    Command::new(env!("CARGO_BIN_EXE_walwatch"))
}

/// The settings of a server the trust tests attack: `prefix` (quoted, as
/// in postgresql.conf) and `destination`, every checkpoint logged in
/// English and UTC, WAL-triggered checkpoints within a few MB, no time-driven
/// one, no rotation.
pub fn attacked_server<'a>(prefix: &'a str, destination: &'a str) -> Vec<(&'static str, &'a str)> {
    vec![
        ("log_line_prefix", prefix),
        ("log_checkpoints", "on"),
        ("logging_collector", "on"),
        ("log_destination", destination),
        ("log_timezone", "'UTC'"),
        ("lc_messages", "'C'"),
        ("max_wal_size", "'32MB'"),
        ("min_wal_size", "'32MB'"),
        ("checkpoint_timeout", "'1h'"),
        ("shared_buffers", "'16MB'"),
        ("log_rotation_age", "0"),
        ("log_rotation_size", "0"),
    ]
}

/// How `pg_ctl stop` should shut the server down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopMode {
    /// Clean shutdown: writes a shutdown checkpoint (logged).
    Fast,
    /// Crash-like: no shutdown checkpoint; next start runs recovery.
    Immediate,
}

impl StopMode {
    fn as_arg(self) -> &'static str {
        match self {
            StopMode::Fast => "fast",
            StopMode::Immediate => "immediate",
        }
    }
}

/// A PostgreSQL cluster living in its own temporary directory:
/// `<tmp>/data` (PGDATA), `<tmp>/sock` (unix socket), `<tmp>/log`
/// (`log_directory`), `<tmp>/pg_ctl.log` (stderr before the collector runs).
pub struct PgCluster {
    dir: TempDir,
    /// PGDATA: `<tmp>/data`, or a directory the caller provides
    /// ([`PgCluster::init_with_data_dir`], e.g. on a filesystem of its own).
    data: PathBuf,
    bindir: PathBuf,
    port: u16,
    /// `Some("postgres")` when we are root: the server refuses to run as root.
    run_as: Option<String>,
    running: bool,
}

/// Superuser name given to initdb, so psql works the same as root or not.
const SUPERUSER: &str = "postgres";

impl PgCluster {
    /// initdb a fresh cluster and append `settings` (name, raw value as it
    /// would appear in postgresql.conf, e.g. `("log_line_prefix", "'%m '")`)
    /// after our own defaults, so the caller's settings win. Not started.
    pub fn init(settings: &[(&str, &str)]) -> PgCluster {
        PgCluster::init_inner(settings, None)
    }

    /// [`PgCluster::init`] with PGDATA at `data`, an empty directory (created
    /// if missing, given to the server user); the socket and log directories
    /// stay in the cluster's own temporary directory. The caller keeps `data`
    /// (e.g. a mounted filesystem) alive until this cluster is dropped.
    pub fn init_with_data_dir(settings: &[(&str, &str)], data: &Path) -> PgCluster {
        PgCluster::init_inner(settings, Some(data.to_path_buf()))
    }

    fn init_inner(settings: &[(&str, &str)], data: Option<PathBuf>) -> PgCluster {
        let bindir = find_bindir();
        let run_as = server_user();
        let dir = make_tempdir(run_as.as_deref());
        let port = free_port();
        let data = data.unwrap_or_else(|| dir.path().join("data"));
        let pg = PgCluster { dir, data, bindir, port, run_as, running: false };
        for sub in ["sock", "log"] {
            pg.mkdir_owned(&pg.path().join(sub));
        }
        if pg.data != pg.path().join("data") {
            pg.mkdir_owned(&pg.data);
        }
        pg.initdb();
        pg.write_conf(settings);
        pg
    }

    /// The temporary directory holding everything (safe for other test files).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn data_dir(&self) -> PathBuf {
        self.data.clone()
    }

    pub fn socket_dir(&self) -> PathBuf {
        self.path().join("sock")
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Where the logging collector writes (`log_directory`).
    pub fn log_dir(&self) -> PathBuf {
        self.path().join("log")
    }

    /// The collector's log files, sorted by name; with the default
    /// `log_filename` (timestamped) that is also chronological order.
    pub fn log_files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = fs::read_dir(self.log_dir())
            .expect("read log_dir")
            .map(|e| e.expect("log_dir entry").path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        files
    }

    /// Start and wait until the server accepts connections.
    pub fn start(&mut self) {
        let cmd = self.pg_cmd("pg_ctl");
        self.start_with(cmd);
    }

    /// [`PgCluster::start`] with the server in the cgroup whose `cgroup.procs`
    /// file is `procs` (v1 or v2): pg_ctl joins it before it runs, so the
    /// postmaster and every process it forks are in it. Needs root.
    pub fn start_in_cgroup(&mut self, procs: &Path) {
        let pg_ctl = self.pg_cmd("pg_ctl");
        let mut cmd = Command::new("sh");
        // $0 is the procs file, "$@" the command pg_cmd built (setpriv … pg_ctl).
        cmd.args(["-c", "echo $$ > \"$0\" && exec \"$@\""]).arg(procs);
        cmd.arg(pg_ctl.get_program()).args(pg_ctl.get_args());
        cmd.current_dir(self.path()).env("HOME", self.path()).stdin(Stdio::null());
        cmd.env("LC_ALL", "C").env_remove("PGDATA");
        self.start_with(cmd);
    }

    fn start_with(&mut self, mut pg_ctl: Command) {
        let log = self.path().join("pg_ctl.log");
        let data = self.data_dir();
        let out = pg_ctl
            .args(["start", "-w", "-t", "60", "-D"])
            .arg(&data)
            .arg("-l")
            .arg(&log)
            .output()
            .expect("spawn pg_ctl start");
        if !out.status.success() {
            let early = fs::read_to_string(&log).unwrap_or_default();
            panic!("pg_ctl start failed: {}\n--- pg_ctl.log ---\n{early}", describe(&out));
        }
        self.running = true;
    }

    /// Stop the server; `Fast` is a clean shutdown with a shutdown checkpoint.
    pub fn stop(&mut self, mode: StopMode) {
        let out = self.stop_output(mode);
        assert!(out.status.success(), "pg_ctl stop -m {}: {}", mode.as_arg(), describe(&out));
        self.running = false;
    }

    fn stop_output(&self, mode: StopMode) -> Output {
        self.pg_cmd("pg_ctl")
            .args(["stop", "-w", "-t", "60", "-m", mode.as_arg(), "-D"])
            .arg(self.data_dir())
            .output()
            .expect("spawn pg_ctl stop")
    }

    /// Run SQL through psql (fed on stdin, so a multi-statement script is sent
    /// statement by statement, e.g. a `SET` takes effect for the next line).
    /// Returns stdout in unaligned, tuples-only form; panics on any error.
    /// `SHOW name`, trimmed.
    pub fn show(&self, name: &str) -> String {
        self.psql(&format!("SHOW {name};")).trim().to_string()
    }

    pub fn psql(&self, sql: &str) -> String {
        let mut cmd = self.client_cmd("psql");
        cmd.args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", "postgres", "-f", "-"]);
        let out = run_with_stdin(cmd, sql);
        assert!(out.status.success(), "psql failed on\n{sql}\n{}", describe(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Run pgbench against database `postgres` with `args`; returns stdout.
    pub fn pgbench(&self, args: &[&str]) -> String {
        let out = self.client_cmd("pgbench").args(args).arg("postgres").output().expect("spawn pgbench");
        assert!(out.status.success(), "pgbench {args:?}: {}", describe(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// pgbench against database `postgres` in the background, its output discarded.
    pub fn pgbench_spawn(&self, args: &[&str]) -> std::process::Child {
        let mut cmd = self.client_cmd("pgbench");
        cmd.args(args).arg("postgres").stdout(Stdio::null()).stderr(Stdio::null());
        cmd.spawn().expect("spawn pgbench")
    }

    /// A crash: SIGKILL to the postmaster and every process it forked, by
    /// their ids, then wait until all are gone (a surviving backend would
    /// keep the shared memory, and the next start would refuse to run).
    pub fn kill9(&mut self) {
        let text = fs::read_to_string(self.data_dir().join("postmaster.pid")).expect("postmaster.pid");
        let postmaster: i32 = text.lines().next().and_then(|l| l.trim().parse().ok()).expect("pid in postmaster.pid");
        let children: Vec<i32> = fs::read_dir("/proc")
            .expect("read /proc")
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| parent_of(*pid) == Some(postmaster))
            .collect();
        let all: Vec<i32> = std::iter::once(postmaster).chain(children).collect();
        for pid in &all {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while all.iter().any(|pid| Path::new(&format!("/proc/{pid}")).exists()) {
            assert!(Instant::now() < deadline, "server processes still alive after kill -9: {all:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
        self.running = false;
    }

    /// A login over TCP with a wrong password, as a client that never logs
    /// in sends it: `user` and `database` go into the startup packet as they
    /// are (line breaks included). Needs a password rule for 127.0.0.1
    /// ([`PgCluster::require_passwords`]). Panics if the login succeeds.
    pub fn failed_login(&self, user: &str, database: &str) {
        let out = self
            .client_cmd("psql")
            .args(["-X", "-w", "-h", "127.0.0.1", "-c", "select 1"])
            .env("PGUSER", user)
            .env("PGDATABASE", database)
            .env("PGPASSWORD", "not-the-password")
            .output()
            .expect("spawn psql");
        assert!(!out.status.success(), "the login with user {user:?} succeeded: {}", describe(&out));
    }

    /// [`PgCluster::failed_login`] with names that need not be UTF-8.
    pub fn failed_login_bytes(&self, user: &[u8], database: &[u8]) {
        use std::os::unix::ffi::OsStrExt;
        let out = self
            .client_cmd("psql")
            .args(["-X", "-w", "-h", "127.0.0.1", "-c", "select 1"])
            .env("PGUSER", std::ffi::OsStr::from_bytes(user))
            .env("PGDATABASE", std::ffi::OsStr::from_bytes(database))
            .env("PGPASSWORD", "not-the-password")
            .output()
            .expect("spawn psql");
        assert!(!out.status.success(), "the login succeeded: {}", describe(&out));
    }

    /// Passwords (scram-sha-256) for TCP logins from 127.0.0.1, ahead of
    /// initdb's trust rules; local socket logins stay trusted.
    pub fn require_passwords(&self) {
        let path = self.data_dir().join("pg_hba.conf");
        let text = fs::read_to_string(&path).expect("read pg_hba.conf");
        fs::write(&path, format!("host all all 127.0.0.1/32 scram-sha-256\n{text}")).expect("write pg_hba.conf");
        self.psql("ALTER ROLE postgres PASSWORD 'secret'");
        self.reload();
    }

    /// Re-read the configuration files (SIGHUP to the postmaster).
    pub fn reload(&self) {
        let out =
            self.pg_cmd("pg_ctl").args(["reload", "-D"]).arg(self.data_dir()).output().expect("spawn pg_ctl reload");
        assert!(out.status.success(), "pg_ctl reload: {}", describe(&out));
    }

    /// e.g. 150004 for 15.4; picks pg_stat_bgwriter vs pg_stat_checkpointer.
    pub fn server_version_num(&self) -> u32 {
        let v = self.psql("SHOW server_version_num");
        v.trim().parse().unwrap_or_else(|_| panic!("server_version_num: {v:?}"))
    }

    /// Poll `pred` on the concatenated log until true or `timeout` passes:
    /// the logging collector writes asynchronously, so a line may show up a
    /// little after the statement that caused it returned.
    pub fn wait_for_log(&self, timeout: Duration, pred: impl Fn(&str) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let text: String = self
                .log_files()
                .iter()
                .map(|f| String::from_utf8_lossy(&fs::read(f).unwrap_or_default()).into_owned())
                .collect();
            if pred(&text) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    // ---- internals -------------------------------------------------------

    fn initdb(&self) {
        let out = self
            .pg_cmd("initdb")
            .args(["-A", "trust", "-U", SUPERUSER, "-E", "UTF8", "--locale=C", "--no-sync", "-D"])
            .arg(self.data_dir())
            .output()
            .expect("spawn initdb");
        assert!(out.status.success(), "initdb failed: {}", describe(&out));
    }

    /// Our defaults first (socket, port, log dir), then the caller's.
    fn write_conf(&self, settings: &[(&str, &str)]) {
        let mut conf = String::from("\n# --- added by tests/support ---\n");
        let q = |p: PathBuf| format!("'{}'", p.display());
        conf += &format!("port = {}\n", self.port);
        conf += "listen_addresses = '127.0.0.1'\n";
        conf += &format!("unix_socket_directories = {}\n", q(self.socket_dir()));
        conf += &format!("log_directory = {}\n", q(self.log_dir()));
        for (name, value) in settings {
            conf += &format!("{name} = {value}\n");
        }
        let path = self.data_dir().join("postgresql.conf");
        let mut text = fs::read_to_string(&path).expect("read postgresql.conf");
        text += &conf;
        fs::write(&path, text).expect("write postgresql.conf");
    }

    /// A server-side binary (initdb, pg_ctl, …) run as the server user, with
    /// cwd and HOME in our temp dir (root's home is unreadable to postgres).
    fn pg_cmd(&self, prog: &str) -> Command {
        let exe = self.bindir.join(prog);
        let mut cmd = match &self.run_as {
            Some(user) => {
                let mut c = Command::new("setpriv");
                c.args([format!("--reuid={user}"), format!("--regid={user}")]);
                c.arg("--init-groups").arg(exe);
                c
            }
            None => Command::new(exe),
        };
        cmd.current_dir(self.path()).env("HOME", self.path()).stdin(Stdio::null());
        cmd.env("LC_ALL", "C").env_remove("PGDATA");
        cmd
    }

    /// A client binary (psql, pgbench) pointed at this cluster's socket.
    fn client_cmd(&self, prog: &str) -> Command {
        let mut cmd = self.pg_cmd(prog);
        cmd.env("PGHOST", self.socket_dir())
            .env("PGPORT", self.port.to_string())
            .env("PGUSER", SUPERUSER)
            .env_remove("PGDATABASE")
            .env_remove("PGSERVICE")
            .env_remove("PGPASSWORD")
            .env_remove("PGOPTIONS");
        cmd
    }

    fn mkdir_owned(&self, dir: &Path) {
        fs::create_dir_all(dir).expect("mkdir");
        if let Some(user) = &self.run_as {
            chown(user, dir);
        }
    }
}

impl Drop for PgCluster {
    /// Never leave a server behind, even when a test panics: immediate mode
    /// is fastest and we throw the data away anyway. TempDir removes the dir.
    fn drop(&mut self) {
        if self.running {
            let _ = self.stop_output(StopMode::Immediate);
        }
    }
}

/// The parent process id of `pid` (field 4 of /proc/PID/stat, after the
/// command name in parentheses).
fn parent_of(pid: i32) -> Option<i32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

/// Server binaries: $PG_BINDIR, `pg_config --bindir`, the highest
/// /usr/lib/postgresql/N/bin, then PATH. Missing → fail loudly, never skip.
fn find_bindir() -> PathBuf {
    let has_server = |d: &Path| ["initdb", "pg_ctl", "postgres"].iter().all(|b| d.join(b).is_file());
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Ok(d) = std::env::var("PG_BINDIR") {
        candidates.push(d.into());
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        candidates.push(String::from_utf8_lossy(&out.stdout).trim().into());
    }
    candidates.extend(debian_bindirs());
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path));
    }
    candidates.into_iter().find(|d| has_server(d)).unwrap_or_else(|| {
        panic!(
            "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found via $PG_BINDIR, \
             pg_config, /usr/lib/postgresql/*/bin or PATH. Install the `postgresql` package \
             (e.g. `apt-get install -y postgresql postgresql-contrib`); .ci/run does this."
        )
    })
}

/// Debian's versioned dirs, highest major version first.
fn debian_bindirs() -> Vec<PathBuf> {
    let mut dirs: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let major = e.file_name().to_str()?.parse::<u32>().ok()?;
            Some((major, e.path().join("bin")))
        })
        .collect();
    dirs.sort_by_key(|(major, _)| std::cmp::Reverse(*major));
    dirs.into_iter().map(|(_, d)| d).collect()
}

/// PostgreSQL refuses to run as root; as root we use the `postgres` user.
fn server_user() -> Option<String> {
    let uid = Command::new("id").arg("-u").output().expect("run id -u");
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return None;
    }
    let exists = Command::new("id").arg("postgres").output().map(|o| o.status.success());
    assert!(
        exists.unwrap_or(false),
        "running as root but there is no `postgres` user to run the server as; \
         install the `postgresql` package or `useradd --system postgres`"
    );
    Some("postgres".into())
}

/// A temp dir the server user can write (chowned to it when we are root).
fn make_tempdir(run_as: Option<&str>) -> TempDir {
    let dir = tempfile::Builder::new().prefix("walwatch-pg-").tempdir().expect("create temp dir");
    if let Some(user) = run_as {
        chown(user, dir.path());
        let ok = Command::new("setpriv")
            .args([format!("--reuid={user}"), format!("--regid={user}"), "--init-groups".into()])
            .args(["test", "-w"])
            .arg(dir.path())
            .status()
            .map(|s| s.success());
        assert!(
            ok.unwrap_or(false),
            "user {user} cannot write {}: is TMPDIR inside a private directory?",
            dir.path().display()
        );
    }
    dir
}

fn chown(user: &str, path: &Path) {
    let st = Command::new("chown").arg(format!("{user}:")).arg(path).status().expect("run chown");
    assert!(st.success(), "chown {user} {}", path.display());
}

/// Ask the kernel for a free port, then release it for the server. Racy in
/// theory, but each test's cluster gets a distinct port in practice.
fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    l.local_addr().expect("local_addr").port()
}

fn run_with_stdin(mut cmd: Command, input: &str) -> Output {
    use std::io::Write;
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("write stdin");
    child.wait_with_output().expect("wait")
}

/// Exit status plus both streams, for assertion messages.
pub fn describe(out: &Output) -> String {
    format!(
        "{}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

// ---- Shared by the real-PostgreSQL tests (their independent checks) ----

/// A comparable UTC key "YYYYMMDDhhmmssfff" from either the log's
/// "2026-01-01 00:00:00.123 UTC" or RFC 3339 "2026-01-01T00:00:00.123+00:00".
pub fn ts_key(s: &str) -> String {
    let s = s.trim();
    let bad = || panic!("unrecognised timestamp {s:?}");
    let (head, mut rest) = s.split_at_checked(19).unwrap_or_else(bad);
    let mut key: String = head.chars().filter(char::is_ascii_digit).collect();
    if key.len() != 14 {
        bad();
    }
    let mut frac = String::new();
    if let Some(r) = rest.strip_prefix('.') {
        frac = r.chars().take_while(char::is_ascii_digit).collect();
        rest = &r[frac.len()..];
    }
    key += &format!("{frac:0<3}")[..3];
    if !matches!(rest.trim(), "" | "Z" | "UTC" | "+00:00" | "+00") {
        panic!("timestamp {s:?} is not UTC");
    }
    key
}

pub fn walwatch_json(args: &[&str]) -> Value {
    let out = walwatch().args(args).output().expect("spawn walwatch");
    assert!(out.status.success(), "walwatch {args:?}: {}", describe(&out));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("walwatch {args:?}: not JSON ({e}): {}", describe(&out)))
}

pub fn int(v: &Value, path: &str) -> i64 {
    let cur = path.split('.').fold(v, |cur, part| &cur[part]);
    cur.as_i64().unwrap_or_else(|| panic!("{path} is not an integer in {v}"))
}

pub fn keep_logs_if_asked(logs: &[PathBuf]) {
    let Some(dir) = std::env::var_os("WALWATCH_E2E_KEEP_LOGS") else { return };
    fs::create_dir_all(&dir).expect("create WALWATCH_E2E_KEEP_LOGS dir");
    for f in logs {
        fs::copy(f, PathBuf::from(&dir).join(f.file_name().unwrap())).expect("copy log");
    }
}

/// The real fixture runs in tests/fixtures (each with its truth.json), sorted.
pub fn fixture_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut dirs: Vec<PathBuf> =
        fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).filter(|p| p.join("truth.json").exists()).collect();
    dirs.sort();
    assert!(dirs.len() >= 20, "expected the real fixtures in {root:?}");
    dirs
}

/// A fixture run's log files, sorted by name (= by time).
pub fn fixture_logs(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir.join("log")).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

/// The last line of the PostgreSQL configuration file `path` that sets
/// `name` (1-based), as the test wrote it.
pub fn conf_line_of(path: &Path, name: &str) -> usize {
    let text = fs::read_to_string(path).unwrap();
    let found = text.lines().enumerate().filter(|(_, l)| {
        let l = l.trim_start();
        l.strip_prefix(name).is_some_and(|rest| rest.starts_with([' ', '=', '\t']))
    });
    found.last().map(|(i, _)| i + 1).unwrap_or_else(|| panic!("{name} not set in {}", path.display()))
}
