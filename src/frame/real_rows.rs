//! What each format's framing takes from real rows of PostgreSQL 13 to 18
//! (the fixtures under tests/fixtures): the time, pid, process type,
//! session flag, severity, message and secondary fields each row carries,
//! by column, key or prefix field. The expected values are read off the
//! rows by hand, so a column index shifted by one (csvlog grew from 24
//! columns in 13 to 26 in 14 and later) or a key read under another name
//! changes a value here.

use std::path::Path;

use super::formats::csvlog::CsvScanner;
use super::formats::jsonlog::JsonScanner;
use super::formats::stderr::StderrScanner;
use super::prefix::Prefix;
use super::testing::frame_all;
use super::time::TimeContext;
use super::{test_lexicon, LogSeverity, Pos, Record, Scan, Tail};
use crate::catalog::Catalog;

/// How a fixture's rows are framed.
#[derive(Clone, Copy)]
enum Format {
    Csv,
    Json,
    Stderr(&'static str),
}

/// The record framed from line `n` (1-based) of a fixture log alone.
fn record(format: Format, zone: &str, path: &str, n: usize) -> Record {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(path);
    let text = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()));
    let line = format!("{}\n", text.lines().nth(n - 1).unwrap_or_else(|| panic!("{path} has no line {n}")));
    let time = TimeContext::new(Some(zone)).unwrap();
    let mut scanner: Box<dyn Scan> = match format {
        Format::Csv => Box::new(CsvScanner::new(&time, test_lexicon())),
        Format::Json => Box::new(JsonScanner::new(&time, test_lexicon())),
        Format::Stderr(spec) => {
            let prefix = Prefix::compile(spec, Catalog::global().markers()).unwrap();
            Box::new(StderrScanner::new(prefix, &time, test_lexicon()))
        }
    };
    let (mut records, _) = frame_all(scanner.as_mut(), line.as_bytes(), 1 << 20, Tail::Take, Pos::START);
    assert_eq!(records.len(), 1, "{path}:{n}: {records:?}");
    records.remove(0)
}

/// What a row must yield.
#[derive(Debug, PartialEq)]
struct Fields {
    time: String,
    pid: Option<u32>,
    backend_type: Option<String>,
    session: bool,
    severity: LogSeverity,
    message: String,
    hint: Option<String>,
    context: Option<String>,
    statement: Option<String>,
}

fn fields(r: Record) -> Fields {
    Fields {
        time: r.time.map(|t| t.to_string()).unwrap_or_default(),
        pid: r.origin.pid,
        backend_type: r.origin.backend_type,
        session: r.origin.session,
        severity: r.severity,
        message: r.message,
        hint: r.hint,
        context: r.context,
        statement: r.statement,
    }
}

/// A background process's LOG row without secondary fields.
fn background(time: &str, pid: u32, backend_type: Option<&str>, message: &str) -> Fields {
    Fields {
        time: time.into(),
        pid: Some(pid),
        backend_type: backend_type.map(str::to_string),
        session: false,
        severity: LogSeverity::Log,
        message: message.into(),
        hint: None,
        context: None,
        statement: None,
    }
}

const READY: &str = "database system is ready to accept connections";
const START: &str = "checkpoint starting: wal";
const HINT: &str = "Consider increasing the configuration parameter \"max_wal_size\".";
const RAISE_CONTEXT: &str = "PL/pgSQL function inline_code_block line 1 at RAISE";
/// The statement of the forged fixtures' first `DO` block.
const RAISE_STATEMENT: &str = "DO $$ BEGIN RAISE LOG 'checkpoint starting: wal'; RAISE LOG 'checkpoint complete: wrote 1 buffers (0.0%%); 0 WAL file(s) added, 0 removed, 0 recycled; write=0.001 s, sync=0.001 s, total=0.002 s; sync files=1, longest=0.001 s, average=0.001 s; distance=1 kB, estimate=1 kB'; END $$;";

fn too_frequent(time: &str, pid: u32, backend_type: Option<&str>, message: &str) -> Fields {
    Fields { hint: Some(HINT.into()), ..background(time, pid, backend_type, message) }
}

/// A client's `RAISE LOG` of the forged fixtures: every session field set,
/// its CONTEXT and its statement.
fn raised(time: &str, pid: u32, backend_type: Option<&str>) -> Fields {
    Fields {
        session: true,
        context: Some(RAISE_CONTEXT.into()),
        statement: Some(RAISE_STATEMENT.into()),
        ..background(time, pid, backend_type, START)
    }
}

/// A client's failed cast of the forged fixtures: ERROR, its statement.
fn failed_cast(time: &str, pid: u32, backend_type: Option<&str>) -> Fields {
    Fields {
        session: true,
        severity: LogSeverity::Error,
        statement: Some("SELECT 'checkpoint starting: wal'::int;".into()),
        ..background(time, pid, backend_type, "invalid input syntax for type integer: \"checkpoint starting: wal\"")
    }
}

#[test]
fn csvlog_rows_of_13_15_and_17_yield_their_columns() {
    let read = |path: &str, n: usize| record(Format::Csv, "UTC", path, n);
    // 13: 24 columns, backend_type last.
    let v13 = "13-csvlog-std/log/postgresql-2026-11-22_081536.csv";
    let pm = Some("postmaster");
    let cp = Some("checkpointer");
    assert_eq!(fields(read(v13, 6)), background("2026-11-22T08:15:36.071Z", 28301, pm, READY));
    let message = "checkpoints are occurring too frequently (2 seconds apart)";
    assert_eq!(fields(read(v13, 7)), too_frequent("2026-11-22T08:15:38.371Z", 28304, cp, message));
    assert_eq!(fields(read(v13, 8)), background("2026-11-22T08:15:38.417Z", 28304, cp, START));
    // 15: 26 columns (leader_pid, query_id after backend_type).
    let v15 = "15-csvlog-forged/log/postgresql-2026-11-22_081152.csv";
    assert_eq!(fields(read(v15, 6)), background("2026-11-22T08:11:52.311Z", 26604, pm, READY));
    assert_eq!(fields(read(v15, 8)), background("2026-11-22T08:11:54.58Z", 26606, cp, START));
    let client = Some("client backend");
    assert_eq!(fields(read(v15, 24)), raised("2026-11-22T08:11:56.291Z", 26832, client));
    assert_eq!(fields(read(v15, 36)), failed_cast("2026-11-22T08:11:56.292Z", 26832, client));
    // 17.
    let v17 = "17-csvlog-std/log/postgresql-2026-11-22_082519.csv";
    assert_eq!(fields(read(v17, 6)), background("2026-11-22T08:25:19.563Z", 1042, pm, READY));
    let message = "checkpoints are occurring too frequently (3 seconds apart)";
    assert_eq!(fields(read(v17, 7)), too_frequent("2026-11-22T08:25:22.234Z", 1048, cp, message));
    assert_eq!(fields(read(v17, 8)), background("2026-11-22T08:25:22.273Z", 1048, cp, START));
}

#[test]
fn jsonlog_rows_of_15_16_and_18_yield_their_keys() {
    let read = |path: &str, n: usize| record(Format::Json, "UTC", path, n);
    let pm = Some("postmaster");
    let cp = Some("checkpointer");
    let v15 = "15-jsonlog-std/log/postgresql-2026-11-22_080808.json";
    assert_eq!(fields(read(v15, 6)), background("2026-11-22T08:08:08.953Z", 24684, pm, READY));
    let message = "checkpoints are occurring too frequently (3 seconds apart)";
    assert_eq!(fields(read(v15, 7)), too_frequent("2026-11-22T08:08:11.535Z", 24696, cp, message));
    assert_eq!(fields(read(v15, 8)), background("2026-11-22T08:08:11.596Z", 24696, cp, START));
    let v16 = "16-jsonlog-std/log/postgresql-2026-11-22_082442.json";
    assert_eq!(fields(read(v16, 6)), background("2026-11-22T08:24:42.319Z", 349, pm, READY));
    assert_eq!(fields(read(v16, 8)), background("2026-11-22T08:24:44.676Z", 351, cp, START));
    let v18 = "18-jsonlog-forged/log/postgresql-2026-11-22_083249.json";
    assert_eq!(fields(read(v18, 6)), background("2026-11-22T08:32:49.344Z", 3952, pm, READY));
    let message = "checkpoints are occurring too frequently (2 seconds apart)";
    assert_eq!(fields(read(v18, 7)), too_frequent("2026-11-22T08:32:51.714Z", 3958, cp, message));
    assert_eq!(fields(read(v18, 8)), background("2026-11-22T08:32:51.741Z", 3958, cp, START));
    let client = Some("client backend");
    assert_eq!(fields(read(v18, 25)), raised("2026-11-22T08:32:56.158Z", 4181, client));
    assert_eq!(fields(read(v18, 33)), failed_cast("2026-11-22T08:32:56.159Z", 4181, client));
}

/// stderr carries what its prefix prints: Debian's `%m [%p] %q%u@%d `
/// (13, 14, 16 and 17, in the server's log_timezone), `%m [%p] %b ` (15),
/// pgBadger's (15 in America/New_York, 18): a time, a pid, a backend type
/// only with `%b`, and a session's fields or `%q` part.
#[test]
fn stderr_rows_of_13_to_18_yield_their_prefix_fields() {
    let debian = Format::Stderr("%m [%p] %q%u@%d ");
    let cases = [
        (
            "13-stderr-default-std/log/postgresql-2026-11-22_081252.log",
            "UTC",
            "2026-11-22T08:12:52.211Z",
            27586,
            "2026-11-22T08:12:54.873Z",
            27590,
        ),
        (
            "14-stderr-default-std/log/postgresql-2026-11-22_081732.log",
            "UTC",
            "2026-11-22T08:17:32.682Z",
            29389,
            "2026-11-22T08:17:35.178Z",
            29393,
        ),
        (
            "16-stderr-default-std/log/postgresql-2026-11-22_091918.log",
            "Europe/Berlin",
            "2026-11-22T08:19:18.531Z",
            29837,
            "2026-11-22T08:19:20.867Z",
            29839,
        ),
        (
            "17-stderr-default-std/log/postgresql-2026-11-22_135300.log",
            "Asia/Kolkata",
            "2026-11-22T08:23:00.455Z",
            32382,
            "2026-11-22T08:23:02.784Z",
            32385,
        ),
    ];
    for (path, zone, ready_at, postmaster, start_at, checkpointer) in cases {
        assert_eq!(fields(record(debian, zone, path, 5)), background(ready_at, postmaster, None, READY), "{path}");
        assert_eq!(fields(record(debian, zone, path, 8)), background(start_at, checkpointer, None, START), "{path}");
    }
    let forged = "15-stderr-default-forged/log/postgresql-2026-11-22_080808.log";
    let mut raise = raised("2026-11-22T08:08:15.253Z", 24978, None);
    // A stderr line's CONTEXT and STATEMENT are lines of their own.
    (raise.context, raise.statement) = (None, None);
    assert_eq!(fields(record(debian, "UTC", forged, 26)), raise);

    let backend = Format::Stderr("%m [%p] %b ");
    let path = "15-stderr-backend-forged/log/postgresql-2026-11-22_080808.log";
    let read = |n: usize| fields(record(backend, "UTC", path, n));
    assert_eq!(read(5), background("2026-11-22T08:08:08.938Z", 24682, Some("postmaster"), READY));
    assert_eq!(read(8), background("2026-11-22T08:08:11.491Z", 24690, Some("checkpointer"), START));
    // %b alone shows no session: the client backend type tells it.
    assert_eq!(read(26), background("2026-11-22T08:08:14.98Z", 24920, Some("client backend"), START));

    let pgbadger = Format::Stderr("%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ");
    let v15 = "15-stderr-pgbadger-std/log/postgresql-2026-11-22_030420.log";
    let read = |n: usize| fields(record(pgbadger, "America/New_York", v15, n));
    assert_eq!(read(5), background("2026-11-22T08:04:20Z", 21710, None, READY));
    assert_eq!(read(8), background("2026-11-22T08:04:23Z", 21745, None, START));
    let v18 = "18-stderr-pgbadger-std/log/postgresql-2026-11-22_082900.log";
    let read = |n: usize| fields(record(pgbadger, "UTC", v18, n));
    assert_eq!(read(5), background("2026-11-22T08:29:00Z", 2090, None, READY));
    assert_eq!(read(8), background("2026-11-22T08:29:03Z", 2095, None, START));
}
