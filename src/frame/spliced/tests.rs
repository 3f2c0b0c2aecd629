//! Pre-authentication injection through `%u`/`%d`, modelled on what
//! PostgreSQL writes for a failed login (the shapes below were captured from
//! a real PostgreSQL 15; `tests/postgres/attack_prefix.rs` replays them against a
//! live server): whatever the attacker puts in the 63 bytes of its user and
//! database names, only the real checkpointer's lines become events.

use proptest::prelude::*;

use crate::catalog::Catalog;
use crate::classify::{self, Outcome};
use crate::frame::formats::stderr::StderrScanner;
use crate::frame::prefix::Prefix;
use crate::frame::time::TimeContext;
use crate::frame::{drive_sized, Pos, Record, Tail};

/// Reads `log` under `spec`; returns the offsets of the accepted events and
/// of the rejected look-alikes.
fn read(spec: &str, log: &[u8], chunk: usize) -> (Vec<u64>, Vec<u64>) {
    let time = TimeContext::new(Some("UTC")).unwrap();
    let prefix = Prefix::compile(spec, Catalog::global().markers()).unwrap();
    let mut scanner = StderrScanner::new(prefix, &time, crate::frame::test_lexicon());
    let mut records: Vec<Record> = Vec::new();
    drive_sized(chunk, log, &mut scanner, Pos::START, Tail::Take, |r, _| {
        records.extend(r);
        Ok::<(), std::io::Error>(())
    })
    .unwrap();
    let (mut events, mut rejected) = (Vec::new(), Vec::new());
    for r in &records {
        match classify::classify(Catalog::global(), r) {
            Outcome::Event(_) => events.push(r.offset),
            Outcome::Rejected { .. } => rejected.push(r.offset),
            _ => {}
        }
    }
    (events, rejected)
}

/// A log_line_prefix under test and how it prints a background line and a
/// failed login's session fields.
struct Layout {
    spec: &'static str,
    background: fn(&str, u32) -> String,
    session: fn(&str, u32, &str, &str) -> String,
}

const DEBIAN: Layout = Layout {
    spec: "%m [%p] %q%u@%d ",
    background: |ts, pid| format!("{ts} [{pid}] "),
    session: |ts, pid, u, d| format!("{ts} [{pid}] {u}@{d} "),
};
const PGBADGER: Layout = Layout {
    spec: "%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ",
    background: |ts, pid| format!("{} [{pid}]: [1-1] user=,db=,app=,client= ", seconds(ts)),
    session: |ts, pid, u, d| format!("{} [{pid}]: [1-1] user={u},db={d},app=[unknown],client=127.0.0.1 ", seconds(ts)),
};
const SPACED: Layout = Layout {
    spec: "%m %u %d [%p] ",
    background: |ts, pid| format!("{ts}   [{pid}] "),
    session: |ts, pid, u, d| format!("{ts} {u} {d} [{pid}] "),
};
const SECONDS: Layout = Layout {
    spec: "%t [%p] %q%u@%d ",
    background: |ts, pid| format!("{} [{pid}] ", seconds(ts)),
    session: |ts, pid, u, d| format!("{} [{pid}] {u}@{d} ", seconds(ts)),
};

const TS: &str = "2026-11-23 23:22:01.825 UTC";

/// `%t` from a `%m` time: the milliseconds dropped.
fn seconds(ts: &str) -> String {
    format!("{}{}", &ts[..19], &ts[23..])
}
const CHECKPOINTER: u32 = 7431;

/// The text after the prefix of a real checkpointer line.
const REAL: &[&str] = &[
    "LOG:  checkpoint starting: time",
    "LOG:  checkpoint complete: wrote 3 buffers (0.0%); 0 WAL file(s) added, 0 removed, 0 recycled; write=0.002 s, sync=0.001 s, total=0.004 s; sync files=2, longest=0.001 s, average=0.001 s; distance=0 kB, estimate=0 kB",
    "LOG:  checkpoints are occurring too frequently (3 seconds apart)",
];

/// PostgreSQL's entry for a failed password login: the message quotes the
/// user name (its line breaks followed by a TAB), then a DETAIL line.
fn failed_login(layout: &Layout, pid: u32, user: &str, db: &str) -> String {
    let tabbed = user.replace('\n', "\n\t");
    let prefix = (layout.session)(TS, pid, user, db);
    format!(
        "{prefix}FATAL:  password authentication failed for user \"{tabbed}\"\n{prefix}DETAIL:  Connection matched pg_hba.conf line 91: \"host all all 127.0.0.1/32 scram-sha-256\"\n"
    )
}

/// PostgreSQL keeps the first 63 bytes of a name.
fn name(s: &str) -> &str {
    let mut end = s.len().min(63);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Lines an attacker would like walwatch to believe, in the layout's form.
fn forged(layout: &Layout) -> Vec<String> {
    let mut out = Vec::new();
    for pid in [1, CHECKPOINTER] {
        for ts in ["2026-11-23 23:22:01.000 Z", "2099-01-01 00:00:00.000 UTC"] {
            for text in [
                "LOG:  checkpoint starting: wal",
                "LOG:  parameter \"fsync\" changed to \"off\"",
                "LOG:  redo starts at 0/1",
            ] {
                out.push(format!("{}{text}", (layout.background)(ts, pid)));
            }
        }
    }
    out
}

fn real_line(layout: &Layout, i: usize) -> String {
    format!("{}{}\n", (layout.background)(TS, CHECKPOINTER), REAL[i % REAL.len()])
}

/// A log of real checkpointer lines and failed logins; the offsets of the real lines.
fn log(layout: &Layout, steps: &[(usize, String, String)]) -> (Vec<u8>, Vec<u64>) {
    let (mut text, mut real) = (String::new(), Vec::new());
    for (i, (real_first, user, db)) in steps.iter().enumerate() {
        let entry = real_line(layout, i);
        let login = failed_login(layout, 9000 + i as u32, name(user), name(db));
        if *real_first % 2 == 0 {
            real.push(text.len() as u64);
            text.push_str(&entry);
            text.push_str(&login);
        } else {
            text.push_str(&login);
            real.push(text.len() as u64);
            text.push_str(&entry);
        }
    }
    (text.into_bytes(), real)
}

/// The known attack shapes, for each layout.
fn crafted(layout: &Layout) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for f in forged(layout) {
        out.push((format!("\n{f}\n"), "postgres".to_string())); // a bare first line
        out.push(("LOG:  ".to_string(), format!("\n{f}\n"))); // first line disguised, bare last line
        out.push((format!("\n{f}"), "\n".to_string())); // forged line glued to the separator
        out.push(("x@y LOG:  z".to_string(), format!("\n{f}\n"))); // first line a session line
        out.push((format!("\n{f}\n{}", (layout.background)(TS, 1).trim_end()), "x".to_string())); // last line disguised
        out.push((format!("\n{f}\n"), format!("\n{}", (layout.background)(TS, 1).trim_end())));
        // both
    }
    out
}

fn check(layout: &Layout, steps: &[(usize, String, String)]) {
    let (log, real) = log(layout, steps);
    for chunk in [1 << 20, 700] {
        let (events, _) = read(layout.spec, &log, chunk);
        let extra: Vec<String> = events
            .iter()
            .filter(|e| !real.contains(e))
            .chain(real.iter().filter(|r| !events.contains(r)))
            .map(|&e| {
                String::from_utf8_lossy(&log[(e as usize).saturating_sub(200)..(e as usize + 200).min(log.len())])
                    .into_owned()
            })
            .collect();
        assert_eq!(
            events,
            real,
            "{} (chunk {chunk}), accepted or refused wrongly:\n{}",
            layout.spec,
            extra.join("\n-----\n")
        );
    }
}

#[test]
fn crafted_injections_never_become_events() {
    for layout in [&DEBIAN, &PGBADGER, &SPACED, &SECONDS] {
        let steps: Vec<(usize, String, String)> =
            crafted(layout).into_iter().enumerate().map(|(i, (u, d))| (i, u, d)).collect();
        check(layout, &steps);
    }
}

#[test]
fn the_issues_attack_is_rejected_not_ignored() {
    // Captured from PostgreSQL 15 with log_line_prefix '%m [%p] %q%u@%d '.
    let log = [
        "2026-11-23 23:22:01.636 UTC [7429] LOG:  database system is ready to accept connections",
        "2026-11-23 23:22:01.825 UTC [7440] ",
        "2026-11-23 23:22:01.000 Z [1] LOG:  checkpoint starting: wal",
        "@postgres FATAL:  password authentication failed for user \"",
        "\t2026-11-23 23:22:01.000 Z [1] LOG:  checkpoint starting: wal",
        "\t\"",
        "2026-11-23 23:22:01.974 UTC [7444] LOG:  @",
        "2026-11-23 23:22:01.000 Z [1] LOG:  checkpoint starting: wal",
        " FATAL:  password authentication failed for user \"LOG:  \"",
        "",
    ]
    .join("\n");
    let (events, rejected) = read(DEBIAN.spec, log.as_bytes(), 1 << 20);
    assert_eq!(events, vec![0], "only the real 'ready' line");
    assert_eq!(rejected, vec![124, 353], "both forged lines, counted");
}

#[test]
fn a_real_line_next_to_an_injection_is_kept() {
    // The injection tries to swallow the real lines around it: a bare first
    // line just after a real one, a bare last line just before the next.
    let real_a = "2026-11-23 23:22:01.825 UTC [7431] LOG:  checkpoint starting: time\n";
    let inject = "2026-11-23 23:22:01.900 UTC [7440] \n@ FATAL:  password authentication failed for user \"\n\t\"\n";
    let real_b = "2026-11-23 23:22:02.825 UTC [7431] LOG:  checkpoint starting: time\n";
    let log = format!("{real_a}{inject}{inject}{real_b}");
    let (events, rejected) = read(DEBIAN.spec, log.as_bytes(), 1 << 20);
    assert_eq!(events, vec![0, (real_a.len() + 2 * inject.len()) as u64]);
    assert!(rejected.is_empty());
}

/// The README's residual risk, pinned down: under `%t [%p] %q%u@%d ` (no
/// milliseconds) a real `checkpoint starting: wal` line, a line break and
/// the head of a failed login by a one-letter user fit into 63 bytes, so
/// the real line reads as the start of that login's prefix and is refused
/// (counted as forged, never silently). With `%m` they need 66 bytes.
#[test]
fn residual_risk_of_a_short_head() {
    let real = "LOG:  checkpoint starting: wal\n";
    let login = |layout: &Layout| failed_login(layout, 9000, "a", "b");
    for (layout, refused) in [(&SECONDS, true), (&DEBIAN, false)] {
        let log = format!("{}{real}{}", (layout.background)(TS, CHECKPOINTER), login(layout));
        let (events, rejected) = read(layout.spec, log.as_bytes(), 1 << 20);
        assert_eq!((events.is_empty(), rejected.len()), (refused, usize::from(refused)), "{}", layout.spec);
    }
}

/// Tokens an attacker combines into user and database names: whole forged
/// lines, their prefixes and messages apart (so that PostgreSQL's 63-byte
/// cut and the prefix's own text land anywhere), separators and markers.
fn tokens(layout: &Layout) -> Vec<String> {
    let mut tokens: Vec<String> = forged(layout);
    for pid in [1, CHECKPOINTER] {
        tokens.push((layout.background)(TS, pid));
        tokens.push((layout.background)(TS, pid).trim_end().to_string());
    }
    for t in [
        "\n",
        "\n",
        "\n",
        "@",
        " ",
        "\"",
        "x",
        "LOG:  ",
        " FATAL:  ",
        ",db=",
        ",app=",
        "]: [1-1] user=",
        "LOG:  checkpoint starting: wal",
        "LOG:  checkpoint starting: time",
        "LOG:  parameter \"fsync\" changed to \"",
        "LOG:  checkpoints are occurring too frequently (2 seconds apart)",
        "HINT:  Consider increasing the configuration parameter \"max_wal_size\".",
    ] {
        tokens.push(t.to_string());
    }
    tokens
}

fn names(tokens: Vec<String>) -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(tokens), 0..6).prop_map(|t| t.concat())
}

/// Layouts whose head (`%m`, or literal text before the raw fields) leaves
/// no room in 63 bytes for a forged message, a line break and a fake head.
/// `%t [%p] %q%u@%d ` does leave room (see `residual_risk_of_a_short_head`).
const LAYOUTS: [&Layout; 3] = [&DEBIAN, &PGBADGER, &SPACED];

fn attack() -> impl Strategy<Value = (usize, Vec<(usize, String, String)>)> {
    (0..LAYOUTS.len()).prop_flat_map(|which| {
        let t = tokens(LAYOUTS[which]);
        (Just(which), proptest::collection::vec((0usize..2, names(t.clone()), names(t)), 1..6))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_names_never_become_events((which, steps) in attack()) {
        check(LAYOUTS[which], &steps);
    }
}

/// Padded raw fields (`%-10u %-10d `): the server's lines print the padding
/// of two empty names, 22 spaces, and no more than what PostgreSQL 15 wrote
/// may be read as a prefix running across lines (lines from a real log).
/// A real PostgreSQL 15 log under `%n [%p] %d ` (epoch seconds: a head of
/// 20 bytes): the checkpointer's short lines and the next line's head fit
/// in one database name, yet no real line is refused; the session's
/// `RAISE LOG` look-alike is.
#[test]
fn a_short_head_refuses_no_real_line() {
    let log = include_str!("../../../tests/fixtures/prefixes/t20.log");
    let offsets = |needle: &str| -> Vec<u64> {
        let mut at = 0;
        log.split_inclusive('\n')
            .filter_map(|line| {
                let here = at;
                at += line.len();
                line.contains(needle).then_some(here as u64)
            })
            .collect()
    };
    let real = offsets("]  LOG:  checkpoint starting: ");
    let forged = offsets("] postgres LOG:  checkpoint starting: ");
    assert_eq!((real.len(), forged.len()), (24, 1));
    let (events, rejected) = read("%n [%p] %d ", log.as_bytes(), 1 << 20);
    assert!(real.iter().all(|o| events.contains(o)), "a real start was not read");
    assert_eq!(rejected, forged);
}

#[test]
fn padded_names_refuse_no_real_line() {
    let log = [
        "2026-11-24 10:09:55.045 UTC [8749] postgres   postgres   LOG:  connection authorized: user=postgres database=postgres application_name=pgbench",
        "2026-11-24 10:09:55.267 UTC [8728]                       LOG:  checkpoints are occurring too frequently (1 second apart)",
        "2026-11-24 10:09:55.267 UTC [8728]                       HINT:  Consider increasing the configuration parameter \"max_wal_size\".",
        "2026-11-24 10:09:55.278 UTC [8728]                       LOG:  checkpoint starting: wal",
        "2026-11-24 10:09:56.584 UTC [8785] [unknown]  [unknown]  LOG:  connection received: host=[local]",
        "2026-11-24 10:09:56.585 UTC [8785] postgres   postgres   LOG:  connection authorized: user=postgres database=postgres application_name=myapp",
        "",
    ]
    .join("\n");
    let (events, rejected) = read("%m [%p] %-10u %-10d ", log.as_bytes(), 1 << 20);
    assert_eq!((events.len(), rejected), (2, vec![]));
}

/// A login whose user name forges the HINT of the real warning before it
/// and whose database name is a line break: the warning is real however
/// the reads are cut (the check that the HINT line opens a spliced prefix
/// looks at the lines after it, which a short read had not reached).
#[test]
fn a_forged_hint_after_a_real_warning_reads_alike_at_every_chunk_size() {
    let hint =
        "2026-11-23 23:22:01.825 UTC   [7431] HINT:  Consider increasing the configuration parameter \"max_wal_size\".";
    let quiet = || (0, String::new(), String::new());
    let steps = vec![quiet(), quiet(), (0, hint.to_string(), "\n".to_string()), quiet()];
    let (log, real) = log(&SPACED, &steps);
    assert_eq!(real, [0, 285, 754, 1263]);
    for chunk in (600..log.len() + 1).step_by(7).chain([1 << 20]) {
        assert_eq!(read(SPACED.spec, &log, chunk), (real.clone(), vec![]), "chunk {chunk}");
    }
}
