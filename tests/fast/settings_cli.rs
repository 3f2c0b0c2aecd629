//! `walwatch settings` on real files without a server: imported fixture logs
//! (clusters known only from the store), conf files written here, the table
//! output, and `[cluster.settings]` validation through the library.

use crate::support;

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::json;
use support::{describe, walwatch, walwatch_json};

fn fixture_log(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name).join("log");
    let mut files: Vec<PathBuf> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert_eq!(files.len(), 1);
    files.remove(0)
}

fn import(db: &Path, cluster: &str, log: &Path) {
    let out = walwatch()
        .args(["import", "--db", db.to_str().unwrap(), "--cluster", cluster])
        .arg(log)
        .output()
        .expect("spawn walwatch import");
    assert!(out.status.success(), "{}", describe(&out));
}

fn empty_config(dir: &Path) -> String {
    let path = dir.join("empty.toml");
    fs::write(&path, "# no clusters\n").unwrap();
    path.display().to_string()
}

/// PostgreSQL 13 logs imported under two names, no config: the version,
/// 13's defaults and the log's change, from the store alone. The forged
/// fixture's client-written "changed to" lines do not count.
#[test]
fn imported_clusters_print_from_the_store() {
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("w.db");
    import(&db, "thirteen", &fixture_log("13-stderr-default-std"));
    import(&db, "forged", &fixture_log("15-stderr-default-forged"));
    let config = empty_config(work.path());
    let all = walwatch_json(&["settings", "--config", &config, "--db", db.to_str().unwrap(), "--format", "json"]);
    let names: Vec<&str> = all.as_array().unwrap().iter().map(|c| c["cluster"].as_str().unwrap()).collect();
    assert_eq!(names, ["forged", "thirteen"]);

    let thirteen = &all[1];
    assert_eq!(thirteen["version"], 13);
    assert_eq!(
        thirteen["current"]["max_wal_size"],
        json!({"value": "64MB", "source": {"kind": "log", "at": "2026-11-22T08:16:10.176+00:00"}})
    );
    assert_eq!(
        thirteen["current"]["checkpoint_completion_target"],
        json!({"value": "0.5", "source": {"kind": "default", "version": 13}})
    );
    assert_eq!(
        thirteen["timeline"],
        json!([{"at": "2026-11-22T08:16:10.176+00:00", "name": "max_wal_size", "old": null, "new": "64MB",
                "source": {"kind": "log", "at": "2026-11-22T08:16:10.176+00:00"}}])
    );

    // `suggest` gives the same `current`: the same shape, the same values
    // and sources.
    let db_arg = db.to_str().unwrap();
    let suggested =
        walwatch_json(&["suggest", "--config", &config, "--db", db_arg, "--cluster", "thirteen", "--format", "json"]);
    assert_eq!(suggested["current"], thirteen["current"]);

    let forged = &all[0];
    assert_eq!(forged["version"], 15);
    assert_eq!(forged["current"]["max_wal_size"]["value"], "64MB");
    assert_eq!(forged["current"]["max_wal_size"]["source"]["at"], "2026-11-22T08:08:54.812+00:00");
    assert_eq!(forged["timeline"].as_array().unwrap().len(), 1, "{forged}");
    assert_eq!(forged["current"]["checkpoint_completion_target"]["value"], "0.9");

    let one = walwatch_json(&[
        "settings",
        "--config",
        &config,
        "--db",
        db.to_str().unwrap(),
        "--cluster",
        "thirteen",
        "--format",
        "json",
    ]);
    assert_eq!(one.as_array().unwrap().len(), 1);
    let out = walwatch()
        .args(["settings", "--config", &config, "--db", db.to_str().unwrap(), "--cluster", "nope"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no cluster \"nope\""), "{}", describe(&out));
}

/// A config-only cluster whose conf lives outside the data directory
/// (Debian layout: config_file), a bad line in an included file, the table.
#[test]
fn table_output_and_a_broken_include() {
    let work = tempfile::tempdir().unwrap();
    let etc = work.path().join("etc");
    let data = work.path().join("data");
    fs::create_dir_all(etc.join("conf.d")).unwrap();
    fs::create_dir_all(&data).unwrap();
    let conf = etc.join("postgresql.conf");
    fs::write(&conf, format!("data_directory = '{}'\nmax_wal_size = 4GB\ninclude_dir 'conf.d'\n", data.display()))
        .unwrap();
    fs::write(etc.join("conf.d/a.conf"), "fsync = off\n").unwrap();
    fs::write(data.join("postgresql.auto.conf"), "# Do not edit\ncheckpoint_timeout = '20min'\n").unwrap();
    fs::write(data.join("PG_VERSION"), "13\n").unwrap();
    let config = work.path().join("w.toml");
    let text = format!(
        "[[cluster]]\nname = \"main\"\nlogs = [\"/nonexistent/*.log\"]\nconfig_file = \"{}\"\n\n[cluster.settings]\ncheckpoint_completion_target = 0.7\n",
        conf.display()
    );
    fs::write(&config, text).unwrap();
    let db = work.path().join("w.db");
    // Only `import` and the daemon make a store; `settings` records into it.
    let empty = work.path().join("empty.log");
    fs::write(&empty, "").unwrap();
    let made = walwatch().args(["import", "--db", db.to_str().unwrap(), "--cluster", "main"]).arg(&empty).output();
    assert!(made.unwrap().status.success());
    let run = || {
        let out = walwatch()
            .args(["settings", "--config", config.to_str().unwrap(), "--db", db.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", describe(&out));
        (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
    };
    let (table, _) = run();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[0], "cluster main (PostgreSQL 13)", "from PG_VERSION");
    let row = |name: &str| -> Vec<String> {
        let line = lines.iter().find(|l| l.starts_with(&format!("{name} "))).unwrap();
        line.split("  ").map(str::trim).filter(|c| !c.is_empty()).map(String::from).collect()
    };
    assert_eq!(row("max_wal_size"), ["max_wal_size", "4GB", &format!("{}:2", conf.display())]);
    assert_eq!(row("fsync"), ["fsync", "off", &format!("{}:1", etc.join("conf.d/a.conf").display())]);
    let auto = format!("{}:2", data.join("postgresql.auto.conf").display());
    assert_eq!(row("checkpoint_timeout"), ["checkpoint_timeout", "20min", &auto]);
    assert_eq!(row("checkpoint_completion_target"), ["checkpoint_completion_target", "0.7", "walwatch config"]);
    assert_eq!(row("min_wal_size"), ["min_wal_size", "80MB", "default (PG 13)"]);
    assert_eq!(row("checkpoint_warning"), ["checkpoint_warning", "30s", "default (PG 13)"]);
    assert!(!table.contains("changes:"), "the first read is where walwatch started looking, no change: {table}");

    // A syntax error anywhere: nothing from the files is recorded, the old values stay.
    fs::write(etc.join("conf.d/a.conf"), "fsync = on\nthis is not a setting\n").unwrap();
    fs::write(&conf, "max_wal_size = 8GB\ninclude_dir 'conf.d'\n").unwrap();
    let (table, stderr) = run();
    let a = etc.join("conf.d/a.conf");
    assert!(stderr.contains(&format!("{}:2: syntax error near token \"not\"", a.display())), "{stderr}");
    assert!(table.lines().any(|l| l.starts_with("max_wal_size ") && l.contains("4GB")), "{table}");
    assert!(table.lines().any(|l| l.starts_with("fsync ") && l.contains("off")), "{table}");

    // Fixed, with one value changed: exactly that change, old and new.
    fs::write(etc.join("conf.d/a.conf"), "fsync = on\n").unwrap();
    fs::write(&conf, format!("data_directory = '{}'\nmax_wal_size = 4GB\ninclude_dir 'conf.d'\n", data.display()))
        .unwrap();
    let json = walwatch_json(&[
        "settings",
        "--config",
        config.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let timeline: Vec<(&str, &str, &str)> = json[0]["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["old"].as_str().unwrap(), c["new"].as_str().unwrap()))
        .collect();
    assert_eq!(timeline, [("fsync", "off", "on")], "{json}");
}

fn config_error(settings: &str) -> String {
    let text = format!("[[cluster]]\nname = \"m\"\nlogs = [\"/l\"]\n\n[cluster.settings]\n{settings}\n");
    walwatch::config::parse(&text, Path::new("t.toml")).unwrap_err().to_string()
}

fn config_ok(settings: &str) -> Vec<(String, String)> {
    let text = format!("[[cluster]]\nname = \"m\"\nlogs = [\"/l\"]\n\n[cluster.settings]\n{settings}\n");
    let config = walwatch::config::parse(&text, Path::new("t.toml")).unwrap_or_else(|e| panic!("{settings}: {e}"));
    config.clusters[0].settings.clone().into_iter().collect()
}

#[test]
fn cluster_settings_are_validated_at_their_position() {
    let ok = config_ok(
        "max_wal_size = \"4GB\"\ncheckpoint_timeout = \"15min\"\ncheckpoint_completion_target = 0.9\nfsync = \"off\"\n\
         full_page_writes = true\ncommit_delay = 1000\nwal_segment_size = \"64MB\"\nsynchronous_commit = \"local\"",
    );
    let pairs: Vec<(&str, &str)> = ok.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(
        pairs,
        [
            ("checkpoint_completion_target", "0.9"),
            ("checkpoint_timeout", "15min"),
            ("commit_delay", "1000"),
            ("fsync", "off"),
            ("full_page_writes", "on"),
            ("max_wal_size", "4GB"),
            ("synchronous_commit", "local"),
            ("wal_segment_size", "64MB"),
        ]
    );
    assert_eq!(
        config_error("max_wal_sise = \"4GB\""),
        "t.toml:6:16: cluster.settings.max_wal_sise: unknown setting \"max_wal_sise\", expected one of max_wal_size, \
         min_wal_size, checkpoint_timeout, checkpoint_completion_target, checkpoint_warning, wal_segment_size, fsync, \
         full_page_writes, synchronous_commit, commit_delay, checkpoint_flush_after, backend_flush_after, wal_keep_size, server_version"
    );
    assert_eq!(
        config_error("max_wal_size = \"4gb\""),
        "t.toml:6:16: cluster.settings.max_wal_size: invalid value for max_wal_size: \"4gb\": unknown unit \"gb\", \
         valid units are kB, MB, GB, TB, B"
    );
    assert_eq!(
        config_error("checkpoint_timeout = \"10s\""),
        "t.toml:6:22: cluster.settings.checkpoint_timeout: invalid value for checkpoint_timeout: \
         checkpoint_timeout must be between 30 and 86400 s"
    );
    assert!(config_error("checkpoint_completion_target = 1.5")
        .starts_with("t.toml:6:32: cluster.settings.checkpoint_completion_target: invalid value"));
    assert!(config_error("fsync = \"maybe\"").contains("\"maybe\" is not a boolean"));
    assert!(config_error("commit_delay = \"1ms\"").contains("takes no unit"));
    assert!(config_error("fsync = [1]").contains("a setting is a string, number or boolean, not a array"));
    assert_eq!(config_ok("server_version = \"9.6\""), [("server_version".to_string(), "9.6".to_string())]);
    assert_eq!(config_ok("server_version = 11"), [("server_version".to_string(), "11".to_string())]);
    assert!(config_error("server_version = \"9.5\"")
        .starts_with("t.toml:6:18: cluster.settings.server_version: \"9.5\" is not"));
}
