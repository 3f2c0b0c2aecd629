//! Start, stop and watchdog on time whatever the input, and
//! what the daemon refuses to read, with the real `walwatch run`:
//! systemd's side is a unix datagram socket bound here (NOTIFY_SOCKET,
//! WATCHDOG_USEC), the logs are real PostgreSQL lines, the SMTP server that
//! never answers is a real TCP listener, the webhook a real HTTP responder.
//!
//! systemd/walwatch.service gives the daemon TimeoutStopSec=10 and
//! WatchdogSec=30; the bounds here are tighter (2 s to exit) so a regression
//! shows long before systemd would kill the service.

use crate::support;

use std::fs;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::daemon::{
    assert_matches_truth, count, differences, fixture, lines, status, walwatch, Daemon, NotifySocket, Rng, Snapshot,
    Workspace,
};
use support::smtp::{free_port, SinkOptions, SmtpSink};
use support::truth::{Layout, ENGLISH};

/// SIGTERM must end the daemon within this, whatever it is doing.
const STOP: Duration = Duration::from_secs(2);
/// READY must come this soon after start, however much there is to catch up on.
const READY: Duration = Duration::from_secs(5);
/// The watchdog interval the tests give (systemd's WatchdogSec, shortened).
const WATCHDOG: Duration = Duration::from_secs(3);
const FIXTURE: &str = "15-stderr-default-std";
const PREFIX: &str = "%m [%p] ";

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A config following `glob` as cluster "demo" with the given prefix, plus `extra` sections.
fn config(ws: &Workspace, glob: &Path, cluster_extra: &str, extra: &str) -> String {
    format!(
        "[store]\npath = {:?}\n\n[daemon]\npoll_interval = \"200ms\"\n\n[[cluster]]\nname = \"demo\"\nlogs = [{:?}]\n{cluster_extra}\n{extra}",
        s(&ws.db()),
        s(glob),
    )
}

/// Waits for the first datagram carrying `line`, failing after `limit`.
fn wait_for(notify: &NotifySocket, line: &str, limit: Duration, daemon: &Daemon) -> Instant {
    let start = Instant::now();
    loop {
        if let Some(t) = notify.times_of(line).first() {
            return *t;
        }
        assert!(start.elapsed() < limit, "no {line} within {limit:?}\n--- daemon log ---\n{}", daemon.log());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Polls `probe` for up to `limit` (for waits longer than the support's 10 s).
fn wait_long(daemon: &mut Daemon, what: &str, limit: Duration, mut probe: impl FnMut() -> Result<(), String>) {
    let start = Instant::now();
    loop {
        let last = match probe() {
            Ok(()) => return,
            Err(e) => e,
        };
        if let Some(st) = daemon.exited() {
            panic!("waiting for {what}: the daemon exited ({st}); last: {last}\n{}", daemon.log());
        }
        assert!(start.elapsed() < limit, "waiting for {what}: not after {limit:?}; last: {last}\n{}", daemon.log());
        std::thread::sleep(Duration::from_millis(200));
    }
}

// ---------------------------------------------------------------- many files

/// 10 000 small real logs: each is one checkpoint (its `starting` and
/// `complete` lines) of the fixture, dated a day apart so that every file's
/// content, and so its fingerprint, differs.
fn write_small_logs(dir: &Path, n: usize) -> Vec<PathBuf> {
    let data = fixture(FIXTURE);
    let all = lines(&data);
    let pair: Vec<u8> = all[7..9].concat();
    let text = String::from_utf8(pair).unwrap();
    assert!(text.contains("checkpoint starting: wal") && text.contains("checkpoint complete:"), "{text}");
    let first = jiff::civil::date(2000, 1, 1);
    (0..n)
        .map(|i| {
            let day = first.checked_add(jiff::Span::new().days(i as i64)).unwrap();
            let path = dir.join(format!("postgresql-{i:05}.log"));
            fs::write(&path, text.replace("2026-11-22", &day.to_string())).unwrap();
            path
        })
        .collect()
}

#[test]
fn ten_thousand_files_ready_at_once_watchdog_during_catch_up_prompt_stop_bounded_fds_nothing_lost() {
    const FILES: usize = 10_000;
    let ws = Workspace::new();
    let files = write_small_logs(&ws.dir("log"), FILES);
    let cluster_extra = format!("format = \"stderr\"\nprefix = {PREFIX:?}\n");
    fs::write(ws.config_path(), config(&ws, &ws.dir("log").join("*.log"), &cluster_extra, "")).unwrap();
    let events = |db: &Path| count(db, "line", "1");

    let notify = NotifySocket::bind(&ws.path().join("notify.sock"));
    let started = Instant::now();
    let mut daemon =
        Daemon::start_notified(&ws.config_path(), &ws.db(), &ws.path().join("daemon.log"), &notify, WATCHDOG, &[]);
    let ready = wait_for(&notify, "READY=1", READY, &daemon);
    eprintln!("READY after {:?}", ready - started);

    // SIGTERM at a moment drawn from a fixed seed, well inside the catch-up.
    let mut rng = Rng::new(0x5eed_0008);
    let term_at = ready + Duration::from_millis(rng.range(1500, 6000));
    let mut max_fds = 0;
    while Instant::now() < term_at {
        max_fds = max_fds.max(daemon.open_fds());
        std::thread::sleep(Duration::from_millis(50));
    }
    let stored = events(&ws.db());
    assert!(stored < 2 * FILES as i64, "the catch-up was over before SIGTERM ({stored} events): nothing was tested");
    assert!(stored > 0, "nothing stored {:?} after READY\n{}", term_at - ready, daemon.log());
    let (took, exit) = daemon.terminate_within(STOP);
    let exit = exit.unwrap_or_else(|| panic!("no exit {STOP:?} after SIGTERM during catch-up\n{}", daemon.log()));
    assert!(exit.success(), "exit after SIGTERM: {exit}\n{}", daemon.log());
    eprintln!("SIGTERM after {:?} of catch-up ({stored} events stored): exit 0 in {took:?}", term_at - ready);

    // The keep-alive came all along: never a gap of WatchdogSec/2 from READY to the stop.
    let mut beats: Vec<Instant> = notify.times_of("WATCHDOG=1").into_iter().filter(|t| *t >= ready).collect();
    beats.insert(0, ready);
    beats.push(term_at);
    let gap = beats.windows(2).map(|w| w[1] - w[0]).max().unwrap();
    assert!(gap <= WATCHDOG / 2, "a {gap:?} gap between watchdog keep-alives (WatchdogSec {WATCHDOG:?})");

    // Open descriptors: the follower's bound plus the daemon's own (stdio,
    // the store and its WAL/SHM for three connections, inotify, signals).
    let bound = walwatch::daemon::follow::MAX_OPEN + 36;
    assert!(max_fds > 0 && max_fds <= bound, "up to {max_fds} descriptors open (bound {bound})");
    eprintln!("at most {max_fds} descriptors open with {FILES} files followed");

    // A restart goes on from the commits: the store ends up as an import of the same files.
    let mut again = ws.start();
    wait_long(&mut again, "the catch-up to finish", Duration::from_secs(900), || match events(&ws.db()) {
        n if n >= 2 * FILES as i64 => Ok(()),
        n => Err(format!("{n} events")),
    });
    again.terminate();
    let reference = ws.path().join("reference.db");
    let mut import = walwatch();
    import.args(["import", "--db", s(&reference), "--cluster", "demo", "--format", "stderr", "--prefix", PREFIX]);
    let out = import.args(files.iter().map(|f| s(f))).output().unwrap();
    assert!(out.status.success(), "import: {}", String::from_utf8_lossy(&out.stderr));
    let want = Snapshot::read(&reference, "demo").unwrap();
    let got = Snapshot::read(&ws.db(), "demo").unwrap();
    assert_eq!(got.events.len(), 2 * FILES, "events after the restart");
    let d = differences(&got, &want);
    assert!(d.is_empty(), "the store after a stop mid-catch-up and a restart differs from an import:\n{d}");
    // And not only equal to walwatch's own import: to the raw files, counted
    // by tests/support/truth.rs. Each file is one `wal` start and its complete.
    let layout = Layout { prefix: PREFIX.into(), syslog: false, heads: &ENGLISH };
    let t = assert_matches_truth(&ws.db(), "demo", &files, &layout, "after the restart");
    assert_eq!((t.starts, t.completes, t.wal), (FILES as i64, FILES as i64, FILES as i64), "{}", t.brief());
}

// ---------------------------------------------------------------- a pathological history

/// Repeats the store's whole event and checkpoint history `times` times over
/// (same log times: the timestamps repeat, as in one log file concatenated
/// with itself). This stands in for importing the 42 MB 2 700-fold log,
/// which takes minutes in a debug build: each copy is the rows the import
/// of the fixture stored, with ids, offsets and lines shifted (and marked
/// not pairable: they are complete already).
fn repeat_history(db: &Path, times: i64) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let (events, bytes, lines): (i64, i64, i64) = conn
        .query_row("SELECT IFNULL(max(e.id), 0), max(s.size), max(s.line) FROM source s LEFT JOIN event e", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    let points: i64 = conn.query_row("SELECT max(id) FROM checkpoint", [], |r| r.get(0)).unwrap();
    let copies = format!("WITH RECURSIVE c(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM c WHERE k < {})", times - 1);
    conn.execute_batch(&format!(
        "BEGIN;
         {copies} INSERT INTO event (id, cluster_id, source_id, offset, line, at, pid, kind, nth, data)
           SELECT id + k * {events}, cluster_id, source_id, offset + k * {bytes}, line + k * {lines}, at, pid, kind, nth, data
           FROM event, c WHERE id <= {events};
         {copies} INSERT INTO checkpoint (id, cluster_id, kind, pid, pairable, started_at, completed_at,
             start_source_id, start_offset, start_line, complete_source_id, complete_offset, complete_line,
             flags, trigger, buffers_written, buffers_pct, slru_buffers_written,
             wal_files_added, wal_files_removed, wal_files_recycled, write_s, sync_s, total_s, sync_files,
             sync_longest_s, sync_average_s, distance_kb, estimate_kb, lsn, redo_lsn)
           SELECT id + k * {points}, cluster_id, kind, pid, 0, started_at, completed_at,
             start_source_id, start_offset + k * {bytes}, start_line + k * {lines},
             complete_source_id, complete_offset + k * {bytes}, complete_line + k * {lines},
             flags, trigger, buffers_written, buffers_pct, slru_buffers_written,
             wal_files_added, wal_files_removed, wal_files_recycled, write_s, sync_s, total_s, sync_files,
             sync_longest_s, sync_average_s, distance_kb, estimate_kb, lsn, redo_lsn
           FROM checkpoint, c WHERE id <= {points};
         COMMIT;"
    ))
    .unwrap();
}

#[test]
fn a_pathological_history_is_analysed_in_bounded_time_and_stop_does_not_wait_for_it() {
    const TIMES: i64 = 2_700;
    let ws = Workspace::new();
    let log = ws.dir("log").join("postgresql.log");
    fs::write(&log, fixture(FIXTURE)).unwrap();
    let out = walwatch().args(["import", "--db", s(&ws.db()), "--cluster", "demo", s(&log)]).output().unwrap();
    assert!(out.status.success(), "import: {}", String::from_utf8_lossy(&out.stderr));
    let once = count(&ws.db(), "line", "1");
    repeat_history(&ws.db(), TIMES);
    assert_eq!(count(&ws.db(), "line", "1"), once * TIMES);
    fs::write(ws.config_path(), config(&ws, &ws.dir("log").join("*.log"), "", "")).unwrap();
    let debug = [("RUST_LOG", "info,walwatch::daemon::alerting=debug")];
    let daemon_log = ws.path().join("daemon.log");

    // The first pass starts at once; SIGTERM while it runs.
    let notify = NotifySocket::bind(&ws.path().join("notify.sock"));
    let started = Instant::now();
    let mut daemon = Daemon::start_notified(&ws.config_path(), &ws.db(), &daemon_log, &notify, WATCHDOG, &debug);
    let ready = wait_for(&notify, "READY=1", READY, &daemon);
    eprintln!("READY after {:?}", ready - started);
    std::thread::sleep(Duration::from_millis(300));
    let evaluated_in = |log: &str| log.lines().filter(|l| l.contains("Alert rules evaluated")).count();
    let evaluated = |d: &Daemon| evaluated_in(&d.full_log());
    assert_eq!(evaluated(&daemon), 0, "the pass was over before SIGTERM: nothing was tested\n{}", daemon.log());
    let (took, exit) = daemon.terminate_within(STOP);
    let exit = exit.unwrap_or_else(|| panic!("no exit {STOP:?} after SIGTERM during the alert pass\n{}", daemon.log()));
    assert!(exit.success(), "exit after SIGTERM: {exit}\n{}", daemon.log());
    eprintln!("SIGTERM during the alert pass: exit 0 in {took:?}");
    assert_eq!(count(&ws.db(), "alert", "1"), 0, "a cancelled pass leaves nothing behind");

    // Left alone, the pass ends in bounded time and fires the alerts the history deserves.
    let daemon_log = ws.path().join("daemon-2.log");
    let mut again = Daemon::start_notified(&ws.config_path(), &ws.db(), &daemon_log, &notify, WATCHDOG, &debug);
    let pass_started = Instant::now();
    wait_long(&mut again, "the alert pass", Duration::from_secs(120), || {
        let log = fs::read_to_string(&daemon_log).unwrap_or_default();
        (evaluated_in(&log) > 0).then_some(()).ok_or_else(|| "not yet".to_string())
    });
    let line = again.full_log().lines().find(|l| l.contains("Alert rules evaluated")).unwrap().to_string();
    eprintln!("alert pass on {} events after {:?}: {line}", once * TIMES, pass_started.elapsed());
    let ms: u64 = line.split("ms=").nth(1).and_then(|r| r.split(' ').next()).and_then(|v| v.parse().ok()).unwrap();
    assert!(ms < 60_000, "the alert pass took {ms} ms");
    let rules: Vec<String> = {
        let conn = rusqlite::Connection::open(ws.db()).unwrap();
        let mut stmt = conn.prepare("SELECT rule FROM alert ORDER BY rule").unwrap();
        stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
    };
    assert!(
        rules.contains(&"forced_checkpoints".to_string()) && rules.contains(&"too_frequent".to_string()),
        "{rules:?}"
    );
    again.terminate();
}

// ---------------------------------------------------------------- delivery

/// A TCP peer that accepts connections and never says a word (a hung SMTP
/// server); counts the connections.
fn silent_peer() -> (u16, Arc<Mutex<usize>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(Mutex::new(0));
    let seen = accepted.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            *seen.lock().unwrap() += 1;
            held.push(conn); // open and silent
        }
    });
    (port, accepted)
}

/// A minimal real HTTP server: answers every request 200 and keeps the bodies.
fn webhook_receiver() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let sink = bodies.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            if let Some(body) = read_request(&mut conn) {
                sink.lock().unwrap().push(body);
                let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            }
        }
    });
    (port, bodies)
}

fn read_request(conn: &mut TcpStream) -> Option<String> {
    conn.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = conn.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&data).into_owned();
        let Some(end) = text.find("\r\n\r\n") else { continue };
        let length = text[..end]
            .lines()
            .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_string()))
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(0);
        if data.len() >= end + 4 + length {
            return Some(String::from_utf8_lossy(&data[end + 4..end + 4 + length]).into_owned());
        }
    }
}

fn delivery(smtp_port: u16, webhook_port: Option<u16>) -> String {
    let mut text = format!("{}timeout = \"300s\"\n", support::smtp::mail_config(smtp_port));
    if let Some(port) = webhook_port {
        text += &format!("\n[webhook]\nurl = \"http://127.0.0.1:{port}/hook\"\n");
    }
    text
}

/// Outbox rows of a channel: (sent, due by now, last_error).
fn outbox(db: &Path, channel: &str) -> Vec<(bool, bool, Option<String>)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let now = jiff::Timestamp::now().as_microsecond();
    let mut stmt = conn
        .prepare(
            "SELECT sent_at IS NOT NULL, next_attempt_at <= ?2, last_error FROM outbox WHERE channel = ?1 ORDER BY id",
        )
        .unwrap();
    stmt.query_map(rusqlite::params![channel, now], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn a_silent_smtp_server_delays_neither_stop_nor_the_webhook_and_its_mail_stays_queued() {
    let ws = Workspace::new();
    let log = ws.dir("log").join("postgresql.log");
    fs::write(&log, fixture(FIXTURE)).unwrap();
    let (smtp_port, connections) = silent_peer();
    let (hook_port, hooks) = webhook_receiver();
    let settings = "[cluster.settings]\ncheckpoint_timeout = \"30s\"\nmax_wal_size = \"32MB\"\n";
    let glob = ws.dir("log").join("*.log");
    fs::write(ws.config_path(), config(&ws, &glob, settings, &delivery(smtp_port, Some(hook_port)))).unwrap();

    let mut daemon = ws.start();
    daemon.wait_running();
    // The webhook gets every firing notice while the mail sender hangs on its server.
    let fired = |db: &Path| count(db, "alert", "1") as usize;
    daemon.wait_until("alerts on the webhook while SMTP hangs", || {
        let (n, got) = (fired(&ws.db()), hooks.lock().unwrap().len());
        (n >= 2 && got == n && *connections.lock().unwrap() >= 1)
            .then_some(())
            .ok_or_else(|| format!("{n} alerts, {got} webhook posts, {} SMTP connections", connections.lock().unwrap()))
    });
    let alerts = fired(&ws.db());
    assert!(hooks.lock().unwrap().iter().all(|b| b.contains("\"firing\"")), "{:?}", hooks.lock().unwrap());

    let (took, exit) = daemon.terminate_within(STOP);
    let exit = exit.unwrap_or_else(|| panic!("no exit {STOP:?} after SIGTERM with SMTP hung\n{}", daemon.log()));
    assert!(exit.success(), "exit after SIGTERM: {exit}\n{}", daemon.log());
    eprintln!("SIGTERM with a send hanging on a silent SMTP server (timeout 300s): exit 0 in {took:?}");

    // Every mail is still queued, none marked sent; the one given up is due again at once.
    let mails = outbox(&ws.db(), "mail");
    assert_eq!(mails.len(), alerts, "one mail per alert: {mails:?}");
    assert!(mails.iter().all(|(sent, _, _)| !sent), "no mail was accepted: {mails:?}");
    let abandoned: Vec<_> =
        mails.iter().filter(|(_, _, e)| e.as_deref().is_some_and(|e| e.contains("stopped"))).collect();
    assert_eq!(abandoned.len(), 1, "the send in progress was given up: {mails:?}");
    assert!(abandoned[0].1, "the message given up is due at once: {mails:?}");
    assert!(outbox(&ws.db(), "webhook").iter().all(|(sent, _, _)| *sent), "the webhook copies were sent");

    // A restart with a mail server that answers delivers each queued mail once.
    let port = free_port();
    let sink = SmtpSink::start(&ws.dir("smtp"), port, SinkOptions::default());
    fs::write(ws.config_path(), config(&ws, &glob, settings, &delivery(port, Some(hook_port)))).unwrap();
    let mut again = ws.start();
    again.wait_running();
    let got = sink.wait_for(alerts, Duration::from_secs(15));
    assert_eq!(got.len(), alerts, "each queued mail arrives after the restart");
    again.wait_until("mails marked sent", || {
        let m = outbox(&ws.db(), "mail");
        m.iter().all(|(sent, _, _)| *sent).then_some(()).ok_or_else(|| format!("{m:?}"))
    });
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(sink.messages().len(), alerts, "no mail twice");
    assert_eq!(hooks.lock().unwrap().len(), alerts, "no webhook post twice");
    again.terminate();
}

#[test]
fn a_silent_smtp_server_alone_leaves_the_alert_firing_and_queued() {
    let ws = Workspace::new();
    let log = ws.dir("log").join("postgresql.log");
    fs::write(&log, fixture(FIXTURE)).unwrap();
    let (smtp_port, connections) = silent_peer();
    let settings = "[cluster.settings]\ncheckpoint_timeout = \"30s\"\nmax_wal_size = \"32MB\"\n";
    let glob = ws.dir("log").join("*.log");
    fs::write(ws.config_path(), config(&ws, &glob, settings, &delivery(smtp_port, None))).unwrap();
    let mut daemon = ws.start();
    daemon.wait_running();
    daemon.wait_until("a send hanging on the silent server", || {
        let c = *connections.lock().unwrap();
        (c >= 1 && count(&ws.db(), "alert", "1") >= 2).then_some(()).ok_or_else(|| format!("{c} connections"))
    });
    let (took, exit) = daemon.terminate_within(STOP);
    let exit = exit.unwrap_or_else(|| panic!("no exit {STOP:?} after SIGTERM with SMTP hung\n{}", daemon.log()));
    assert!(exit.success(), "exit after SIGTERM: {exit}\n{}", daemon.log());
    eprintln!("SIGTERM, mail only, send hanging: exit 0 in {took:?}");
    assert_eq!(count(&ws.db(), "alert", "state = 'firing'"), count(&ws.db(), "alert", "1"), "not notified");
    let mails = outbox(&ws.db(), "mail");
    assert!(!mails.is_empty() && mails.iter().all(|(sent, _, _)| !sent), "queued, not sent: {mails:?}");
}

// ---------------------------------------------------------------- what is never read

#[test]
fn a_symlink_out_of_the_log_directory_is_refused_and_its_target_never_shown() {
    let ws = Workspace::new();
    let dir = ws.dir("log");
    fs::write(dir.join("postgresql.log"), fixture(FIXTURE)).unwrap();
    let secret = "root:$6$Zm9vYmFyc2VjcmV0$walwatchMustNeverShowThis:19000:0:99999:7:::";
    let outside = ws.dir("etc").join("shadow");
    fs::write(&outside, format!("{secret}\n")).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("evil.log")).unwrap();
    // A link that stays inside the directory is followed (it is the same file).
    std::os::unix::fs::symlink(dir.join("postgresql.log"), dir.join("current.log")).unwrap();
    fs::write(ws.config_path(), config(&ws, &dir.join("*.log"), "", "")).unwrap();

    let mut daemon = ws.start();
    daemon.wait_running();
    let link = dir.join("evil.log");
    let db = ws.db();
    daemon.wait_until("the link refused in status", || {
        let st = status(&db)?;
        let problems = st["clusters"][0]["problems"].as_array().cloned().unwrap_or_default();
        let named =
            |w: &serde_json::Value| w.as_str().is_some_and(|w| w.starts_with(&format!("{}: refused", s(&link))));
        problems.iter().find(|w| named(w)).map(drop).ok_or(format!("{st}"))
    });
    // Two polls later, still nothing of it anywhere.
    std::thread::sleep(Duration::from_millis(600));
    let st = status(&db).unwrap().to_string();
    let text = walwatch().args(["status", "--db", s(&db)]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    daemon.terminate();
    let log = daemon.full_log();
    for (what, shown) in [("status --format json", &st), ("status", &text), ("the daemon's log", &log)] {
        assert!(!shown.contains("walwatchMustNeverShowThis"), "{what} shows the target's content:\n{shown}");
        assert!(!shown.contains("root:"), "{what} shows the target's content:\n{shown}");
    }
    assert_eq!(log.matches("refused").count(), 1, "one warning for the link, not one per poll:\n{log}");
    assert!(count(&db, "line", "1") > 0, "the real log is read");
    assert_eq!(count(&db, "source", &format!("path = '{}'", s(&link))), 0, "the link was never read");
}

#[test]
fn a_glob_that_matches_the_store_is_refused_by_config_check_and_by_the_daemon() {
    let ws = Workspace::new();
    let dir = ws.dir("state");
    let db = dir.join("walwatch.db");
    let text = format!(
        "[store]\npath = {:?}\n\n[[cluster]]\nname = \"demo\"\nlogs = [\"/var/log/postgresql/*.log\", {:?}]\n",
        s(&db),
        s(&dir.join("*"))
    );
    let path = ws.config_path();
    fs::write(&path, &text).unwrap();
    let out = walwatch().args(["config", "check", "--config", s(&path)]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "config check accepted a glob matching the store");
    let column = text.lines().nth(5).unwrap().find(&format!("{:?}", s(&dir.join("*")))).unwrap() + 1;
    let at = format!("{}:6:{column}: cluster.logs: ", s(&path));
    assert!(err.contains(&at) && err.contains("own store"), "expected {at:?} in: {err}");

    // The store the daemon really uses (--db here, $STATE_DIRECTORY under systemd) is checked too.
    let elsewhere = ws.dir("elsewhere").join("w.db");
    let text = format!(
        "[store]\npath = {:?}\n\n[[cluster]]\nname = \"demo\"\nlogs = [{:?}]\n",
        s(&elsewhere),
        s(&dir.join("*.db*"))
    );
    fs::write(&path, text).unwrap();
    let check = walwatch().args(["config", "check", "--config", s(&path)]).output().unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
    let run = walwatch()
        .args(["run", "--config", s(&path), "--db", s(&db)])
        .env_remove("NOTIFY_SOCKET")
        .env_remove("STATE_DIRECTORY")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr).into_owned();
    assert!(!run.status.success(), "the daemon ran with a glob matching its store: {err}");
    assert!(err.contains("cluster \"demo\"") && err.contains("own store"), "{err}");
    assert!(!db.exists(), "refused before the store was created");
}
