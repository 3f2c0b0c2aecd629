//! End-to-end for the daemon: `walwatch run` follows a real PostgreSQL 15
//! server's log directory from before the server starts, through many
//! size-based rotations (log_rotation_size = 64kB under pgbench with
//! statement logging), WAL- and time-triggered checkpoints, a manual
//! CHECKPOINT, a forged `RAISE LOG` look-alike and a clean shutdown.
//!
//! Two daemons run side by side on the same server, each with its own store:
//! one configured with a `logs` glob on the log directory, one with
//! `data_directory` (following `$PGDATA/current_logfiles`). Once each has
//! caught up (`walwatch status`: every file read to its end) it must stop on
//! SIGTERM with exit 0 within 5 s, and its store must equal a fresh
//! `walwatch import` of the final files (summary and checkpoints JSON, the
//! cluster name aside) and an independent, deliberately dumb count of the
//! log lines.
//!
//! Needs PostgreSQL server binaries (Debian: `apt-get install postgresql`);
//! fails, never skips, without them. Takes 40–60 s.
//! Set WALWATCH_E2E_KEEP_LOGS=<dir> to keep a copy of the server log.

use crate::support;

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::truth::{assert_complete_numbers, Truth};
use support::{describe, int, keep_logs_if_asked, ts_key, walwatch, walwatch_json, PgCluster, StopMode};

/// How long pgbench runs while the daemons follow.
const PGBENCH_SECONDS: &str = "25";
/// pgbench's rate limit (transactions/s): with log_statement = 'all' about
/// 250 kB/s of log, so a 64 kB file is full several times a second, while the
/// (debug-built) daemons keep up easily on a small machine.
const PGBENCH_RATE: &str = "300";
/// SIGTERM to exit: the daemon commits and stops within this.
const STOP_WITHIN: Duration = Duration::from_secs(5);
/// After the server stopped, the daemons must have read everything within this.
const CATCH_UP_WITHIN: Duration = Duration::from_secs(60);

/// log_statement = 'all' is what makes the log big enough to rotate often;
/// the default timestamped log_filename gives each rotation its own file
/// (rotations within one second append to the same name, which is fine),
/// and names sort chronologically. log_timezone = UTC so log and walwatch
/// timestamps compare as strings.
const SETTINGS: &[(&str, &str)] = &[
    ("logging_collector", "on"),
    ("log_destination", "'stderr'"),
    ("log_filename", "'postgresql-%Y-%m-%d_%H%M%S.log'"),
    ("log_rotation_size", "'64kB'"),
    ("log_rotation_age", "0"),
    ("log_statement", "'all'"),
    ("log_checkpoints", "on"),
    ("max_wal_size", "'32MB'"),
    ("min_wal_size", "'32MB'"),
    ("checkpoint_timeout", "'30s'"),
    ("log_line_prefix", "'%m [%p] %q%u@%d '"),
    ("log_timezone", "'UTC'"),
    ("lc_messages", "'C'"),
    ("shared_buffers", "'32MB'"),
];

#[test]
fn daemon_follows_a_rotating_postgres_log_and_matches_import() {
    let mut pg = PgCluster::init(SETTINGS);
    let work = tempfile::Builder::new().prefix("walwatch-daemon-").tempdir().expect("tempdir");
    let log_glob = format!("{}/*.log", pg.log_dir().display());
    let data_dir = format!("{}", pg.data_dir().display());
    // Both start before the server: the log directory is still empty and
    // current_logfiles does not exist yet.
    let mut daemons = vec![
        Daemon::start(work.path(), "glob", &format!("logs = [{}]", toml_str(&log_glob))),
        Daemon::start(work.path(), "datadir", &format!("data_directory = {}", toml_str(&data_dir))),
    ];
    for d in &mut daemons {
        d.wait_running();
    }

    pg.start();
    pg.pgbench(&["-i", "-s", "5", "-q"]);
    for d in &mut daemons {
        d.assert_alive("after pgbench -i");
    }
    pg.pgbench(&["-c", "4", "-j", "2", "-R", PGBENCH_RATE, "-T", PGBENCH_SECONDS]);
    // A session's look-alike (not statement-logged: log_statement is off for
    // it), which every store must count as rejected, not as a checkpoint.
    pg.psql("SET log_statement = 'none';\nDO $$ BEGIN RAISE LOG 'checkpoint starting: wal'; END $$;\n");
    pg.psql("CHECKPOINT;");
    for d in &mut daemons {
        d.assert_alive("under load");
    }
    pg.stop(StopMode::Fast);

    let logs = pg.log_files();
    keep_logs_if_asked(&logs);
    let truth = Truth::from_files(&logs);
    println!("{} log files, {} bytes; independent truth: {truth:?}", logs.len(), total_size(&logs));
    assert!(logs.len() >= 3, "log_rotation_size did not rotate: only {} file(s) {logs:?}", logs.len());
    assert!(truth.wal >= 1, "no WAL-triggered checkpoint in the log: {truth:?}");
    assert_eq!(truth.shutdown, 1, "exactly one shutdown checkpoint: {truth:?}");
    // Its trigger is `manual` unless a WAL or time request was pending and
    // merged into it ("immediate force wait wal"): only the flags are certain.
    assert!(truth.immediate_force >= 1, "our CHECKPOINT was not logged: {truth:?}");
    assert_eq!(truth.starts, truth.completes, "clean stop: every start completed: {truth:?}");
    assert_eq!(truth.forged_records, 1, "the RAISE LOG look-alike must be in the log: {truth:?}");
    assert!(
        truth.start_files().len() >= 2,
        "checkpoint lines ended up in only {:?}: rotation did not happen under the daemon",
        truth.start_files()
    );

    for d in &mut daemons {
        d.wait_caught_up(&logs);
    }
    for d in &mut daemons {
        d.stop();
        let status = d.status();
        assert_eq!(status["daemon"]["running"], false, "[{}] status after a clean exit: {status}", d.name);
    }

    // The reference: a fresh import of the final files, in chronological order.
    let fresh = work.path().join("fresh.db");
    let out = walwatch()
        .args(["import", "--db"])
        .arg(&fresh)
        .args(["--cluster", "fresh"])
        .args(&logs)
        .output()
        .expect("spawn walwatch import");
    assert!(out.status.success(), "walwatch import: {}", describe(&out));
    let want_summary = query(&fresh, "fresh", "summary");
    let want_cps = without_cluster(query(&fresh, "fresh", "checkpoints"));
    check_against_truth(&want_summary, &want_cps, &truth, "import");

    for d in &daemons {
        let summary = query(&d.db, &d.name, "summary");
        let cps = without_cluster(query(&d.db, &d.name, "checkpoints"));
        check_against_truth(&summary, &cps, &truth, &d.name);
        assert_eq!(summary, want_summary, "[{}] summary differs from a fresh import", d.name);
        assert_eq!(cps.len(), want_cps.len(), "[{}] number of checkpoints differs from a fresh import", d.name);
        let mut paced = 0;
        for (i, (got, want)) in cps.iter().zip(&want_cps).enumerate() {
            // The pace depends on what the store knows of checkpoint_timeout:
            // the daemon that reads the data directory's conf knows the
            // server's 30 s (x PostgreSQL 15's 0.9); the others do not.
            let (mut got, mut want) = (got.clone(), want.clone());
            let pace = got.as_object_mut().unwrap().remove("pace_ratio").and_then(|p| p.as_f64());
            want.as_object_mut().unwrap().remove("pace_ratio");
            assert_eq!(got, want, "[{}] checkpoints[{i}] differs from a fresh import", d.name);
            if let Some(pace) = pace {
                let write_s = got["write_s"].as_f64().unwrap();
                assert_eq!(pace, (27.0 / write_s * 10.0).round() / 10.0, "[{}] checkpoints[{i}]: {got}", d.name);
                paced += 1;
            }
        }
        if d.name == "datadir" {
            assert!(paced > 0, "[datadir] no checkpoint paced although the conf names checkpoint_timeout");
        }
        println!("[{}] store equals the fresh import: {summary}", d.name);
    }
}

// ---------------------------------------------------------------------------
// The daemon under test
// ---------------------------------------------------------------------------

struct Daemon {
    name: String,
    db: PathBuf,
    stderr: PathBuf,
    child: Child,
    exited: Option<ExitStatus>,
}

impl Daemon {
    /// `walwatch run` with a one-cluster config; its output goes to a file.
    fn start(dir: &Path, name: &str, source: &str) -> Daemon {
        let db = dir.join(format!("{name}.db"));
        let config = dir.join(format!("{name}.toml"));
        let text = format!(
            "[store]\npath = {}\n\n[daemon]\npoll_interval = \"1s\"\n\n[[cluster]]\nname = {}\n{source}\n",
            toml_str(&db.to_string_lossy()),
            toml_str(name)
        );
        fs::write(&config, &text).expect("write config");
        let stderr = dir.join(format!("{name}.stderr"));
        let child = walwatch()
            .args(["run", "--config"])
            .arg(&config)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(File::create(dir.join(format!("{name}.stdout"))).expect("create stdout file"))
            .stderr(File::create(&stderr).expect("create stderr file"))
            .spawn()
            .expect("spawn walwatch run");
        Daemon { name: name.into(), db, stderr, child, exited: None }
    }

    fn output(&self) -> String {
        fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    fn assert_alive(&mut self, when: &str) {
        if let Some(st) = self.child.try_wait().expect("try_wait") {
            self.exited = Some(st);
            panic!("[{}] walwatch run exited {when}: {st}\n--- its stderr ---\n{}", self.name, self.output());
        }
    }

    /// `status` prints its report whatever it found: exit 4 a problem (a
    /// glob matching no file before PostgreSQL writes its log), 5 the
    /// daemon not running, 6 behind (catching up on a large log).
    fn status(&self) -> Value {
        let db = self.db.to_string_lossy();
        let out = walwatch().args(["status", "--db", &db, "--format", "json"]).output().expect("spawn");
        assert!(matches!(out.status.code(), Some(0 | 4 | 5 | 6)), "status: {}", describe(&out));
        serde_json::from_slice(&out.stdout).expect("status JSON")
    }

    /// Until the store exists and status sees the heartbeat.
    fn wait_running(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            self.assert_alive("at startup");
            if self.db.exists() {
                let db = self.db.to_string_lossy().into_owned();
                let out = walwatch().args(["status", "--db", &db, "--format", "json"]).output().expect("spawn");
                if matches!(out.status.code(), Some(0 | 4 | 6)) {
                    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
                    if v["daemon"]["running"] == true {
                        return;
                    }
                }
            }
            assert!(Instant::now() < deadline, "[{}] daemon not running after 20 s:\n{}", self.name, self.output());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Until every log file is in status with lag 0 (read to its end).
    fn wait_caught_up(&mut self, logs: &[PathBuf]) {
        let start = Instant::now();
        loop {
            self.assert_alive("while catching up");
            let status = self.status();
            let files = &status["clusters"][0]["files"];
            // An empty file (a rotation just before the server stopped) has
            // nothing to read, and walwatch records a file once it has bytes
            // to identify it by: it is not in status, and need not be.
            let lagging: Vec<String> = logs
                .iter()
                .filter(|log| fs::metadata(log).map_or(true, |m| m.len() > 0))
                .filter_map(|log| {
                    let path = log.to_string_lossy();
                    let entry = files.as_array().into_iter().flatten().find(|f| f["path"] == *path);
                    match entry {
                        Some(f) if f["lag_bytes"] == 0 => None,
                        Some(f) => Some(format!("{path}: lag {}", f["lag_bytes"])),
                        None => Some(format!("{path}: not in status")),
                    }
                })
                .collect();
            if lagging.is_empty() {
                assert_eq!(status["daemon"]["running"], true, "[{}] caught up but not running: {status}", self.name);
                println!("[{}] caught up {:.1} s after the server stopped", self.name, start.elapsed().as_secs_f64());
                return;
            }
            assert!(
                start.elapsed() < CATCH_UP_WITHIN,
                "[{}] not caught up {CATCH_UP_WITHIN:?} after the server stopped: {lagging:?}\nstatus: {status}\n--- stderr ---\n{}",
                self.name,
                self.output()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// SIGTERM: must exit 0 within STOP_WITHIN.
    fn stop(&mut self) {
        let pid = self.child.id().to_string();
        let st = Command::new("kill").args(["-TERM", &pid]).status().expect("spawn kill");
        assert!(st.success(), "kill -TERM {pid}");
        let sent = Instant::now();
        let status = loop {
            if let Some(st) = self.child.try_wait().expect("try_wait") {
                break st;
            }
            assert!(
                sent.elapsed() < STOP_WITHIN,
                "[{}] still running {STOP_WITHIN:?} after SIGTERM\n--- stderr ---\n{}",
                self.name,
                self.output()
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        self.exited = Some(status);
        println!("[{}] exited {status} {:.2} s after SIGTERM", self.name, sent.elapsed().as_secs_f64());
        let output = self.output();
        let tail: Vec<&str> = output.lines().rev().take(6).collect::<Vec<_>>().into_iter().rev().collect();
        println!("[{}] last lines of its stderr:\n{}", self.name, tail.join("\n"));
        assert!(
            status.success(),
            "[{}] exit status after SIGTERM: {status}\n--- stderr ---\n{}",
            self.name,
            self.output()
        );
    }
}

impl Drop for Daemon {
    /// Never leave a daemon behind when a test fails.
    fn drop(&mut self) {
        if self.exited.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn toml_str(s: &str) -> String {
    serde_json::to_string(s).expect("string to JSON") // a JSON string is a valid TOML basic string here
}

fn query(db: &Path, cluster: &str, what: &str) -> Value {
    let db = db.to_string_lossy();
    walwatch_json(&[what, "--db", &db, "--cluster", cluster, "--format", "json"])
}

/// The checkpoints array with every object's `cluster` removed (the names differ by design).
fn without_cluster(v: Value) -> Vec<Value> {
    let Value::Array(list) = v else { panic!("checkpoints JSON is not an array: {v}") };
    list.into_iter()
        .map(|mut cp| {
            let obj = cp.as_object_mut().unwrap_or_else(|| panic!("checkpoint is not an object"));
            assert!(obj.remove("cluster").is_some(), "checkpoint without a cluster key");
            cp
        })
        .collect()
}

fn check_against_truth(summary: &Value, cps: &[Value], t: &Truth, who: &str) {
    for (path, want) in t.expected_summary() {
        assert_eq!(int(summary, path), want, "[{who}] summary {path}: {summary}");
    }
    let unpaired: Vec<&Value> =
        cps.iter().filter(|cp| cp["started_at"].is_null() || cp["completed_at"].is_null()).collect();
    assert_eq!(
        cps.len() as i64,
        t.starts,
        "[{who}] one checkpoint row per logged start; rows left unpaired: {unpaired:#?}"
    );
    let mut started: Vec<String> =
        cps.iter().map(|cp| ts_key(cp["started_at"].as_str().expect("started_at string"))).collect();
    started.sort();
    let mut logged: Vec<String> = t.start_list.iter().map(|st| st.ts_key.clone()).collect();
    logged.sort();
    assert_eq!(started, logged, "[{who}] checkpoint start times differ from the log");
    for (i, cp) in cps.iter().enumerate() {
        assert!(cp["completed_at"].is_string(), "[{who}] checkpoints[{i}] never completed: {cp}");
    }
    // Every number of every complete line, read from the raw line.
    assert_complete_numbers(cps, t, who);
}

fn total_size(files: &[PathBuf]) -> u64 {
    files.iter().map(|f| fs::metadata(f).map(|m| m.len()).unwrap_or(0)).sum()
}
