//! A central walwatch under hostile peers: the real daemon with `[ingest]`
//! and `[metrics]` on loopback ports, plain and HTTPS (a test CA), and the
//! raw sockets an unauthenticated peer would use. Each attack first took
//! the central down, stalled it or grew it without bound; each test shows
//! the daemon answering, staying small, and the agents' batches still taken.

use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use crate::support::central::{
    connect_from, eventually, exchange, open_files, raise_nofile, read_until_closed, rss_kb, Central, TOKEN,
};
use crate::support::daemon::{fixture, Workspace, STATUS_PROBLEMS};
use crate::support::vector::Agent;

const FILE: &str = "/var/log/postgresql/postgresql-15-main.log";

fn agent_lines(host: &str) -> Agent {
    Agent::read(host, FILE, &fixture("15-stderr-default-std"))
}

fn refused(central: &Central, listener: &str, reason: &str) -> u64 {
    central.listener(listener)["refused"][reason].as_u64().unwrap_or(0)
}

/// A head announcing a body of `length` bytes.
fn announcing(path: &str, length: u64, token: Option<&str>) -> Vec<u8> {
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    format!("POST {path} HTTP/1.1\r\nHost: central\r\n{auth}Content-Length: {length}\r\n\r\n").into_bytes()
}

#[test]
fn announced_sizes_long_heads_and_slow_bodies_cost_nothing() {
    let mut central = Central::start(&format!("{TOKEN}\n"), "", false);
    let (addr, metrics) = (central.addr(), ([127, 0, 0, 1], central.metrics_port).into());
    let pid = central.daemon.pid();
    let rss_before = rss_kb(pid);
    let wait = Duration::from_secs(5);
    // 100 TB announced, nothing sent: answered at once, never allocated,
    // the connection closed (never drained).
    let huge = 100_000_000_000_000;
    assert_eq!(
        exchange(addr, &announcing("/ingest/vector", huge, None), wait),
        ("HTTP/1.1 401 Unauthorized".into(), true)
    );
    let (line, closed) = exchange(addr, &announcing("/ingest/vector", huge, Some(TOKEN)), wait);
    assert_eq!((line.as_str(), closed), ("HTTP/1.1 413 Payload Too Large", true));
    let get = format!("GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: {huge}\r\n\r\n");
    assert_eq!(exchange(metrics, get.as_bytes(), wait).0, "HTTP/1.1 413 Payload Too Large");

    // A request line that never ends: cut off at the head limit (16 KiB),
    // long before the 64 MiB this peer would send.
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    stream.write_all(b"GET /").unwrap();
    let chunk = vec![b'a'; 64 << 10];
    let mut sent = 0usize;
    while sent < 64 << 20 && stream.write_all(&chunk).is_ok() {
        sent += chunk.len();
    }
    assert!(sent < 8 << 20, "the central read {sent} bytes of one request line");

    // A body announced as 1 GB is over max_batch_bytes: refused at once.
    // One announced as 32 MiB and never sent holds a slot, not the
    // receiver: a valid batch on another connection is taken meanwhile,
    // and the slow one is answered 408 once below the minimum rate.
    let (line, closed) = exchange(addr, &announcing("/ingest/vector", 1 << 30, Some(TOKEN)), wait);
    assert_eq!((line.as_str(), closed), ("HTTP/1.1 413 Payload Too Large", true));
    let mut slow = TcpStream::connect(addr).unwrap();
    slow.write_all(&announcing("/ingest/vector", 32 << 20, Some(TOKEN))).unwrap();
    let started = Instant::now();
    std::thread::sleep(Duration::from_millis(300));
    let mut lines = agent_lines("db-1");
    let batch = lines.batch(20).unwrap();
    let (status, answer, took) = central.send_with(&central.agent(), TOKEN, &batch);
    assert_eq!(status, 200, "{answer}");
    assert!(took < Duration::from_secs(1), "a valid batch waited {took:?} behind a slow one");
    slow.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let mut answer = Vec::new();
    let _ = read_until_closed(&mut slow, &mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let cut_after = started.elapsed();
    assert!((Duration::from_secs(4)..Duration::from_secs(9)).contains(&cut_after), "cut after {cut_after:?}");

    // A head sent a byte a second is cut off at the header timeout (15 s);
    // the other checks ran meanwhile.
    let mut trickle = TcpStream::connect(addr).unwrap();
    let trickle_started = Instant::now();
    trickle.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut cut = None;
    for byte in b"POST /ingest/vector HTTP/1.1\r\nHost: a-very-slow-peer.example\r\n".iter().cycle().take(40) {
        if trickle.write_all(&[*byte]).is_err() {
            cut = Some(trickle_started.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(700));
    }
    let cut = cut.unwrap_or_else(|| trickle_started.elapsed());
    assert!(cut < Duration::from_secs(20), "a trickled head was held for {cut:?}");

    let grown = rss_kb(pid).saturating_sub(rss_before);
    assert!(grown < 32 << 10, "the daemon grew by {grown} kB");
    // The refusals are counted (recorded at the next heartbeat).
    let counted = |c: &Central| {
        let got = ["too_large", "timeout", "unauthorized"].map(|r| refused(c, "ingest", r));
        (got == [3, 2, 1] && refused(c, "metrics", "too_large") == 1).then_some(()).ok_or(format!("{got:?}"))
    };
    eventually("the refusals counted", || counted(&central));
    let (code, status) = central.status();
    assert_eq!(code, Some(0), "{status}");
    central.daemon.terminate();
}

#[test]
fn idle_and_plain_connections_do_not_lock_the_agents_out_of_the_tls_port() {
    raise_nofile();
    // A small listener: 300 places, 40 from one address.
    let extra = "max_connections = 300\nmax_connections_per_peer = 40\n";
    let mut central = Central::start(&format!("{TOKEN}\n"), extra, true);
    let addr = central.addr();
    // 1 000 plain TCP connections that say nothing, from 20 addresses: the
    // oldest silent ones make room for the new ones.
    let mut idle = Vec::new();
    for i in 0..1000u32 {
        let from = [127, 0, 1, 1 + (i % 20) as u8];
        if let Ok(s) = connect_from(from, addr) {
            idle.push(s);
        }
    }
    // 100 that send half a TLS record and stop.
    for i in 0..100u32 {
        if let Ok(mut s) = connect_from([127, 0, 2, 1 + (i % 50) as u8], addr) {
            let _ = s.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01]);
            idle.push(s);
        }
    }
    // 100 from one more address: 40 are let in, 60 refused at once.
    for _ in 0..100 {
        if let Ok(s) = connect_from([127, 0, 4, 1], addr) {
            idle.push(s);
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let held = open_files(central.daemon.pid());
    assert!(held < 300 + 100, "the daemon holds {held} descriptors");
    // The agent (127.0.0.1) ships the whole log over HTTPS meanwhile.
    let client = central.agent();
    let mut lines = agent_lines("db-1");
    let mut took = Vec::new();
    while let Some(batch) = lines.batch(25) {
        let (status, answer, t) = central.send_with(&client, TOKEN, &batch);
        assert_eq!(status, 200, "{answer}");
        took.push(t);
    }
    took.sort();
    let p99 = took[(took.len() * 99 / 100).min(took.len() - 1)];
    assert!(p99 < Duration::from_secs(1), "p99 {p99:?} of {} batches", took.len());
    let want = central.ws.reference("db-1:15-main", &[&fixture("15-stderr-default-std")]);
    central.daemon.wait_equal("db-1:15-main", &want);
    let (code, status) = central.status();
    assert_eq!(code, Some(0), "{status}");
    eventually("the refusals counted", || {
        let got = ["peer_limit", "evicted"].map(|r| refused(&central, "ingest", r));
        (got[0] == 60 && got[1] >= 1000 + 100 + 40 - 300).then_some(()).ok_or(format!("{got:?}: {status}"))
    });
    // A stop while they are all still open, and a handshake half sent: the
    // daemon exits within its budget (terminate asserts 5 s).
    let mut slow = connect_from([127, 0, 5, 1], addr).unwrap();
    let _ = slow.write_all(b"\x16\x03\x01");
    let took = central.daemon.terminate();
    assert!(took < Duration::from_secs(5), "stopped in {took:?}");
    for s in &idle {
        let _ = s.shutdown(Shutdown::Both);
    }
}

#[test]
fn a_port_out_of_descriptors_is_said_and_takes_connections_again() {
    raise_nofile();
    // 96 descriptors: the listeners' own bounds do not fit (said at start),
    // so a flood meets EMFILE in accept, as on a host with a low limit.
    let mut central = Central::start_in(Workspace::new(), &format!("{TOKEN}\n"), "", false, Some(96));
    assert!(central.daemon.log().contains("The open-file limit (96) is below"), "{}", central.daemon.log());
    let addr = central.addr();
    let mut flood: Vec<TcpStream> =
        (0..200u32).filter_map(|i| connect_from([127, 0, 3, 1 + (i % 4) as u8], addr).ok()).collect();
    let (db, log) = (central.ws.db(), central.ws.path().join("daemon.log"));
    let down = central.daemon.wait_until("status names the listener that cannot accept", || {
        let out = crate::support::daemon::walwatch().args(["status", "--db", db.to_str().unwrap()]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let named = text.contains("listener ingest") && text.contains("cannot accept connections");
        (named && out.status.code() == Some(STATUS_PROBLEMS)).then_some(text.clone()).ok_or(text)
    });
    assert!(down.contains("DOWN since"), "{down}");
    assert!(std::fs::read_to_string(&log).unwrap().contains("Cannot accept connections; retrying."));
    // The flood ends: the port takes connections again, without a restart.
    for s in flood.drain(..) {
        drop(s);
    }
    let db = central.ws.db();
    central.daemon.wait_until("the listener is up again", || {
        let out = crate::support::daemon::walwatch().args(["status", "--db", db.to_str().unwrap()]).output().unwrap();
        (out.status.code() == Some(0)).then_some(()).ok_or(String::from_utf8_lossy(&out.stdout).into_owned())
    });
    let batch = agent_lines("db-1").batch(10).unwrap();
    assert_eq!(central.post(TOKEN, &batch).0, 200);
    central.daemon.terminate();
}

#[test]
fn a_batch_naming_hundreds_of_files_holds_few_descriptors() {
    let mut central = Central::start(&format!("{TOKEN}\n"), "", false);
    let line = "2026-11-25 07:00:00.123 UTC [812] LOG:  checkpoint starting: time";
    let batch: Vec<serde_json::Value> = (0..700)
        .map(|i| serde_json::json!({"message": line, "host": "db-1", "file": format!("/pg/log/{i}/postgresql.log"), "offset": 0}))
        .collect();
    let (status, answer) = central.post(TOKEN, &batch);
    assert_eq!(status, 200, "{answer}");
    let held = open_files(central.daemon.pid());
    // 64 spools of at most three files each, the store, the listeners.
    assert!(held < 64 * 3 + 60, "{held} descriptors held after 700 files");
    // Every one of them still takes lines (closed spools are opened again).
    let more: Vec<serde_json::Value> = (0..700)
        .map(|i| serde_json::json!({"message": line, "host": "db-1", "file": format!("/pg/log/{i}/postgresql.log"), "offset": 67}))
        .collect();
    let (status, answer) = central.post(TOKEN, &more);
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("\"taken\":700"), "{answer}");
    assert!(open_files(central.daemon.pid()) < 64 * 3 + 60);
    central.daemon.terminate();
}

#[test]
fn a_token_writes_only_its_hosts_and_names_are_bounded() {
    let (one, many) = ("token-for-db-1-only-0123456789", "token-for-the-eu-hosts-012345");
    let tokens = format!("# agents\n{one} db-1\n{many} db-eu-*\n");
    let mut central = Central::start(&tokens, "", false);
    let mut lines = agent_lines("db-2");
    let batch = lines.batch(10).unwrap();
    let (status, answer) = central.post(one, &batch);
    assert_eq!(status, 403, "{answer}");
    assert!(answer.contains("line 2 of [ingest] token_file) may write db-1, not host \"db-2\""), "{answer}");
    let eu: Vec<serde_json::Value> = agent_lines("db-eu-7").batch(10).unwrap();
    assert_eq!(central.post(many, &eu).0, 200);
    assert_eq!(central.post(one, &eu).0, 403);
    assert_eq!(crate::support::daemon::count(&central.ws.db(), "ingest_stream", "host = 'db-2'"), 0);
    // A 64 KiB host name; the same host spelt in NFD and NFC is one cluster.
    let mut long = batch[0].clone();
    long["host"] = serde_json::Value::String(format!("db-eu-{}", "h".repeat(64 << 10)));
    let (status, answer) = central.post(many, &[long]);
    assert_eq!(status, 400, "{answer}");
    assert!(answer.contains("\"host\" is over 253 bytes"), "{answer}");
    assert_eq!(central.post(TOKEN, &eu).0, 401, "a token not in the file");
    let nfd = agent_lines("db-eu-caf\u{65}\u{301}").batch(3).unwrap();
    let nfc = agent_lines("db-eu-caf\u{e9}").batch(6).unwrap();
    assert_eq!(central.post(many, &nfd).0, 200);
    let (status, answer) = central.post(many, &nfc);
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("\"taken\":3,\"duplicates\":3"), "{answer}");
    let counted = || {
        let got = ["forbidden", "unauthorized"].map(|r| refused(&central, "ingest", r));
        (got == [2, 1]).then_some(()).ok_or(format!("{got:?}"))
    };
    eventually("the refusals counted", counted);
    assert_eq!(central.status().0, Some(0));
    central.daemon.terminate();
}

#[test]
fn a_damaged_spool_is_set_aside_and_the_other_streams_flow() {
    let mut central = Central::start(&format!("{TOKEN}\n"), "", false);
    let log = fixture("15-stderr-default-std");
    let (mut one, mut two) = (Agent::read("db-1", FILE, &log), Agent::read("db-2", FILE, &log));
    for _ in 0..3 {
        assert_eq!(central.post(TOKEN, &one.batch(20).unwrap()).0, 200);
        assert_eq!(central.post(TOKEN, &two.batch(20).unwrap()).0, 200);
    }
    // Someone cuts db-1's spool behind walwatch's back, then the daemon restarts.
    let spool = central.ws.path().join("w-ingest");
    let file = std::fs::OpenOptions::new().write(true).open(spool.join("1-0.log")).unwrap();
    file.set_len(100).unwrap();
    central.restart();
    // Both hosts' batches are taken: db-1's in its next generation.
    while let (Some(a), Some(b)) = (one.batch(20), two.batch(20)) {
        let (status, answer) = central.post(TOKEN, &a);
        assert_eq!(status, 200, "{answer}");
        assert_eq!(central.post(TOKEN, &b).0, 200);
    }
    let want = central.ws.reference("db-2:15-main", &[&log]);
    central.daemon.wait_equal("db-2:15-main", &want);
    // Said in status (exit 4) until looked at; the damaged files kept.
    let (code, status) = central.status();
    assert_eq!(code, Some(STATUS_PROBLEMS), "{status}");
    let problems = status["reasons"].to_string();
    assert!(problems.contains("db-1:/var/log/postgresql/postgresql-15-main.log: its spool was damaged"), "{problems}");
    assert!(problems.contains("it holds 100 bytes but"), "{problems}");
    let kept: Vec<String> = std::fs::read_dir(spool.join("quarantine"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(kept.len(), 2, "{kept:?}");
    let conn = rusqlite::Connection::open(central.ws.db()).unwrap();
    let generation: i64 =
        conn.query_row("SELECT generation FROM ingest_stream WHERE host = 'db-1'", [], |r| r.get(0)).unwrap();
    assert_eq!(generation, 1);
    let out = crate::support::daemon::walwatch()
        .args(["forget", "--damaged", "--db", central.ws.db().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 damage record(s) forgotten"));
    assert_eq!(central.status().0, Some(0));
    central.daemon.terminate();
}

#[test]
fn two_stores_never_share_a_spool_directory() {
    let first = Central::start(&format!("{TOKEN}\n"), "", false);
    // Another store in the same directory gets a spool of its own by default…
    let ws = first.ws.path();
    let port = crate::support::central::free_port();
    let config = ws.join("v.toml");
    let tokens = ws.join("tokens");
    let text = format!(
        "[store]\npath = {:?}\n[ingest]\nlisten = \"127.0.0.1:{port}\"\ntoken_file = {:?}\n",
        ws.join("v.db").to_str().unwrap(),
        tokens.to_str().unwrap()
    );
    std::fs::write(&config, &text).unwrap();
    let mut second = crate::support::daemon::Daemon::start(&config, &ws.join("v.db"), &ws.join("v.log"));
    second.wait_until("the second receiver", || {
        let log = std::fs::read_to_string(ws.join("v.log")).unwrap_or_default();
        log.contains("Taking Vector agents' batches").then_some(()).ok_or(log)
    });
    assert!(ws.join("v-ingest").join("STORE").exists() && ws.join("w-ingest").join("STORE").exists());
    second.terminate();
    // …and pointed at the first one's, it refuses to start, saying why.
    let shared = format!("{text}spool = {:?}\n", ws.join("w-ingest").to_str().unwrap());
    std::fs::write(&config, shared).unwrap();
    let out = crate::support::daemon::walwatch().args(["run", "--config", config.to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("is in use by another walwatch daemon's receiver"), "{err}");
    drop(first);
}

#[test]
fn a_reload_that_cannot_be_served_keeps_the_receiver_and_says_so() {
    let mut central = Central::start(&format!("{TOKEN}\n"), "", false);
    let batch = agent_lines("db-1").batch(10).unwrap();
    let config = central.ws.config_path();
    let check = || {
        let out = crate::support::daemon::walwatch()
            .args(["config", "check", "--config", config.to_str().unwrap()])
            .output()
            .unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    // The token file garbled: config check says so; a reload keeps the tokens in force.
    let tokens = central.ws.path().join("tokens");
    std::fs::write(&tokens, b"\xff\xfe\n").unwrap();
    let (ok, err) = check();
    assert!(!ok && err.contains("token_file") && err.contains("not UTF-8"), "{err}");
    central.daemon.signal("HUP");
    eventually("the reload's problem said", || {
        let l = central.listener("ingest");
        let p = l["problem"].as_str().unwrap_or_default().to_string();
        p.contains("could not read the tokens").then_some(()).ok_or(l.to_string())
    });
    assert_eq!(central.status().0, Some(STATUS_PROBLEMS));
    assert_eq!(central.post(TOKEN, &batch).0, 200);
    // token_file pointed at a file that is not there: the receiver serves on.
    std::fs::write(&tokens, format!("{TOKEN}\n")).unwrap();
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace("/tokens\"", "/missing-tokens\"")).unwrap();
    let (ok, err) = check();
    assert!(!ok && err.contains("missing-tokens"), "{err}");
    central.daemon.signal("HUP");
    eventually("the reload's problem said", || {
        let p = central.listener("ingest")["problem"].as_str().unwrap_or_default().to_string();
        p.contains("could not apply the new [ingest] settings; serving on as before").then_some(()).ok_or(p)
    });
    assert_eq!(central.post(TOKEN, &batch).0, 200);
    // Fixed: the reload applies it and the problem is gone.
    std::fs::write(&config, text).unwrap();
    central.daemon.signal("HUP");
    eventually("the problem cleared", || {
        let (code, status) = central.status();
        (code == Some(0)).then_some(()).ok_or(status.to_string())
    });
    central.daemon.terminate();
}

#[test]
fn bytes_the_agent_never_shipped_are_said_not_bridged_silently() {
    let mut central = Central::start(&format!("{TOKEN}\n"), "", false);
    let mut events: Vec<serde_json::Value> = agent_lines("db-1").batch(40).unwrap();
    // The line at index 20 never arrives (longer than the agent's
    // max_line_bytes, say): its bytes are a gap in the offsets.
    let dropped = events.remove(20);
    let (offset, len) = (dropped["offset"].as_u64().unwrap(), dropped["message"].as_str().unwrap().len() as u64);
    assert_eq!(central.post(TOKEN, &events[..30]).0, 200);
    // Sent again, the batch bridges nothing new.
    assert_eq!(central.post(TOKEN, &events[..30]).0, 200);
    let (code, status) = central.status();
    assert_eq!(code, Some(STATUS_PROBLEMS), "{status}");
    let reasons = status["reasons"].to_string();
    let said = format!("{} bytes from offset {} were never shipped", len + 1, grouped(offset));
    assert!(reasons.contains(&said), "{said}: {reasons}");
    assert_eq!(reasons.matches("were never shipped").count(), 1, "{reasons}");
    let out = crate::support::daemon::walwatch()
        .args(["forget", "--damaged", "--db", central.ws.db().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 damage record(s) forgotten"));
    assert_eq!(central.post(TOKEN, &events[30..]).0, 200);
    assert_eq!(central.status().0, Some(0));
    central.daemon.terminate();
}

/// 12345 → "12,345", as the tables group numbers.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
