//! A central walwatch stores for a host exactly what a local `walwatch
//! import` of that host's log stores: the forgeries the host's own reader
//! refuses are refused on the central too.
//!
//! walwatch tells a forged checkpoint line by the lines around it — the
//! failed login whose user or database name holds it, the CONTEXT line of a
//! client's RAISE LOG — and those lines name no checkpoint. So the agent
//! must ship every line: here each log goes to a real central daemon as the
//! agent `walwatch vector-config` configures would ship it
//! (`support::vector::Agent::configured` reads the generated config: its
//! sources, their multiline rules and line limit, and every transform on
//! the way to the sink; a filter put back into the config is applied, and
//! these tests then fail).
//!
//! Real PostgreSQL 15 servers write the logs, one per prefix family:
//! Debian's `%m [%p] %q%u@%d ` (with csvlog and jsonlog beside it) and
//! PostgreSQL's own `%m [%p] `. Each gets real checkpoints (CHECKPOINT
//! commands, WAL-triggered ones, the shutdown one) and the attacks:
//! failed logins whose names hold a checkpoint line dated now and claiming
//! pid 2 (once beside a database name of 0xff bytes, which is no UTF-8);
//! `RAISE LOG` of a checkpoint line and of `parameter "fsync"
//! changed to "off"` by a role without privileges. Then the central's rows
//! must equal a local import's, and hold the server's real checkpoints only:
//! as many as the checkpointer logged, by trigger, and no durability_off.
//!
//! Needs PostgreSQL server binaries; fails, never skips, without them.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::support::daemon::walwatch;
use crate::support::vector::{Agent, Central};
use crate::support::{fixture_dirs, fixture_logs, int, ts_key, walwatch_json, PgCluster, StopMode};

const DEBIAN: &str = "%m [%p] %q%u@%d ";
const UPSTREAM: &str = "%m [%p] ";

/// The agent's config as `walwatch vector-config` prints it for a host's
/// stderr, csvlog and jsonlog files.
fn agent_config() -> String {
    let args = ["vector-config", "--logs", "/pg/*.log", "--logs", "/pg/*.csv", "--logs", "/pg/*.json"];
    let out = walwatch().args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// One cluster per kind of file, so that a server's stderr, csvlog and
/// jsonlog files are three clusters, each compared with its own import.
const NAMING: &str = "[[ingest.cluster]]\nfile = \"*.csv\"\nname = \"{host}-csv\"\n\n\
                      [[ingest.cluster]]\nfile = \"*.json\"\nname = \"{host}-json\"\n\n\
                      [[ingest.cluster]]\nname = \"{host}\"\n";

/// What a server really did, and the log files it wrote.
struct Run {
    host: &'static str,
    pg: PgCluster,
    checkpointer: u32,
    /// Server clock when the run began (`ts_key`); every real line is later.
    began: String,
    /// CHECKPOINT commands issued.
    manual: i64,
}

#[test]
fn attacks_on_each_prefix_family_are_refused_by_the_central_as_by_a_local_import() {
    let config = agent_config();
    let runs = [attack("db-debian", DEBIAN, "'stderr,csvlog,jsonlog'"), attack("db-upstream", UPSTREAM, "'stderr'")];
    let mut central = Central::start(NAMING);
    let mut shipped = Vec::new();
    for run in &runs {
        for file in run.pg.log_files() {
            let path = format!("/pg/{}", file.file_name().unwrap().to_str().unwrap());
            let content = fs::read(&file).unwrap();
            let mut agent = Agent::configured(&config, run.host, &path, &content);
            while let Some(batch) = agent.batch(100) {
                central.send(&batch, false);
            }
            let ext = file.extension().unwrap().to_str().unwrap().to_string();
            let cluster = match ext.as_str() {
                "log" => run.host.to_string(),
                other => format!("{}-{other}", run.host),
            };
            shipped.push((run, ext, cluster, content));
        }
    }
    assert_eq!(shipped.len(), 4, "Debian's server wrote a .log, .csv and .json file, the other a .log");
    for (run, ext, cluster, content) in &shipped {
        // The independent count here is real_checkpoints(): the checkpointer's
        // own lines, by its pid, which the login-name forgeries cannot fake.
        let want = central.ws.reference_uncounted(cluster, &[content]);
        central.daemon.wait_equal(cluster, &want);
        let truth = real_checkpoints(run);
        println!("{cluster}: the checkpointer logged {truth:?}; rejected {}", want.summary["rejected"]);
        assert!(truth["wal"] >= 2, "{cluster}: the workload made WAL-triggered checkpoints: {truth:?}");
        let s = &want.summary;
        assert_eq!(int(s, "checkpoints.by_trigger.manual"), run.manual, "{cluster}: {s}");
        assert_eq!(int(s, "checkpoints.by_trigger.shutdown"), 1, "{cluster}: {s}");
        for (key, path) in [
            ("started", "checkpoints.started"),
            ("completed", "checkpoints.completed"),
            ("wal", "checkpoints.by_trigger.wal"),
            ("time", "checkpoints.by_trigger.time"),
        ] {
            assert_eq!(int(s, path), truth[key], "{cluster} {path}: {s}");
        }
        assert_eq!(int(s, "parameter_changes"), 0, "{cluster}: no forged setting: {s}");
        // Every checkpoint line stored is the checkpointer's, every row paired.
        for event in want.events.iter().filter(|e| e.kind.starts_with("checkpoint_")) {
            assert_eq!(event.pid, Some(i64::from(run.checkpointer)), "{cluster}: {event}");
        }
        for row in &want.checkpoints {
            assert!(row["started_at"].is_string() && row["completed_at"].is_string(), "{cluster}: {row}");
        }
        // The attacks were there to refuse: stderr refuses each forged line
        // (csvlog and jsonlog hold them inside quoted or escaped fields).
        let rejected = int(s, "rejected");
        match (run.host, ext.as_str()) {
            // 3 logins x (FATAL, DETAIL) x 2 names, and the non-UTF-8 one's; 6 RAISE LOG.
            ("db-debian", "log") => assert_eq!(rejected, 12 + 2 + 6, "{cluster}: {s}"),
            // The user name's copies are a continuation of the FATAL line
            // (4 logins with the line as user name); 6 RAISE LOG.
            ("db-upstream", "log") => assert_eq!(rejected, 3 + 1 + 6, "{cluster}: {s}"),
            // RAISE LOG only: the names are in quoted or escaped fields.
            _ => assert_eq!(rejected, 6, "{cluster}: {s}"),
        }
    }
    // The alert rules on the central judged the real checkpoints only.
    let alerts = wait_for_alerts(&mut central, &shipped.iter().map(|s| s.2.clone()).collect::<Vec<_>>());
    for (cluster, rules) in &alerts {
        assert!(!rules.iter().any(|r| r == "durability_off" || r == "clock_skew"), "{cluster}: {rules:?}");
    }
    // And they are the rules a local analysis of each cluster's import fires.
    for (_, _, cluster, content) in &shipped {
        let local = local_alerts(&central, cluster, content);
        assert_eq!(alerts.get(cluster).cloned().unwrap_or_default(), local, "{cluster}: central vs local analyze");
    }
    central.daemon.terminate();
}

/// The forged fixture runs (real servers that wrote forged records, each
/// counted by tests/fixtures/forged_records.py), shipped through the agent:
/// the central refuses each, as an import does, and stores the same rows.
#[test]
fn the_forged_fixture_runs_shipped_equal_a_local_import() {
    let config = agent_config();
    let mut central = Central::start("[[ingest.cluster]]\nname = \"{host}\"\n");
    let mut runs = Vec::new();
    for dir in fixture_dirs().into_iter().filter(|d| d.to_str().unwrap().ends_with("-forged")) {
        let name = dir.file_name().unwrap().to_str().unwrap().to_string();
        // The collector's file: .csv or .json beside a .log of the lines
        // written before it started, or the .log alone.
        let logs = fixture_logs(&dir);
        let main = logs.iter().find(|f| f.extension().is_some_and(|e| e != "log")).unwrap_or(&logs[0]).clone();
        let content = fs::read(&main).unwrap();
        let path = format!("/pg/{}", main.file_name().unwrap().to_str().unwrap());
        let mut agent = Agent::configured(&config, &name, &path, &content);
        while let Some(batch) = agent.batch(50) {
            central.send(&batch, false);
        }
        runs.push((name, dir, content));
    }
    assert_eq!(runs.len(), 4, "{:?}", runs.iter().map(|r| &r.0).collect::<Vec<_>>());
    for (name, dir, content) in &runs {
        let layout: Value = serde_json::from_str(&fs::read_to_string(dir.join("truth.json")).unwrap()).unwrap();
        let (prefix, lc) = (layout["log_line_prefix"].as_str().unwrap(), layout["lc_messages"].as_str().unwrap());
        let want = central.ws.reference_as(name, &[content], prefix, lc);
        central.daemon.wait_equal(name, &want);
        let truth: Value = serde_json::from_str(&fs::read_to_string(dir.join("truth.json")).unwrap()).unwrap();
        let forged = truth["counts"]["forged_records"]["total"].as_i64().unwrap();
        assert!(forged > 0, "{name}");
        assert_eq!(int(&want.summary, "rejected"), forged, "{name}: {}", want.summary);
        let starts = truth["counts"]["checkpoint_start"]["total"].as_i64().unwrap();
        assert_eq!(int(&want.summary, "checkpoints.started"), starts, "{name}: {}", want.summary);
    }
    central.daemon.terminate();
}

/// A server with `prefix` and `destination`, its real checkpoints, and the
/// attacks between them.
fn attack(host: &'static str, prefix: &str, destination: &str) -> Run {
    let quoted = format!("'{prefix}'");
    let mut pg = PgCluster::init(&crate::support::attacked_server(&quoted, destination));
    pg.start();
    pg.require_passwords();
    let began = ts_key(&now(&pg));
    let checkpointer: u32 = pg
        .psql("SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")
        .trim()
        .parse()
        .expect("the checkpointer's pid");
    // A role without privileges: RAISE LOG needs none.
    pg.psql("CREATE ROLE app LOGIN PASSWORD 'app'");
    pg.psql("CHECKPOINT");
    forge(&pg);
    wal_checkpoints(&pg, checkpointer, &began);
    // A CHECKPOINT while a WAL-triggered one is still asked for is merged
    // with it (its start line says "immediate force wait wal"): wait for
    // the checkpointer to finish them, so that it stays one of its own.
    idle(&pg, checkpointer, &began);
    pg.psql("CHECKPOINT");
    let mut run = Run { host, pg, checkpointer, began, manual: 2 };
    run.pg.stop(StopMode::Fast);
    crate::support::keep_logs_if_asked(&run.pg.log_files());
    run
}

/// The server's clock, as its log writes it (UTC, milliseconds).
fn now(pg: &PgCluster) -> String {
    pg.psql("SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS')").trim().to_string()
}

/// The attacks. Failed logins whose database name, then user name, is a
/// checkpoint line dated now from pid 2 between line breaks (Debian's
/// prefix prints both names in every line of the login's entry; with
/// PostgreSQL's own the FATAL message quotes the user name); a checkpoint
/// line and a setting change that turns fsync off, raised with RAISE LOG.
fn forge(pg: &PgCluster) {
    let line = format!("\n{} Z [2] LOG:  checkpoint starting: wal\n", now(pg));
    assert!(line.len() <= 63, "{line:?} would be cut");
    for _ in 0..3 {
        pg.failed_login("postgres", &line);
        pg.failed_login(&line, "postgres");
    }
    // A database name that is not UTF-8 beside the line in the user name: an
    // agent decoding UTF-8 would ship the 0xff bytes as U+FFFD.
    pg.failed_login_bytes(line.as_bytes(), &[0xff; 63]);
    for _ in 0..3 {
        pg.psql("SET ROLE app; DO $$BEGIN RAISE LOG '%', 'chec'||'kpoint sta'||'rting: wal'; END$$");
        pg.psql("SET ROLE app; DO $$BEGIN RAISE LOG '%', 'param'||'eter \"fsync\" changed to \"off\"'; END$$");
    }
}

/// WAL-triggered checkpoints (max_wal_size is 32MB: each WAL segment
/// switched after a write asks for one) until the log has two.
fn wal_checkpoints(pg: &PgCluster, checkpointer: u32, began: &str) {
    pg.psql("CREATE TABLE filler (v text)");
    for _ in 0..100 {
        pg.psql("INSERT INTO filler SELECT repeat('x', 200) FROM generate_series(1, 2000); SELECT pg_switch_wal()");
        let files: Vec<PathBuf> = stderr_files(pg);
        if count_lines(checkpointer, began, &files)["wal"] >= 2 {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("no two WAL-triggered checkpoints");
}

/// Until every checkpoint started is complete and none started for half a second.
fn idle(pg: &PgCluster, checkpointer: u32, began: &str) {
    let mut last = (-1, -1);
    for _ in 0..100 {
        let n = count_lines(checkpointer, began, &stderr_files(pg));
        let now = (n["started"], n["completed"]);
        if now == last && now.0 == now.1 {
            return;
        }
        last = now;
        std::thread::sleep(Duration::from_millis(500));
    }
    panic!("the checkpointer did not go idle: {last:?}");
}

fn stderr_files(pg: &PgCluster) -> Vec<PathBuf> {
    pg.log_files().into_iter().filter(|f| f.extension().is_some_and(|e| e == "log")).collect()
}

/// The checkpointer's own lines in the run's stderr log.
fn real_checkpoints(run: &Run) -> BTreeMap<&'static str, i64> {
    count_lines(run.checkpointer, &run.began, &stderr_files(&run.pg))
}

/// The checkpointer's lines counted without walwatch: a line that starts
/// with a time (UTC, after the run began) and the checkpointer's pid, then
/// `checkpoint starting:`/`complete:`. Every forged line claims pid 2 or
/// a client's pid, or sits inside another line.
fn count_lines(checkpointer: u32, began: &str, files: &[PathBuf]) -> BTreeMap<&'static str, i64> {
    let mut n: BTreeMap<&'static str, i64> =
        ["started", "completed", "wal", "time", "manual", "shutdown"].iter().map(|k| (*k, 0)).collect();
    for file in files {
        let text = String::from_utf8_lossy(&fs::read(file).unwrap()).into_owned();
        for line in text.lines() {
            let Some((head, message)) = line.split_once("] LOG:  ") else { continue };
            let Some((ts, pid)) = head.split_once(" UTC [") else { continue };
            if pid != checkpointer.to_string() || ts.len() != 23 || ts_key(ts).as_str() < began {
                continue;
            }
            if let Some(flags) = message.strip_prefix("checkpoint starting: ") {
                *n.get_mut("started").unwrap() += 1;
                let words: Vec<&str> = flags.split(' ').collect();
                let trigger = match () {
                    _ if words.contains(&"shutdown") => "shutdown",
                    _ if words.contains(&"wal") => "wal",
                    _ if words.contains(&"time") => "time",
                    _ => "manual",
                };
                *n.get_mut(trigger).unwrap() += 1;
            } else if message.starts_with("checkpoint complete: ") {
                *n.get_mut("completed").unwrap() += 1;
            }
        }
    }
    n
}

/// The rules the central's daemon fired, by cluster, once its analysis ran
/// over every cluster's events (it runs a couple of seconds after new events).
fn wait_for_alerts(central: &mut Central, clusters: &[String]) -> BTreeMap<String, Vec<String>> {
    let db = central.ws.db();
    let fired = || -> Result<BTreeMap<String, Vec<String>>, String> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for alert in alerts(&db).as_array().unwrap() {
            out.entry(alert["cluster"].as_str().unwrap().to_string())
                .or_default()
                .push(alert["rule"].as_str().unwrap().to_string());
        }
        out.values_mut().for_each(|rules| rules.sort());
        Ok(out)
    };
    // The real WAL-triggered checkpoints fire forced_checkpoints everywhere.
    central.daemon.wait_until("the rules run over every cluster", || {
        let out = fired()?;
        match clusters.iter().all(|c| out.get(c).is_some_and(|r| r.iter().any(|r| r == "forced_checkpoints"))) {
            true => Ok(out),
            false => Err(format!("{out:?}")),
        }
    })
}

fn alerts(db: &Path) -> Value {
    walwatch_json(&["alerts", "--all", "--db", db.to_str().unwrap(), "--format", "json"])
}

/// The rules `walwatch analyze` fires on a local import of `content`.
fn local_alerts(central: &Central, cluster: &str, content: &[u8]) -> Vec<String> {
    let dir = central.ws.dir(&format!("local-{cluster}"));
    let (db, file) = (dir.join("local.db"), dir.join("0.log"));
    fs::write(&file, content).unwrap();
    let db_arg = db.to_str().unwrap();
    let out = walwatch().args(["import", "--db", db_arg, "--cluster", cluster, file.to_str().unwrap()]).output();
    assert!(out.unwrap().status.success());
    let out = walwatch().args(["analyze", "--no-send", "--db", db_arg, "--cluster", cluster]).output().unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    let mut rules: Vec<String> =
        alerts(&db).as_array().unwrap().iter().map(|a| a["rule"].as_str().unwrap().to_string()).collect();
    rules.sort();
    rules
}
