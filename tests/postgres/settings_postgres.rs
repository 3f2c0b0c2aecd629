//! `walwatch settings` against a real PostgreSQL 15: the values walwatch
//! reports must be what `SHOW` says, each with the right source, for a
//! postgresql.conf with an include_dir, a postgresql.auto.conf written by
//! ALTER SYSTEM, a `[cluster.settings]` override and a change the log reports.
//!
//! The "conf files unreadable" step runs walwatch as user nobody (as root)
//! or with postgresql.conf at mode 000 (otherwise): walwatch usually runs as
//! its own user without access to the server's conf.

use crate::support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;
use support::{describe, ts_key, walwatch, PgCluster, StopMode};
use walwatch::guc::{units, KNOWN};

const CLUSTER: &str = "pg15";

const SETTINGS: &[(&str, &str)] = &[
    ("logging_collector", "on"),
    ("log_destination", "'stderr'"),
    ("log_line_prefix", "'%m [%p] '"),
    ("log_timezone", "'UTC'"),
    ("lc_messages", "'C'"),
    ("shared_buffers", "'32MB'"),
    // The settings under test, as an admin writes them.
    ("max_wal_size", "2GB"),
    ("checkpoint_timeout", "'10min'"),
    ("include_dir", "'conf.d'"),
];

struct Files {
    conf: PathBuf,
    wal: PathBuf,
    io: PathBuf,
    auto: PathBuf,
}

fn write_conf_d(pg: &PgCluster) -> Files {
    let dir = pg.data_dir().join("conf.d");
    fs::create_dir_all(&dir).unwrap();
    let wal = dir.join("10-wal.conf");
    fs::write(&wal, "min_wal_size = 192MB\ncheckpoint_completion_target = 0.8\n").unwrap();
    let io = dir.join("20-io.conf");
    fs::write(&io, "# io settings\ncommit_delay 1000\ncheckpoint_flush_after = '128kB'\nsynchronous_commit = local\n")
        .unwrap();
    // Neither PostgreSQL nor walwatch reads these: hidden, not *.conf.
    fs::write(dir.join(".hidden.conf"), "min_wal_size = 1GB\n").unwrap();
    fs::write(dir.join("notes.txt"), "min_wal_size = 2GB\n").unwrap();
    let data = pg.data_dir();
    Files { conf: data.join("postgresql.conf"), wal, io, auto: data.join("postgresql.auto.conf") }
}

fn import(pg: &PgCluster, db: &Path) {
    let out = walwatch()
        .args(["import", "--db", db.to_str().unwrap(), "--cluster", CLUSTER])
        .args(pg.log_files())
        .output()
        .expect("spawn walwatch import");
    assert!(out.status.success(), "walwatch import: {}", describe(&out));
}

fn settings_args(work: &Path) -> Vec<String> {
    let (config, db) = (work.join("walwatch.toml"), work.join("w.db"));
    let mut args: Vec<String> = vec!["settings".into(), "--config".into(), config.display().to_string()];
    args.extend(["--db".into(), db.display().to_string(), "--format".into(), "json".into()]);
    args
}

fn json_of(out: &Output) -> Value {
    assert!(out.status.success(), "walwatch settings: {}", describe(out));
    let all: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", describe(out)));
    let clusters = all.as_array().expect("an array of clusters");
    assert_eq!(clusters.len(), 1, "{all}");
    assert_eq!(clusters[0]["cluster"], CLUSTER);
    clusters[0].clone()
}

/// walwatch as root (or the test's user): it can read the conf files.
fn settings_with_access(work: &Path) -> (Value, Output) {
    let out = walwatch().args(settings_args(work)).output().expect("spawn walwatch");
    (json_of(&out), out)
}

/// walwatch without read access to the server's conf files.
fn settings_without_access(work: &Path, conf: &Path) -> (Value, Output) {
    let out = if is_root() {
        for entry in fs::read_dir(work).unwrap() {
            fs::set_permissions(entry.unwrap().path(), fs::Permissions::from_mode(0o666)).unwrap();
        }
        fs::set_permissions(work, fs::Permissions::from_mode(0o777)).unwrap();
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", env!("CARGO_BIN_EXE_walwatch")]);
        cmd.args(settings_args(work)).output().expect("spawn setpriv walwatch")
    } else {
        let mode = fs::metadata(conf).unwrap().permissions();
        fs::set_permissions(conf, fs::Permissions::from_mode(0o000)).unwrap();
        let out = walwatch().args(settings_args(work)).output().expect("spawn walwatch");
        fs::set_permissions(conf, mode).unwrap();
        out
    };
    (json_of(&out), out)
}

fn is_root() -> bool {
    let out = Command::new("id").arg("-u").output().expect("id -u");
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

/// Every known setting walwatch reports equals SHOW, compared in normal units.
fn assert_matches_show(pg: &PgCluster, report: &Value) {
    assert_eq!(report["version"], 15);
    let current = report["current"].as_object().expect("current");
    assert_eq!(current.len(), KNOWN.len(), "{report}");
    for name in KNOWN {
        let ours = current[name]["value"].as_str().unwrap_or_else(|| panic!("{name} in {report}"));
        let server = pg.show(name);
        let parse = |text: &str| units::parse(name, text, Some(15)).unwrap_or_else(|e| panic!("{name} {text:?}: {e}"));
        assert_eq!(parse(ours), parse(&server), "{name}: walwatch says {ours:?}, SHOW says {server:?}");
    }
}

fn source(report: &Value, name: &str) -> Value {
    report["current"][name]["source"].clone()
}

fn conf_source(path: &Path, line: usize) -> Value {
    serde_json::json!({"kind": "conf_file", "path": path.display().to_string(), "line": line})
}

fn default_15() -> Value {
    serde_json::json!({"kind": "default", "version": 15})
}

#[test]
fn settings_match_show_with_their_sources() {
    let mut pg = PgCluster::init(SETTINGS);
    let files = write_conf_d(&pg);
    pg.start();
    // auto.conf, read at the next start: no "changed" line in the log.
    pg.psql("ALTER SYSTEM SET backend_flush_after = '64kB';");
    pg.stop(StopMode::Fast);
    pg.start();
    assert_eq!(pg.show("backend_flush_after"), "64kB");
    assert_eq!(pg.show("min_wal_size"), "192MB", "the hidden and .txt files are not read");

    let work = tempfile::Builder::new().prefix("walwatch-settings-").tempdir().unwrap();
    let config = format!(
        "[[cluster]]\nname = \"{CLUSTER}\"\ndata_directory = \"{}\"\n\n[cluster.settings]\n\
         # initdb's default, which walwatch cannot read from a file\nwal_segment_size = \"16MB\"\n",
        pg.data_dir().display()
    );
    fs::write(work.path().join("walwatch.toml"), config).unwrap();
    let db = work.path().join("w.db");
    import(&pg, &db);

    // 1. Everything readable.
    let (first, _) = settings_with_access(work.path());
    assert_matches_show(&pg, &first);
    let expected = [
        ("wal_segment_size", serde_json::json!({"kind": "config"})),
        ("max_wal_size", conf_source(&files.conf, support::conf_line_of(&files.conf, "max_wal_size"))),
        ("checkpoint_timeout", conf_source(&files.conf, support::conf_line_of(&files.conf, "checkpoint_timeout"))),
        ("min_wal_size", conf_source(&files.wal, 1)),
        ("checkpoint_completion_target", conf_source(&files.wal, 2)),
        ("commit_delay", conf_source(&files.io, 2)),
        ("checkpoint_flush_after", conf_source(&files.io, 3)),
        ("synchronous_commit", conf_source(&files.io, 4)),
        ("backend_flush_after", conf_source(&files.auto, support::conf_line_of(&files.auto, "backend_flush_after"))),
        ("checkpoint_warning", default_15()),
        ("fsync", default_15()),
        ("full_page_writes", default_15()),
        ("wal_keep_size", default_15()),
    ];
    assert_eq!(expected.len(), KNOWN.len());
    for (name, want) in &expected {
        assert_eq!(&source(&first, name), want, "source of {name}");
    }
    assert_eq!(first["current"]["max_wal_size"]["value"], "2GB");
    // The first read of the files and the config is where walwatch started
    // looking: no change.
    assert_eq!(first["timeline"], serde_json::json!([]), "{first}");

    // 2. A reload after walwatch read the files: the log says it first.
    std::thread::sleep(Duration::from_millis(50));
    pg.psql("ALTER SYSTEM SET max_wal_size = '3GB';\nSELECT pg_reload_conf();");
    let changed = "parameter \"max_wal_size\" changed to \"3GB\"";
    assert!(pg.wait_for_log(Duration::from_secs(10), |t| t.contains(changed)), "no {changed:?} in the log");
    let log: String = pg.log_files().iter().map(|f| fs::read_to_string(f).unwrap()).collect();
    let line = log.lines().find(|l| l.contains(changed)).unwrap();
    let logged_at = ts_key(line.split(" [").next().unwrap());
    import(&pg, &db);

    let (second, out) = settings_without_access(work.path(), &files.conf);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot read configuration file") && stderr.contains("not recorded"), "{stderr}");
    assert_matches_show(&pg, &second);
    let src = source(&second, "max_wal_size");
    assert_eq!((src["kind"].as_str(), second["current"]["max_wal_size"]["value"].as_str()), (Some("log"), Some("3GB")));
    assert_eq!(ts_key(src["at"].as_str().unwrap()), logged_at);
    for (name, want) in expected.iter().filter(|(n, _)| *n != "max_wal_size") {
        assert_eq!(&source(&second, name), want, "source of {name} without access");
    }
    let log_changes: Vec<&Value> =
        second["timeline"].as_array().unwrap().iter().filter(|c| c["source"]["kind"] == "log").collect();
    assert_eq!(log_changes.len(), 1, "{second}");
    assert_eq!((log_changes[0]["name"].as_str(), log_changes[0]["new"].as_str()), (Some("max_wal_size"), Some("3GB")));
    assert_eq!(ts_key(log_changes[0]["at"].as_str().unwrap()), logged_at);

    // 3. Read again: the files are newer than the log line and say the same, from auto.conf.
    let (third, _) = settings_with_access(work.path());
    assert_matches_show(&pg, &third);
    let auto_line = support::conf_line_of(&files.auto, "max_wal_size");
    assert_eq!(source(&third, "max_wal_size"), conf_source(&files.auto, auto_line));
    // The ALTER SYSTEM is one change: auto.conf's, with its old value, at
    // the time the server logged the reload (not a file change and a log
    // change).
    let timeline = third["timeline"].as_array().unwrap();
    assert_eq!(timeline.len(), 1, "{third}");
    let last = timeline.last().unwrap();
    assert_eq!(
        (last["name"].as_str(), last["old"].as_str(), last["new"].as_str()),
        (Some("max_wal_size"), Some("2GB"), Some("3GB"))
    );
    assert_eq!(last["source"], conf_source(&files.auto, auto_line));
    assert_eq!(ts_key(last["at"].as_str().unwrap()), logged_at);
}

/// A log written inside the data directory (log_directory =
/// 'log', PostgreSQL's default) points walwatch at the server's conf files
/// with no config at all: `import` + `settings` show postgresql.conf's
/// values with their file and line, and where the data directory was found.
#[test]
fn a_log_inside_pgdata_points_to_its_conf_files() {
    let mut settings: Vec<(&str, &str)> = SETTINGS.iter().copied().filter(|(n, _)| *n != "include_dir").collect();
    settings.push(("log_directory", "'log'"));
    let mut pg = PgCluster::init(&settings);
    pg.start();
    pg.psql("CHECKPOINT;");
    pg.stop(StopMode::Fast);
    let logs: Vec<PathBuf> = fs::read_dir(pg.data_dir().join("log"))
        .expect("$PGDATA/log")
        .map(|e| e.unwrap().path())
        .filter(|p| fs::metadata(p).is_ok_and(|m| m.len() > 0))
        .collect();
    assert!(!logs.is_empty(), "no log in $PGDATA/log");

    let work = tempfile::Builder::new().prefix("walwatch-settings-").tempdir().unwrap();
    let (db, empty) = (work.path().join("w.db"), work.path().join("empty.toml"));
    fs::write(&empty, "").unwrap();
    let out = walwatch().args(["import", "--db", db.to_str().unwrap()]).args(&logs).output().expect("spawn import");
    assert!(out.status.success(), "walwatch import: {}", describe(&out));
    let args = ["settings", "--config", empty.to_str().unwrap(), "--db", db.to_str().unwrap()];
    let out = walwatch().args(args).args(["--format", "json"]).output().expect("spawn walwatch settings");
    assert!(out.status.success(), "walwatch settings: {}", describe(&out));
    let all: Value = serde_json::from_slice(&out.stdout).unwrap();
    let report = &all.as_array().expect("an array of clusters")[0];
    let conf = pg.data_dir().join("postgresql.conf");
    for name in ["max_wal_size", "checkpoint_timeout"] {
        assert_eq!(source(report, name), conf_source(&conf, support::conf_line_of(&conf, name)), "{name}: {report}");
    }
    assert_eq!(report["current"]["max_wal_size"]["value"], "2GB");
    assert_eq!(report["data_directory_from_log"]["path"], pg.data_dir().display().to_string(), "{report}");
    assert!(report.get("not_inferred").is_none(), "the conf files were read: nothing to infer: {report}");
    let table = walwatch().args(args).output().expect("spawn walwatch settings");
    let text = String::from_utf8_lossy(&table.stdout);
    let found = format!("data directory {} (holds the log ", pg.data_dir().display());
    assert!(text.contains(&found) && text.contains("its conf files are read"), "{text}");
}
