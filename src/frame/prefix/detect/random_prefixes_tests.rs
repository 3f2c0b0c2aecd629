//! A random `log_line_prefix` built from PostgreSQL's escapes and literal
//! text, a log printed with it the way `elog.c`'s `log_status_format()`
//! does (the server's lines with empty session fields and nothing after
//! `%q`; sessions' lines with them), read with the detected prefix: the
//! same events, the same look-alikes refused, as with the prefix given.

use proptest::prelude::*;

use super::detect;
use crate::catalog::Catalog;
use crate::classify::{self, Outcome};
use crate::frame::formats::stderr::StderrScanner;
use crate::frame::prefix::Prefix;
use crate::frame::time::TimeContext;
use crate::frame::{drive_sized, Pos, Record, Tail};

/// Escapes a prefix is built from (a time and `%p` are always added).
/// A padded name before `%q` is left to the real logs' tests (`%m [%p]
/// %-10u %-10d `): with a `%q` part after it the server's padding and the
/// sessions' names leave no common text to find the `%q` by.
const ESCAPES: &[&str] = &[
    "%l", "%u", "%d", "%a", "%h", "%r", "%b", "%c", "%v", "%x", "%e", "%Q", "%i", "%s", "user=%u", "db=%d", "line=%l",
];

/// Escapes only client sessions print.
const SESSION_ESCAPES: &[&str] = &["%u", "%d", "%a", "%h", "%r", "%-10u", "user=%u", "db=%d", "app=%a", "client=%h"];

/// Literal text between escapes. Not `@`: an `@` between empty names is
/// `%u@%d` (`(@)`), and after another field (`%i@`) it reads as one too;
/// the real logs' tests cover `%u@%d` layouts. Not `/`: beside `%v`'s
/// `3/12` no reading can tell where it ends (`%x/%v` prints `0/3/12`).
/// Not `(`: `%h(%l)` prints what `%r` prints, `[local](2)`.
const SEPARATORS: &[&str] = &[" ", " [", "] ", ": ", "|", "-", ") ", "{", "} ", "<", "> ", ",", "]:"];

/// Who writes a line, and what its fields print.
struct Writer {
    pid: u32,
    session: bool,
}

const SERVER: Writer = Writer { pid: 4242, session: false };
const CLIENT: Writer = Writer { pid: 5151, session: true };

/// `log_status_format()` for one line: `ts` in seconds since the start.
fn print(spec: &str, w: &Writer, line_no: u32, ts: u32, sqlstate: &str) -> String {
    let mut out = String::new();
    let mut it = spec.chars().peekable();
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut padding = String::new();
        while let Some(&d) = it.peek().filter(|d| **d == '-' || d.is_ascii_digit()) {
            padding.push(d);
            it.next();
        }
        let Some(e) = it.next() else { break };
        if e == 'q' && !w.session {
            break;
        }
        let value = field(e, w, line_no, ts, sqlstate);
        match padding.strip_prefix('-').and_then(|p| p.parse::<usize>().ok()) {
            Some(width) => out.push_str(&format!("{value:<width$}")),
            None => out.push_str(&value),
        }
    }
    out
}

fn field(e: char, w: &Writer, line_no: u32, ts: u32, sqlstate: &str) -> String {
    let s = |session: &str, server: &str| if w.session { session } else { server }.to_string();
    match e {
        'm' => format!("2026-11-24 10:{:02}:{:02}.{:03} UTC", ts / 60 % 60, ts % 60, ts % 1000),
        't' => format!("2026-11-24 10:{:02}:{:02} UTC", ts / 60 % 60, ts % 60),
        'n' => format!("{}.{:03}", 1_763_978_400 + ts, ts % 1000),
        's' => "2026-11-24 10:00:00 UTC".to_string(),
        'p' => w.pid.to_string(),
        'l' => line_no.to_string(),
        'u' => s("alice", ""),
        'd' => s("shop", ""),
        'a' => s("psql", ""),
        'h' | 'r' => s("[local]", ""),
        'b' => s("client backend", "checkpointer"),
        'c' => format!("6753ec35.{:x}", w.pid),
        'v' => s("3/12", ""),
        'x' => "0".to_string(),
        'e' => sqlstate.to_string(),
        'Q' => s("-3528926170182727158", "0"),
        'i' => s("SELECT", ""),
        _ => String::new(),
    }
}

/// A log with the server's checkpoints and a session's connection, error
/// and `RAISE LOG` look-alike, twice over.
fn log(spec: &str) -> String {
    let mut out = String::new();
    // `%l` counts each process's lines, as PostgreSQL numbers them: one
    // count for the whole log made `[%l]` look like a pid to the detector.
    let mut lines = std::collections::HashMap::new();
    let mut put = |w: &Writer, ts: u32, level: &str, message: &str, sqlstate: &str| {
        let line = lines.entry(w.pid).or_insert(0);
        *line += 1;
        out.push_str(&print(spec, w, *line, ts, sqlstate));
        out.push_str(&format!("{level}:  {message}\n"));
    };
    put(&SERVER, 0, "LOG", "database system is ready to accept connections", "00000");
    for round in 0..2 {
        let t = 10 + round * 100;
        put(&CLIENT, t, "LOG", "connection authorized: user=alice database=shop application_name=psql", "00000");
        put(&SERVER, t + 1, "LOG", "checkpoints are occurring too frequently (9 seconds apart)", "00000");
        put(&SERVER, t + 1, "HINT", "Consider increasing the configuration parameter \"max_wal_size\".", "00000");
        put(&SERVER, t + 1, "LOG", "checkpoint starting: wal", "00000");
        put(&CLIENT, t + 2, "ERROR", "division by zero", "22012");
        put(&CLIENT, t + 2, "STATEMENT", "select 1/0", "22012");
        put(&CLIENT, t + 3, "LOG", "checkpoint starting: time", "00000");
        put(&CLIENT, t + 3, "CONTEXT", "PL/pgSQL function inline_code_block line 1 at RAISE", "00000");
        put(&SERVER, t + 4, "LOG", "checkpoint complete: wrote 957 buffers (5.8%); 1 WAL file(s) added, 1 removed, 0 recycled; write=0.181 s, sync=0.105 s, total=0.343 s; sync files=336, longest=0.080 s, average=0.001 s; distance=15354 kB, estimate=15354 kB", "00000");
        put(
            &CLIENT,
            t + 5,
            "LOG",
            "disconnection: session time: 0:00:00.008 user=alice database=shop host=[local]",
            "00000",
        );
    }
    out
}

/// The events (offset, kind) and the refused look-alikes' offsets.
fn read(prefix: Prefix, log: &str) -> (Vec<(u64, &'static str)>, Vec<u64>) {
    let time = TimeContext::new(Some("UTC")).unwrap();
    let mut scanner = StderrScanner::new(prefix, &time, crate::frame::test_lexicon());
    let mut records: Vec<Record> = Vec::new();
    drive_sized(1 << 20, log.as_bytes(), &mut scanner, Pos::START, Tail::Take, |r, _| {
        records.extend(r);
        Ok::<(), std::io::Error>(())
    })
    .unwrap();
    let (mut events, mut refused) = (Vec::new(), Vec::new());
    for r in &records {
        match classify::classify(Catalog::global(), r) {
            Outcome::Event(e) => events.push((r.offset, e.kind_name())),
            Outcome::Rejected { .. } => refused.push(r.offset),
            _ => {}
        }
    }
    (events, refused)
}

/// `lead time pid (escape sep)* [%q (session escape sep)+] end`: after
/// `%q`, as PostgreSQL's documentation suggests, only what sessions print;
/// no escape twice.
fn prefix_spec() -> impl Strategy<Value = String> {
    let time = prop::sample::select(vec!["%m", "%t", "%n"]);
    // Each escape once, in any order, each followed by a separator.
    let parts = |escapes: &'static [&'static str], n: std::ops::Range<usize>| {
        let seps = prop::collection::vec(prop::sample::select(SEPARATORS), 4);
        (prop::sample::subsequence(escapes, n).prop_shuffle(), seps)
            .prop_map(|(e, s): (Vec<&str>, Vec<&str>)| e.into_iter().zip(s).collect::<Vec<_>>())
    };
    let head = parts(ESCAPES, 0..4);
    let tail = prop::option::of(parts(SESSION_ESCAPES, 1..4));
    let lead = prop::sample::select(vec!["", "<", "["]);
    let pid = prop::sample::select(vec![" [%p] ", " %p ", " pid=%p "]);
    let end = prop::sample::select(vec![" ", ": ", "]: ", ":"]);
    (lead, time, pid, head, tail, end).prop_map(|(lead, time, pid, head, tail, end)| {
        let mut spec = format!("{lead}{time}{pid}");
        let print = |spec: &mut String, parts: &[(&str, &str)]| {
            for (escape, sep) in parts {
                spec.push_str(escape);
                // After `key=%u` a name may hold `-` or `/`: real prefixes
                // end such a value with a space, a comma or a bracket.
                let name_char = sep.starts_with(['-', '{', '<']);
                spec.push_str(if escape.contains('=') && name_char { " " } else { sep });
            }
        };
        // No escape twice: `%l` beside `line=%l` (or `%u` beside `user=%u`)
        // is the same field, which the subsequence alone does not prevent.
        let mut seen = std::collections::HashSet::new();
        let head: Vec<_> = head.into_iter().filter(|(e, _)| seen.insert(&e[e.len() - 1..])).collect();
        print(&mut spec, &head);
        let tail: Vec<_> = tail
            .unwrap_or_default()
            .into_iter()
            .filter(|(e, _)| !head.iter().any(|(h, _)| h.ends_with(&e[e.len() - 1..])))
            .collect();
        if !tail.is_empty() {
            spec.push_str("%q");
            print(&mut spec, &tail);
        }
        spec.push_str(end);
        spec
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn a_random_prefix_reads_like_the_given_one(spec in prefix_spec()) {
        let log = log(&spec);
        let lines: Vec<&str> = log.lines().collect();
        let markers = Catalog::global().markers();
        let given = Prefix::compile(&spec, markers).unwrap();
        let want = read(given, &log);
        // Seven events and two look-alikes refused.
        prop_assert!(want.0.len() + want.1.len() == 9 && want.1.len() >= 2, "{:?}: {:?}", spec, want);
        let detected = detect(&lines, markers, Catalog::global()).map_err(|e| TestCaseError::fail(format!("{spec:?}: {e}\n{log}")))?;
        let got = read(detected.clone(), &log);
        if want.0.len() == 7 {
            prop_assert_eq!(got, want, "{:?} detected as {:?}:\n{}", spec, detected.spec(), log);
        } else {
            // The given prefix refuses a real line: a short head (`%n [%p]
            // %d `) leaves the splice checks room (the README's residual
            // risk). The detected one must not refuse more.
            prop_assert!(want.0.iter().all(|e| got.0.contains(e)), "{:?} detected as {:?}: {:?} vs {:?}", spec, detected.spec(), got, want);
            prop_assert!(got.1.iter().all(|r| want.1.contains(r)) && got.1.len() >= 2, "{:?}: {:?} vs {:?}", spec, got, want);
        }
    }
}
