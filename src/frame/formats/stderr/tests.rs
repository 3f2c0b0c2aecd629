//! The stderr scanner on its own: what it holds back of a file still being
//! written, the origin it gives a record, and the splice check's window at
//! the start of a buffer (the bytes remembered from the one before).

use crate::catalog::Catalog;
use crate::classify::{self, Outcome};
use crate::frame::formats::stderr::StderrScanner;
use crate::frame::prefix::Prefix;
use crate::frame::testing::frame_all;
use crate::frame::time::TimeContext;
use crate::frame::{Consumed, Pos, Record, Scan, Tail};

fn prefix(spec: &str) -> Prefix {
    Prefix::compile(spec, Catalog::global().markers()).unwrap()
}

/// One scan of `region` as the start of a file that may still grow.
fn scan_growing(scanner: &mut StderrScanner<'_>, region: &str) -> (Vec<Record>, Consumed) {
    let mut records = Vec::new();
    let done = scanner.scan(region.as_bytes(), Pos::START, false, &mut |r| records.push(r));
    (records, done)
}

fn consumed(text: &str) -> Consumed {
    Consumed { bytes: text.len(), newlines: text.matches('\n').count() as u64 }
}

const COMPLETE: &str = "2026-11-22 08:04:23.497 UTC [21760] LOG:  checkpoint complete: wrote 25 buffers (0.6%); 0 WAL file(s) added, 1 removed, 0 recycled; write=0.192 s, sync=0.082 s, total=0.344 s; sync files=26, longest=0.078 s, average=0.004 s; distance=11499 kB, estimate=11499 kB\n";
const TOO_FREQUENT: &str =
    "2026-11-22 08:04:26.101 UTC [21760] LOG:  checkpoints are occurring too frequently (3 seconds apart)\n";
const HINT: &str =
    "2026-11-22 08:04:26.101 UTC [21760] HINT:  Consider increasing the configuration parameter \"max_wal_size\".\n";

/// A followed file whose last entry has a HINT line: the entry is held back
/// whole (the HINT may be followed by more lines of it), the rest is read.
#[test]
fn the_last_entry_of_a_growing_file_is_held_back_with_its_secondary_lines() {
    let time = TimeContext::new(Some("UTC")).unwrap();
    // No raw field: the prefix cannot span lines, nothing more is held back.
    let mut scanner = StderrScanner::new(prefix("%m [%p] "), &time, crate::frame::test_lexicon());
    assert_eq!(scanner.reach(), 0);
    let region = [COMPLETE, TOO_FREQUENT, HINT].concat();
    let (records, done) = scan_growing(&mut scanner, &region);
    assert_eq!(done, consumed(COMPLETE));
    let messages: Vec<&str> = records.iter().map(|r| r.message.as_str()).collect();
    assert_eq!(messages, [COMPLETE[42..].trim_end()]);

    for tail in [Tail::Hold, Tail::Take] {
        let mut scanner = StderrScanner::new(prefix("%m [%p] "), &time, crate::frame::test_lexicon());
        let (records, reached) = frame_all(&mut scanner, region.as_bytes(), 1 << 20, tail, Pos::START);
        let got: Vec<_> = records.iter().map(|r| (r.offset, r.hint.as_deref())).collect();
        if tail == Tail::Hold {
            assert_eq!(got, [(0, None)]);
            assert_eq!(reached, Pos { offset: COMPLETE.len() as u64, line: 2 });
        } else {
            let hint = "Consider increasing the configuration parameter \"max_wal_size\".";
            assert_eq!(got, [(0, None), (COMPLETE.len() as u64, Some(hint))]);
            assert_eq!(reached, Pos { offset: region.len() as u64, line: 4 });
        }
    }
}

/// Without the logging collector each process writes to stderr itself, so
/// another process's line may follow an entry: its CONTEXT line is not the
/// entry's, and a continuation (TAB) line goes to the field before it.
#[test]
fn a_secondary_line_of_another_process_is_not_the_entry_s() {
    let time = TimeContext::new(Some("UTC")).unwrap();
    let log = [
        TOO_FREQUENT,
        "2026-11-22 08:04:26.102 UTC [24978] CONTEXT:  while updating tuple (0,12) in relation \"pgbench_accounts\"\n",
        STARTING,
        "\tand more\n",
        HINT.replace("08:04:26.101", "08:04:23.386").as_str(),
        "\tstill the hint\n",
    ]
    .concat();
    let mut scanner = StderrScanner::new(prefix("%m [%p] "), &time, crate::frame::test_lexicon());
    let (records, _) = frame_all(&mut scanner, log.as_bytes(), 1 << 20, Tail::Take, Pos::START);
    let got: Vec<_> = records.iter().map(|r| (r.message.as_str(), r.hint.as_deref(), r.context.as_deref())).collect();
    assert_eq!(
        got,
        [
            ("checkpoints are occurring too frequently (3 seconds apart)", None, None),
            (
                "checkpoint starting: immediate force wait\nand more",
                Some("Consider increasing the configuration parameter \"max_wal_size\".\nstill the hint"),
                None
            ),
        ]
    );
}

/// A standby's log file without the logging collector (`pg_ctl -l`): the
/// errors of its restore_command's `cp` (the documentation's example) are
/// no log lines; a statement of 71 lines has a needle far down its TAB
/// lines; the stream ends without a final newline.
#[test]
fn counts_lines_entries_candidates_and_failures() {
    let time = TimeContext::new(Some("UTC")).unwrap();
    let statement: String =
        std::iter::once("2026-11-22 08:04:24.000 UTC [24978] LOG:  statement: SELECT 1\n".to_string())
            .chain((0..69).map(|i| format!("\t, {i}\n")))
            .chain(std::iter::once("\t-- after the checkpoint\n".to_string()))
            .collect();
    let log = [
        "cp: cannot stat '/mnt/server/archivedir/00000002.history': No such file or directory\n",
        "cp: cannot stat '/mnt/server/archivedir/000000010000000000000003': No such file or directory\n",
        TOO_FREQUENT,
        HINT,
        STARTING,
        &statement,
        "2026-11-22 08:04:30.001 UTC [21752] LOG:  database system is shut down",
    ]
    .concat();
    let mut scanner = StderrScanner::new(prefix("%m [%p] "), &time, crate::frame::test_lexicon());
    assert_eq!(scanner.wants_look_behind(), 0, "no raw field: nothing to look back at");
    let (records, reached) = frame_all(&mut scanner, log.as_bytes(), 1 << 20, Tail::Take, Pos::START);
    assert_eq!(reached, Pos { offset: log.len() as u64, line: 77 });
    let messages: Vec<&str> = records.iter().map(|r| r.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "checkpoints are occurring too frequently (3 seconds apart)",
            "checkpoint starting: immediate force wait",
            "database system is shut down"
        ]
    );
    let stats = scanner.stats();
    // 77 lines, 70 of them TAB lines; cp's lines fail, once each; the
    // HINT's needle is inside an entry already read, the statement's too deep.
    assert_eq!((stats.lines, stats.entries, stats.candidates, stats.unparsed), (77, 7, 3, 2));
    assert_eq!(
        StderrScanner::new(prefix("%m [%p] %q%u@%d "), &time, crate::frame::test_lexicon()).wants_look_behind(),
        242
    );
}

/// A session's failed statement: its STATEMENT line and the statement's
/// second line (TAB-indented) belong to it.
const FAILED: &str = "2026-11-22 08:04:23.101 UTC [24978] shop@shop ERROR:  must be superuser or have privileges of pg_checkpoint to do CHECKPOINT\n2026-11-22 08:04:23.101 UTC [24978] shop@shop STATEMENT:  checkpoint\n\t;\n";
const STARTING: &str = "2026-11-22 08:04:23.386 UTC [21760] LOG:  checkpoint starting: immediate force wait\n";

/// With a prefix whose user and database names may hold line breaks, an
/// entry is read only once a prefix's span of bytes follows it (the splice
/// check looks that far); when only the first entry has that much after
/// it, just that one is read, whole, with its STATEMENT and TAB lines.
#[test]
fn a_growing_file_is_read_up_to_a_span_before_its_end() {
    let time = TimeContext::new(Some("UTC")).unwrap();
    let mut scanner = StderrScanner::new(prefix("%m [%p] %q%u@%d "), &time, crate::frame::test_lexicon());
    let span = scanner.reach();
    assert!(span > STARTING.len() + TOO_FREQUENT.len(), "span {span}");

    // The first entry and then less than a span: only the first is read.
    let region = [FAILED, STARTING, TOO_FREQUENT].concat();
    assert!(region.len() > span && region.len() - span < FAILED.len(), "span {span}");
    let (records, done) = scan_growing(&mut scanner, &region);
    assert_eq!(done, consumed(FAILED));
    let got: Vec<_> = records.iter().map(|r| (r.message.as_str(), r.statement.as_deref())).collect();
    assert_eq!(
        got,
        [("must be superuser or have privileges of pg_checkpoint to do CHECKPOINT", Some("checkpoint\n;"))]
    );

    // Many entries: those with a span of bytes after their start are read,
    // up to the last one that starts before the line a span before the end.
    let mut scanner = StderrScanner::new(prefix("%m [%p] %q%u@%d "), &time, crate::frame::test_lexicon());
    let entries: Vec<String> = (0..12)
        .map(|i| format!("2026-11-22 08:{:02}:23.386 UTC [21760] LOG:  checkpoint starting: time\n", 10 + i))
        .collect();
    let region = entries.concat();
    let starts: Vec<usize> = (0..entries.len()).map(|i| entries[..i].concat().len()).collect();
    let cut_line = starts.iter().rposition(|&s| s <= region.len() - span).unwrap();
    assert!(cut_line >= 3, "span {span}");
    let (records, done) = scan_growing(&mut scanner, &region);
    assert_eq!(done, Consumed { bytes: starts[cut_line - 1], newlines: cut_line as u64 - 1 });
    assert_eq!(records.len(), cut_line - 1);
}

/// Which lines carry a session: any session field of the prefix that is not
/// empty (PostgreSQL leaves them empty for background processes), or the
/// part after `%q`, which it prints for sessions only.
#[test]
fn a_record_is_a_session_s_when_a_session_field_is_set() {
    let time = TimeContext::new(Some("UTC")).unwrap();
    let cases = [
        ("%m [%p] %u ", "2026-11-22 08:04:23.386 UTC [21760]  LOG:  checkpoint starting: time", false),
        ("%m [%p] %u ", "2026-11-22 08:04:23.386 UTC [24978] postgres LOG:  checkpoint starting: time", true),
        ("%m [%p] %d ", "2026-11-22 08:04:23.386 UTC [24978] shop LOG:  checkpoint starting: time", true),
        ("%m [%p] %a ", "2026-11-22 08:04:23.386 UTC [24978] psql LOG:  checkpoint starting: time", true),
        ("%m %h [%p] ", "2026-11-22 08:04:23.386 UTC [local] [24978] LOG:  checkpoint starting: time", true),
        ("%m %h [%p] ", "2026-11-22 08:04:23.386 UTC  [21760] LOG:  checkpoint starting: time", false),
        ("%m [%p] %q%u@%d ", "2026-11-22 08:04:23.386 UTC [21760] LOG:  checkpoint starting: time", false),
        ("%m [%p] %q%u@%d ", "2026-11-22 08:04:23.386 UTC [24978] @ LOG:  checkpoint starting: time", true),
    ];
    for (spec, line, session) in cases {
        let mut scanner = StderrScanner::new(prefix(spec), &time, crate::frame::test_lexicon());
        let (records, _) = frame_all(&mut scanner, format!("{line}\n").as_bytes(), 1 << 20, Tail::Take, Pos::START);
        let got: Vec<_> = records.iter().map(|r| (r.message.as_str(), r.origin.session)).collect();
        assert_eq!(got, [("checkpoint starting: time", session)], "{spec:?}: {line}");
    }
}

#[test]
fn the_backend_type_is_kept_without_its_padding() {
    let time = TimeContext::new(Some("UTC")).unwrap();
    let log = "2026-11-22 08:04:23.386 UTC [21760] checkpointer LOG:  checkpoint starting: time\n2026-11-22 08:04:24.001 UTC [24978] client backend LOG:  statement: checkpoint;\n";
    let mut scanner = StderrScanner::new(prefix("%m [%p] %b "), &time, crate::frame::test_lexicon());
    let (records, _) = frame_all(&mut scanner, log.as_bytes(), 1 << 20, Tail::Take, Pos::START);
    let got: Vec<_> = records.iter().map(|r| (r.origin.backend_type.as_deref(), r.origin.session)).collect();
    assert_eq!(got, [(Some("checkpointer"), false), (Some("client backend"), false)]);
    let padded = "2026-11-22 08:04:23.386 UTC [21760] checkpointer         LOG:  checkpoint starting: time\n";
    let mut scanner = StderrScanner::new(prefix("%m [%p] %-20b "), &time, crate::frame::test_lexicon());
    let (records, _) = frame_all(&mut scanner, padded.as_bytes(), 1 << 20, Tail::Take, Pos::START);
    assert_eq!(records[0].origin.backend_type.as_deref(), Some("checkpointer"));
}

/// A known attack (captured from PostgreSQL 15 with `%m [%p] %q%u@%d `):
/// two forged checkpoint lines inside failed logins' user names; then its
/// second shape again with the database name ending in two line breaks, so
/// that the real marker (` FATAL:`) is two lines after the forged one.
const ATTACK: &[&str] = &[
    "2026-11-23 23:22:01.636 UTC [7429] LOG:  database system is ready to accept connections\n",
    "2026-11-23 23:22:01.825 UTC [7440] \n",
    "2026-11-23 23:22:01.000 Z [1] LOG:  checkpoint starting: wal\n",
    "@postgres FATAL:  password authentication failed for user \"\n",
    "\t2026-11-23 23:22:01.000 Z [1] LOG:  checkpoint starting: wal\n",
    "\t\"\n",
    "2026-11-23 23:22:01.974 UTC [7444] LOG:  @\n",
    "2026-11-23 23:22:01.000 Z [1] LOG:  checkpoint starting: wal\n",
    " FATAL:  password authentication failed for user \"LOG:  \"\n",
    "2026-11-23 23:22:02.825 UTC [7431] LOG:  checkpoint starting: time\n",
    "2026-11-23 23:22:03.102 UTC [7450] LOG:  @\n",
    "2026-11-23 23:22:01.000 Z [1] LOG:  checkpoint starting: wal\n",
    "\n",
    " FATAL:  password authentication failed for user \"LOG:  \"\n",
    "2026-11-23 23:22:03.825 UTC [7431] LOG:  checkpoint starting: time\n",
];

/// Offsets of the events and of the refused look-alikes among `records`.
fn verdicts(records: &[Record]) -> (Vec<u64>, Vec<u64>) {
    let (mut events, mut refused) = (Vec::new(), Vec::new());
    for r in records {
        match classify::classify(Catalog::global(), r) {
            Outcome::Event(_) => events.push(r.offset),
            Outcome::Rejected { .. } => refused.push(r.offset),
            _ => {}
        }
    }
    (events, refused)
}

/// Whatever the buffer size, so wherever a buffer starts relative to the
/// injection, the splice check sees the same window (the bytes before a
/// buffer come from the one before it): the same verdicts.
#[test]
fn the_splice_check_sees_across_buffers_of_any_size() {
    let time = TimeContext::new(Some("UTC")).unwrap();
    // The captured part.
    let log = ATTACK[..10].concat();
    let at = |i: usize| ATTACK[..i].concat().len() as u64;
    let expected = (vec![0, at(9)], vec![at(2), at(7)]);
    let debian = prefix("%m [%p] %q%u@%d ");
    let mut scanner = StderrScanner::new(debian.clone(), &time, crate::frame::test_lexicon());
    let (records, _) = frame_all(&mut scanner, log.as_bytes(), 1 << 20, Tail::Take, Pos::START);
    assert_eq!(verdicts(&records), expected);
    // Buffers of at least a prefix's span (walwatch's are 2 MiB); in a
    // smaller one the entries around an injection overflow it and are cut.
    for chunk in scanner.reach()..=log.len() {
        let mut scanner = StderrScanner::new(debian.clone(), &time, crate::frame::test_lexicon());
        let (records, end) = frame_all(&mut scanner, log.as_bytes(), chunk, Tail::Take, Pos::START);
        assert_eq!(verdicts(&records), expected, "chunk {chunk}");
        assert_eq!(end.offset, log.len() as u64, "chunk {chunk}");
    }
}

/// A reader resumed at a line of the log (a daemon restarted) is given the
/// bytes before it, from inside some earlier line: the forged lines are
/// still refused, the real ones still read.
#[test]
fn a_resumed_read_sees_the_bytes_before_it() {
    let time = TimeContext::new(Some("UTC")).unwrap();
    let log = ATTACK.concat();
    let at = |i: usize| ATTACK[..i].concat().len();
    let (forged, real) = ([at(2), at(7), at(11)], [0, at(9), at(14)]);
    let debian = prefix("%m [%p] %q%u@%d ");
    let wants = StderrScanner::new(debian.clone(), &time, crate::frame::test_lexicon()).wants_look_behind();
    for line in 1..ATTACK.len() {
        let start = at(line);
        let behind = &log.as_bytes()[start.saturating_sub(wants)..start];
        for chunk in [1 << 20, 300] {
            let mut resumed = StderrScanner::new(debian.clone(), &time, crate::frame::test_lexicon());
            resumed.look_behind(behind);
            let pos = Pos { offset: start as u64, line: line as u64 + 1 };
            let (records, _) = frame_all(&mut resumed, &log.as_bytes()[start..], chunk, Tail::Take, pos);
            let (events, refused) = verdicts(&records);
            let want = |all: &[usize]| all.iter().filter(|&&o| o >= start).map(|&o| o as u64).collect::<Vec<_>>();
            assert_eq!((events, refused), (want(&real), want(&forged)), "resumed at line {}, chunk {chunk}", line + 1);
        }
    }
}

/// The whole lines among the last `reach` bytes of `stream`, which starts
/// at a line start when `aligned`.
fn window(stream: &[u8], reach: usize, aligned: bool) -> Vec<u8> {
    let from = stream.len().saturating_sub(reach);
    let aligned = if from == 0 { aligned } else { stream[from - 1] == b'\n' };
    let mut text = stream[from..].to_vec();
    if !aligned {
        let cut = text.iter().position(|&b| b == b'\n').map_or(text.len(), |i| i + 1);
        text.drain(..cut);
    }
    text
}

/// The splice check's window before an entry near a buffer's start: the
/// bytes remembered from earlier buffers (whole, or line by line as a
/// followed file's small appends come) and the buffer's own, cut to a
/// span and to whole lines; and what is remembered stays a span.
#[test]
fn the_window_before_an_entry_is_a_span_of_whole_lines() {
    let debian = prefix("%m [%p] %q%u@%d ");
    check_windows(&debian, ATTACK);
    // Lines a span long, and two lines a span long together, before an
    // entry: the window then starts exactly at a line start.
    let time = TimeContext::new(Some("UTC")).unwrap();
    let span = StderrScanner::new(debian.clone(), &time, crate::frame::test_lexicon()).reach();
    let statement = |len: usize| {
        let head = "2026-11-22 08:04:24.000 UTC [24978] shop@shop LOG:  statement: SELECT abalance FROM pgbench_accounts WHERE aid = 4711; -- ";
        format!("{head}{}\n", "x".repeat(len - head.len() - 1))
    };
    let (whole, part) = (statement(span), statement(span - STARTING.len()));
    check_windows(&debian, &[ATTACK[0], &whole, STARTING, &part, TOO_FREQUENT, HINT, STARTING]);
}

/// [`the_window_before_an_entry_is_a_span_of_whole_lines`] on `lines`, with
/// buffers and entries starting at each of them.
fn check_windows(debian: &Prefix, lines: &[&str]) {
    let time = TimeContext::new(Some("UTC")).unwrap();
    let log = lines.concat().into_bytes();
    let starts: Vec<usize> = (0..=lines.len()).map(|i| lines[..i].concat().len()).collect();
    for (i, &p) in starts.iter().enumerate() {
        for by_line in [false, true] {
            let mut scanner = StderrScanner::new(debian.clone(), &time, crate::frame::test_lexicon());
            let reach = scanner.reach();
            if by_line {
                for w in starts[..=i].windows(2) {
                    scanner.remember(&log[w[0]..w[1]]);
                }
            } else {
                scanner.remember(&log[..p]);
            }
            let kept = p.min(reach);
            assert_eq!(scanner.behind, &log[p - kept..p], "buffer at {p}, by line {by_line}");
            let aligned = p == kept || log[p - kept - 1] == b'\n';
            assert_eq!(scanner.behind_aligned, aligned, "buffer at {p}, by line {by_line}");
            for &e in &starts[i..] {
                let got = scanner.lines_before(&log[p..e], reach);
                assert_eq!(
                    lossy(&got),
                    lossy(&window(&log[..e], reach, true)),
                    "buffer at {p}, entry at {e}, by line {by_line}"
                );
            }
        }
        // Resumed there: the bytes before it come from inside a line.
        let mut scanner = StderrScanner::new(debian.clone(), &time, crate::frame::test_lexicon());
        let reach = scanner.reach();
        let behind = &log[p.saturating_sub(reach)..p];
        scanner.look_behind(behind);
        for &e in &starts[i..] {
            let got = scanner.lines_before(&log[p..e], reach);
            let stream = [behind, &log[p..e]].concat();
            assert_eq!(lossy(&got), lossy(&window(&stream, reach, behind.is_empty())), "resumed at {p}, entry at {e}");
        }
    }
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Failed logins whose user name is a bare checkpoint line between line
/// breaks (PostgreSQL prints it as is in `%u`, a line of its own without
/// a prefix): a client's text inside a prefix, counted apart — never an
/// unmatched line, so a few of them cannot make walwatch refuse the log. A
/// bare line of another program is unmatched, and under a prefix without
/// names (nothing to break across lines) so is every such line.
#[test]
fn lines_inside_a_failed_login_s_prefix_are_a_client_s_not_a_misfit() {
    let time = TimeContext::new(Some("UTC")).unwrap();
    let login = |n: u32| {
        format!(
            "2026-11-24 10:09:59.00{n} UTC [999{n}] \nLOG:  checkpoint starting: wal\n@postgres FATAL:  \
             password authentication failed for user \"\n\tLOG:  checkpoint starting: wal\n\t\"\n"
        )
    };
    // The user `LOG:  ` makes the first line a log line of its own; the
    // checkpoint line is the database name.
    let db = "2026-11-24 10:09:59.004 UTC [9994] LOG:  @\nLOG:  checkpoint starting: wal\n FATAL:  \
              password authentication failed for user \"LOG:  \"\n";
    let other = "LOG:  checkpoint starting: time\n";
    let log = [COMPLETE, &login(1), &login(2), COMPLETE, other, &login(3), db].concat();
    for (spec, inside, unmatched) in [("%m [%p] %q%u@%d ", 4, 1), ("%m [%p] ", 0, 5)] {
        let mut scanner = StderrScanner::new(prefix(spec), &time, crate::frame::test_lexicon());
        let (records, _) = frame_all(&mut scanner, log.as_bytes(), 1 << 20, Tail::Take, Pos::START);
        let stats = scanner.stats();
        assert_eq!((records.len(), stats.inside_names, stats.unmatched), (2, inside, unmatched), "{spec}");
        let first_inside = (inside > 0).then_some(3);
        assert_eq!(stats.first_inside_name, first_inside, "{spec}");
        let first_unmatched = stats.first_unmatched.as_ref().map(|(line, _)| *line);
        assert_eq!(first_unmatched, Some(if inside > 0 { 13 } else { 3 }), "{spec}");
    }
}
