//! Two alert rules on real PostgreSQL servers, read the way walwatch reads
//! a production server: the server's own log (and, where configured, its
//! conf files), then `walwatch import`, `walwatch analyze` and
//! `walwatch alerts --format json`.
//!
//! * `durability_off`: a server started with `fsync = off`,
//!   `full_page_writes = off` and `synchronous_commit = off` in its
//!   postgresql.conf fires one alert per setting (critical, critical, info)
//!   for a walwatch that knows the data directory; ALTER SYSTEM + reload back
//!   to on resolves them; ALTER SYSTEM + reload to off fires them again, seen
//!   in postgresql.auto.conf by that walwatch and, for a walwatch that reads
//!   only the log, in the `parameter "…" changed to "off"` lines (that one
//!   cannot see what the server started with: the log does not print it,
//!   and the test pins that too); on again, every alert resolves.
//!
//! * `slow_sync`: the data directory sits on a device made slow here, and a
//!   CHECKPOINT's sync phase really takes seconds (the log's `sync=` says
//!   so); the alert fires with the shipped thresholds (5 s, 2 s per file) and
//!   its figures are the log's own numbers.
//!
//!   How the device is made slow: a loop device over a file, with its own
//!   ext4 filesystem mounted for the data directory, and a block-I/O
//!   throttle (the kernel's blk-throttle: `io.max wbps` on cgroup v2,
//!   `blkio.throttle.write_bps_device` on cgroup v1) on writes to that loop
//!   device by the cgroup the server runs in. Why not device-mapper's
//!   dm-delay, the first choice: the VMs this runs on (kernel 6.18,
//!   CONFIG_BLK_DEV_DM unset, no loadable modules) have no device-mapper at
//!   all (`dmsetup version`: "/dev/mapper/control: open failed: No such
//!   device"). Their cgroup v2 hierarchy has no `io` controller either (it is
//!   bound to the v1 `blkio` hierarchy), so the v1 interface of the same
//!   throttle is what runs there; a machine with the `io` controller on
//!   cgroup v2 gets `io.max` (that branch is written but has not run here).
//!   The throttle holds the writes PostgreSQL's processes issue themselves:
//!   the checkpointer's sync_file_range (checkpoint_flush_after) and fsync.
//!   Under v1 the kernel's own writeback threads are not throttled, so a
//!   page they flushed first would escape; here the table is written and
//!   checkpointed within a second or two, long before their 30 s expiry,
//!   and the test checks the log's `sync=` against what the throttle allows
//!   for the table's size (1 MiB/s, ~7 MB: about 7 s; the same checkpoint
//!   unthrottled syncs in well under a second).
//!
//! Needs root (losetup, mount, cgroups; the server runs as `postgres`), the
//! PostgreSQL server binaries, losetup and mkfs.ext4: `.ci/run` provides
//! them. Fails, never skips, when any of that is missing.

use crate::support;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{describe, ts_key, walwatch, walwatch_json, PgCluster};
use tempfile::TempDir;

const CLUSTER: &str = "pg15";

/// The log as the tests read it: UTC, English, a prefix with the time first.
const LOGGING: &[(&str, &str)] = &[
    ("log_checkpoints", "on"),
    ("logging_collector", "on"),
    ("log_destination", "'stderr'"),
    ("log_line_prefix", "'%m [%p] '"),
    ("log_timezone", "'UTC'"),
    ("lc_messages", "'C'"),
];

// ---------------------------------------------------------------------------
// walwatch, as a user runs it
// ---------------------------------------------------------------------------

/// One walwatch setup: a config and a store in a temporary directory.
struct Watcher {
    dir: TempDir,
}

impl Watcher {
    /// `data_directory`: None for a walwatch that reads only the log.
    fn new(pg: &PgCluster, data_directory: Option<&Path>, extra: &str) -> Watcher {
        let dir = tempfile::Builder::new().prefix("walwatch-alerts-").tempdir().unwrap();
        let logs = pg.log_dir().join("*.log");
        let mut config = format!("[[cluster]]\nname = \"{CLUSTER}\"\nlogs = [{:?}]\n", logs.display().to_string());
        if let Some(data) = data_directory {
            config += &format!("data_directory = {:?}\n", data.display().to_string());
        }
        config += extra;
        fs::write(dir.path().join("walwatch.toml"), config).unwrap();
        Watcher { dir }
    }

    fn config(&self) -> String {
        self.dir.path().join("walwatch.toml").display().to_string()
    }

    fn db(&self) -> String {
        self.dir.path().join("w.db").display().to_string()
    }

    /// `walwatch import` of the server's log files (resumes where the last one stopped).
    fn import(&self, pg: &PgCluster) {
        let out = walwatch()
            .args(["import", "--db", &self.db(), "--cluster", CLUSTER])
            .args(pg.log_files())
            .output()
            .expect("spawn walwatch import");
        assert!(out.status.success(), "walwatch import: {}", describe(&out));
    }

    /// `walwatch analyze`: the rules once; returns its JSON report.
    fn analyze(&self) -> Value {
        walwatch_json(&["analyze", "--config", &self.config(), "--db", &self.db(), "--no-send", "--format", "json"])
    }

    /// `walwatch alerts --format json` (open ones; `all`: resolved too), oldest first.
    fn alerts(&self, all: bool) -> Vec<Value> {
        let (config, db) = (self.config(), self.db());
        let mut args = vec!["alerts", "--config", &config, "--db", &db, "--format", "json"];
        if all {
            args.push("--all");
        }
        let mut rows = walwatch_json(&args).as_array().expect("alerts JSON is an array").clone();
        rows.sort_by_key(|a| a["id"].as_i64());
        rows
    }
}

/// The fields of an alert row the tests compare exactly.
fn brief(a: &Value) -> Value {
    json!({
        "cluster": a["cluster"], "rule": a["rule"], "key": a["key"],
        "severity": a["severity"], "state": a["state"], "summary": a["summary"],
    })
}

fn durability(key: &str, severity: &str, state: &str) -> Value {
    json!({
        "cluster": CLUSTER, "rule": "durability_off", "key": key,
        "severity": severity, "state": state, "summary": format!("{key} is off"),
    })
}

const DURABILITY: [(&str, &str); 3] =
    [("fsync", "critical"), ("full_page_writes", "critical"), ("synchronous_commit", "info")];

fn all_durability(state: &str) -> Vec<Value> {
    DURABILITY.iter().map(|(key, severity)| durability(key, severity, state)).collect()
}

/// The changed-by-analyze alerts of the report, as (change, rule, key).
fn changes(report: &Value) -> Vec<(String, String, String)> {
    let clusters = report["clusters"].as_array().expect("clusters");
    assert_eq!(clusters.len(), 1, "{report}");
    let mut out = Vec::new();
    for what in ["fired", "resolved", "still_open", "reminded", "silenced"] {
        for c in clusters[0]["changes"][what].as_array().expect("changes") {
            let s = |k: &str| c[k].as_str().unwrap().to_string();
            out.push((what.to_string(), s("rule"), s("key")));
        }
    }
    out.sort();
    out
}

fn changed(what: &str, keys: &[&str]) -> Vec<(String, String, String)> {
    let mut out: Vec<_> =
        keys.iter().map(|k| (what.to_string(), "durability_off".to_string(), k.to_string())).collect();
    out.sort();
    out
}

// ---------------------------------------------------------------------------
// The server side
// ---------------------------------------------------------------------------

/// The whole server log so far.
fn log_text(pg: &PgCluster) -> String {
    pg.log_files().iter().map(|f| fs::read_to_string(f).unwrap()).collect()
}

/// ALTER SYSTEM each durability setting to `value`, reload, and wait for
/// the server to log every change. Returns the log time (`ts_key`) of each
/// `parameter "…" changed to "…"` line, in DURABILITY's order.
fn alter_all(pg: &PgCluster, value: &str) -> Vec<String> {
    let before = log_text(pg).len();
    let sets: String = DURABILITY.iter().map(|(name, _)| format!("ALTER SYSTEM SET {name} = {value};\n")).collect();
    pg.psql(&format!("{sets}SELECT pg_reload_conf();"));
    let lines: Vec<String> =
        DURABILITY.iter().map(|(name, _)| format!("LOG:  parameter \"{name}\" changed to \"{value}\"")).collect();
    let seen = pg.wait_for_log(Duration::from_secs(20), |t| lines.iter().all(|l| t[before..].contains(l.as_str())));
    assert!(seen, "the reload did not log {lines:?}:\n{}", &log_text(pg)[before..]);
    for (name, _) in DURABILITY {
        assert_eq!(pg.show(name), value, "SHOW {name} after the reload");
    }
    let text = log_text(pg);
    lines
        .iter()
        .map(|l| {
            let line = text[before..].lines().find(|x| x.contains(l.as_str())).unwrap();
            ts_key(line.split(" [").next().unwrap())
        })
        .collect()
}

// ---------------------------------------------------------------------------
// durability_off
// ---------------------------------------------------------------------------

#[test]
fn durability_off_fires_from_the_conf_files_and_the_log_and_resolves() {
    let started = Instant::now();
    let mut settings = LOGGING.to_vec();
    settings.extend([("fsync", "off"), ("full_page_writes", "off"), ("synchronous_commit", "off")]);
    let mut pg = PgCluster::init(&settings);
    pg.start();
    for (name, _) in DURABILITY {
        assert_eq!(pg.show(name), "off", "the server runs with {name} off");
    }
    let conf = pg.data_dir().join("postgresql.conf");
    let auto = pg.data_dir().join("postgresql.auto.conf");
    // A walwatch that knows the data directory, and one that reads only the log.
    let with_conf = Watcher::new(&pg, Some(&pg.data_dir()), "");
    let log_only = Watcher::new(&pg, None, "");

    // 1. Started with all three off: the conf files say so, the log does not.
    with_conf.import(&pg);
    log_only.import(&pg);
    let report = with_conf.analyze();
    assert_eq!(changes(&report), changed("fired", &["fsync", "full_page_writes", "synchronous_commit"]), "{report}");
    let fired = with_conf.alerts(false);
    assert_eq!(fired.iter().map(brief).collect::<Vec<_>>(), all_durability("firing"), "{fired:#?}");
    for (alert, (name, _)) in fired.iter().zip(DURABILITY) {
        let line = support::conf_line_of(&conf, name);
        let source = json!({"kind": "conf_file", "path": conf.display().to_string(), "line": line});
        assert_eq!(alert["figures"], json!({"setting": name, "value": "off", "source": source}), "{alert}");
        assert_eq!(alert["details"][0], format!("{name} = off (from {}:{line}).", conf.display()));
        assert_eq!(alert["evidence_at"], Value::Null);
        assert_eq!((&alert["resolved_at"], &alert["notified_at"]), (&Value::Null, &Value::Null));
    }
    let report = log_only.analyze();
    assert_eq!(changes(&report), [], "a walwatch that reads only the log cannot see settings set before the start");
    assert_eq!(log_only.alerts(true), Vec::<Value>::new());

    // 2. All three back on by ALTER SYSTEM and a reload: the alerts resolve.
    alter_all(&pg, "on");
    with_conf.import(&pg);
    let report = with_conf.analyze();
    assert_eq!(changes(&report), changed("resolved", &["fsync", "full_page_writes", "synchronous_commit"]), "{report}");
    assert_eq!(with_conf.alerts(false), Vec::<Value>::new(), "no open alert once all three are on");
    let resolved = with_conf.alerts(true);
    assert_eq!(resolved.iter().map(brief).collect::<Vec<_>>(), all_durability("resolved"), "{resolved:#?}");
    for (before, after) in fired.iter().zip(&resolved) {
        assert_eq!(before["id"], after["id"]);
        assert!(after["resolved_at"].is_string(), "{after}");
        assert!(ts_key(after["resolved_at"].as_str().unwrap()) >= ts_key(after["fired_at"].as_str().unwrap()));
    }
    log_only.import(&pg);
    assert_eq!(changes(&log_only.analyze()), []);

    // 3. All three off again by ALTER SYSTEM and a reload: new alerts, from
    //    postgresql.auto.conf for one walwatch and from the log for the other.
    let logged_at = alter_all(&pg, "off");
    with_conf.import(&pg);
    log_only.import(&pg);
    let report = with_conf.analyze();
    assert_eq!(changes(&report), changed("fired", &["fsync", "full_page_writes", "synchronous_commit"]), "{report}");
    let refired = with_conf.alerts(false);
    assert_eq!(refired.iter().map(brief).collect::<Vec<_>>(), all_durability("firing"), "{refired:#?}");
    for (alert, (name, _)) in refired.iter().zip(DURABILITY) {
        assert!(alert["id"].as_i64() > resolved.iter().filter_map(|a| a["id"].as_i64()).max(), "a new alert");
        let line = support::conf_line_of(&auto, name);
        let source = json!({"kind": "conf_file", "path": auto.display().to_string(), "line": line});
        assert_eq!(alert["figures"], json!({"setting": name, "value": "off", "source": source}), "{alert}");
    }
    let report = log_only.analyze();
    assert_eq!(changes(&report), changed("fired", &["fsync", "full_page_writes", "synchronous_commit"]), "{report}");
    let from_log = log_only.alerts(false);
    assert_eq!(from_log.iter().map(brief).collect::<Vec<_>>(), all_durability("firing"), "{from_log:#?}");
    for ((alert, (name, _)), at) in from_log.iter().zip(DURABILITY).zip(&logged_at) {
        let figures = &alert["figures"];
        assert_eq!((&figures["setting"], &figures["value"]), (&json!(name), &json!("off")), "{alert}");
        assert_eq!(figures["source"]["kind"], "log", "{alert}");
        assert_eq!(&ts_key(figures["source"]["at"].as_str().unwrap()), at, "the log line's time: {alert}");
        assert_eq!(&ts_key(alert["evidence_at"].as_str().unwrap()), at, "{alert}");
        let details = alert["details"][0].as_str().unwrap();
        assert!(details.starts_with(&format!("{name} = off (from the server log at ")), "{details}");
    }

    // 4. On again: both resolve.
    alter_all(&pg, "on");
    for w in [&with_conf, &log_only] {
        w.import(&pg);
        let report = w.analyze();
        assert_eq!(changes(&report), changed("resolved", &["fsync", "full_page_writes", "synchronous_commit"]));
        assert_eq!(w.alerts(false), Vec::<Value>::new());
    }
    assert_eq!(with_conf.alerts(true).len(), 6);
    assert_eq!(log_only.alerts(true).iter().map(brief).collect::<Vec<_>>(), all_durability("resolved"));
    println!("durability_off test: {:.1} s", started.elapsed().as_secs_f64());
}

// ---------------------------------------------------------------------------
// slow_sync: a device made slow
// ---------------------------------------------------------------------------

/// Runs `cmd`; panics with its output unless it succeeds. Returns stdout.
fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: cannot run it: {e}"));
    assert!(out.status.success(), "{what}: {}", describe(&out));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A system tool by name: from PATH, else /usr/sbin or /sbin (root's
/// tools, which a PATH without the sbin directories misses).
fn tool(name: &str) -> Command {
    let in_sbin = ["/usr/sbin", "/sbin"].iter().map(|d| Path::new(d).join(name)).find(|p| p.is_file());
    let in_path = std::env::var_os("PATH")
        .and_then(|path| std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file()));
    let path = in_path.or(in_sbin).unwrap_or_else(|| {
        panic!("{name} not found in PATH, /usr/sbin or /sbin: install it (Debian: losetup and mount are in `mount`, mkfs.ext4 in `e2fsprogs`; .ci/run installs them)")
    });
    Command::new(path)
}

fn is_root() -> bool {
    run(Command::new("id").arg("-u"), "id -u") == "0"
}

/// A cgroup of our own whose writes to one device are throttled.
struct Throttle {
    dir: PathBuf,
    /// cgroup v2 (`io.max`) or v1 (`blkio.throttle.write_bps_device`).
    v2: bool,
}

impl Throttle {
    /// Under the cgroup v2 hierarchy if it has the `io` controller, else
    /// under the v1 `blkio` hierarchy; panics if neither is mounted.
    fn create() -> Throttle {
        let mounts = fs::read_to_string("/proc/self/mounts").expect("read /proc/self/mounts");
        let (mut v2_root, mut v1_root) = (None, None);
        for line in mounts.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            let [_, dir, kind, options, ..] = f[..] else { continue };
            let controllers = fs::read_to_string(Path::new(dir).join("cgroup.controllers")).unwrap_or_default();
            if kind == "cgroup2" && controllers.split_whitespace().any(|c| c == "io") {
                v2_root = Some(PathBuf::from(dir));
            }
            if kind == "cgroup" && options.split(',').any(|o| o == "blkio") {
                v1_root = Some(PathBuf::from(dir));
            }
        }
        let name = format!("walwatch-slow-sync-{}", std::process::id());
        let (dir, v2) = match (v2_root, v1_root) {
            (Some(root), _) => {
                // The io controller for the children of the root (systemd usually enabled it already).
                fs::write(root.join("cgroup.subtree_control"), "+io")
                    .unwrap_or_else(|e| panic!("enable io in {}/cgroup.subtree_control: {e}", root.display()));
                (root.join(name), true)
            }
            (None, Some(root)) => (root.join(name), false),
            (None, None) => panic!(
                "no block-I/O throttle available: neither a cgroup v2 hierarchy with the io controller nor a \
                 cgroup v1 blkio hierarchy is mounted (/proc/self/mounts:\n{mounts})"
            ),
        };
        fs::create_dir(&dir).unwrap_or_else(|e| panic!("create cgroup {}: {e}", dir.display()));
        Throttle { dir, v2 }
    }

    fn procs(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// Writes to device `majmin` ("7:0") by the cgroup's processes at most
    /// `bytes_per_s`.
    fn limit_writes(&self, majmin: &str, bytes_per_s: u64) {
        let (file, rule) = if self.v2 {
            ("io.max", format!("{majmin} wbps={bytes_per_s}"))
        } else {
            ("blkio.throttle.write_bps_device", format!("{majmin} {bytes_per_s}"))
        };
        let path = self.dir.join(file);
        fs::write(&path, &rule).unwrap_or_else(|e| panic!("write {rule:?} to {}: {e}", path.display()));
        let now = fs::read_to_string(&path).unwrap();
        assert!(now.contains(majmin), "{} says {now:?} after {rule:?}", path.display());
    }
}

impl Drop for Throttle {
    /// The cgroup can go once the server's processes have exited.
    fn drop(&mut self) {
        for _ in 0..50 {
            if fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("warning: could not remove cgroup {}", self.dir.display());
    }
}

/// A loop device over a sparse file in a temporary directory, with an ext4
/// filesystem mounted at `<tmp>/mnt` and a cgroup whose writes to it can be
/// throttled. Dropped after the server that uses it: unmounted and detached.
struct SlowDevice {
    dir: TempDir,
    device: PathBuf,
    /// "7:0", from /sys/class/block/loopN/dev.
    majmin: String,
    mounted: bool,
    throttle: Option<Throttle>,
}

impl SlowDevice {
    fn new(size_mib: u64) -> SlowDevice {
        assert!(
            is_root(),
            "the slow_sync test needs root: it attaches a loop device, mounts it and throttles it with a cgroup \
             (.ci/run runs the tests as root)"
        );
        let dir = tempfile::Builder::new().prefix("walwatch-slowdev-").tempdir().unwrap();
        // The server user must reach the data directory inside.
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
        let image = dir.path().join("disk.img");
        fs::File::create(&image).unwrap().set_len(size_mib << 20).unwrap();
        let device = run(tool("losetup").args(["--find", "--show"]).arg(&image), "losetup --find --show");
        let mut slow =
            SlowDevice { dir, device: PathBuf::from(device), majmin: String::new(), mounted: false, throttle: None };
        let name = slow.device.file_name().unwrap().to_string_lossy().into_owned();
        slow.majmin = fs::read_to_string(format!("/sys/class/block/{name}/dev")).unwrap().trim().to_string();
        run(
            tool("mkfs.ext4").args(["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"]).arg(&slow.device),
            "mkfs.ext4",
        );
        let mnt = slow.dir.path().join("mnt");
        fs::create_dir(&mnt).unwrap();
        run(tool("mount").arg(&slow.device).arg(&mnt), "mount");
        slow.mounted = true;
        slow.throttle = Some(Throttle::create());
        slow
    }

    /// Where PGDATA goes (created by PgCluster::init_with_data_dir).
    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("mnt/data")
    }

    fn procs(&self) -> PathBuf {
        self.throttle.as_ref().unwrap().procs()
    }

    fn limit_writes(&self, bytes_per_s: u64) {
        self.throttle.as_ref().unwrap().limit_writes(&self.majmin, bytes_per_s);
    }
}

impl Drop for SlowDevice {
    fn drop(&mut self) {
        self.throttle.take();
        if self.mounted {
            let mnt = self.dir.path().join("mnt");
            let ok = (0..50).any(|_| {
                let done = tool("umount").arg(&mnt).status().is_ok_and(|s| s.success());
                if !done {
                    std::thread::sleep(Duration::from_millis(100));
                }
                done
            });
            if !ok {
                eprintln!("warning: could not unmount {}; detaching lazily", mnt.display());
                let _ = tool("umount").arg("-l").arg(&mnt).status();
            }
        }
        let _ = tool("losetup").arg("-d").arg(&self.device).status();
    }
}

/// One `checkpoint complete` line, as the log prints it.
#[derive(Debug)]
struct Complete {
    /// `ts_key` of the line's time.
    at: String,
    /// `sync=` and `longest=` as printed ("7.021").
    sync: String,
    longest: String,
}

impl Complete {
    fn sync_s(&self) -> f64 {
        self.sync.parse().unwrap()
    }
    fn longest_s(&self) -> f64 {
        self.longest.parse().unwrap()
    }
}

/// The `checkpoint complete` lines of the log, read independently of walwatch.
fn completes(log: &str) -> Vec<Complete> {
    let field = |line: &str, name: &str| -> String {
        let start = line.find(name).unwrap_or_else(|| panic!("no {name:?} in {line}")) + name.len();
        let rest = &line[start..];
        rest[..rest.find(" s").unwrap()].to_string()
    };
    log.lines()
        .filter(|l| l.contains(" LOG:  checkpoint complete: "))
        .map(|l| Complete {
            at: ts_key(l.split(" [").next().unwrap()),
            sync: field(l, ", sync="),
            longest: field(l, ", longest="),
        })
        .collect()
}

/// What walwatch's summaries print for a number of seconds.
fn secs(printed: &str) -> &str {
    printed.trim_end_matches('0').trim_end_matches('.')
}

/// The device writes at most this many bytes per second once throttled …
const THROTTLE_BPS: u64 = 1 << 20;
/// … and the table written before the throttled checkpoint has this many
/// rows of ~240 bytes (~7 MB: a sync phase of about 7 s at 1 MiB/s, over
/// the shipped 5 s and 2 s thresholds).
const ROWS: u32 = 30_000;

#[test]
fn slow_sync_fires_on_a_server_whose_disk_is_slow() {
    let started = Instant::now();
    let slow = SlowDevice::new(256);
    let mut pg = PgCluster::init_with_data_dir(LOGGING, &slow.data_dir());
    pg.start_in_cgroup(&slow.procs());
    let table = |name: &str| {
        pg.psql(&format!("CREATE TABLE {name} AS SELECT g, repeat('x', 200) AS pad FROM generate_series(1, {ROWS}) g;"))
    };

    // A checkpoint on the device at full speed: the baseline.
    table("fast");
    pg.psql("CHECKPOINT;");
    // The same again with the device's writes throttled.
    table("slow");
    let bytes: u64 = pg.psql("SELECT pg_relation_size('slow');").trim().parse().unwrap();
    slow.limit_writes(THROTTLE_BPS);
    let t = Instant::now();
    pg.psql("CHECKPOINT;");
    let took = t.elapsed().as_secs_f64();
    assert!(pg.wait_for_log(Duration::from_secs(20), |t| completes(t).len() == 2), "two checkpoint complete lines");
    let log = log_text(&pg);
    let points = completes(&log);
    let (fast, slowest) = (&points[0], &points[1]);
    println!(
        "{bytes} bytes at {THROTTLE_BPS} B/s: CHECKPOINT took {took:.3} s; log: fast sync={} s longest={} s, \
         slow sync={} s longest={} s",
        fast.sync, fast.longest, slowest.sync, slowest.longest
    );

    // The server really waited for the disk: the log's sync time is what the
    // throttle allows for the table's bytes, and the baseline is far below.
    let floor = bytes as f64 / THROTTLE_BPS as f64;
    assert!(slowest.sync_s() >= 0.8 * floor, "sync={} s for {bytes} bytes at {THROTTLE_BPS} B/s", slowest.sync);
    assert!(slowest.sync_s() > 5.0 && slowest.longest_s() > 2.0, "{slowest:?}");
    assert!(
        fast.sync_s() <= 5.0 && fast.longest_s() <= 2.0,
        "the unthrottled checkpoint is below the thresholds: {fast:?}"
    );
    assert!(took >= slowest.sync_s(), "CHECKPOINT returned after {took} s, before its sync phase ended");

    // walwatch, with the shipped thresholds written out.
    let w = Watcher::new(&pg, None, "\n[alerts.slow_sync]\nwindow = \"1h\"\nsync_s = 5.0\nlongest_file_s = 2.0\n");
    w.import(&pg);
    let report = w.analyze();
    assert_eq!(changes(&report), [("fired".to_string(), "slow_sync".to_string(), String::new())], "{report}");
    let alerts = w.alerts(false);
    assert_eq!(alerts.len(), 1, "{alerts:#?}");
    let alert = &alerts[0];
    let summary = format!(
        "1 checkpoints with a slow sync phase in 1h (up to {} s; longest single file {} s): the storage stalls on fsync",
        secs(&slowest.sync),
        secs(&slowest.longest)
    );
    assert_eq!(
        brief(alert),
        json!({"cluster": CLUSTER, "rule": "slow_sync", "key": "", "severity": "warning", "state": "firing", "summary": summary})
    );
    let f = &alert["figures"];
    assert_eq!(f["count"], 1, "only the throttled checkpoint: {f}");
    assert_eq!(f["max_sync_s"].as_f64(), Some(slowest.sync_s()), "{f}");
    assert_eq!(f["max_longest_s"].as_f64(), Some(slowest.longest_s()), "{f}");
    assert_eq!((f["sync_s_threshold"].as_f64(), f["longest_file_s_threshold"].as_f64()), (Some(5.0), Some(2.0)));
    assert_eq!(ts_key(f["worst_at"].as_str().unwrap()), slowest.at, "{f}");
    assert_eq!(ts_key(alert["evidence_at"].as_str().unwrap()), slowest.at, "{alert}");
    assert_eq!((&f["checkpoint_flush_after"], &f["backend_flush_after"]), (&json!("256kB"), &json!("0")), "{f}");
    let details = alert["details"][0].as_str().unwrap();
    assert!(details.contains(&format!("sync={} s over ", secs(&slowest.sync))), "{details}");
    println!("slow_sync test: {:.1} s", started.elapsed().as_secs_f64());
}
