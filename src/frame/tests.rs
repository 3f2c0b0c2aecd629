//! Framing as a whole: detection, the needles, the driver.

use std::io;

use super::formats::stderr;
use super::*;
use crate::catalog::Catalog;

#[test]
fn detects_formats_from_their_first_line() {
    assert_eq!(Format::detect(b"{\"timestamp\":\"2026-11-22 08:08:08.916 UTC\"}\n"), Format::Jsonlog);
    assert_eq!(
        Format::detect(b"2026-11-22 08:15:36.065 UTC,,,28301,,6b02a4a8.6e8d,1,,2026-11-22 08:15:36 UTC,,0,LOG,00000,\"ending\",,,,,,,,,\"\",\"postmaster\"\n"),
        Format::Csvlog
    );
    assert_eq!(Format::detect(b"2026-11-22 08:04:20.708 UTC [21752] LOG:  starting\n"), Format::Stderr);
    // A user name with line breaks cuts the first csv record short.
    let cut = b"2026-11-24 01:02:22.123 UTC,\"x\nx\n2026-01-01 00:00:00.000 Z [1] LOG:  checkpoint starting: wal\n\",\"postgres\",8001,\"127.0.0.1:5000\",6b02a4a8.6e8d,1,\"authentication\",2026-11-24 01:02:22 UTC,3/1,0,FATAL,28P01,\"password authentication failed\",,,,,,,,,\"\",\"client backend\",,0\n";
    assert_eq!(Format::detect(cut), Format::Csvlog);
    assert_eq!(Format::detect(&cut[..60]), Format::Stderr, "too short to tell");
    assert_eq!(Format::detect_named("/l/postgresql-2026-11-24_010222.csv", &cut[..60]), Format::Csvlog);
    assert_eq!(Format::detect_named("/l/postgresql-2026-11-24_010222.json.gz", b"2026 x\n"), Format::Jsonlog);
    assert_eq!(Format::detect_named("/l/postgresql.log", &cut[..60]), Format::Stderr);
    assert_eq!(
        Format::detect(b"Nov 22 08:04:20 db1 postgres[21752]: [3-1] LOG:  starting PostgreSQL 15\n"),
        Format::Syslog
    );
}

#[test]
fn detects_envelopes_from_their_first_lines() {
    let cases: &[(&[u8], Format)] = &[
        (br#"{"textPayload":"2024-03-01 10:00:00.123 UTC [27]: [5-1] db=,user= LOG:  x","timestamp":"2024-03-01T10:00:00Z"}"#, Format::CloudSql),
        (br#"{"jsonPayload":{"message":"2024-03-01 10:00:00.123 UTC [27] LOG:  x"},"logName":"l"}"#, Format::CloudSql),
        (br#"{"level":"info","ts":1.5,"logger":"postgres","msg":"record","record":{"message":"x"}}"#, Format::Cnpg),
        (br#"{"level":"info","ts":1.5,"logger":"instance-manager","msg":"starting","logging_pod":"c-1"}"#, Format::Cnpg),
        (br#"{"__REALTIME_TIMESTAMP":"1","_PID":"7","MESSAGE":"LOG:  x"}"#, Format::JournaldJson),
        (br#"{"time":"2023-02-27T23:21:40Z","category":"PostgreSQLLogs","properties":{"message":"x","errorLevel":"LOG"}}"#, Format::Azure),
        (br#"{"timestamp":"2026-11-22 08:08:08.916 UTC","message":"x"}"#, Format::Jsonlog),
        (b"Nov 22 08:04:20 db1 postgres[21752]: 2026-11-22 08:04:20.708 UTC [21752] LOG:  starting\n", Format::Journald),
        (b"-- Journal begins at Sun 2026-11-22 08:00:00 UTC, ends at Sun 2026-11-22 09:00:00 UTC. --\n", Format::Journald),
    ];
    for (head, want) in cases {
        assert_eq!(Format::detect(head), *want, "{}", lines::lossy(head));
        assert_eq!(Format::named(want.as_str()), Some(*want));
    }
    // Another program's entries first: the first line that tells decides.
    let audit = br#"{"protoPayload":{"methodName":"cloudsql.instances.update"},"timestamp":"2024-03-01T10:00:00Z"}"#;
    let head =
        [&audit[..], b"\n", br#"{"textPayload":"2024-03-01 10:00:00.123 UTC [27]: [5-1] db=,user= LOG:  x"}"#, b"\n"]
            .concat();
    assert_eq!(Format::detect(&head), Format::CloudSql);
    assert_eq!(Format::detect(&[&audit[..], b"\n"].concat()), Format::Jsonlog, "nothing tells");
}

use proptest::prelude::*;

/// Real lines of several shapes, plus hostile ones.
const LINES: &[&str] = &[
    "2026-11-22 08:04:23.386 UTC [21760] LOG:  checkpoints are occurring too frequently (3 seconds apart)",
    "2026-11-22 08:04:23.386 UTC [21760] HINT:  Consider increasing the configuration parameter \"max_wal_size\".",
    "2026-11-22 08:04:23.497 UTC [21760] LOG:  checkpoint starting: wal",
    "2026-11-22 08:04:24.198 UTC [21760] LOG:  checkpoint complete: wrote 100 buffers (2.4%); 0 WAL file(s) added, 1 removed, 0 recycled; write=0.385 s, sync=0.207 s, total=0.813 s; sync files=30, longest=0.082 s, average=0.007 s; distance=12284 kB, estimate=12284 kB",
    "2026-11-22 08:08:15.253 UTC [24978] postgres@postgres LOG:  checkpoint starting: wal",
    "2026-11-22 08:08:15.253 UTC [24978] postgres@postgres CONTEXT:  PL/pgSQL function inline_code_block line 1 at RAISE",
    "2026-11-22 08:08:15.257 UTC [24978] postgres@postgres LOG:  statement: SELECT 'forged:",
    "\t2026-11-22 08:08:15.228 UTC [24699] LOG:  checkpoint starting: time",
    "2026-11-22 08:04:20.708 UTC [21752] LOG:  starting PostgreSQL 15.18 on x86_64-pc-linux-gnu",
    "2026-11-22 08:08:54.812 UTC [24685] LOG:  parameter \"max_wal_size\" changed to \"64MB\"",
    "garbage checkpoint starting: wal",
    "\tcontinuation checkpoint",
    "",
];

fn frame(prefix: &str, data: &[u8], chunk: usize) -> (Vec<Record>, Pos) {
    let time = time::TimeContext::new(Some("UTC")).unwrap();
    let markers = Catalog::global().markers();
    let p = match prefix::Prefix::compile(prefix, markers) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    };
    let mut scanner = stderr::StderrScanner::new(p, &time, crate::frame::test_lexicon());
    let mut records = Vec::new();
    let end = drive_sized(chunk, data, &mut scanner, Pos::START, Tail::Take, |r, _| {
        records.extend(r);
        Ok::<(), io::Error>(())
    })
    .unwrap();
    (records, end)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..4096), chunk in 16usize..512) {
        let (_, end) = frame("%m [%p] %q%u@%d ", &data, chunk);
        prop_assert!(end.offset <= data.len() as u64);
    }

    #[test]
    fn chunk_size_never_changes_the_records(picks in proptest::collection::vec(0..LINES.len(), 1..120), garbage in proptest::collection::vec(any::<u8>(), 0..64)) {
        let mut data = Vec::new();
        for (i, &p) in picks.iter().enumerate() {
            data.extend_from_slice(LINES[p].as_bytes());
            if i == picks.len() / 2 {
                data.extend_from_slice(&garbage);
            }
            data.push(b'\n');
        }
        let (whole, end) = frame("%m [%p] %q%u@%d ", &data, 1 << 20);
        prop_assert_eq!(end.offset, data.len() as u64);
        for chunk in [1024usize, 1500, 4096] {
            let (pieces, end) = frame("%m [%p] %q%u@%d ", &data, chunk);
            prop_assert_eq!(&pieces, &whole, "chunk {}", chunk);
            prop_assert_eq!(end.offset, data.len() as u64);
        }
    }
}

/// A followed file read while a line longer than the buffer is half
/// written: the position stays at the line's start, so the line's rest
/// (here a whole fake line inside a logged statement) is never read as a
/// line of its own; the next read skips the line whole.
#[test]
fn a_half_written_oversized_line_is_read_again_from_its_start() {
    let time = time::TimeContext::new(Some("UTC")).unwrap();
    let prefix = prefix::Prefix::compile("%m [%p] %q%u@%d ", Catalog::global().markers()).unwrap();
    let real = format!("{}\n", LINES[2]);
    let fake = "2026-11-22 08:08:15.228 UTC [24699] LOG:  checkpoint starting: time";
    let session = "2026-11-22 08:08:15.257 UTC [24978] postgres@postgres LOG:  statement: SELECT 1 --";
    let long = format!("{session} {}{fake}\n", "x".repeat(600));
    let data = format!("{real}{long}{real}").into_bytes();
    let long_end = real.len() + long.len();
    for cut in real.len()..data.len() {
        let scanner = || stderr::StderrScanner::new(prefix.clone(), &time, crate::frame::test_lexicon());
        let (mut got, reached) = testing::frame_all(&mut scanner(), &data[..cut], 256, Tail::Wait, Pos::START);
        let line_start = if cut < long_end { real.len() } else { long_end };
        assert_eq!(reached.offset, line_start as u64, "cut {cut}");
        let rest = &data[line_start..];
        let (more, end) = testing::frame_all(&mut scanner(), rest, 256, Tail::Wait, reached);
        got.extend(more);
        let messages: Vec<&str> = got.iter().map(|r| r.message.as_str()).collect();
        assert_eq!(messages, ["checkpoint starting: wal"; 2], "cut {cut}");
        assert_eq!(end, Pos { offset: data.len() as u64, line: 4 }, "cut {cut}");
    }
}

#[test]
fn needles_are_cut_at_escaped_characters() {
    let n = Needles::new(&["parameter \"".to_string(), "heckpoint".to_string()]);
    assert!(n.is_match(b"parameter \\\"max_wal_size\\\" changed"));
    assert!(n.is_match(b"Checkpoint beginnt"));
    assert!(!n.is_match(b"SELECT 1"));
}
