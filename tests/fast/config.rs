//! The daemon's configuration through the library API: the shipped example,
//! every kind of error with its position and key, and discovery on a fake
//! root.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use walwatch::config::{self, ClusterConfig, Config, ConfigError, ConfigSource, StartAt};

fn example_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("config/walwatch.toml")
}

/// The error message for `text` read from a file named `t.toml`.
fn error(text: &str) -> String {
    config::parse(text, Path::new("t.toml")).unwrap_err().to_string()
}

fn assert_error(text: &str, expected_start: &str) {
    let message = error(text);
    assert!(message.starts_with(expected_start), "{text:?}\n gave {message}\n expected {expected_start}…");
}

#[test]
fn shipped_example_documents_the_defaults() {
    let example = config::load(&example_path()).unwrap();
    // The rule tables are read by the rules: every rule at its defaults.
    let rules = walwatch::alert::rules::RuleSet::configure(&example.alerts).unwrap();
    assert_eq!(format!("{rules:?}"), format!("{:?}", walwatch::alert::rules::RuleSet::default()));
    assert_eq!(example.alerts.rules.ids().count(), 9);
    let tables = config::AlertsSection { rules: config::RuleTables::default(), ..example.alerts.clone() };
    assert_eq!(Config { alerts: tables, ..example }, Config::default());
}

/// The commented-out examples (`# ` lines) are valid when uncommented, and
/// they show every key.
#[test]
fn shipped_example_uncommented_is_valid_and_complete() {
    let text = fs::read_to_string(example_path()).unwrap();
    let uncommented: String =
        text.lines().map(|l| l.strip_prefix("# ").unwrap_or(l)).map(|l| format!("{l}\n")).collect();
    let config = config::parse(&uncommented, &example_path()).unwrap();
    assert_eq!(config.daemon.log_level.as_deref(), Some("info"));
    let names: Vec<&str> = config.clusters.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["main", "16-replica"]);
    let main = &config.clusters[0];
    assert_eq!(main.logs, ["/var/log/postgresql/postgresql-15-main.log*"]);
    assert!(main.data_directory.is_some());
    assert_eq!(main.timezone.as_deref(), Some("Europe/Berlin"));
    assert_eq!(ClusterConfig { timezone: None, logs: vec![], data_directory: None, ..main.clone() }, {
        ClusterConfig { name: "main".into(), ..ClusterConfig::default() }
    });
    assert_eq!(config.clusters[1].start_at, StartAt::End);
    // [cluster.advice]: the replica's bounds, the rest of [advice] as given.
    let replica = config.clusters[1].advice.as_ref().expect("[cluster.advice]");
    assert_eq!(replica.max_recovery, Some(std::time::Duration::from_secs(300)));
    assert_eq!((replica.max_pg_wal_mb, replica.lookback), (Some(8192), config.advice.lookback));
    assert_eq!(config.advice.max_recovery, Some(std::time::Duration::from_secs(120)));
    let listen = format!("127.0.0.1:{}", config::SUGGESTED_METRICS_PORT);
    assert_eq!(config.metrics.listen, Some(listen.parse().unwrap()), "the documented port");
    let ingest = &config.ingest;
    let listen = format!("0.0.0.0:{}", config::SUGGESTED_INGEST_PORT);
    assert_eq!(ingest.listen, Some(listen.parse().unwrap()), "the documented port");
    let defaults = config::IngestSection::default();
    assert_eq!((ingest.max_batch_bytes, ingest.settle), (defaults.max_batch_bytes, defaults.settle));
    assert_eq!(ingest.clusters.len(), 1);
    assert_eq!((ingest.clusters[0].host.as_str(), ingest.clusters[0].name.as_str()), ("db-*", "{host}"));
}

#[test]
fn empty_file_gives_the_defaults() {
    assert_eq!(config::parse("", Path::new("t.toml")).unwrap(), Config::default());
    assert_eq!(config::parse("# nothing\n\n", Path::new("t.toml")).unwrap(), Config::default());
}

#[test]
fn a_full_file_is_read() {
    let text = r#"
[store]
path = "/srv/walwatch.db"

[daemon]
poll_interval = "500ms"
entry_settle = "2m"
log_level = "debug"

[[cluster]]
name = "main"
logs = ["/var/log/postgresql/postgresql-15-main.log*", "/archive/main/*.gz"]
format = "stderr"
prefix = "%m [%p] %q%u@%d "
timezone = "Europe/Berlin"
start_at = "end"

[[cluster]]
name = "pgdg"
data_directory = "/var/lib/pgsql/16/data"
"#;
    let config = config::parse(text, Path::new("t.toml")).unwrap();
    assert_eq!(config.store.path, Path::new("/srv/walwatch.db"));
    assert_eq!(config.daemon.poll_interval, Duration::from_millis(500));
    assert_eq!(config.daemon.entry_settle, Duration::from_secs(120));
    assert_eq!(config.daemon.retired, Vec::<String>::new());
    assert_eq!(config.daemon.log_level.as_deref(), Some("debug"));
    let main = &config.clusters[0];
    assert_eq!(main.logs.len(), 2);
    assert_eq!((main.format.as_str(), main.prefix.as_str()), ("stderr", "%m [%p] %q%u@%d "));
    assert_eq!((main.timezone.as_deref(), main.start_at), (Some("Europe/Berlin"), StartAt::End));
    let pgdg = &config.clusters[1];
    assert_eq!(pgdg.data_directory.as_deref(), Some(Path::new("/var/lib/pgsql/16/data")));
    assert_eq!((pgdg.format.as_str(), pgdg.prefix.as_str(), pgdg.start_at), ("auto", "auto", StartAt::Beginning));
}

#[test]
fn unknown_key_names_position_table_and_key() {
    let message = error("[[cluster]]\nname=\"a\"\nlgos=[]\n");
    assert!(
        message.starts_with("t.toml:3:1: cluster: unknown field `lgos`, expected one of `name`, `logs`"),
        "{message}"
    );
    assert_error(
        "[stor]\npath = \"/x\"\n",
        "t.toml:1:2: unknown field `stor`, expected one of `store`, `daemon`, `advice`, `alerts`, `mail`, `webhook`, `digest`, `metrics`, `ingest`, `cluster`",
    );
    assert_error("[daemon]\npoll = \"1s\"\n", "t.toml:2:1: daemon: unknown field `poll`");
    assert_error(
        "[advice]\npercentile = 0.0\n",
        "t.toml:2:14: advice.percentile: percentile must be above 0 and at most 100, not 0",
    );
    assert_error(
        "[advice]\nheadroom = 0.5\n",
        "t.toml:2:12: advice.headroom: headroom is a factor from 1 to 10, e.g. 1.25, not 0.5",
    );
    assert_error("[advice]\nlookback = \"7x\"\n", "t.toml:2:12: advice.lookback: invalid duration");
    assert_error("cluster = [{ name = \"a\", lgos = [] }]\n", "t.toml:1:26: cluster: unknown field `lgos`");
}

#[test]
fn wrong_type_names_position_and_key() {
    assert_error(
        "[[cluster]]\nname=\"a\"\nlogs = 5\n",
        "t.toml:3:8: cluster.logs: invalid type: integer `5`, expected a sequence",
    );
    assert_error(
        "[[cluster]]\nname=\"a\"\nlogs = [\n  \"/a\",\n  5,\n]\n",
        "t.toml:5:3: cluster.logs: invalid type: integer `5`",
    );
    assert_error("[store]\npath = 1\n", "t.toml:2:8: store.path: invalid type: integer `1`");
    assert_error(
        "[daemon]\npoll_interval = 1\n",
        "t.toml:2:17: daemon.poll_interval: invalid type: integer `1`, expected a string",
    );
    assert_error(
        "[[cluster]]\nname=\"a\"\nlogs=[\"/a\"]\nstart_at = \"middle\"\n",
        "t.toml:4:12: cluster.start_at: unknown variant `middle`, expected `beginning` or `end`",
    );
    // One bracket where the list of clusters needs two: say what to write.
    assert_eq!(
        error("[cluster]\nname=\"a\"\nlogs=[\"/a\"]\n"),
        "t.toml:1:1: cluster: invalid type: map, expected a sequence \
         (a list of tables: write [[name]] above each entry, with two brackets, not [name])"
    );
}

#[test]
fn invalid_values_point_at_the_value() {
    let cluster = "[[cluster]]\nname = \"a\"\nlogs = [\"/a\"]\n";
    assert_error(
        &format!("{cluster}format = \"xml\"\n"),
        "t.toml:4:10: cluster.format: unknown format \"xml\", expected one of auto, stderr",
    );
    let message = error(&format!("{cluster}timezone = \"Mars/Olympus\"\n"));
    assert!(message.starts_with("t.toml:4:12: cluster.timezone: unknown time zone \"Mars/Olympus\""), "{message}");
    assert_error("[daemon]\nentry_settle = \"1\"\n", "t.toml:2:16: daemon.entry_settle: invalid duration \"1\"");
    assert_error(
        "[daemon]\npoll_interval = \"0s\"\n",
        "t.toml:2:17: daemon.poll_interval: duration \"0s\" must be positive",
    );
    assert_error("[daemon]\nlog_level = \"loud\"\n", "t.toml:2:13: daemon.log_level: unknown log level \"loud\"");
    assert_error(
        "[[cluster]]\nname = \"a\"\nlogs = [\"/a\", \"rel/*.log\"]\n",
        "t.toml:3:15: cluster.logs: \"rel/*.log\" is not an absolute path",
    );
    assert_error("[store]\npath = \"w.db\"\n", "t.toml:2:8: store.path: \"w.db\" is not an absolute path");
}

#[test]
fn cluster_names_are_required_non_empty_and_unique() {
    assert_error("[[cluster]]\nlogs = [\"/a\"]\n", "t.toml:1:1: cluster: missing field `name`");
    assert_error(
        "[[cluster]]\nname = \" \"\nlogs = [\"/a\"]\n",
        "t.toml:2:8: cluster.name: a cluster name must not be empty",
    );
    let twice = "[[cluster]]\nname = \"a\"\nlogs = [\"/a\"]\n\n[[cluster]]\nname = \"a\"\nlogs = [\"/b\"]\n";
    assert_error(twice, "t.toml:6:8: cluster.name: duplicate cluster name \"a\"");
}

#[test]
fn a_cluster_needs_logs_or_a_data_directory() {
    let message = error("[[cluster]]\nname = \"a\"\nlogs = []\n");
    assert!(message.starts_with("t.toml:1:1: cluster: cluster \"a\" has neither logs nor data_directory"), "{message}");
}

#[test]
fn syntax_errors_have_a_position() {
    let message = error("[store]\npath = \n");
    assert!(message.starts_with("t.toml:2:8: "), "{message}");
    assert!(!message.contains('\n'), "one line: {message}");
}

#[test]
fn load_reads_files_and_a_missing_explicit_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("walwatch.toml");
    fs::write(&path, "[daemon]\nentry_settle = \"250ms\"\n").unwrap();
    let (config, source) = config::load_or_default(Some(&path)).unwrap();
    assert_eq!(config.daemon.entry_settle, Duration::from_millis(250));
    assert_eq!(source, ConfigSource::File(path.clone()));

    let missing = dir.path().join("nope.toml");
    let err = config::load_or_default(Some(&missing)).unwrap_err();
    assert!(matches!(err, ConfigError::NotFound { .. }), "{err:?}");
    assert!(err.to_string().contains(&*missing.to_string_lossy()), "{err}");

    fs::write(&path, "[daemon]\nlog_level = 3\n").unwrap();
    let err = config::load(&path).unwrap_err().to_string();
    assert!(err.starts_with(&format!("{}:2:13: daemon.log_level: ", path.display())), "{err}");
}

/// The default file is looked up at a path the test owns, so the result does
/// not depend on whether this machine has an /etc/walwatch/walwatch.toml.
#[test]
fn a_missing_default_file_means_the_defaults() {
    assert_eq!(config::default_path(), Path::new("/etc/walwatch/walwatch.toml"));
    let dir = tempfile::tempdir().unwrap();
    let default = dir.path().join("walwatch.toml");

    // Absent: the built-in defaults, and the report names where it looked.
    let (config, source) = config::load_or_default_at(None, &default).unwrap();
    assert_eq!(config, Config::default());
    assert_eq!(source, ConfigSource::Defaults(default.clone()));

    // Present: it is read.
    fs::write(&default, "[daemon]\nentry_settle = \"250ms\"\n").unwrap();
    let (config, source) = config::load_or_default_at(None, &default).unwrap();
    assert_eq!(config.daemon.entry_settle, Duration::from_millis(250));
    assert_eq!(source, ConfigSource::File(default.clone()));

    // An explicit --config wins over the default file.
    let explicit = dir.path().join("explicit.toml");
    fs::write(&explicit, "").unwrap();
    let (config, source) = config::load_or_default_at(Some(&explicit), &default).unwrap();
    assert_eq!((config, source), (Config::default(), ConfigSource::File(explicit)));

    // Present but invalid: an error naming it, never a silent fall-back to the defaults.
    fs::write(&default, "[daemon]\nlog_level = 3\n").unwrap();
    let err = config::load_or_default_at(None, &default).unwrap_err().to_string();
    assert!(err.starts_with(&format!("{}:2:13: daemon.log_level: ", default.display())), "{err}");

    // Unreadable (a directory in its place): an error too.
    fs::remove_file(&default).unwrap();
    fs::create_dir(&default).unwrap();
    let err = config::load_or_default_at(None, &default).unwrap_err();
    assert!(matches!(err, ConfigError::Read { .. }), "{err:?}");
}

#[test]
fn check_describes_the_clusters() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.toml");
    let text = "[[cluster]]\nname = \"main\"\nlogs = [\"/var/log/a*\"]\n\n[[cluster]]\nname = \"pgdg\"\ndata_directory = \"/d\"\nlogs = [\"/d/log/*.csv\"]\n";
    fs::write(&path, text).unwrap();
    let report = walwatch::cmd::config::check(Some(&path), Path::new("/")).unwrap();
    let head =
        format!("config {} is valid: 2 clusters (main: 1 glob, pgdg: 1 glob + data directory)\n", path.display());
    assert!(report.starts_with(&head), "{report}");
    assert!(
        report.contains("  main: logs /var/log/a* (format auto, prefix \"auto\", start at beginning)\n"),
        "{report}"
    );
    assert!(
        report.contains(
            "store /var/lib/walwatch/walwatch.db (keeps 400 days); poll every 1s, log level from RUST_LOG (default info)\n"
        ),
        "{report}"
    );
    // A valid config that follows nothing is still said to be wrong.
    assert!(
        report.contains(
            "warning: cluster pgdg: /d/log: cannot list the directory: No such file or directory (os error 2)\n"
        ),
        "{report}"
    );
    assert!(
        report.ends_with("alert rules: 9 of 9 enabled; delivery: none: alerts are kept in the store\n"),
        "{report}"
    );

    // Delivery without secrets: a webhook's path and query may hold its token.
    let delivery = "[mail]\ntransport = \"file\"\nfrom = \"a@b.example\"\nto = [\"c@d.example\", \"e@f.example\"]\n\
                    [mail.file]\ndirectory = \"/tmp/x\"\n[webhook]\nurl = \"https://hooks.example.com/T0KEN?x=1\"\n\
                    [alerts.slow_sync]\nenabled = false\n";
    fs::write(&path, format!("{text}{delivery}")).unwrap();
    let report = walwatch::cmd::config::check(Some(&path), Path::new("/")).unwrap();
    assert!(
        report.ends_with(
            "alert rules: 8 of 9 enabled; delivery: mail to 2 recipients via .eml files in /tmp/x, \
             webhook https://hooks.example.com/…\n"
        ),
        "{report}"
    );

    fs::write(&path, "[store\n").unwrap();
    assert!(walwatch::cmd::config::check(Some(&path), Path::new("/"))
        .unwrap_err()
        .to_string()
        .starts_with(&format!("{}:1:", path.display())));
}

/// A fake root with Debian logs (current and rotated) and PGDG data
/// directories, one with a collector and one without.
fn fake_root() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let debian = root.path().join("var/log/postgresql");
    fs::create_dir_all(&debian).unwrap();
    for file in [
        "postgresql-15-main.log",
        "postgresql-15-main.log.1",
        "postgresql-15-main.log.2.gz",
        "postgresql-16-replica.log",
        "postgresql-16-replica.log.1",
        "pg_upgradecluster-15-16-main.log",
    ] {
        fs::write(debian.join(file), "").unwrap();
    }
    let pgdg = root.path().join("var/lib/pgsql/16/data");
    fs::create_dir_all(pgdg.join("log")).unwrap();
    fs::write(pgdg.join("current_logfiles"), "stderr log/postgresql-Sun.log\ncsvlog log/postgresql-Sun.csv\n").unwrap();
    fs::create_dir_all(root.path().join("var/lib/pgsql/data")).unwrap();
    root
}

#[test]
fn discovery_finds_debian_and_pgdg_layouts() {
    let root = fake_root();
    let r = root.path().display().to_string();
    let found = config::discover(root.path());
    let debian = |name: &str| ClusterConfig {
        name: name.into(),
        logs: vec![format!("{r}/var/log/postgresql/postgresql-{name}.log*")],
        ..ClusterConfig::default()
    };
    let pgdg = ClusterConfig {
        name: "16".into(),
        logs: vec![format!("{r}/var/lib/pgsql/16/data/log/*.csv")],
        data_directory: Some(root.path().join("var/lib/pgsql/16/data")),
        format: "csvlog".into(),
        ..ClusterConfig::default()
    };
    assert_eq!(found.clusters, [debian("15-main"), debian("16-replica"), pgdg]);
    assert_eq!(found.notes.len(), 1, "{:?}", found.notes);
    assert!(found.notes[0].contains("var/lib/pgsql/data: no current_logfiles"), "{}", found.notes[0]);

    let summary = found.to_string();
    assert!(summary.starts_with("discovery found 3 clusters:\n  15-main: logs "), "{summary}");
    assert!(summary.contains("  note: "), "{summary}");
}

#[test]
fn discovery_on_an_empty_root_says_so() {
    let root = tempfile::tempdir().unwrap();
    let found = config::discover(root.path());
    assert!(found.clusters.is_empty() && found.notes.is_empty());
    assert!(found.to_string().starts_with("discovery found no PostgreSQL log"), "{found}");
}

#[test]
fn check_without_clusters_reports_discovery() {
    let root = fake_root();
    let path = root.path().join("w.toml");
    fs::write(&path, "").unwrap();
    let report = walwatch::cmd::config::check(Some(&path), root.path()).unwrap();
    assert!(
        report.contains("is valid: no [[cluster]], so clusters are discovered\ndiscovery found 3 clusters:"),
        "{report}"
    );
}

#[test]
fn a_retired_key_is_accepted_and_reported() {
    let text = "[daemon]\ncommit_interval = \"1s\"\n";
    let config = config::parse(text, Path::new("t.toml")).unwrap();
    assert_eq!(config.daemon.retired.len(), 1, "{:?}", config.daemon.retired);
    assert!(
        config.daemon.retired[0].starts_with("[daemon] commit_interval is no longer used"),
        "{:?}",
        config.daemon.retired
    );
    // Everything else is the defaults: the key changes nothing.
    assert_eq!(
        Config { daemon: config::DaemonSection { retired: vec![], ..config.daemon.clone() }, ..config },
        Config::default()
    );

    let root = fake_root();
    let path = root.path().join("w.toml");
    fs::write(&path, text).unwrap();
    let report = walwatch::cmd::config::check(Some(&path), root.path()).unwrap();
    assert!(report.contains("\nnote: [daemon] commit_interval is no longer used"), "{report}");
}

/// What the daemon prints on stderr from start to a SIGTERM, run with
/// `config` (a follower of an empty log directory) and `flags`.
fn daemon_stderr(config: &str, flags: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    fs::create_dir(&logs).unwrap();
    let db = dir.path().join("w.db");
    let path = dir.path().join("w.toml");
    let cluster = format!("[[cluster]]\nname = \"a\"\nlogs = [\"{}/*.log\"]\n", logs.display());
    fs::write(&path, format!("{config}\n{cluster}")).unwrap();
    let err = fs::File::create(dir.path().join("stderr")).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_walwatch"))
        .args(flags)
        .args(["run", "--config"])
        .arg(&path)
        .arg("--db")
        .arg(&db)
        .env_remove("RUST_LOG")
        .env_remove("JOURNAL_STREAM")
        .stderr(err)
        .spawn()
        .unwrap();
    // The daemon lock exists once start-up is past the config and the store.
    let lock = dir.path().join("w.db.lock");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !lock.exists() {
        assert!(std::time::Instant::now() < deadline, "the daemon never took its lock");
        std::thread::sleep(Duration::from_millis(20));
    }
    let term = std::process::Command::new("kill").arg(child.id().to_string()).status().unwrap();
    assert!(term.success());
    assert!(child.wait().unwrap().success(), "SIGTERM is a clean stop");
    fs::read_to_string(dir.path().join("stderr")).unwrap()
}

#[test]
fn the_daemon_logs_at_the_configured_level_unless_flags_say_otherwise() {
    let info = daemon_stderr("", &[]);
    assert!(info.contains("Starting.") && info.contains("Stopped."), "default is info: {info}");

    let warn = daemon_stderr("[daemon]\nlog_level = \"warn\"\ncommit_interval = \"1s\"", &[]);
    assert!(!warn.contains("Starting.") && !warn.contains("Stopped."), "log_level = warn: {warn}");
    assert!(warn.contains("[daemon] commit_interval is no longer used"), "the retired key is a warning: {warn}");

    let verbose = daemon_stderr("[daemon]\nlog_level = \"error\"", &["-v"]);
    assert!(verbose.contains("Starting."), "-v wins over log_level: {verbose}");
    let quiet = daemon_stderr("[daemon]\nlog_level = \"debug\"\ncommit_interval = \"1s\"", &["-q"]);
    assert!(!quiet.contains("Starting.") && !quiet.contains("no longer used"), "-q wins over log_level: {quiet}");
}

/// `[store] keep`: the retention the daemon prunes to.
#[test]
fn store_keep_reads_durations_and_forever() {
    let keep =
        |text: &str| config::parse(&format!("[store]\nkeep = {text:?}\n"), Path::new("t.toml")).unwrap().store.keep;
    assert_eq!(config::Config::default().store.keep, Some(Duration::from_secs(400 * 86_400)));
    assert_eq!(keep("400d"), Some(Duration::from_secs(400 * 86_400)));
    assert_eq!(keep("2w"), Some(Duration::from_secs(14 * 86_400)));
    assert_eq!(keep("36h"), Some(Duration::from_secs(36 * 3600)));
    assert_eq!(keep("forever"), None);
    assert_eq!(keep("off"), None);
}

#[test]
fn a_bad_store_keep_points_at_the_value() {
    assert_error("[store]\nkeep = \"400\"\n", "t.toml:2:8: store.keep: invalid duration \"400\"");
    assert_error("[store]\nkeep = \"0\"\n", "t.toml:2:8: store.keep: ");
    assert_error("[store]\nkeep = \"0d\"\n", "t.toml:2:8: store.keep: duration \"0d\" must be positive");
    assert_error(
        "[store]\npath = \"/srv/w.db\"\nkeep  = \"400s\"\n",
        "t.toml:3:9: store.keep: keep \"400s\" is shorter than a day",
    );
    assert_error("[store]\nkeep = 400\n", "t.toml:2:8: store.keep: invalid type: integer `400`");
}

/// `[cluster.advice]` replaces the keys it gives, over `[advice]` as the
/// file sets it (not over the defaults); a cluster without one has
/// `[advice]`; a bad value in it is told at its line and column.
#[test]
fn a_clusters_advice_is_advice_with_its_keys_replaced() {
    let text = r#"
[advice]
headroom = 1.5
max_recovery = "2min"

[[cluster]]
name = "a"
logs = ["/var/log/a/*.log"]
[cluster.advice]
max_recovery = "10min"

[[cluster]]
name = "b"
logs = ["/var/log/b/*.log"]
"#;
    let config = config::parse(text, Path::new("t.toml")).unwrap();
    let a = config.clusters[0].advice.clone().unwrap();
    assert_eq!((a.headroom, a.max_recovery), (1.5, Some(std::time::Duration::from_secs(600))));
    assert_eq!(
        a,
        config::AdviceSection { max_recovery: Some(std::time::Duration::from_secs(600)), ..config.advice.clone() }
    );
    assert_eq!(config.clusters[1].advice, None);
    let bad = text.replace("max_recovery = \"10min\"", "percentile = 0.0");
    let message = error(&bad);
    assert!(
        message.contains("t.toml:10:14: cluster.advice.percentile") && message.contains("percentile must be above 0"),
        "{message}"
    );
}
