//! Each splice check on its own, on the shape of a known attack as a
//! real PostgreSQL 15 wrote it (captured with `%m [%p] %q%u@%d `, see
//! `tests.rs`): the whole-log tests there pass as long as either check
//! refuses a forged line, so they cannot tell a broken check from a sound one.

use super::*;
use crate::catalog::Catalog;

const DEBIAN: &str = "%m [%p] %q%u@%d ";

fn prefix(spec: &str) -> Prefix {
    Prefix::compile(spec, Catalog::global().markers()).unwrap()
}

/// The real head (time and pid) cut short by a user name that starts with
/// a line break, the forged line, and the rest of the real prefix with its
/// marker: a failed login whose user name is "\n<forged line>\n".
const ATTACK: [&str; 3] = [
    "2026-11-23 23:22:01.825 UTC [7440] ",
    "2026-11-23 23:22:01.000 Z [1] LOG:  checkpoint starting: wal",
    "@postgres FATAL:  password authentication failed for user \"",
];

/// `lines` joined into a window, and the candidate entry: line `entry`.
fn around(lines: &[&str], entry: usize) -> (String, usize, usize) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let start: usize = lines[..entry].iter().map(|l| l.len() + 1).sum();
    (text, start, start + lines[entry].len() + 1)
}

#[test]
fn a_cut_short_head_at_the_start_of_the_window_runs_on_into_the_forged_line() {
    let p = prefix(DEBIAN);
    let spanning = p.spanning().unwrap();
    let (text, start, next) = around(&ATTACK, 1);
    let a = Around { text: text.as_bytes(), start, next };
    // Check 1 alone: the head on the window's first byte reads on to the real marker.
    assert!(earlier_prefix_runs_on(&p, spanning, &a));
    assert!(inside_a_prefix(&p, &a));
}

#[test]
fn a_complete_line_before_an_entry_is_no_cut_short_head() {
    let p = prefix(DEBIAN);
    let spanning = p.spanning().unwrap();
    let lines = [
        "2026-11-23 23:22:01.636 UTC [7429] LOG:  database system is ready to accept connections",
        "2026-11-23 23:22:01.825 UTC [7431] LOG:  checkpoint starting: time",
        "2026-11-23 23:22:02.825 UTC [7431] LOG:  checkpoint complete: wrote 3 buffers (0.0%); 0 WAL file(s) added, 0 removed, 0 recycled; write=0.002 s, sync=0.001 s, total=0.004 s; sync files=2, longest=0.001 s, average=0.001 s; distance=0 kB, estimate=0 kB",
    ];
    for entry in 0..lines.len() {
        let (text, start, next) = around(&lines, entry);
        let a = Around { text: text.as_bytes(), start, next };
        assert!(!earlier_prefix_runs_on(&p, spanning, &a), "line {entry}");
        assert!(!a_later_marker_ends_a_prefix(&p, spanning, &a), "line {entry}");
        assert!(!inside_a_prefix(&p, &a), "line {entry}");
    }
}

/// The fake-head attack on check 2: the forged line is the injection's own
/// first line (the real head, then the user name "LOG:  redo starts at
/// 0/1\n<a fake head> x"), and the rest of the real prefix reads as a
/// complete session line of its own, so only the reading from the forged
/// line to the real marker (`reaches`) shows it.
#[test]
fn a_forged_first_line_reaches_the_real_marker_through_a_fake_head() {
    let p = prefix(DEBIAN);
    let spanning = p.spanning().unwrap();
    let lines = [
        "2026-11-23 23:22:01.825 UTC [7431] LOG:  checkpoint starting: time",
        "2026-11-23 23:22:01.900 UTC [9000] LOG:  redo starts at 0/1",
        "2026-11-23 23:22:01.000 Z [1] x@postgres FATAL:  password authentication failed for user \"LOG:  redo starts at 0/1",
        "\t2026-11-23 23:22:01.000 Z [1] x\"",
    ];
    let (text, start, next) = around(&lines, 1);
    let a = Around { text: text.as_bytes(), start, next };
    assert!(reaches(spanning, &a, next, lines[2].as_bytes()));
    assert!(a_later_marker_ends_a_prefix(&p, spanning, &a));
    // The real line before it is not implicated, by either check.
    let (text, start, next) = around(&lines, 0);
    let a = Around { text: text.as_bytes(), start, next };
    assert!(!earlier_prefix_runs_on(&p, spanning, &a));
    assert!(!a_later_marker_ends_a_prefix(&p, spanning, &a));
}

/// `%p` after the raw fields lets a client write a whole secondary line of
/// any pid: here a CONTEXT line "of the checkpointer" (pid 7431) that would
/// make its real checkpoint line look raised from a function.
const SPACED: &str = "%m %u %d [%p] ";

fn fake_context_log() -> (Vec<&'static str>, usize) {
    let lines = vec![
        "2026-11-23 23:22:00.100 UTC   [7429] LOG:  database system is ready to accept connections",
        "2026-11-23 23:22:00.200 UTC   [7429] LOG:  parameter \"max_wal_size\" changed to \"1GB\"",
        "2026-11-23 23:22:00.300 UTC   [7429] LOG:  received SIGHUP, reloading configuration files",
        "2026-11-23 23:22:01.825 UTC   [7431] LOG:  checkpoint starting: time",
        // A failed login by user "a", database "b [7431] CONTEXT:  x\n".
        "2026-11-23 23:22:01.900 UTC a b [7431] CONTEXT:  x",
        " [9000] FATAL:  password authentication failed for user \"a\"",
        "2026-11-23 23:22:01.900 UTC a b [7431] CONTEXT:  x",
        " [9000] DETAIL:  Connection matched pg_hba.conf line 91: \"host all all 127.0.0.1/32 scram-sha-256\"",
    ];
    (lines, 4)
}

#[test]
fn a_secondary_line_whose_prefix_runs_on_opens_a_spliced_prefix() {
    let p = prefix(SPACED);
    let (lines, fake) = fake_context_log();
    let (text, at, _) = around(&lines, fake);
    assert!(at > p.spanning().unwrap().span(), "far enough into the text to tell at from 0");
    assert!(opens_a_spliced_prefix(&p, text.as_bytes(), at));
}

#[test]
fn a_real_secondary_line_opens_no_spliced_prefix() {
    let p = prefix(SPACED);
    let lines = [
        "2026-11-23 23:22:01.825 UTC   [7431] LOG:  checkpoint starting: time",
        // Its own message quotes a marker: no prefix of its own ends there.
        "2026-11-23 23:22:01.825 UTC   [7431] DETAIL:  x = 'HINT:  '",
        // Another process's line quoting a marker after its own.
        "2026-11-23 23:22:01.900 UTC   [9000] LOG:  statement: SELECT 'ERROR:  '",
    ];
    let (text, at, _) = around(&lines, 1);
    assert!(!opens_a_spliced_prefix(&p, text.as_bytes(), at));
}

#[test]
fn a_fake_context_line_does_not_take_the_real_checkpoint_line_with_it() {
    use crate::classify::{self, Outcome};
    use crate::frame::formats::stderr::StderrScanner;
    use crate::frame::time::TimeContext;
    use crate::frame::{drive, Pos, Record, Tail};

    let (lines, _) = fake_context_log();
    let log: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let time = TimeContext::new(Some("UTC")).unwrap();
    let mut scanner = StderrScanner::new(prefix(SPACED), &time, crate::frame::test_lexicon());
    let mut records: Vec<Record> = Vec::new();
    drive(log.as_bytes(), &mut scanner, Pos::START, Tail::Take, |r, _| {
        records.extend(r);
        Ok::<(), std::io::Error>(())
    })
    .unwrap();
    let checkpoint = records.iter().find(|r| r.line == 4).expect("the checkpoint line is framed");
    assert_eq!(checkpoint.context, None);
    assert!(matches!(classify::classify(Catalog::global(), checkpoint), Outcome::Event(_)), "{checkpoint:?}");
}
