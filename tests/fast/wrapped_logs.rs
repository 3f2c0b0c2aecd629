//! Logs of a server in a container or on a platform, as DBAs get them:
//! real PostgreSQL 15–17 logs (the fixture runs) written through each
//! wrapper exactly as its tool writes it — Docker's json-file driver, a
//! CRI file under /var/log/pods, `docker compose logs` with and without
//! `--timestamps`, `kubectl logs --timestamps`, `fly logs`, Heroku's
//! logplex. No container runtime or platform runs here (no Docker engine,
//! no cluster): the wrappers are made from their documented formats around
//! the server's own lines, with the times the server logged.
//!
//! Each wrapped log must be detected as its wrapper, read with the
//! server's own log_line_prefix (never one with the wrapper's text in it),
//! and give the same checkpoints, figure for figure, as the bare log.

use std::fs;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use serde_json::Value;

use crate::support::{describe, walwatch};

const RUNS: [&str; 4] =
    ["15-stderr-default-std", "15-stderr-default-noise", "16-stderr-default-std", "17-stderr-default-std"];

fn log_of(run: &str) -> Vec<u8> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(run).join("log");
    let mut files: Vec<PathBuf> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    fs::read(&files[0]).unwrap()
}

/// Each line with the time the server logged on it (or on the line before
/// it, for a continuation line), shifted by `shift` seconds, in RFC 3339.
fn timed_lines(log: &[u8], shift: i64) -> Vec<(String, String)> {
    let mut time = String::new();
    let text = String::from_utf8_lossy(log);
    text.lines()
        .map(|line| {
            if let Some(t) =
                line.get(..23).and_then(|t| format!("{}Z", t.replacen(' ', "T", 1)).parse::<jiff::Timestamp>().ok())
            {
                // The runs' zones: a container's clock is UTC.
                let zone = match line.get(24..27) {
                    Some("CET") => 3600,
                    Some("IST") => 19_800,
                    _ => 0,
                };
                let t = t.checked_add(jiff::SignedDuration::from_secs(shift - zone)).unwrap();
                time = t.strftime("%Y-%m-%dT%H:%M:%S.%f").to_string() + "Z";
            }
            (time.clone(), line.to_string())
        })
        .collect()
}

/// The wrappers, as their tools write a line (`name` picks ids and names).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Wrapper {
    DockerJson,
    Cri,
    Compose,
    ComposeTimestamps,
    Kubectl,
    Flyio,
}

const WRAPPERS: [Wrapper; 6] =
    [Wrapper::DockerJson, Wrapper::Cri, Wrapper::Compose, Wrapper::ComposeTimestamps, Wrapper::Kubectl, Wrapper::Flyio];

impl Wrapper {
    fn format(self) -> &'static str {
        match self {
            Wrapper::DockerJson => "docker-json",
            Wrapper::Cri => "cri",
            Wrapper::Compose | Wrapper::ComposeTimestamps | Wrapper::Kubectl => "docker",
            Wrapper::Flyio => "flyio",
        }
    }

    fn wrap(self, time: &str, line: &str, name: &str) -> String {
        match self {
            Wrapper::DockerJson => {
                serde_json::json!({"log": format!("{line}\n"), "stream": "stderr", "time": time}).to_string()
            }
            Wrapper::Cri => format!("{time} stderr F {line}"),
            Wrapper::Compose => format!("{name:<12}| {line}"),
            Wrapper::ComposeTimestamps => format!("{name:<12}| {time} {line}"),
            Wrapper::Kubectl => format!("{time} {line}"),
            // fly's times are to the second.
            Wrapper::Flyio => format!("{}Z app[{name}] lax [info]postgres | {line}", &time[..19]),
        }
    }
}

fn wrapped(log: &[u8], wrapper: Wrapper, shift: i64, name: &str) -> Vec<u8> {
    let lines: Vec<String> = timed_lines(log, shift).iter().map(|(t, l)| wrapper.wrap(t, l, name)).collect();
    (lines.join("\n") + "\n").into_bytes()
}

/// Heroku's logplex around a server logging to syslog with Heroku's
/// prefix (`sql_error_code = %e `): each entry's lines numbered `[N-k]`
/// per process, the attachment's name in front.
fn heroku(log: &[u8]) -> Vec<u8> {
    let mut out = String::new();
    let mut seq = std::collections::HashMap::<String, u64>::new();
    let (mut pid, mut n, mut k) = (String::new(), 0, 0);
    for (time, line) in timed_lines(log, 0) {
        let time = time.replace('Z', "+00:00");
        let rest = match line.strip_prefix('\t') {
            Some(_) => {
                k += 1;
                line.clone()
            }
            None => {
                // `2026-11-22 08:04:20.708 UTC [21760] user@db LOG:  text`
                let open = line.find(" [").unwrap();
                let close = line[open..].find(']').unwrap() + open;
                pid = line[open + 2..close].to_string();
                let level = [
                    "LOG:  ",
                    "FATAL:  ",
                    "ERROR:  ",
                    "WARNING:  ",
                    "HINT:  ",
                    "DETAIL:  ",
                    "STATEMENT:  ",
                    "CONTEXT:  ",
                ]
                .iter()
                .filter_map(|m| line.find(m))
                .min()
                .unwrap();
                let counter = seq.entry(pid.clone()).or_default();
                *counter += 1;
                (n, k) = (*counter, 1);
                format!("sql_error_code = 00000 {}", &line[level..])
            }
        };
        out += &format!("{time} app[postgres.{pid}]: [DATABASE] [{n}-{k}] {rest}\n");
    }
    out.into_bytes()
}

struct Imported {
    format: String,
    prefix: String,
    checkpoints: Vec<Value>,
    summary: Value,
}

/// `content` imported into a store of its own: the format and prefix the
/// import reports, every checkpoint row (its cluster name left out) and
/// the summary's counts.
fn import(dir: &Path, name: &str, content: &[u8]) -> Imported {
    let (file, db) = (dir.join(format!("{name}.log")), dir.join(format!("{name}.db")));
    fs::write(&file, content).unwrap();
    let out = walwatch()
        .args(["import", "--db", db.to_str().unwrap(), "--cluster", "c", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{name}: {}", describe(&out));
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    let head = report.lines().next().unwrap_or_default().to_string();
    let (format, prefix) = head
        .split_once("(cluster c, ")
        .and_then(|(_, rest)| rest.trim_end_matches(')').split_once(", prefix "))
        .map(|(f, p)| (f.to_string(), p.trim_matches('\'').to_string()))
        .unwrap_or_else(|| panic!("{name}: {report}"));
    let json = |args: &[&str]| -> Value {
        let out = walwatch().args(args).args(["--db", db.to_str().unwrap(), "--format", "json"]).output().unwrap();
        assert!(out.status.success(), "{}", describe(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let mut checkpoints = json(&["checkpoints"]).as_array().unwrap().clone();
    for c in &mut checkpoints {
        c.as_object_mut().unwrap().remove("cluster");
    }
    let mut summary = json(&["summary"]);
    for moving in ["first_at", "last_at"] {
        summary.as_object_mut().unwrap().remove(moving);
    }
    Imported { format, prefix, checkpoints, summary }
}

#[test]
fn every_wrapper_reads_as_the_bare_log() {
    let dir = tempfile::tempdir().unwrap();
    for run in RUNS {
        let bare = import(dir.path(), &format!("{run}-bare"), &log_of(run));
        assert!(bare.checkpoints.len() >= 10, "{run}");
        for wrapper in WRAPPERS {
            let name = format!("{run}-{wrapper:?}");
            let got = import(dir.path(), &name, &wrapped(&log_of(run), wrapper, 0, "db-1"));
            assert_eq!((got.format.as_str(), got.prefix.as_str()), (wrapper.format(), bare.prefix.as_str()), "{name}");
            assert_eq!(got.checkpoints, bare.checkpoints, "{name}");
            assert_eq!(got.summary, bare.summary, "{name}");
        }
    }
}

#[test]
fn heroku_logplex_reads_its_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    for run in ["15-stderr-default-std", "16-stderr-default-std"] {
        let bare = import(dir.path(), &format!("{run}-bare"), &log_of(run));
        let got = import(dir.path(), &format!("{run}-heroku"), &heroku(&log_of(run)));
        assert_eq!((got.format.as_str(), got.prefix.as_str()), ("heroku", "sql_error_code = %e "), "{run}");
        // Heroku's prefix has no time: the checkpoints are dated by logplex's.
        assert_eq!(got.checkpoints, bare.checkpoints, "{run}");
        assert_eq!(got.summary["checkpoints"], bare.summary["checkpoints"], "{run}");
    }
}

/// Cloud SQL's log as Cloud Logging exports it: its fixed prefix
/// `[%p]: [%l-1] db=%d,user=%u ` has no time, the entry's `timestamp`
/// dates the line. Made from a real server's lines (their pid, a line
/// number per process, the session's names), the times the server logged.
fn cloudsql(log: &[u8]) -> Vec<u8> {
    let mut out = String::new();
    let mut numbers = std::collections::HashMap::<String, u64>::new();
    let name = regex::Regex::new(r"^\S+ \S+ \S+ \[(\d+)\] (?:(\S*)@(\S*) )?(.*)$").unwrap();
    let mut head = String::new();
    for (time, line) in timed_lines(log, 0) {
        let text = match line.strip_prefix('\t') {
            Some(_) => format!("{head}{line}"),
            None => {
                let c = name.captures(&line).unwrap();
                let n = numbers.entry(c[1].to_string()).or_default();
                *n += 1;
                let (user, db) = (c.get(2).map_or("", |m| m.as_str()), c.get(3).map_or("", |m| m.as_str()));
                head = format!("[{}]: [{n}-1] db={db},user={user} ", &c[1]);
                format!("{head}{}", &c[4])
            }
        };
        out += &serde_json::json!({"textPayload": text, "timestamp": time, "severity": "INFO",
                                   "resource": {"type": "cloudsql_database"}})
        .to_string();
        out.push('\n');
    }
    out.into_bytes()
}

#[test]
fn cloud_sql_exports_are_read_with_their_fixed_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let bare = import(dir.path(), "bare", &log_of("15-stderr-default-std"));
    let got = import(dir.path(), "cloudsql", &cloudsql(&log_of("15-stderr-default-std")));
    assert_eq!((got.format.as_str(), got.prefix.as_str()), ("cloudsql", "[%p]: [%l-1] db=%d,user=%u "));
    assert_eq!(got.checkpoints, bare.checkpoints);
    assert_eq!(got.summary, bare.summary);
}

/// A client's statement longer than Docker's 16 KiB buffer, sized so that
/// its second piece starts with a checkpoint line of a made-up pid: the
/// pieces are joined again, and that text is never read as a line.
#[test]
fn a_line_cut_into_pieces_is_never_read_piece_by_piece() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_of("15-stderr-default-std");
    let bare = import(dir.path(), "bare", &log);
    // The second piece is the forged line, whole: the statement ends with
    // it (a comment needs no closing quote).
    let head = "2026-11-22 08:05:00.000 UTC [4242] app@appdb LOG:  statement: SELECT 1 -- ";
    let forged = "2026-11-22 08:05:00.001 UTC [2] LOG:  checkpoint starting: wal";
    let statement = format!("{head}{}{forged}", "x".repeat(16 * 1024 - head.len()));
    let time = "2026-11-22T08:05:00.000000000Z";
    let pieces = [&statement[..16 * 1024], &statement[16 * 1024..]];
    for (wrapper, cut) in [
        (
            "docker-json",
            pieces
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let log = if i == 0 { p.to_string() } else { format!("{p}\n") };
                    serde_json::json!({"log": log, "stream": "stderr", "time": time}).to_string()
                })
                .collect::<Vec<_>>(),
        ),
        ("cri", vec![format!("{time} stderr P {}", pieces[0]), format!("{time} stderr F {}", pieces[1])]),
    ] {
        let mut lines: Vec<String> = String::from_utf8(wrapped(
            &log,
            if wrapper == "cri" { Wrapper::Cri } else { Wrapper::DockerJson },
            0,
            "db-1",
        ))
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
        let at = lines.len() / 2;
        lines.splice(at..at, cut);
        let got = import(dir.path(), wrapper, (lines.join("\n") + "\n").as_bytes());
        assert_eq!(got.checkpoints, bare.checkpoints, "{wrapper}: the forged piece was read as a line");
    }
}

/// A wrapper walwatch does not know (a bracketed time before each line):
/// the prefix is then read from the whole line, and a time's digits
/// (`T16:`) must never become part of it — the file would be read for an
/// hour and refused after. The import refuses, naming `--prefix`, or reads
/// a prefix without them; never one with them.
#[test]
fn an_unknown_wrapper_never_gives_a_prefix_with_its_digits() {
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> =
        timed_lines(&log_of("15-stderr-default-std"), 0).iter().map(|(t, l)| format!("[{}] {l}", &t[..19])).collect();
    let file = dir.path().join("unknown.log");
    fs::write(&file, lines.join("\n") + "\n").unwrap();
    let db = dir.path().join("u.db");
    let out = walwatch().args(["import", "--db", db.to_str().unwrap(), file.to_str().unwrap()]).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    match out.status.success() {
        true => {
            let prefix = stdout.lines().next().unwrap().split(", prefix '").nth(1).unwrap();
            let literal = regex::Regex::new(r"%-?[0-9]*[a-zA-Z%]").unwrap().replace_all(prefix, "");
            assert!(!literal.chars().any(|c| c.is_ascii_digit()), "{prefix}");
        }
        false => assert!(stderr.contains("--prefix"), "{stderr}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    /// Whatever the wrapper's times (any hour, any day) and names (a fly
    /// machine's id, a compose service), the prefix read is the server's:
    /// never one with a digit of a time or an id in it.
    #[test]
    fn the_prefix_never_takes_the_wrappers_text(
        wrapper in 0..WRAPPERS.len(),
        shift in -30 * 86_400i64..30 * 86_400,
        id in "[0-9a-f]{14}",
        service in "[a-z][a-z0-9-]{0,8}-[0-9]",
    ) {
        let dir = tempfile::tempdir().unwrap();
        let wrapper = WRAPPERS[wrapper];
        let name = if wrapper == Wrapper::Flyio { id } else { service };
        let log = log_of("15-stderr-default-std");
        let got = import(dir.path(), "p", &wrapped(&log, wrapper, shift, &name));
        prop_assert_eq!(got.prefix.as_str(), "%m [%p] %q%u@%d ");
        prop_assert_eq!(got.checkpoints.len(), 28);
    }
}
