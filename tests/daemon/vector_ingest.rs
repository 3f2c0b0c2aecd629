//! A central walwatch fed by Vector agents: the real daemon
//! with `[ingest]`, and the requests Vector's file source and http sink
//! send, replayed by `support::vector` (Vector's binary cannot be installed
//! here: a stand-in for the agent, not for walwatch).
//!
//! Logs of real PostgreSQL servers (the 15 and 16 fixture runs) are the two
//! "hosts". Batches of both interleave; the central daemon is kill -9'd and
//! stopped mid-stream, batches are sent again as after a lost answer; the
//! central store then equals a local `walwatch import` of each host's log,
//! event for event.

use std::fs;
use std::time::Duration;

use serde_json::Value;

use crate::support::daemon::{fixture, Snapshot, Workspace};
use crate::support::vector::{body, deliver, post, Agent, Central, TOKEN};

const HOST_15: (&str, &str, &str) = ("db-15", "/var/log/postgresql/postgresql-15-main.log", "db-15:15-main");
const HOST_16: (&str, &str, &str) =
    ("db-16", "/var/lib/postgresql/16/main/log/postgresql-2026-11-22.log", "db-16:16-main");

#[test]
fn two_hosts_interleaved_through_crashes_equal_a_local_import_of_each() {
    let logs = [fixture("15-stderr-default-std"), fixture("16-stderr-default-std")];
    let mut agents = [Agent::read(HOST_15.0, HOST_15.1, &logs[0]), Agent::read(HOST_16.0, HOST_16.1, &logs[1])];
    let mut central = Central::start("");
    let mut sent = Vec::new();
    let mut round = 0;
    loop {
        let batches: Vec<Vec<Value>> = agents.iter_mut().filter_map(|a| a.batch(7)).collect();
        if batches.is_empty() {
            break;
        }
        for batch in &batches {
            // Odd rounds as NDJSON (framing.method = "newline_delimited").
            let answer = central.send(batch, round % 2 == 1);
            assert_eq!(answer["lines"], batch.len(), "{answer}");
            sent.push(batch.clone());
        }
        round += 1;
        match round {
            // A crash right after an answer: everything answered 2xx is kept.
            // The next batch is sent while the central is down: the sink
            // retries until the restarted central takes it.
            5 => {
                central.daemon.kill9();
                let next = agents[0].batch(7).unwrap();
                let url = central.url.clone();
                let sending = std::thread::spawn(move || {
                    deliver(&url, Some(TOKEN), &body(&next, false, true), false, true, Duration::from_secs(30))
                });
                std::thread::sleep(Duration::from_millis(400));
                central.restart();
                let answer = sending.join().unwrap();
                assert_eq!(answer["taken"], 7, "{answer}");
            }
            // The answer to the last batch was lost: the agent sends it again.
            8 => {
                let again = central.send(sent.last().unwrap(), false);
                assert_eq!((again["taken"].as_u64(), again["duplicates"].as_u64()), (Some(0), Some(7)), "{again}");
            }
            // A clean stop, and an agent that restarted from an older
            // checkpoint (end-to-end acknowledgements) sends old batches again.
            11 => {
                central.daemon.terminate();
                central.restart();
                for old in &sent[sent.len() - 6..] {
                    let again = central.send(old, true);
                    assert_eq!(again["taken"], 0, "{again}");
                }
            }
            _ => {}
        }
    }
    assert!(round > 11, "the logs gave only {round} rounds: the crash and the redelivery were not exercised");
    for (i, (host, file, cluster)) in [HOST_15, HOST_16].iter().enumerate() {
        let want = central.ws.reference(cluster, &[&logs[i]]);
        assert!(want.checkpoints.len() >= 20, "{cluster}: {} checkpoints", want.checkpoints.len());
        central.daemon.wait_equal(cluster, &want);
        // `status` shows the shipped file by host and path, its spool (every
        // line was shipped: the log itself, byte for byte) read to the end.
        let files = crate::support::daemon::status_files(&central.ws.db(), cluster).unwrap();
        assert_eq!(files.len(), 1, "{files:?}");
        assert_eq!(files[0]["path"], format!("{host}:{file}"));
        assert_eq!((files[0]["size"].as_u64(), files[0]["lag_bytes"].as_u64()), (Some(logs[i].len() as u64), Some(0)));
    }
    // Each file's lines were taken once: the store's count of taken lines
    // is the agent's, the duplicates counted apart.
    let taken = crate::support::daemon::count(&central.ws.db(), "ingest_stream", "1 = 1");
    assert_eq!(taken, 2);
    let lines: i64 = sum(&central, "lines");
    assert_eq!(lines as usize, agents[0].len() + agents[1].len());
    assert_eq!(sum(&central, "duplicates"), 7 + 6 * 7);
    assert!(sent.len() + 1 >= 24, "{} batches", sent.len());
    central.daemon.terminate();
}

fn sum(central: &Central, column: &str) -> i64 {
    let conn = rusqlite::Connection::open(central.ws.db()).unwrap();
    conn.query_row(&format!("SELECT sum({column}) FROM ingest_stream"), [], |r| r.get(0)).unwrap()
}

#[test]
fn bad_requests_are_refused_with_a_reason_and_store_nothing() {
    let log = fixture("15-stderr-default-std");
    let mut agent = Agent::read(HOST_15.0, HOST_15.1, &log);
    let batch = agent.batch(50).unwrap();
    let mut central = Central::start("max_batch_bytes = 4096\n");
    let plain = body(&batch[..5], false, false);
    let url = central.url.clone();
    // No token, a wrong one: 401 (Vector drops the batch and logs the status).
    let (status, text) = post(&url, None, &plain, false, false).unwrap();
    assert_eq!((status, text.contains("bearer token")), (401, true), "{text}");
    assert_eq!(post(&url, Some("guess"), &plain, false, false).unwrap().0, 401);
    // Events without the offset the file source adds with offset_key.
    let no_offset: Vec<Value> = batch[..2]
        .iter()
        .map(|e| {
            let mut e = e.clone();
            e.as_object_mut().unwrap().remove("offset");
            e
        })
        .collect();
    let (status, text) = post(&url, Some(TOKEN), &body(&no_offset, false, false), false, false).unwrap();
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("event 0 has no \"offset\"") && text.contains("offset_key"), "{text}");
    // Not JSON; a body over max_batch_bytes (compressed or not).
    let (status, text) = post(&url, Some(TOKEN), b"2026-11-25 07:00:00 UTC LOG: x", false, false).unwrap();
    assert_eq!(status, 400, "{text}");
    let big = body(&batch, false, false);
    assert!(big.len() > 4096);
    assert_eq!(post(&url, Some(TOKEN), &big, false, false).unwrap().0, 413);
    assert_eq!(post(&url, Some(TOKEN), &body(&batch, false, true), false, true).unwrap().0, 413);
    // A compression walwatch does not take: 415, saying which it takes.
    let snappy = ureq::Agent::config_builder().http_status_as_error(false).build().new_agent();
    let mut r = snappy
        .post(&url)
        .header("Authorization", &format!("Bearer {TOKEN}"))
        .header("Content-Encoding", "snappy")
        .send(&plain[..])
        .unwrap();
    assert_eq!(r.status().as_u16(), 415);
    assert!(r.body_mut().read_to_string().unwrap().contains("\"gzip\""));
    // Elsewhere: 404; Vector's healthcheck (HEAD/GET with the token): 200.
    assert_eq!(post(&url.replace("/ingest/vector", "/ingest"), Some(TOKEN), &plain, false, false).unwrap().0, 404);
    assert_eq!(crate::support::daemon::count(&central.ws.db(), "ingest_stream", "1 = 1"), 0);
    assert_eq!(crate::support::daemon::count(&central.ws.db(), "line", "1 = 1"), 0);
    // And a good batch after all that is taken.
    let answer = central.send(&batch[..5], false);
    assert_eq!(answer["taken"], 5, "{answer}");
    central.daemon.terminate();
}

#[test]
fn a_file_truncated_and_written_anew_under_its_path_is_new_content() {
    // copytruncate (Debian's logrotate for postgresql-15-main.log): the
    // agent's offsets start from 0 again under the same path.
    let logs = [fixture("15-stderr-default-std"), fixture("16-stderr-default-std")];
    let mut central = Central::start("[[ingest.cluster]]\nhost = \"db-*\"\nname = \"{host}\"\n");
    let mut last_of_old = Vec::new();
    let mut first_of_new = Vec::new();
    for (i, log) in logs.iter().enumerate() {
        let mut agent = Agent::read("db-1", HOST_15.1, log);
        while let Some(batch) = agent.batch(40) {
            central.send(&batch, false);
            match i {
                0 => last_of_old = batch,
                _ if first_of_new.is_empty() => first_of_new = batch,
                _ => {}
            }
        }
    }
    // A batch sent again that spans the change of content: the old file's
    // last lines (offsets above the new content's) and the new one's first.
    let across: Vec<Value> = last_of_old[last_of_old.len() - 5..].iter().chain(&first_of_new[..5]).cloned().collect();
    let again = central.send(&across, false);
    assert_eq!((again["taken"].as_u64(), again["duplicates"].as_u64()), (Some(0), Some(10)), "{again}");
    let want = central.ws.reference("db-1", &[&logs[0], &logs[1]]);
    central.daemon.wait_equal("db-1", &want);
    let conn = rusqlite::Connection::open(central.ws.db()).unwrap();
    let generation: i64 = conn.query_row("SELECT generation FROM ingest_stream", [], |r| r.get(0)).unwrap();
    assert_eq!(generation, 1);
    // The old content's spool is gone once read; its index stays for such
    // batches. The directory is the store's own (w.db: w-ingest), naming
    // the store it belongs to, locked while the receiver runs.
    let mut spool: Vec<String> = fs::read_dir(central.ws.path().join("w-ingest"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    spool.sort();
    assert_eq!(spool, [".lock", "1-0.idx", "1-1.idx", "1-1.log", "STORE"]);
    central.daemon.terminate();
}

/// The agent `walwatch vector-config` configures ships a statement-heavy
/// log whole: the central's store equals a local import event for event
/// (offsets included: its spool is the log, byte for byte). What that costs
/// on the wire is measured: the gzip'd bodies of the sink's batches, full
/// ones (an agent catching up) and one a second (a live server, the sink's
/// batch.timeout_secs).
#[test]
fn the_generated_config_ships_every_line_and_the_central_equals_a_local_import() {
    let out = crate::support::daemon::walwatch().args(["vector-config", "--logs", "/pg/*.log"]).output().unwrap();
    assert!(out.status.success());
    let config = String::from_utf8(out.stdout).unwrap();
    let log = fixture("15-stderr-default-noise");
    let mut agent = Agent::configured(&config, HOST_15.0, "/pg/postgresql-15-main.log", &log);
    let shipped: usize = agent.events().iter().map(|e| e["message"].as_str().unwrap().len() + 1).sum();
    assert_eq!(shipped, log.len(), "every byte of the log is shipped");
    let (full, per_second) = (wire_bytes(agent.events(), None), wire_bytes(agent.events(), Some(19)));
    let per_mb = |n: usize| n as f64 * 1_048_576.0 / log.len() as f64 / 1024.0;
    println!(
        "shipped {} bytes of log ({} events) as {full} bytes gzip'd in 1 MB batches ({:.0} KiB per MiB), \
         {per_second} in one batch a second ({:.0} KiB per MiB)",
        log.len(),
        agent.len(),
        per_mb(full),
        per_mb(per_second)
    );
    assert!(full < per_second && per_second < log.len() / 5, "{full} {per_second}");

    let metrics_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut central = Central::start(&format!("\n[metrics]\nlisten = \"127.0.0.1:{metrics_port}\"\n"));
    while let Some(batch) = agent.batch(200) {
        central.send(&batch, false);
    }
    let cluster = "db-15:15-main";
    let want = central.ws.reference(cluster, &[&log]);
    central.daemon.wait_equal(cluster, &want);
    assert_eq!(Snapshot::read(&central.ws.db(), cluster).unwrap().checkpoints.len(), want.checkpoints.len());
    // The central's Prometheus endpoint: the shipped cluster's counts, and
    // the shipped file read to the end of its spool.
    let text = ureq::get(format!("http://127.0.0.1:{metrics_port}/metrics"))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    let series = |prefix: &str| text.lines().filter(|l| l.starts_with(prefix)).map(String::from).collect::<Vec<_>>();
    let lag = format!(
        "walwatch_follow_lag_bytes{{cluster=\"{cluster}\",file=\"{}:/pg/postgresql-15-main.log\"}} 0.0",
        HOST_15.0
    );
    assert_eq!(series("walwatch_follow_lag_bytes"), [lag]);
    let wal = format!("walwatch_checkpoints_total{{cluster=\"{cluster}\",kind=\"checkpoint\",trigger=\"wal\"}} 15");
    assert!(series("walwatch_checkpoints_total").contains(&wal), "{text}");
    central.daemon.terminate();
}

/// The gzip'd size of the bodies the sink sends for `events`: batches of up
/// to batch.max_bytes (1 MB) of JSON, or, with `second` (the length of a
/// log line's time up to its second), one batch per second of log time.
fn wire_bytes(events: &[Value], second: Option<usize>) -> usize {
    let mut batches: Vec<Vec<Value>> = Vec::new();
    let (mut size, mut key) = (0, String::new());
    for event in events {
        let message = event["message"].as_str().unwrap();
        let this = second.map(|n| message.get(..n).unwrap_or(message).to_string());
        let len = event.to_string().len();
        let split = match &this {
            Some(k) => k != &key && message.starts_with(|c: char| c.is_ascii_digit()),
            None => size + len > 1_000_000,
        };
        if batches.is_empty() || split {
            batches.push(Vec::new());
            size = 0;
            if let Some(k) = this {
                key = k;
            }
        }
        batches.last_mut().unwrap().push(event.clone());
        size += len;
    }
    batches.iter().map(|b| body(b, false, true).len()).sum()
}

#[test]
fn batches_over_https_with_a_certificate_from_files() {
    // A test CA and a certificate for 127.0.0.1 signed by it, made by the
    // openssl tool (tests/run.sh installs it); the agent trusts that CA
    // only, as Vector's tls.ca_file would.
    let ws = Workspace::new();
    let (cert, key, ca) = crate::support::central::test_ca(&ws);
    let extra = format!("tls_cert = {:?}\ntls_key = {:?}\n", cert.to_str().unwrap(), key.to_str().unwrap());
    let mut central = Central::start_in(ws, &extra, "https");
    let pem = fs::read(&ca).unwrap();
    let roots = vec![ureq::tls::Certificate::from_pem(&pem).unwrap()];
    let tls = ureq::tls::TlsConfig::builder().root_certs(ureq::tls::RootCerts::Specific(std::sync::Arc::new(roots)));
    let agent: ureq::Agent =
        ureq::Agent::config_builder().tls_config(tls.build()).http_status_as_error(false).build().into();
    let log = fixture("15-stderr-default-std");
    let mut lines = Agent::read(HOST_15.0, HOST_15.1, &log);
    let mut answers = Vec::new();
    // One keep-alive connection for every batch, as the sink keeps one.
    while let Some(batch) = lines.batch(30) {
        let mut r = agent
            .post(&central.url)
            .header("Authorization", &format!("Bearer {TOKEN}"))
            .header("Content-Encoding", "gzip")
            .header("Content-Type", "application/json")
            .send(&body(&batch, false, true)[..])
            .unwrap();
        answers.push((r.status().as_u16(), r.body_mut().read_to_string().unwrap()));
    }
    assert!(answers.len() >= 3 && answers.iter().all(|(s, _)| *s == 200), "{answers:?}");
    let want = central.ws.reference(HOST_15.2, &[&log]);
    central.daemon.wait_equal(HOST_15.2, &want);
    // Plain HTTP on the TLS port is not taken.
    let plain = post(&central.url.replace("https://", "http://"), Some(TOKEN), b"[]", false, false);
    assert!(plain.is_err() || plain.as_ref().is_ok_and(|(s, _)| *s != 200), "{plain:?}");
    // An agent that does not trust the certificate gets no connection.
    let strict: ureq::Agent = ureq::Agent::config_builder().build().into();
    assert!(strict.post(&central.url).send(&b"[]"[..]).is_err());
    central.daemon.terminate();
}

#[test]
fn a_reload_reads_the_tokens_again_and_a_busy_store_answers_503() {
    let mut central = Central::start("");
    let log = fixture("15-stderr-default-std");
    let mut agent = Agent::read(HOST_15.0, HOST_15.1, &log);
    let first = agent.batch(10).unwrap();
    assert_eq!(central.send(&first, false)["taken"], 10);
    // The agent's token revoked, another added: a reload (SIGHUP) applies it.
    fs::write(central.ws.path().join("tokens"), "new-token\n").unwrap();
    central.daemon.signal("HUP");
    let url = central.url.clone();
    let plain = body(&first, false, false);
    central.daemon.wait_until("the old token refused", || match post(&url, Some(TOKEN), &plain, false, false) {
        Ok((401, _)) => Ok(()),
        other => Err(format!("{other:?}")),
    });
    assert_eq!(post(&url, Some("new-token"), &plain, false, false).unwrap().0, 200);
    // A token file emptied by mistake keeps the tokens in force.
    fs::write(central.ws.path().join("tokens"), "# none\n").unwrap();
    central.daemon.signal("HUP");
    let daemon_log = central.ws.path().join("daemon.log");
    central.daemon.wait_until("the reload logged", || {
        let log = fs::read_to_string(&daemon_log).unwrap_or_default();
        log.contains("Keeping the ingest tokens in force").then_some(()).ok_or(log)
    });
    assert_eq!(post(&url, Some("new-token"), &plain, false, false).unwrap().0, 200);

    // Another writer holds the store's write lock past walwatch's busy
    // timeout (10 s): 503 with Retry-After, which the sink retries; nothing
    // of the batch counts until a retry is taken.
    let second = agent.batch(10).unwrap();
    let locked = rusqlite::Connection::open(central.ws.db()).unwrap();
    locked.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let busy = post(&url, Some("new-token"), &body(&second, false, false), false, false).unwrap();
    assert_eq!(busy.0, 503, "{busy:?}");
    assert!(busy.1.contains("busy"), "{busy:?}");
    locked.execute_batch("ROLLBACK").unwrap();
    let answer = deliver(&url, Some("new-token"), &body(&second, false, true), false, true, Duration::from_secs(20));
    assert_eq!((answer["taken"].as_u64(), answer["duplicates"].as_u64()), (Some(10), Some(0)), "{answer}");
    central.daemon.terminate();
}

#[test]
fn lines_that_do_not_fit_are_kept_said_and_read_after_a_reload_that_fixes_the_format() {
    let log = fixture("16-stderr-default-std");
    let mut central = Central::start("[[ingest.cluster]]\nname = \"{host}\"\nformat = \"csvlog\"\n");
    let mut agent = Agent::read("db-16", HOST_16.1, &log);
    while let Some(batch) = agent.batch(100) {
        central.send(&batch, false);
    }
    // Nothing stored, and said: status exits 4 with the file's problem.
    let db = central.ws.db();
    central.daemon.wait_until("the misfit reported", || {
        let files = crate::support::daemon::status(&db)?;
        let text = files.to_string();
        text.contains("did not fit the csvlog format").then_some(()).ok_or(text)
    });
    assert_eq!(crate::support::daemon::status_exit(&db), Some(crate::support::daemon::STATUS_PROBLEMS));
    assert_eq!(crate::support::daemon::count(&db, "checkpoint", "1 = 1"), 0);
    // The right format and a reload (the receiver restarts on the same
    // address): the kept lines are read, as an import of the log reads them.
    let config = fs::read_to_string(central.ws.config_path()).unwrap().replace("csvlog", "stderr");
    fs::write(central.ws.config_path(), config).unwrap();
    central.daemon.signal("HUP");
    let want = central.ws.reference("db-16", &[&log]);
    central.daemon.wait_equal("db-16", &want);
    assert_eq!(crate::support::daemon::status_exit(&db), Some(0));
    central.daemon.terminate();
}

/// A spool that cannot grow: a real file-size limit set on the running
/// central (prlimit --pid, as a full disk refuses writes). The batch that
/// would pass it is answered 507 and nothing of it counts: the spool keeps
/// no byte past what was committed, also after the held-back entry of the
/// batch before it is read. The daemon lives on; with the limit lifted the
/// sink's retry is taken, and the central equals a local import.
#[test]
fn a_spool_that_cannot_grow_answers_507_and_loses_nothing() {
    let mut central = Central::start("");
    let log = fixture("15-stderr-default-noise");
    assert!(log.len() > 1 << 20);
    let mut agent = Agent::read(HOST_15.0, HOST_15.1, &log);
    let first = agent.batch(100).unwrap();
    assert_eq!(central.send(&first, false)["taken"], 100);
    let limit = |soft: &str| {
        let pid = central.daemon.pid().to_string();
        let status = std::process::Command::new("prlimit")
            .args(["--pid", &pid, &format!("--fsize={soft}:unlimited")])
            .status()
            .expect("prlimit (util-linux) runs");
        assert!(status.success());
    };
    limit("524288");
    let rest = agent.batch(agent.len()).unwrap();
    let refused = post(&central.url, Some(TOKEN), &body(&rest, false, false), false, false).unwrap();
    assert_eq!(refused.0, 507, "{refused:?}");
    assert!(refused.1.contains("File too large"), "{refused:?}");
    // The settle time passes (1 s): the first batch's last entry is read.
    std::thread::sleep(Duration::from_secs(3));
    let spool = fs::metadata(central.ws.path().join("w-ingest").join("1-0.log")).unwrap().len();
    assert!(spool < 524288, "{spool}");
    let committed = crate::support::daemon::count(&central.ws.db(), "ingest_stream", &format!("spool_len = {spool}"));
    assert_eq!(committed, 1, "the spool holds {spool} bytes: none past what was committed");

    // A write the disk refused is no damage: nothing set aside.
    assert_eq!(crate::support::daemon::count(&central.ws.db(), "ingest_damage", "1 = 1"), 0);

    limit("unlimited");
    let answer = central.send(&rest, false);
    assert_eq!((answer["taken"].as_u64(), answer["duplicates"].as_u64()), (Some(rest.len() as u64), Some(0)));
    let want = central.ws.reference(HOST_15.2, &[&log]);
    assert_eq!(want.checkpoints.len(), 19, "the noise run's checkpoints");
    central.daemon.wait_equal(HOST_15.2, &want);
    central.daemon.terminate();
}
