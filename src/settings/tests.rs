use super::*;

fn t(s: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + s).unwrap()
}

fn row(name: &str, value: Option<&str>, source: RowSource, line: i64, since: i64) -> SettingRow {
    let conf = source == RowSource::ConfFile;
    SettingRow {
        name: name.into(),
        value: value.map(String::from),
        source,
        path: conf.then(|| "/etc/pg.conf".to_string()),
        line: conf.then_some(line),
        since: t(since),
    }
}

fn log(name: &str, value: &str, at: i64) -> LogChange {
    LogChange { at: t(at), name: name.into(), value: value.into() }
}

fn known(config: Vec<SettingRow>, conf: Vec<SettingRow>, conf_read: Option<i64>, log: Vec<LogChange>) -> Known {
    Known { config, conf, conf_read: conf_read.map(t), log }
}

fn value(s: &Settings, name: &str) -> (String, ValueSource) {
    let v = &s.values[name];
    (v.value.clone(), v.source.clone())
}

#[test]
fn defaults_fill_every_known_setting_per_version() {
    let s = resolve(Some(13), &known(vec![], vec![], None, vec![]));
    assert_eq!(s.values.len(), KNOWN.len());
    assert_eq!(value(&s, "checkpoint_completion_target"), ("0.5".into(), ValueSource::Default { version: Some(13) }));
    assert_eq!(s.number("checkpoint_completion_target"), Some(0.5));
    let s = resolve(None, &known(vec![], vec![], None, vec![]));
    assert_eq!(value(&s, "checkpoint_completion_target"), ("0.9".into(), ValueSource::Default { version: None }));
    assert_eq!(s.mb("max_wal_size"), Some(1024.0));
    assert_eq!(s.mb("min_wal_size"), Some(80.0));
    assert_eq!(s.mb("wal_segment_size"), Some(16.0));
    assert_eq!(s.mb("wal_keep_size"), Some(0.0));
    assert_eq!(s.seconds("checkpoint_timeout"), Some(300.0));
    assert_eq!(s.seconds("checkpoint_warning"), Some(30.0));
    assert_eq!(s.seconds("commit_delay"), Some(0.0));
    assert_eq!(s.kb("checkpoint_flush_after"), Some(256.0));
    assert_eq!(s.kb("backend_flush_after"), Some(0.0));
    assert_eq!(s.flag("fsync"), Some(true));
    assert_eq!(s.flag("full_page_writes"), Some(true));
    assert_eq!(s.flag("synchronous_commit"), Some(true));
    assert_eq!(Settings::defaults(Some(9)).mb("max_wal_size"), Some(1024.0));
}

#[test]
fn config_beats_conf_and_log() {
    let k = known(
        vec![row("max_wal_size", Some("8GB"), RowSource::Config, 0, 0)],
        vec![row("max_wal_size", Some("2GB"), RowSource::ConfFile, 7, 0)],
        Some(0),
        vec![log("max_wal_size", "4GB", 10)],
    );
    let s = resolve(Some(15), &k);
    assert_eq!(value(&s, "max_wal_size"), ("8GB".into(), ValueSource::Config));
    assert_eq!(s.mb("max_wal_size"), Some(8192.0));
}

#[test]
fn a_log_change_after_the_conf_read_wins_an_older_one_does_not() {
    let conf = vec![row("max_wal_size", Some("2GB"), RowSource::ConfFile, 7, 0)];
    let newer =
        known(vec![], conf.clone(), Some(5), vec![log("max_wal_size", "3GB", 4), log("max_wal_size", "4GB", 6)]);
    assert_eq!(value(&resolve(Some(15), &newer), "max_wal_size"), ("4GB".into(), ValueSource::Log { at: t(6) }));
    let older = known(vec![], conf.clone(), Some(7), vec![log("max_wal_size", "4GB", 6)]);
    let conf_source = ValueSource::ConfFile { path: "/etc/pg.conf".into(), line: 7 };
    assert_eq!(value(&resolve(Some(15), &older), "max_wal_size"), ("2GB".into(), conf_source));
    // Never read the conf (no access): the log is all there is.
    let unread = known(vec![], vec![], None, vec![log("checkpoint_timeout", "15min", 1)]);
    let s = resolve(Some(15), &unread);
    assert_eq!(value(&s, "checkpoint_timeout"), ("15min".into(), ValueSource::Log { at: t(1) }));
    assert_eq!(s.seconds("checkpoint_timeout"), Some(900.0));
    // Read after the change and no longer set there: the default.
    let removed = [
        row("max_wal_size", Some("2GB"), RowSource::ConfFile, 7, 0),
        row("max_wal_size", None, RowSource::ConfFile, 0, 8),
    ];
    let latest = vec![removed[1].clone()];
    let s = resolve(Some(15), &known(vec![], latest, Some(9), vec![log("max_wal_size", "4GB", 6)]));
    assert_eq!(value(&s, "max_wal_size"), ("1GB".into(), ValueSource::Default { version: Some(15) }));
}

#[test]
fn bare_numbers_use_the_unit_of_the_version() {
    let conf = vec![
        row("max_wal_size", Some("64"), RowSource::ConfFile, 1, 0),
        row("min_wal_size", Some("10"), RowSource::ConfFile, 2, 0),
        row("checkpoint_flush_after", Some("16"), RowSource::ConfFile, 3, 0),
        row("commit_delay", Some("2500"), RowSource::ConfFile, 4, 0),
    ];
    let old = resolve(Some(9), &known(vec![], conf.clone(), Some(0), vec![]));
    assert_eq!(old.mb("max_wal_size"), Some(1024.0), "9.6: segments");
    assert_eq!(old.mb("min_wal_size"), Some(160.0));
    let new = resolve(Some(10), &known(vec![], conf, Some(0), vec![]));
    assert_eq!(new.mb("max_wal_size"), Some(64.0), "10+: MB");
    assert_eq!(new.kb("checkpoint_flush_after"), Some(128.0));
    assert_eq!(new.seconds("commit_delay"), Some(0.0025));
    // 9.6 with 64MB segments (set in walwatch's config)
    let big = vec![row("wal_segment_size", Some("64MB"), RowSource::Config, 0, 0)];
    let old = resolve(
        Some(9),
        &known(big, vec![row("max_wal_size", Some("64"), RowSource::ConfFile, 1, 0)], Some(0), vec![]),
    );
    assert_eq!(old.mb("max_wal_size"), Some(4096.0));
}

#[test]
fn wal_keep_segments_maps_to_wal_keep_size_before_13() {
    let conf = vec![row("wal_keep_segments", Some("32"), RowSource::ConfFile, 9, 0)];
    let s = resolve(Some(12), &known(vec![], conf, Some(0), vec![]));
    let source = ValueSource::ConfFile { path: "/etc/pg.conf".into(), line: 9 };
    assert_eq!(value(&s, "wal_keep_size"), ("512MB".into(), source));
    assert_eq!(s.mb("wal_keep_size"), Some(512.0));
}

#[test]
fn flags_and_unparsable_values() {
    let conf = vec![
        row("fsync", Some("of"), RowSource::ConfFile, 1, 0),
        row("full_page_writes", Some("TRUE"), RowSource::ConfFile, 2, 0),
        row("synchronous_commit", Some("off"), RowSource::ConfFile, 3, 0),
        row("checkpoint_timeout", Some("5 minutes"), RowSource::ConfFile, 4, 0),
    ];
    let s = resolve(Some(15), &known(vec![], conf, Some(0), vec![]));
    assert_eq!(s.flag("fsync"), Some(false));
    assert_eq!(s.flag("full_page_writes"), Some(true));
    assert_eq!(s.flag("synchronous_commit"), Some(false));
    assert_eq!(s.seconds("checkpoint_timeout"), None, "not valid PostgreSQL: no number");
    assert_eq!(s.mb("fsync"), None);
    assert_eq!(s.mb("no_such_setting"), None);
    let local = resolve(
        Some(15),
        &known(vec![], vec![row("synchronous_commit", Some("local"), RowSource::ConfFile, 1, 0)], Some(0), vec![]),
    );
    assert_eq!(local.flag("synchronous_commit"), Some(true));
}

#[test]
fn timeline_lists_value_changes_per_source() {
    let rows = vec![
        row("max_wal_size", Some("2GB"), RowSource::ConfFile, 7, 0),
        row("max_wal_size", Some("2GB"), RowSource::ConfFile, 8, 5),
        row("max_wal_size", None, RowSource::ConfFile, 0, 9),
        row("checkpoint_timeout", Some("10min"), RowSource::Config, 0, 1),
    ];
    let mut changes = row_changes(&rows);
    changes.extend(log_changes(&[
        log("max_wal_size", "3GB", 3),
        log("max_wal_size", "4GB", 4),
        log("work_mem", "1GB", 4),
    ]));
    changes.sort_by(|a, b| a.at.cmp(&b.at).then_with(|| a.name.cmp(&b.name)));
    type Row<'a> = (i64, &'a str, Option<&'a str>, Option<&'a str>, String);
    let summary: Vec<Row> = changes
        .iter()
        .map(|c| {
            (
                c.at.as_second() - 1_800_000_000,
                c.name.as_str(),
                c.old.as_deref(),
                c.new.as_deref(),
                c.source.to_string(),
            )
        })
        .collect();
    let log_at = |s: i64| format!("log {}", crate::timefmt::table_time(t(s)));
    assert_eq!(
        summary,
        [
            (0, "max_wal_size", None, Some("2GB"), "/etc/pg.conf:7".to_string()),
            (1, "checkpoint_timeout", None, Some("10min"), "walwatch config".to_string()),
            (3, "max_wal_size", None, Some("3GB"), log_at(3)),
            (4, "max_wal_size", Some("3GB"), Some("4GB"), log_at(4)),
            (9, "max_wal_size", Some("2GB"), None, "/etc/pg.conf:8".to_string()),
        ]
    );
}

#[test]
fn sources_read_well() {
    assert_eq!(ValueSource::Default { version: Some(9) }.to_string(), "default (PG 9.6)");
    assert_eq!(ValueSource::Default { version: Some(15) }.to_string(), "default (PG 15)");
    assert_eq!(ValueSource::Default { version: None }.to_string(), "default (PG 18; server version unknown)");
    let json = serde_json::to_value(ValueSource::ConfFile { path: "/p".into(), line: 3 }).unwrap();
    assert_eq!(json, serde_json::json!({"kind": "conf_file", "path": "/p", "line": 3}));
}

#[test]
fn the_version_comes_from_the_config_the_log_or_pg_version() {
    let pg_version = row(SERVER_VERSION, Some("11"), RowSource::ConfFile, 1, 0);
    let override_ = row(SERVER_VERSION, Some("9.6"), RowSource::Config, 0, 0);
    let k = known(vec![override_], vec![pg_version.clone()], Some(0), vec![]);
    assert_eq!(version(&k, Some(15)), Some(9));
    let k = known(vec![], vec![pg_version], Some(0), vec![]);
    assert_eq!(version(&k, Some(15)), Some(15));
    assert_eq!(version(&k, None), Some(11));
    assert_eq!(version(&known(vec![], vec![], None, vec![]), None), None);
    assert_eq!(parse_version("9.6"), Ok(9));
    assert_eq!(parse_version("18"), Ok(18));
    assert!(parse_version("9.5").is_err() && parse_version("9").is_err() && parse_version("x").is_err());
}

// --- What the log alone says, and where the conf files are ---

/// A real PostgreSQL 15 log (checkpoint_timeout = 30s, max_wal_size = 32MB, then
/// ALTER SYSTEM SET max_wal_size = '64MB' at 08:07:38.097).
const STD: &str = "tests/fixtures/15-stderr-default-std/log/postgresql-2026-11-22_080420.log";

/// `STD` into a new store as cluster "c": whole, or up to the line containing `until`.
fn imported(until: Option<&str>, dir: &Path) -> Store {
    use crate::frame::time::TimeContext;
    use crate::ingest::{self, Options};
    let text = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(STD)).unwrap();
    let text = String::from_utf8_lossy(&text);
    let kept: String = match until {
        Some(marker) => text.split_inclusive('\n').take_while(|l| !l.contains(marker)).collect(),
        None => text.into_owned(),
    };
    let log = dir.join("postgresql.log");
    std::fs::write(&log, kept).unwrap();
    let mut store = Store::open(&dir.join("w.db")).unwrap();
    let cluster = store.clusters_mut().find_or_create("c").unwrap();
    let opts = Options { prefix: Some("%m [%p] %q%u@%d ".into()), ..Options::default() };
    ingest::import(&mut store, cluster, log.to_str().unwrap(), &opts, &TimeContext::new(Some("UTC")).unwrap()).unwrap();
    store
}

fn inferred(s: &Settings, name: &str) -> (String, String, usize) {
    match &s.values[name] {
        Value { value, source: ValueSource::Inferred { how, samples } } => (value.clone(), how.clone(), *samples),
        other => panic!("{name} is not inferred: {other:?}"),
    }
}

#[test]
fn the_log_alone_tells_checkpoint_timeout_and_max_wal_size() {
    let dir = tempfile::tempdir().unwrap();
    let store = imported(Some("parameter \"max_wal_size\" changed"), dir.path());
    let s = current(&store, "c").unwrap();
    assert_eq!(s.version, Some(15));
    assert_eq!(
        inferred(&s, "checkpoint_timeout"),
        (
            "30s".into(),
            "3 of 3 time-triggered checkpoints started 30 s, or a multiple (idle periods skip one), after the \
             previous checkpoint started"
                .into(),
            3
        )
    );
    assert_eq!(
        inferred(&s, "max_wal_size"),
        (
            "32MB".into(),
            "the smallest distance of 21 WAL-triggered checkpoints, 12284 kB, puts PostgreSQL's trigger at 1 \
             segment(s) of 16 MB (CheckPointSegments), which max_wal_size 32MB to 48MB (the roundest taken) gives \
             with checkpoint_completion_target 0.9, its default"
                .into(),
            21
        )
    );
    assert_eq!(s.seconds("checkpoint_timeout"), Some(30.0));
    assert_eq!(s.mb("max_wal_size"), Some(32.0));
    assert!(s.not_inferred.is_empty(), "{:?}", s.not_inferred);
    assert_eq!(
        s.values["checkpoint_timeout"].source.to_string(),
        "inferred from the log: 3 of 3 time-triggered checkpoints started 30 s, or a multiple (idle periods skip \
         one), after the previous checkpoint started"
    );
    let json = serde_json::to_value(&s.values["checkpoint_timeout"].source).unwrap();
    assert_eq!(json["kind"], "inferred");
    assert_eq!(json["samples"], 3);
}

#[test]
fn a_logged_value_and_conf_files_read_win_over_inference() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = imported(None, dir.path());
    let s = current(&store, "c").unwrap();
    assert_eq!(inferred(&s, "checkpoint_timeout").0, "30s");
    let changed_at: Timestamp = "2026-11-22T08:07:38.097Z".parse().unwrap();
    assert_eq!(value(&s, "max_wal_size"), ("64MB".into(), ValueSource::Log { at: changed_at }));
    // Conf files read completely: what they do not set is at its default, known, not guessed.
    let conf = vec![(
        "max_wal_size".to_string(),
        Observed { value: Some("64MB".into()), path: Some("/d/pg.conf".into()), line: Some(3) },
    )];
    store.settings_mut().record("c", RowSource::ConfFile, &conf, Timestamp::now()).unwrap();
    let s = current(&store, "c").unwrap();
    assert_eq!(value(&s, "checkpoint_timeout"), ("5min".into(), ValueSource::Default { version: Some(15) }));
    assert!(s.not_inferred.is_empty());
}

#[test]
fn what_the_log_cannot_tell_says_why() {
    let dir = tempfile::tempdir().unwrap();
    // Up to the first time-triggered checkpoint: only WAL-triggered ones before it.
    let store = imported(Some("08:06:25.062"), dir.path());
    let s = current(&store, "c").unwrap();
    assert_eq!(value(&s, "checkpoint_timeout"), ("5min".into(), ValueSource::Default { version: Some(15) }));
    assert_eq!(
        s.not_inferred["checkpoint_timeout"],
        "1 time-triggered checkpoint(s) follow another checkpoint of the same server run in the log, 3 needed to \
         tell checkpoint_timeout"
    );
    assert_eq!(inferred(&s, "max_wal_size").0, "32MB");
    // A store that does not know the cluster: defaults, nothing tried.
    assert!(current(&store, "other").unwrap().not_inferred.is_empty());
}

#[test]
fn a_change_is_dated_by_the_log_line_that_announced_it_and_a_first_read_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = imported(None, dir.path());
    let logged: Timestamp = "2026-11-22T08:07:38.097Z".parse().unwrap();
    let names = ["max_wal_size", "checkpoint_timeout"];
    let change = latest_change(&store, "c", &names).unwrap().unwrap();
    assert_eq!((change.at, change.name.as_str(), change.new.as_deref()), (logged, "max_wal_size", Some("64MB")));
    assert_eq!(latest_change(&store, "c", &["checkpoint_timeout"]).unwrap(), None);
    let obs = |v: &str| {
        vec![(
            "max_wal_size".to_string(),
            Observed { value: Some(v.into()), path: Some("/d/auto.conf".into()), line: Some(3) },
        )]
    };
    // The first read of the conf files is where walwatch started looking, no change.
    let first: Timestamp = "2026-11-22T09:00:00Z".parse().unwrap();
    store.settings_mut().record("c", RowSource::ConfFile, &obs("32MB"), first).unwrap();
    assert_eq!(latest_change(&store, "c", &names).unwrap().unwrap().at, logged);
    // Then it says 64MB: the same value the log announced (spelled in kB), dated there.
    let second: Timestamp = "2026-11-22T10:00:00Z".parse().unwrap();
    store.settings_mut().record("c", RowSource::ConfFile, &obs("65536kB"), second).unwrap();
    let change = latest_change(&store, "c", &names).unwrap().unwrap();
    assert_eq!((change.at, change.old.as_deref(), change.new.as_deref()), (logged, Some("32MB"), Some("65536kB")));
    // A value no line announced: dated at the read that found it.
    let third: Timestamp = "2026-11-22T11:00:00Z".parse().unwrap();
    store.settings_mut().record("c", RowSource::ConfFile, &obs("2GB"), third).unwrap();
    assert_eq!(latest_change(&store, "c", &names).unwrap().unwrap().at, third);
    assert_eq!(latest_change(&store, "unknown", &names).unwrap(), None);
}

#[test]
fn a_log_inside_the_data_directory_points_to_its_conf_files() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(data.join("log")).unwrap();
    std::fs::write(data.join("PG_VERSION"), "15\n").unwrap();
    std::fs::write(data.join("postgresql.conf"), "max_wal_size = 32MB\ncheckpoint_timeout = 30s\n").unwrap();
    let store_dir = data.join("log");
    let mut store = imported(None, &store_dir);
    let found = data_directory_from_logs(&store, "c").unwrap().unwrap();
    assert_eq!(found.path, data);
    assert_eq!(found.log, store_dir.join("postgresql.log").display().to_string());
    refresh_from_logs(&mut store, "c", Timestamp::now()).unwrap();
    let s = current(&store, "c").unwrap();
    let conf = data.join("postgresql.conf").display().to_string();
    assert_eq!(value(&s, "checkpoint_timeout"), ("30s".into(), ValueSource::ConfFile { path: conf.clone(), line: 2 }));
    // The log changed it to 64MB at 08:07:38; the conf file read since says 32MB and is newer.
    assert_eq!(value(&s, "max_wal_size"), ("32MB".into(), ValueSource::ConfFile { path: conf, line: 1 }));
    // Without PG_VERSION it is not a data directory: nothing found, nothing read.
    std::fs::remove_file(data.join("PG_VERSION")).unwrap();
    assert_eq!(data_directory_from_logs(&store, "c").unwrap(), None);
    assert_eq!(data_directory_from_logs(&store, "unknown").unwrap(), None);
}

/// The first read of the files is where walwatch started looking, not a
/// change; an `ALTER SYSTEM` (auto.conf changed, the reload logged
/// `parameter … changed`) is one change, dated at the log line and with the
/// file's old value; a setting added to the file later, and a change only
/// the log saw, are each one change.
#[test]
fn merged_changes_skip_the_first_read_and_say_an_alter_system_once() {
    let rows = vec![
        row("max_wal_size", Some("1GB"), RowSource::ConfFile, 3, 0),
        row("checkpoint_timeout", Some("5min"), RowSource::Config, 0, 0),
        row("max_wal_size", Some("2GB"), RowSource::ConfFile, 3, 20),
        row("checkpoint_timeout", Some("15min"), RowSource::ConfFile, 4, 40),
    ];
    let log = [log("max_wal_size", "2GB", 12), log("checkpoint_completion_target", "0.7", 30)];
    let mut got = merged(&rows, &log, Some(15));
    got.sort_by_key(|c| c.at);
    type Row<'a> = (i64, &'a str, Option<&'a str>, Option<&'a str>, String);
    let summary: Vec<Row> = got
        .iter()
        .map(|c| {
            (
                c.at.as_second() - 1_800_000_000,
                c.name.as_str(),
                c.old.as_deref(),
                c.new.as_deref(),
                c.source.to_string(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (12, "max_wal_size", Some("1GB"), Some("2GB"), "/etc/pg.conf:3".to_string()),
            (
                30,
                "checkpoint_completion_target",
                None,
                Some("0.7"),
                format!("log {}", crate::timefmt::table_time(t(30)))
            ),
            (40, "checkpoint_timeout", None, Some("15min"), "/etc/pg.conf:4".to_string()),
        ]
    );
}

/// A default is "assumed" only while nothing confirmed it: once the conf
/// files were read completely, a name they do not set is known to be at
/// its default; a value any source set is never assumed.
#[test]
fn a_default_is_assumed_only_until_the_conf_files_are_read() {
    let unread = resolve(Some(15), &known(vec![], vec![], None, vec![log("max_wal_size", "2GB", 1)]));
    assert!(unread.assumed("checkpoint_completion_target"));
    assert!(!unread.assumed("max_wal_size"));
    let conf = vec![row("max_wal_size", Some("1GB"), RowSource::ConfFile, 1, 0)];
    let read = resolve(Some(15), &known(vec![], conf, Some(0), vec![]));
    assert!(!read.assumed("checkpoint_completion_target"));
    assert!(!read.assumed("max_wal_size"));
    assert_eq!(value(&read, "checkpoint_completion_target").1, ValueSource::Default { version: Some(15) });
}

/// A file that writes the value already in effect changes nothing: the
/// default 1GB written as `1024MB`, `'5min'` rewritten as `300`, a line
/// holding the default taken out; a different value is a change.
#[test]
fn writing_the_value_in_effect_is_no_change() {
    let rows = vec![
        row("checkpoint_timeout", Some("5min"), RowSource::ConfFile, 4, 0),
        row("min_wal_size", Some("80MB"), RowSource::ConfFile, 5, 0),
        row("max_wal_size", Some("1024MB"), RowSource::ConfFile, 3, 10),
        row("checkpoint_timeout", Some("300"), RowSource::ConfFile, 4, 20),
        row("min_wal_size", None, RowSource::ConfFile, 5, 30),
        row("max_wal_size", Some("2GB"), RowSource::ConfFile, 3, 40),
    ];
    let got: Vec<(String, Option<String>, Option<String>)> =
        merged(&rows, &[], Some(15)).into_iter().map(|c| (c.name, c.old, c.new)).collect();
    assert_eq!(got, [("max_wal_size".to_string(), Some("1024MB".to_string()), Some("2GB".to_string()))]);
}
