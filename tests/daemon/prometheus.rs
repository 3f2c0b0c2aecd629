//! The metrics endpoint with the real Prometheus (Debian's `prometheus`
//! package, run as a child process with its own config and a scratch
//! storage directory): it scrapes two `walwatch run` daemons following two
//! real PostgreSQL logs (fixtures copied into their followed directories)
//! and evaluates packaging/prometheus/walwatch-rules.yml; what its HTTP API
//! answers equals `walwatch summary` and `walwatch alerts` for each, and
//! its counts and last distances equal what the independent counter
//! (tests/support/truth.rs) reads in the raw logs.
//! `promtool` checks and unit-tests both rules files (walwatch's verdicts,
//! and the PromQL rules on the raw series). A missing binary fails
//! the test (tests/run.sh installs the package), never skips it.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::daemon::{Daemon, Workspace};
use support::smtp::free_port;
use support::truth::{distance_kb, Layout, Truth};
use support::walwatch_json;

const RULES: &str = "packaging/prometheus/walwatch-rules.yml";
const RULES_TEST: &str = "packaging/prometheus/walwatch-rules.test.yml";
/// The same rules written in PromQL on the raw series.
const FEDERATION: &str = "packaging/prometheus/walwatch-federation.yml";
const PROMQL_RULES: &str = "packaging/prometheus/walwatch-promql-rules.yml";
const PROMQL_RULES_TEST: &str = "packaging/prometheus/walwatch-promql-rules.test.yml";

/// `/usr/bin/NAME`, or the test fails saying how to get it.
fn required(name: &str) -> PathBuf {
    let path = PathBuf::from("/usr/bin").join(name);
    assert!(
        path.exists(),
        "{} is missing: run tests/run.sh, which installs Debian's `prometheus` package (it provides prometheus and promtool)",
        path.display()
    );
    path
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

#[test]
fn promtool_checks_the_rules_and_runs_their_unit_tests() {
    let promtool = required("promtool");
    for args in [
        ["check", "rules", RULES],
        ["test", "rules", RULES_TEST],
        ["check", "rules", PROMQL_RULES],
        ["test", "rules", PROMQL_RULES_TEST],
    ] {
        let out = Command::new(&promtool).args(args).current_dir(repo("")).output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "promtool {args:?}:\n{text}");
        assert!(text.contains("SUCCESS"), "promtool {args:?}:\n{text}");
    }
}

/// A daemon following `fixture`'s log as cluster `cluster`, serving metrics on `port`.
fn config(ws: &Workspace, cluster: &str, port: u16, timezone: &str) -> String {
    format!(
        r#"[store]
path = {db:?}

[daemon]
poll_interval = "200ms"

[metrics]
listen = "127.0.0.1:{port}"

[[cluster]]
name = {cluster:?}
logs = [{logs:?}]
timezone = {timezone:?}

[cluster.settings]
checkpoint_timeout = "30s"
max_wal_size = "32MB"
"#,
        db = ws.db().display().to_string(),
        logs = ws.dir("log").join("*.log").display().to_string(),
    )
}

/// One daemon of the test: its workspace, cluster, port and copied logs.
struct Followed {
    ws: Workspace,
    cluster: &'static str,
    port: u16,
    daemon: Daemon,
    /// The independent counter over the copied logs.
    truth: Truth,
}

impl Followed {
    fn start(fixture: &str, cluster: &'static str, timezone: &str) -> Followed {
        let ws = Workspace::new();
        let port = free_port();
        fs::write(ws.config_path(), config(&ws, cluster, port, timezone)).unwrap();
        let mut logs = Vec::new();
        for entry in fs::read_dir(repo(&format!("tests/fixtures/{fixture}/log"))).unwrap() {
            let path = entry.unwrap().path();
            let copy = ws.dir("log").join(path.file_name().unwrap());
            fs::copy(&path, &copy).unwrap();
            logs.push(copy);
        }
        let mut daemon = ws.start();
        daemon.wait_running();
        for log in &logs {
            let len = fs::metadata(log).unwrap().len();
            daemon.wait_read_to(cluster, log, len);
        }
        let layout: Value =
            serde_json::from_str(&fs::read_to_string(repo(&format!("tests/fixtures/{fixture}/truth.json"))).unwrap())
                .unwrap();
        logs.sort();
        let truth = Truth::read(&logs, &Layout::of_fixture(&layout));
        Followed { ws, cluster, port, daemon, truth }
    }

    /// The counter's started points by (cluster, trigger), checkpoints and restartpoints together.
    fn counted(&self) -> BTreeMap<(String, String), i64> {
        let t = &self.truth;
        let triggers = ["shutdown", "end-of-recovery", "wal", "time", "manual"];
        let checkpoints = [t.shutdown, t.end_of_recovery, t.wal, t.time, t.manual];
        triggers
            .iter()
            .zip(checkpoints.iter().zip(t.restartpoint_by_trigger))
            .map(|(trigger, (c, r))| ((self.cluster.to_string(), trigger.to_string()), c + r))
            .collect()
    }

    /// The distance the last complete line of the log prints, in bytes.
    fn last_distance_bytes(&self) -> i64 {
        let last = self.truth.complete_list.iter().max_by_key(|c| c.ts_key.clone()).expect("a complete line");
        distance_kb(&last.message) as i64 * 1024
    }

    fn json(&self, command: &[&str]) -> Value {
        json_of(&self.ws, command)
    }

    /// `walwatch summary`: started points by (cluster, trigger), checkpoints and restartpoints together.
    fn summary(&self) -> BTreeMap<(String, String), i64> {
        let s = self.json(&["summary", "--cluster", self.cluster]);
        let mut by = BTreeMap::new();
        for kind in ["checkpoints", "restartpoints"] {
            for (trigger, n) in s[kind]["by_trigger"].as_object().unwrap() {
                *by.entry((self.cluster.to_string(), trigger.clone())).or_insert(0) += n.as_i64().unwrap();
            }
        }
        by
    }

    /// The alerts once two looks a second apart agree: the rules run on
    /// their own thread after the events land.
    fn settled_alerts(&mut self) -> BTreeMap<(String, String, String), i64> {
        let ws = &self.ws;
        let mut last = alerts_of(ws);
        self.daemon.wait_until("the alerts to settle", || {
            std::thread::sleep(Duration::from_secs(1));
            let now = alerts_of(ws);
            let same = now == last && !now.is_empty();
            last = now.clone();
            same.then_some(now).ok_or_else(|| format!("alerts: {last:?}"))
        })
    }
}

/// `walwatch COMMAND --format json` on the workspace's store and config.
fn json_of(ws: &Workspace, command: &[&str]) -> Value {
    let (config, db) = (ws.config_path(), ws.db());
    let mut args = command.to_vec();
    args.extend(["--config", config.to_str().unwrap(), "--db", db.to_str().unwrap(), "--format", "json"]);
    walwatch_json(&args)
}

/// `walwatch alerts`: open alerts by (cluster, rule, severity).
fn alerts_of(ws: &Workspace) -> BTreeMap<(String, String, String), i64> {
    let mut by = BTreeMap::new();
    for alert in json_of(ws, &["alerts"]).as_array().unwrap() {
        let key = |k: &str| alert[k].as_str().unwrap().to_string();
        *by.entry((key("cluster"), key("rule"), key("severity"))).or_insert(0) += 1;
    }
    by
}

/// One series of a query's answer: its labels and value.
type Sample = (BTreeMap<String, String>, f64);

/// `prometheus` with a config of its own; killed when dropped.
struct Prometheus {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    /// A regional server: scrapes the daemons at `targets` with walwatch's
    /// rules loaded, its series labelled `region="here"` when federated.
    fn start(targets: &[u16]) -> Prometheus {
        let targets: Vec<String> = targets.iter().map(|p| format!("\"127.0.0.1:{p}\"")).collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n  \
             external_labels:\n    region: here\n\
             rule_files:\n  - {rules:?}\n\
             scrape_configs:\n  - job_name: walwatch\n    static_configs:\n      - targets: [{targets}]\n",
            rules = repo(RULES).display().to_string(),
            targets = targets.join(", "),
        );
        Self::run(&config)
    }

    /// The global server of docs/guide/scale.md: the shipped federation job
    /// as it is, but for its targets (the regional server at `regional`)
    /// and its intervals (seconds, not minutes, for a test).
    fn federating(regional: u16) -> Prometheus {
        let job = fs::read_to_string(repo(FEDERATION)).unwrap();
        let edits = [
            (
                r#"["prometheus-eu.example.net:9090", "prometheus-us.example.net:9090"]"#,
                format!(r#"["127.0.0.1:{regional}"]"#),
            ),
            ("scrape_interval: 1m", "scrape_interval: 1s".to_string()),
            ("scrape_timeout: 30s", "scrape_timeout: 1s".to_string()),
        ];
        let job = edits.iter().fold(job, |job, (from, to)| {
            assert!(job.contains(from), "{FEDERATION} has no {from}");
            job.replace(from, to)
        });
        Self::run(&format!("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n{job}"))
    }

    fn run(config: &str) -> Prometheus {
        let binary = required("prometheus");
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        fs::write(dir.path().join("prometheus.yml"), config).unwrap();
        let log = fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let child = Command::new(binary)
            .arg(format!("--config.file={}", dir.path().join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut p = Prometheus { child, port, _dir: dir };
        p.wait("ready", Duration::from_secs(30), |p| p.get("/-/ready", &[]).map(drop));
        p
    }

    fn log(&self) -> String {
        fs::read_to_string(self._dir.path().join("prometheus.log")).unwrap_or_default()
    }

    fn get(&self, path: &str, query: &[(&str, &str)]) -> Result<String, String> {
        let mut request = ureq::get(format!("http://127.0.0.1:{}{path}", self.port));
        for (k, v) in query {
            request = request.query(*k, *v);
        }
        let mut response = request.call().map_err(|e| e.to_string())?;
        response.body_mut().read_to_string().map_err(|e| e.to_string())
    }

    /// An instant query's result vector: (labels, value) per series.
    fn query(&self, promql: &str) -> Result<Vec<Sample>, String> {
        let body: Value = serde_json::from_str(&self.get("/api/v1/query", &[("query", promql)])?)
            .map_err(|e| format!("not JSON: {e}"))?;
        let result = body["data"]["result"].as_array().ok_or(format!("{promql}: {body}"))?;
        Ok(result
            .iter()
            .map(|r| {
                let labels = r["metric"].as_object().unwrap();
                let labels = labels.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string())).collect();
                (labels, r["value"][1].as_str().unwrap().parse().unwrap())
            })
            .collect())
    }

    fn wait<T>(&mut self, what: &str, deadline: Duration, mut probe: impl FnMut(&Self) -> Result<T, String>) -> T {
        let start = Instant::now();
        loop {
            let last = match probe(self) {
                Ok(v) => return v,
                Err(e) => e,
            };
            if let Some(st) = self.child.try_wait().unwrap() {
                panic!("prometheus exited ({st}) waiting for {what}; last: {last}\n{}", self.log());
            }
            if start.elapsed() > deadline {
                panic!("prometheus: no {what} after {deadline:?}; last: {last}\n--- its log ---\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn label(labels: &BTreeMap<String, String>, name: &str) -> String {
    labels.get(name).cloned().unwrap_or_default()
}

#[test]
fn prometheus_scraping_two_daemons_agrees_with_summary_and_alerts() {
    let mut followed = [
        Followed::start("15-stderr-default-std", "alpha", "UTC"),
        Followed::start("16-stderr-default-std", "beta", "Europe/Berlin"),
    ];
    let mut want_counts = BTreeMap::new();
    let mut want_alerts = BTreeMap::new();
    for f in &mut followed {
        let counts = f.summary();
        assert!(counts.values().sum::<i64>() > 0, "{}: the fixture has checkpoints: {counts:?}", f.cluster);
        assert_eq!(counts, f.counted(), "{}: summary vs the counter over the raw log ({})", f.cluster, f.truth.brief());
        want_counts.extend(counts);
        want_alerts.extend(f.settled_alerts());
    }
    let mut prometheus = Prometheus::start(&followed.iter().map(|f| f.port).collect::<Vec<_>>());

    let counts = prometheus.wait("the daemons' checkpoint counts", Duration::from_secs(30), |p| {
        let got: BTreeMap<(String, String), i64> = p
            .query("sum by (cluster, trigger) (walwatch_checkpoints_total)")?
            .into_iter()
            .map(|(l, v)| ((label(&l, "cluster"), label(&l, "trigger")), v as i64))
            .collect();
        (got == want_counts).then_some(got.clone()).ok_or(format!("{got:?}\nwant {want_counts:?}"))
    });
    assert_eq!(counts, want_counts);
    let counted: BTreeMap<(String, String), i64> = followed.iter().flat_map(Followed::counted).collect();
    assert_eq!(counts, counted, "Prometheus vs the counter over the raw logs");
    // The logs' own figures: too-frequent warnings, the newest checkpoint's distance.
    let by_cluster = |p: &Prometheus, promql: &str| -> Result<BTreeMap<String, i64>, String> {
        Ok(p.query(promql)?.into_iter().map(|(l, v)| (label(&l, "cluster"), v as i64)).collect())
    };
    let want: BTreeMap<String, i64> = followed.iter().map(|f| (f.cluster.to_string(), f.truth.too_frequent)).collect();
    assert!(want.values().all(|n| *n > 0), "{want:?}");
    let got = by_cluster(&prometheus, "walwatch_checkpoint_too_frequent_total").unwrap();
    assert_eq!(got, want, "too-frequent warnings: Prometheus vs the counter");
    let want: BTreeMap<String, i64> =
        followed.iter().map(|f| (f.cluster.to_string(), f.last_distance_bytes())).collect();
    let got = by_cluster(&prometheus, "walwatch_checkpoint_last_distance_bytes").unwrap();
    assert_eq!(got, want, "the newest checkpoint's distance: Prometheus vs the log's complete line");

    // The firing alerts of the "walwatch" group: one per (cluster, rule,
    // severity) walwatch holds open, and walwatch_alerts_firing counts them.
    let want_firing: BTreeSet<(String, String, String)> = want_alerts.keys().cloned().collect();
    let firing = prometheus.wait("the rules to fire", Duration::from_secs(30), |p| {
        let got: BTreeSet<(String, String, String)> = p
            .query("ALERTS{alertstate=\"firing\",source=\"walwatch\"}")?
            .into_iter()
            .map(|(l, _)| (label(&l, "cluster"), label(&l, "rule"), label(&l, "severity")))
            .collect();
        (got == want_firing).then_some(got.clone()).ok_or(format!("{got:?}\nwant {want_firing:?}"))
    });
    assert_eq!(firing, want_firing);
    let open: BTreeMap<(String, String, String), i64> = prometheus
        .query("walwatch_alerts_firing")
        .unwrap()
        .into_iter()
        .map(|(l, v)| ((label(&l, "cluster"), label(&l, "rule"), label(&l, "severity")), v as i64))
        .collect();
    assert_eq!(open, want_alerts);
    // The advice series: the configured max_wal_size, and `walwatch suggest`'s.
    let mut want_advice = BTreeMap::new();
    for f in &followed {
        let suggestion = f.json(&["suggest", "--cluster", f.cluster]);
        let mb = suggestion["suggested"]["max_wal_size_mb"].as_i64().expect("the fixtures give a suggestion");
        want_advice.insert((f.cluster.to_string(), "suggested".to_string()), mb * 1024 * 1024);
        want_advice.insert((f.cluster.to_string(), "max_wal_size".to_string()), 32 * 1024 * 1024);
    }
    let advice = prometheus.wait("the advice series", Duration::from_secs(30), |p| {
        let mut got = BTreeMap::new();
        for (l, v) in p.query("walwatch_suggested_max_wal_size_bytes")? {
            got.insert((label(&l, "cluster"), "suggested".to_string()), v as i64);
        }
        for (l, v) in p.query("walwatch_setting{name=\"max_wal_size\"}")? {
            got.insert((label(&l, "cluster"), "max_wal_size".to_string()), v as i64);
        }
        (got == want_advice).then_some(got.clone()).ok_or(format!("{got:?}\nwant {want_advice:?}"))
    });
    assert_eq!(advice, want_advice);
    federated_view_agrees(&prometheus, &want_counts, &want_firing);
    // Both targets up, and nothing else fires (the daemon group stays quiet).
    let up = prometheus.query("up{job=\"walwatch\"} == 1").unwrap();
    assert_eq!(up.len(), 2, "{up:?}");
    let others = prometheus.query("ALERTS{source!=\"walwatch\"}").unwrap();
    assert!(others.is_empty(), "{others:?}");

    for f in &mut followed {
        f.daemon.terminate();
    }
}

/// The global view of docs/guide/scale.md: a second Prometheus federating
/// from `regional` with the shipped job holds every count and firing alert,
/// labelled with the region, the histograms' counts, and none of their buckets.
fn federated_view_agrees(
    regional: &Prometheus,
    want_counts: &BTreeMap<(String, String), i64>,
    want_firing: &BTreeSet<(String, String, String)>,
) {
    let mut global = Prometheus::federating(regional.port);
    let counts = global.wait("the federated counts", Duration::from_secs(30), |p| {
        let got: BTreeMap<(String, String), i64> = p
            .query("sum by (cluster, trigger) (walwatch_checkpoints_total{region=\"here\"})")?
            .into_iter()
            .map(|(l, v)| ((label(&l, "cluster"), label(&l, "trigger")), v as i64))
            .collect();
        (&got == want_counts).then_some(got.clone()).ok_or(format!("{got:?}\nwant {want_counts:?}"))
    });
    assert_eq!(&counts, want_counts);
    let firing = global.wait("the federated alerts", Duration::from_secs(30), |p| {
        let got: BTreeSet<(String, String, String)> = p
            .query("ALERTS{alertstate=\"firing\",source=\"walwatch\",region=\"here\"}")?
            .into_iter()
            .map(|(l, _)| (label(&l, "cluster"), label(&l, "rule"), label(&l, "severity")))
            .collect();
        (&got == want_firing).then_some(got.clone()).ok_or(format!("{got:?}\nwant {want_firing:?}"))
    });
    assert_eq!(&firing, want_firing);
    let clusters: BTreeSet<String> = want_counts.keys().map(|(c, _)| c.clone()).collect();
    let totals = global.query("walwatch_checkpoint_duration_seconds_count{phase=\"total\"}").unwrap();
    let with_totals: BTreeSet<String> = totals.iter().map(|(l, _)| label(l, "cluster")).collect();
    assert_eq!(with_totals, clusters, "the histograms' counts are federated");
    let buckets = global.query("count({__name__=~\"walwatch_.+_bucket\"})").unwrap();
    assert!(buckets.is_empty(), "buckets stay regional: {buckets:?}");
    let regional_buckets = regional.query("count({__name__=~\"walwatch_.+_bucket\"})").unwrap();
    assert!(regional_buckets.first().is_some_and(|(_, n)| *n > 0.0), "{regional_buckets:?}");
}

/// The same scrape, negotiated: OpenMetrics when asked for, the 0.0.4 text
/// otherwise; any other path is a 404.
#[test]
fn the_endpoint_answers_in_the_format_the_scraper_accepts() {
    let f = Followed::start("15-stderr-default-std", "alpha", "UTC");
    let url = format!("http://127.0.0.1:{}/metrics", f.port);
    let get = |accept: Option<&str>| {
        let mut request = ureq::get(&url);
        if let Some(a) = accept {
            request = request.header("Accept", a);
        }
        let mut response = request.call().unwrap();
        let content_type = response.headers()["content-type"].to_str().unwrap().to_string();
        (content_type, response.body_mut().read_to_string().unwrap())
    };
    let (om, text) = get(Some("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"));
    assert_eq!(om, "application/openmetrics-text; version=1.0.0; charset=utf-8");
    assert!(text.ends_with("# EOF\n") && text.contains("# TYPE walwatch_checkpoints counter\n"), "{text}");
    for accept in [None, Some("text/plain"), Some("*/*")] {
        let (plain, text) = get(accept);
        assert_eq!(plain, "text/plain; version=0.0.4; charset=utf-8", "Accept: {accept:?}");
        assert!(!text.contains("# EOF") && text.contains("# TYPE walwatch_checkpoints_total counter\n"), "{text}");
    }
    let missing = ureq::get(format!("http://127.0.0.1:{}/", f.port)).call();
    assert!(matches!(missing, Err(ureq::Error::StatusCode(404))), "{missing:?}");

    // Counters and histograms are counts from the store: a restarted
    // daemon serves the same numbers, so rate() sees no reset.
    let counted = |text: &str| -> Vec<String> {
        let counters =
            ["walwatch_checkpoints_total", "walwatch_checkpoint_too_frequent_total", "walwatch_checkpoint_d"];
        text.lines().filter(|l| counters.iter().any(|c| l.starts_with(c))).map(String::from).collect()
    };
    let before = counted(&get(None).1);
    // One duration per complete line of the log, as the counter finds them (28).
    let total = format!("_count{{cluster=\"alpha\",phase=\"total\"}} {}", f.truth.completes);
    assert_eq!(f.truth.completes, 28, "{}", f.truth.brief());
    assert!(before.iter().any(|l| l.ends_with(&total)), "{before:#?}");
    let mut f = f;
    f.daemon.terminate();
    f.daemon = f.ws.start();
    f.daemon.wait_running();
    assert_eq!(counted(&get(None).1), before, "the same counts after a restart");
    f.daemon.terminate();
}

/// An address already taken stops the daemon at startup, naming it.
#[test]
fn a_taken_port_is_a_startup_error_naming_the_address() {
    let ws = Workspace::new();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    fs::write(ws.config_path(), config(&ws, "alpha", port, "UTC")).unwrap();
    let out = support::daemon::walwatch()
        .args(["run", "--config", ws.config_path().to_str().unwrap()])
        .env_remove("NOTIFY_SOCKET")
        .env_remove("STATE_DIRECTORY")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    let says = format!("[metrics] listen = \"127.0.0.1:{port}\": cannot listen there");
    assert!(stderr.contains(&says), "{stderr}");
}

/// A reload moves the endpoint to a new `listen`; one that cannot be bound
/// keeps it where it was (and says so), and is tried again at the next
/// reload; no `[metrics]` closes it.
#[test]
fn a_reload_moves_the_endpoint_and_keeps_it_when_the_new_address_is_taken() {
    let mut f = Followed::start("15-stderr-default-std", "alpha", "UTC");
    // A new agent per probe, with a timeout: a pooled keep-alive connection
    // to an endpoint that was stopped would be read from forever.
    let answers = |port: u16| {
        let agent: ureq::Agent =
            ureq::Agent::config_builder().timeout_global(Some(Duration::from_secs(2))).build().into();
        agent.get(format!("http://127.0.0.1:{port}/metrics")).call().is_ok()
    };
    let reload_to = |f: &Followed, text: String| {
        fs::write(f.ws.config_path(), text).unwrap();
        f.daemon.signal("HUP");
    };
    let wait = |what: &str, f: &Followed, ok: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !ok() {
            assert!(Instant::now() < deadline, "{what}; daemon log:\n{}", f.daemon.log());
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let (old, new) = (f.port, free_port());
    assert!(answers(old));

    reload_to(&f, config(&f.ws, "alpha", new, "UTC"));
    wait("the endpoint answers at the new port", &f, &|| answers(new));
    wait("the old port is closed", &f, &|| !answers(old));

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = taken.local_addr().unwrap().port();
    reload_to(&f, config(&f.ws, "alpha", busy, "UTC"));
    let says = "Keeping the metrics endpoint where it was";
    wait("the failed move is said", &f, &|| f.daemon.log().contains(says));
    assert!(answers(new), "still served where it was");

    // The port is free again: the same config, reloaded, moves it now.
    drop(taken);
    f.daemon.signal("HUP");
    wait("moved on the second try", &f, &|| answers(busy));
    wait("and the previous port closed", &f, &|| !answers(new));

    let without =
        config(&f.ws, "alpha", busy, "UTC").replace(&format!("[metrics]\nlisten = \"127.0.0.1:{busy}\"\n"), "");
    assert!(!without.contains("[metrics]"), "{without}");
    reload_to(&f, without);
    wait("no [metrics], no endpoint", &f, &|| !answers(busy));
    assert!(f.daemon.exited().is_none(), "the daemon runs on: {}", f.daemon.log());
    f.daemon.terminate();
}
