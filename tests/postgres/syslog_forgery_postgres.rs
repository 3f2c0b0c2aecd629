//! Local users forging checkpoints through syslog. A real PostgreSQL 15
//! logs to syslog — through a real rsyslogd, or a real systemd-journald —
//! and, at the same time, to stderr files through its logging collector:
//! only the server writes those, so walwatch's import of them is the truth
//! the syslog side is held to. While it runs, an unprivileged user
//! (`nobody`) sends checkpoint lines with `logger`, as anyone on the machine
//! can:
//!
//! * three WAL checkpoints (start and complete lines) under the
//!   checkpointer's pid: `logger -t postgres --id=<checkpointer pid>`, the
//!   same pid in `%p`;
//! * one under the forger's own pid, written into `%p` as well (`exec
//!   logger` from a shell that knows its pid): nothing in the line itself
//!   tells it from the server's.
//!
//! rsyslog with `SysSock.UsePIDFromSystem="on"` writes the sender's real pid:
//! the first three are refused (their `%p` is not their sender's), the
//! fourth remains (a syslog file carries no uid). Without the setting rsyslog
//! writes the claimed pid: all four are stored, and `walwatch doctor` says
//! so with the line to add. journald records `_PID` and `_UID` itself: all
//! four are refused, the last by its uid.
//!
//! Needs root (the syslog daemon must own /dev/log, the only socket
//! syslog(3) writes to), rsyslogd, systemd-journald and the PostgreSQL
//! server binaries; fails, never skips, without them.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use support::journald::Journald;
use support::syslog::Rsyslog;
use support::{describe, int, walwatch, walwatch_json, PgCluster, StopMode};

const SETTINGS: &[(&str, &str)] = &[
    ("log_destination", "'stderr,syslog'"),
    ("logging_collector", "on"),
    ("syslog_facility", "'LOCAL0'"),
    ("syslog_ident", "'postgres'"),
    ("log_line_prefix", "'%m [%p] %q%u@%d '"),
    ("lc_messages", "'C'"),
    ("log_timezone", "'UTC'"),
    ("log_checkpoints", "on"),
];

/// The postmaster's last message: once the syslog daemon has it, it has all.
const LAST_LINE: &str = "database system is shut down";

/// Forged under the checkpointer's pid: WAL checkpoints, start and complete.
const FORGED_AS_CHECKPOINTER: usize = 3;

const COMPLETE: &str = "checkpoint complete: wrote 25 buffers (0.6%); 0 WAL file(s) added, 1 removed, 0 recycled; write=0.192 s, sync=0.082 s, total=0.344 s; sync files=26, longest=0.078 s, average=0.004 s; distance=11499 kB, estimate=11499 kB";

/// The server's checkpoints (its `CHECKPOINT`s and the shutdown one), each
/// followed by forgeries while it is idle; then a clean stop.
fn run_server_and_forger(pg: &mut PgCluster) {
    pg.start();
    pg.psql("CREATE TABLE t AS SELECT g FROM generate_series(1, 10000) g; CHECKPOINT;");
    let checkpointer = pg.psql("SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer';");
    let checkpointer: u32 =
        checkpointer.trim().parse().unwrap_or_else(|_| panic!("checkpointer pid: {checkpointer:?}"));
    for i in 0..FORGED_AS_CHECKPOINTER {
        let seq = 9001 + 2 * i;
        forge_as(checkpointer, &format!("[{seq}-1] {} [{checkpointer}] LOG:  checkpoint starting: wal", now()));
        forge_as(checkpointer, &format!("[{}-1] {} [{checkpointer}] LOG:  {COMPLETE}", seq + 1, now()));
        pg.psql("CHECKPOINT;");
    }
    forge_under_own_pid();
    pg.psql("CHECKPOINT;");
    pg.stop(StopMode::Fast);
}

/// The time as the server's `%m` prints it (log_timezone = UTC).
fn now() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%d %H:%M:%S%.3f UTC").to_string()
}

/// `logger` as nobody, claiming `pid` in the tag.
fn forge_as(pid: u32, message: &str) {
    let out = Command::new("runuser")
        .args(["-u", "nobody", "--", "logger", "-t", "postgres", "-p", "local0.info"])
        .arg(format!("--id={pid}"))
        .arg(message)
        .output()
        .expect("run logger as nobody");
    assert!(out.status.success(), "logger: {}", describe(&out));
}

/// A start and a complete line from one `logger` process, whose pid the
/// shell knows before it execs it: the tag's pid and `%p` agree.
fn forge_under_own_pid() {
    let script = format!(
        r#"f=$(mktemp) && printf '%s\n' "[9101-1] {t} [$$] LOG:  checkpoint starting: wal" "[9102-1] {t} [$$] LOG:  {COMPLETE}" > "$f" && exec logger --id -t postgres -p local0.info -f "$f""#,
        t = now()
    );
    let out =
        Command::new("runuser").args(["-u", "nobody", "--", "sh", "-c", &script]).output().expect("run sh as nobody");
    assert!(out.status.success(), "logger -f: {}", describe(&out));
}

fn import(db: &Path, format: &str, files: &[PathBuf]) -> String {
    let out = walwatch()
        .args(["import", "--db"])
        .arg(db)
        .args(["--cluster", "c", "--format", format])
        .args(files)
        .output()
        .expect("spawn walwatch import");
    assert!(out.status.success(), "walwatch import --format {format}: {}", describe(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// (started_at, trigger) of every checkpoint, in time order.
fn checkpoints(db: &Path) -> Vec<Checkpoint> {
    let v = walwatch_json(&["checkpoints", "--db", db.to_str().unwrap(), "--cluster", "c", "--format", "json"]);
    let list = v.as_array().unwrap_or_else(|| panic!("not an array: {v}"));
    let field = |cp: &Value, k: &str| cp[k].as_str().unwrap_or("-").to_string();
    list.iter().map(|cp| (field(cp, "started_at"), field(cp, "trigger"))).collect()
}

fn rejected(db: &Path) -> i64 {
    int(&walwatch_json(&["summary", "--db", db.to_str().unwrap(), "--cluster", "c", "--format", "json"]), "rejected")
}

/// The server's checkpoints (from its stderr files) against those read
/// from the syslog side: the syslog side holds every one of them, and
/// besides them exactly `extra` WAL checkpoints.
fn assert_real_ones_and(syslog: &[Checkpoint], truth: &[Checkpoint], extra: usize) {
    let missing: Vec<_> = truth.iter().filter(|cp| !syslog.contains(cp)).collect();
    assert!(missing.is_empty(), "real checkpoints missing from the syslog side: {missing:?}\nsyslog: {syslog:?}");
    let more: Vec<_> = syslog.iter().filter(|cp| !truth.contains(cp)).collect();
    assert_eq!(more.len(), extra, "checkpoints besides the server's: {more:?}");
    assert!(more.iter().all(|(_, trigger)| trigger == "wal"), "{more:?}");
}

/// The syslog finding of `walwatch doctor` for the cluster and rsyslog config.
fn doctor_syslog(pg: &PgCluster, conf: &Path) -> Value {
    let out = walwatch()
        .args(["doctor", "--format", "json", "--data-directory"])
        .arg(pg.data_dir())
        .arg("--rsyslog-conf")
        .arg(conf)
        .output()
        .expect("spawn walwatch doctor");
    let all: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", describe(&out)));
    all.into_iter().find(|f| f["check"] == "syslog").unwrap_or_else(|| panic!("no syslog finding: {}", describe(&out)))
}

/// (started_at, trigger) of a checkpoint.
type Checkpoint = (String, String);

/// What one run through a real rsyslogd gave.
struct Run {
    /// The syslog file's checkpoints and rejections.
    syslog: Vec<Checkpoint>,
    rejected: i64,
    /// The server's stderr files' checkpoints.
    truth: Vec<Checkpoint>,
    /// doctor's syslog finding.
    doctor: Value,
}

/// One run through a real rsyslogd.
fn through_rsyslog(kernel_pid: bool) -> Run {
    let work = tempfile::Builder::new().prefix("walwatch-forgery-").tempdir().expect("tempdir");
    let rsyslog = Rsyslog::start_kernel_pid(&work.path().join("rsyslog"), kernel_pid);
    let mut pg = PgCluster::init(SETTINGS);
    run_server_and_forger(&mut pg);
    let flushed = rsyslog.wait_for(Duration::from_secs(20), |t| t.contains(LAST_LINE));
    assert!(flushed, "rsyslogd never wrote {LAST_LINE:?}:\n{}", rsyslog.diagnostics());
    // The forgeries are in the file, under the pid rsyslog was given.
    let text = rsyslog.text();
    let forged = text.lines().filter(|l| l.contains("]: [90") || l.contains("]: [91")).count();
    assert_eq!(forged, 2 * FORGED_AS_CHECKPOINTER + 2, "forged lines in the syslog file:\n{text}");
    let (syslog_db, stderr_db) = (work.path().join("syslog.db"), work.path().join("stderr.db"));
    println!("syslog: {}", import(&syslog_db, "syslog", &[rsyslog.log_file()]));
    println!("stderr: {}", import(&stderr_db, "stderr", &pg.log_files()));
    let finding = doctor_syslog(&pg, &rsyslog.conf());
    assert_eq!(rejected(&stderr_db), 0, "the server's own files hold no forgery");
    Run {
        syslog: checkpoints(&syslog_db),
        rejected: rejected(&syslog_db),
        truth: checkpoints(&stderr_db),
        doctor: finding,
    }
}

#[test]
fn rsyslog_with_the_kernels_pid_refuses_lines_sent_under_the_checkpointers_pid() {
    let Run { syslog, rejected, truth, doctor } = through_rsyslog(true);
    println!("syslog side: {} checkpoints, {rejected} rejected; truth: {} checkpoints", syslog.len(), truth.len());
    assert_eq!(
        truth.len(),
        6,
        "the server's: one after the table, one per forgery round, one more, shutdown: {truth:?}"
    );
    assert_eq!(rejected, 2 * FORGED_AS_CHECKPOINTER as i64, "each forged line under the checkpointer's pid");
    // What remains (README: Trusting what the log says): the forger's own pid.
    assert_real_ones_and(&syslog, &truth, 1);
    assert_eq!(doctor["status"], "ok", "{doctor}");
    assert!(
        doctor["message"]
            .as_str()
            .unwrap()
            .starts_with("rsyslog writes the pid the kernel gives for each sender (imuxsock at "),
        "{doctor}"
    );
}

#[test]
fn rsyslog_without_it_stores_them_and_doctor_gives_the_setting() {
    let Run { syslog, rejected, truth, doctor } = through_rsyslog(false);
    println!("syslog side: {} checkpoints, {rejected} rejected; truth: {} checkpoints", syslog.len(), truth.len());
    assert_eq!(truth.len(), 6, "{truth:?}");
    assert_eq!(rejected, 0);
    assert_real_ones_and(&syslog, &truth, FORGED_AS_CHECKPOINTER + 1);
    assert_eq!(doctor["status"], "warning", "{doctor}");
    assert!(
        doctor["message"]
            .as_str()
            .unwrap()
            .ends_with("loads imuxsock without the kernel's pid: rsyslog writes the pid the sender claims"),
        "{doctor}"
    );
    assert!(
        doctor["fix"].as_str().unwrap().contains("`module(load=\"imuxsock\" SysSock.UsePIDFromSystem=\"on\")`"),
        "{doctor}"
    );
}

/// journald runs here (a namespace of its own): the export walwatch reads is
/// journalctl's, of the server's real syslog(3) messages and the forger's.
#[test]
fn journald_refuses_every_forgery_by_the_senders_pid_and_uid() {
    let work = tempfile::Builder::new().prefix("walwatch-journald-").tempdir().expect("tempdir");
    let journal = Journald::start(&work.path().join("journald"));
    let mut pg = PgCluster::init(SETTINGS);
    run_server_and_forger(&mut pg);
    let flushed = journal.wait_for(Duration::from_secs(20), |t| t.contains(LAST_LINE));
    assert!(flushed, "journald never got {LAST_LINE:?}:\n{}", journal.diagnostics());
    let export = work.path().join("export.json");
    std::fs::write(&export, journal.export()).expect("write the export");
    // The forgeries are in the export: SYSLOG_PID as claimed, _UID nobody's.
    let entries: Vec<Value> = std::fs::read_to_string(&export)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("journalctl -o json line"))
        .collect();
    let forged: Vec<&Value> = entries
        .iter()
        .filter(|e| e["MESSAGE"].as_str().is_some_and(|m| m.starts_with("[90") || m.starts_with("[91")))
        .collect();
    assert_eq!(forged.len(), 2 * FORGED_AS_CHECKPOINTER + 2, "forged entries in the export");
    assert!(forged.iter().all(|e| e["_UID"] == "65534"), "{forged:?}");
    let server_uid =
        entries.iter().find(|e| e["MESSAGE"].as_str().is_some_and(|m| m.contains(LAST_LINE))).unwrap()["_UID"].clone();
    assert_ne!(server_uid, "65534");

    let (journal_db, stderr_db) = (work.path().join("journal.db"), work.path().join("stderr.db"));
    println!("journald-json: {}", import(&journal_db, "journald-json", &[export]));
    println!("stderr: {}", import(&stderr_db, "stderr", &pg.log_files()));
    let (got, truth) = (checkpoints(&journal_db), checkpoints(&stderr_db));
    assert_eq!(truth.len(), 6, "{truth:?}");
    assert_eq!(got, truth, "journald side (left) vs the server's stderr files (right)");
    assert_eq!(rejected(&journal_db), 2 * FORGED_AS_CHECKPOINTER as i64 + 2, "every forged line");
    let conn = rusqlite::Connection::open(&journal_db).unwrap();
    let reasons: Vec<(String, i64)> = conn
        .prepare(
            "SELECT json_extract(data, '$.reason'), count(*) FROM event WHERE kind = 'rejected' GROUP BY 1 ORDER BY 1",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        reasons,
        [
            ("its log_line_prefix names another pid than the process that sent it to syslog".to_string(), 6),
            (
                "sent by another user than the server's (journald's _UID): a local user's logger -t postgres"
                    .to_string(),
                2
            ),
        ]
    );
}
