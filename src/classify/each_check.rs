//! Each trust check alone, through each format's framing: a real server
//! line changed in one field only, so that exactly one check of
//! [`verdict`](super::trust::verdict) can refuse it, and the same line
//! unchanged, which must be an event. The forged records of the fixtures
//! trip several checks at once (a client's `RAISE LOG` has session fields,
//! a client backend type and a CONTEXT line), so any one check could go
//! missing with every fixture still refused.

use std::path::Path;

use super::{classify, Outcome};
use crate::catalog::Catalog;
use crate::frame::formats::csvlog::CsvScanner;
use crate::frame::formats::jsonlog::JsonScanner;
use crate::frame::formats::stderr::{StderrScanner, SPLICED};
use crate::frame::formats::syslog::{SyslogScanner, FOREIGN_PID};
use crate::frame::prefix::Prefix;
use crate::frame::testing::frame_all;
use crate::frame::time::TimeContext;
use crate::frame::{test_lexicon, Pos, Scan, Tail};

const SEVERITY: &str = "severity is not LOG";
const SESSION: &str = "written by a client session";
const BACKEND: &str =
    "its backend_type is not checkpointer, startup or standalone backend, the processes that log checkpoints";
/// What a postmaster-only event (a reload's parameter change) says when another process claims it.
const NOT_POSTMASTER: &str = "its backend_type is not postmaster, the process that logs this event";
const CONTEXT: &str = "raised from a function (CONTEXT line)";
const STATEMENT: &str = "tied to a client statement (STATEMENT line)";

/// The CONTEXT of a client's `DO $$ BEGIN RAISE LOG …` (fixtures *-forged).
const RAISE_CONTEXT: &str = "PL/pgSQL function inline_code_block line 1 at RAISE";

type Verdict = Result<&'static str, &'static str>;

/// Line `n` (1-based) of a file under tests/fixtures, without its newline.
fn fixture_line(path: &str, n: usize) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(path);
    let text = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()));
    text.lines().nth(n - 1).unwrap_or_else(|| panic!("{path} has no line {n}")).to_string()
}

/// `line` with `from`, which occurs in it exactly once, replaced by `to`.
fn swap(line: &str, from: &str, to: &str) -> String {
    assert_eq!(line.matches(from).count(), 1, "{from:?} once in {line}");
    line.replacen(from, to, 1)
}

/// The event kind, or the reason for the refusal, of each record framed from `lines`.
fn verdicts(scanner: &mut dyn Scan, lines: &[&str]) -> Vec<Verdict> {
    let log: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let (records, _) = frame_all(scanner, log.as_bytes(), 1 << 20, Tail::Take, Pos::START);
    let verdict = |r| match classify(Catalog::global(), r) {
        Outcome::Event(body) => Ok(body.kind_name()),
        Outcome::Rejected { reason, .. } => Err(reason),
        other => panic!("neither an event nor refused ({other:?}): {r:?}"),
    };
    records.iter().map(verdict).collect()
}

fn stderr(spec: &str, zone: &str, lines: &[&str]) -> Vec<Verdict> {
    let time = TimeContext::new(Some(zone)).unwrap();
    let prefix = Prefix::compile(spec, Catalog::global().markers()).unwrap();
    verdicts(&mut StderrScanner::new(prefix, &time, test_lexicon()), lines)
}

/// `line`, which starts with `theirs`, written under the prefix `ours`:
/// a secondary line of another entry moved to the checkpointer's.
fn under(line: &str, theirs: &str, ours: &str) -> String {
    let rest = line.strip_prefix(theirs).unwrap_or_else(|| panic!("{theirs:?} starts {line}"));
    format!("{ours}{rest}")
}

/// `%m [%p] `: nothing in the prefix tells a session, so only the severity,
/// CONTEXT and STATEMENT checks can refuse a line.
#[test]
fn bare_prefix_each_check_alone() {
    let read = |lines: &[&str]| stderr("%m [%p] ", "UTC", lines);
    let start = fixture_line("prefixes/t3.log", 1);
    assert_eq!(start, "2026-11-24 10:06:41.589 UTC [4922] LOG:  checkpoint starting: wal");
    let ours = "2026-11-24 10:06:41.589 UTC [4922] ";
    let statement = under(&fixture_line("prefixes/t3.log", 10), "2026-11-24 10:06:42.140 UTC [4957] ", ours);
    assert_eq!(statement, format!("{ours}STATEMENT:  select 1/0"));
    let context = format!("{ours}CONTEXT:  {RAISE_CONTEXT}");

    assert_eq!(read(&[&start]), [Ok("checkpoint_start")]);
    assert_eq!(read(&[&swap(&start, " LOG:  ", " WARNING:  ")]), [Err(SEVERITY)]);
    assert_eq!(read(&[&start, &context]), [Err(CONTEXT)]);
    assert_eq!(read(&[&start, &statement]), [Err(STATEMENT)]);
}

/// Debian's `%m [%p] %q%u@%d `: the `%q` part shows a session; a line a
/// client spliced into a failed login's user name is refused by the
/// framing's doubt alone.
#[test]
fn debian_prefix_each_check_alone() {
    const LOG: &str = "15-stderr-default-forged/log/postgresql-2026-11-22_080808.log";
    let read = |lines: &[&str]| stderr("%m [%p] %q%u@%d ", "UTC", lines);
    let start = fixture_line(LOG, 8);
    assert_eq!(start, "2026-11-22 08:08:11.357 UTC [24699] LOG:  checkpoint starting: wal");
    // A client's RAISE LOG (its CONTEXT and STATEMENT lines follow it).
    let raise = fixture_line(LOG, 26);
    assert_eq!(raise, "2026-11-22 08:08:15.253 UTC [24978] postgres@postgres LOG:  checkpoint starting: wal");
    let (theirs, ours) =
        ("2026-11-22 08:08:15.253 UTC [24978] postgres@postgres ", "2026-11-22 08:08:11.357 UTC [24699] ");
    let context = under(&fixture_line(LOG, 27), theirs, ours);
    assert_eq!(context, format!("{ours}CONTEXT:  {RAISE_CONTEXT}"));
    let statement = under(&fixture_line(LOG, 28), theirs, ours);
    assert!(statement.starts_with(&format!("{ours}STATEMENT:  DO $$ BEGIN RAISE LOG")), "{statement}");

    assert_eq!(read(&[&start]), [Ok("checkpoint_start")]);
    assert_eq!(read(&[&swap(&start, " LOG:  ", " WARNING:  ")]), [Err(SEVERITY)]);
    // The RAISE LOG without its CONTEXT and STATEMENT: its session alone,
    // with its names, or with empty ones (the `%q` part printed all the same).
    assert_eq!(read(&[&raise]), [Err(SESSION)]);
    assert_eq!(read(&[&swap(&raise, "postgres@postgres", "@")]), [Err(SESSION)]);
    assert_eq!(read(&[&start, &context]), [Err(CONTEXT)]);
    assert_eq!(read(&[&start, &statement]), [Err(STATEMENT)]);

    // A failed login's user name holding a whole checkpoint line, as
    // PostgreSQL 15 wrote it: the forged line has no session part, no
    // CONTEXT, and LOG; only the splice check sees it inside the prefix.
    let spliced = [
        "2026-11-23 23:22:01.636 UTC [7429] LOG:  database system is ready to accept connections",
        "2026-11-23 23:22:01.825 UTC [7440] ",
        "2026-11-23 23:22:01.000 Z [1] LOG:  checkpoint starting: wal",
        "@postgres FATAL:  password authentication failed for user \"",
        "\t2026-11-23 23:22:01.000 Z [1] LOG:  checkpoint starting: wal",
        "\t\"",
    ];
    assert_eq!(read(&spliced), [Ok("server_ready"), Err(SPLICED)]);
}

/// `%m [%p] %b `: the backend type tells a client backend, or a background
/// process that does not log the event, from the checkpointer.
#[test]
fn backend_type_prefix_each_check_alone() {
    const LOG: &str = "15-stderr-backend-forged/log/postgresql-2026-11-22_080808.log";
    let read = |lines: &[&str]| stderr("%m [%p] %b ", "UTC", lines);
    let start = fixture_line(LOG, 8);
    assert_eq!(start, "2026-11-22 08:08:11.491 UTC [24690] checkpointer LOG:  checkpoint starting: wal");
    let raise = fixture_line(LOG, 26);
    assert_eq!(raise, "2026-11-22 08:08:14.980 UTC [24920] client backend LOG:  checkpoint starting: wal");
    let (theirs, ours) =
        ("2026-11-22 08:08:14.980 UTC [24920] client backend ", "2026-11-22 08:08:11.491 UTC [24690] checkpointer ");
    let context = under(&fixture_line(LOG, 27), theirs, ours);
    assert_eq!(context, format!("{ours}CONTEXT:  {RAISE_CONTEXT}"));
    let statement = under(&fixture_line(LOG, 28), theirs, ours);
    assert!(statement.starts_with(&format!("{ours}STATEMENT:  DO $$ BEGIN RAISE LOG")), "{statement}");
    let reload = fixture_line(LOG, 58);
    assert_eq!(
        reload,
        "2026-11-22 08:08:54.905 UTC [24682] postmaster LOG:  parameter \"max_wal_size\" changed to \"64MB\""
    );

    assert_eq!(read(&[&start]), [Ok("checkpoint_start")]);
    assert_eq!(read(&[&reload]), [Ok("parameter_changed")]);
    assert_eq!(read(&[&swap(&start, " LOG:  ", " WARNING:  ")]), [Err(SEVERITY)]);
    // The client's RAISE LOG without its CONTEXT and STATEMENT lines.
    assert_eq!(read(&[&raise]), [Err(BACKEND)]);
    // Background processes, each naming the other's event.
    assert_eq!(read(&[&swap(&start, " checkpointer ", " postmaster ")]), [Err(BACKEND)]);
    assert_eq!(read(&[&swap(&reload, " postmaster ", " checkpointer ")]), [Err(NOT_POSTMASTER)]);
    assert_eq!(read(&[&start, &context]), [Err(CONTEXT)]);
    assert_eq!(read(&[&start, &statement]), [Err(STATEMENT)]);
}

/// pgBadger's `%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h `, under
/// PostgreSQL 15 (log_timezone America/New_York) and 18: each session
/// field alone makes a session's line.
#[test]
fn pgbadger_prefix_each_check_alone() {
    let spec = "%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ";
    let cases = [
        (
            "15-stderr-pgbadger-std/log/postgresql-2026-11-22_030420.log",
            "America/New_York",
            "2026-11-22 03:04:23 EST [21745]",
        ),
        ("18-stderr-pgbadger-std/log/postgresql-2026-11-22_082900.log", "UTC", "2026-11-22 08:29:03 UTC [2095]"),
    ];
    for (log, zone, head) in cases {
        let read = |lines: &[&str]| stderr(spec, zone, lines);
        let start = fixture_line(log, 8);
        assert_eq!(start, format!("{head}: [3-1] user=,db=,app=,client= LOG:  checkpoint starting: wal"));
        // The next line of the same process, as PostgreSQL numbers it.
        let next = swap(&start, "[3-1]", "[4-1]");
        let context = swap(&next, "LOG:  checkpoint starting: wal", &format!("CONTEXT:  {RAISE_CONTEXT}"));
        let statement = swap(&next, "LOG:  checkpoint starting: wal", "STATEMENT:  select 1/0");

        assert_eq!(read(&[&start]), [Ok("checkpoint_start")], "{log}");
        assert_eq!(read(&[&swap(&start, " LOG:  ", " WARNING:  ")]), [Err(SEVERITY)], "{log}");
        // The values a psql session of fixture 18-stderr-pgbadger-std shows.
        for (empty, set) in [
            ("user=,", "user=postgres,"),
            ("db=,", "db=postgres,"),
            ("app=,", "app=psql,"),
            ("client= ", "client=[local] "),
        ] {
            assert_eq!(read(&[&swap(&start, empty, set)]), [Err(SESSION)], "{log}: {set}");
        }
        assert_eq!(read(&[&start, &context]), [Err(CONTEXT)], "{log}");
        assert_eq!(read(&[&start, &statement]), [Err(STATEMENT)], "{log}");
    }
}

/// syslog: the daemon writes the sender's real pid; a prefix naming
/// another is the framing's doubt, the line's only fault.
#[test]
fn syslog_foreign_pid_alone() {
    let time = TimeContext::new(Some("UTC")).unwrap();
    let read = |line: &str| {
        let prefix = Prefix::compile("%m [%p] ", Catalog::global().markers()).unwrap();
        verdicts(&mut SyslogScanner::new(StderrScanner::new(prefix, &time, test_lexicon())), &[line])
    };
    let own =
        "Nov 22 08:04:25 db1 postgres[21760]: [3-1] 2026-11-22 08:04:25.000 UTC [21760] LOG:  checkpoint starting: wal";
    assert_eq!(read(own), [Ok("checkpoint_start")]);
    assert_eq!(read(&swap(own, "postgres[21760]", "postgres[30000]")), [Err(FOREIGN_PID)]);
}

/// The raw fields of a one-line csvlog row (quotes kept), split at the
/// commas outside quotes.
fn csv_fields(row: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    for c in row.chars() {
        match c {
            ',' if !quoted => fields.push(String::new()),
            _ => {
                quoted ^= c == '"';
                fields.last_mut().unwrap().push(c);
            }
        }
    }
    fields
}

/// `row` with column `i` set as PostgreSQL writes a text column: quoted,
/// or nothing at all when empty.
fn with_column(row: &str, i: usize, value: &str) -> String {
    let mut fields = csv_fields(row);
    assert!(fields.len() >= 24, "{row}");
    fields[i] = if value.is_empty() { String::new() } else { format!("\"{}\"", value.replace('"', "\"\"")) };
    fields.join(",")
}

/// csvlog's columns (PostgreSQL's documentation, "Using CSV-Format Log
/// Output"), written out here rather than taken from the scanner: a
/// shifted index there must fail these tests.
const CSV_USER: usize = 1;
const CSV_DATABASE: usize = 2;
const CSV_CONNECTION_FROM: usize = 4;
const CSV_INTERNAL_QUERY: usize = 16;
const CSV_CONTEXT: usize = 18;
const CSV_QUERY: usize = 19;
const CSV_APPLICATION: usize = 22;

/// csvlog of PostgreSQL 13 (24 columns), 15 and 17 (26): each session
/// column alone, the backend type, CONTEXT, the statement (the client's or
/// an internal query) and the severity.
#[test]
fn csvlog_each_check_alone() {
    let time = TimeContext::new(Some("UTC")).unwrap();
    let read = |row: &str| verdicts(&mut CsvScanner::new(&time, test_lexicon()), &[row]);
    const FORGED: &str = "15-csvlog-forged/log/postgresql-2026-11-22_081152.csv";
    // The client's RAISE LOG, every session column set.
    let raise = fixture_line(FORGED, 24);
    let fields = csv_fields(&raise);
    let session =
        [CSV_USER, CSV_DATABASE, CSV_CONNECTION_FROM, CSV_APPLICATION, CSV_CONTEXT].map(|i| fields[i].as_str());
    assert_eq!(
        session,
        ["\"postgres\"", "\"postgres\"", "\"127.0.0.1:42306\"", "\"forger\"", &format!("\"{RAISE_CONTEXT}\"")]
    );
    let statement = fields[CSV_QUERY].clone();
    assert!(statement.starts_with("\"DO $$ BEGIN RAISE LOG 'checkpoint starting: wal';"), "{statement}");
    let statement = statement.trim_matches('"').replace("\"\"", "\"");

    for (log, line) in [
        ("13-csvlog-std/log/postgresql-2026-11-22_081536.csv", 8),
        (FORGED, 8),
        ("17-csvlog-std/log/postgresql-2026-11-22_082519.csv", 8),
    ] {
        let start = fixture_line(log, line);
        assert!(
            start.contains(",LOG,00000,\"checkpoint starting: wal\",") && start.contains(",\"checkpointer\""),
            "{start}"
        );
        assert_eq!(read(&start), [Ok("checkpoint_start")], "{log}");
        assert_eq!(read(&swap(&start, ",LOG,00000,", ",WARNING,01000,")), [Err(SEVERITY)], "{log}");
        for (column, value) in [
            (CSV_USER, "postgres"),
            (CSV_DATABASE, "postgres"),
            (CSV_CONNECTION_FROM, "127.0.0.1:42306"),
            (CSV_APPLICATION, "forger"),
        ] {
            assert_eq!(read(&with_column(&start, column, value)), [Err(SESSION)], "{log}: column {column}");
        }
        assert_eq!(read(&swap(&start, "\"checkpointer\"", "\"client backend\"")), [Err(BACKEND)], "{log}");
        assert_eq!(read(&with_column(&start, CSV_CONTEXT, RAISE_CONTEXT)), [Err(CONTEXT)], "{log}");
        assert_eq!(read(&with_column(&start, CSV_QUERY, &statement)), [Err(STATEMENT)], "{log}");
        assert_eq!(read(&with_column(&start, CSV_INTERNAL_QUERY, "SELECT 1/0")), [Err(STATEMENT)], "{log}");
    }
    // The client's row with its session columns, CONTEXT and statement
    // emptied: its backend type alone.
    let bare = [CSV_USER, CSV_DATABASE, CSV_CONNECTION_FROM, CSV_APPLICATION, CSV_CONTEXT, CSV_QUERY]
        .into_iter()
        .fold(raise.clone(), |row, column| with_column(&row, column, ""));
    assert!(bare.contains(",\"client backend\","), "{bare}");
    assert_eq!(read(&raise), [Err(SESSION)]);
    assert_eq!(read(&bare), [Err(BACKEND)]);
}

/// `"key":value,` of `key` in a jsonlog row, as PostgreSQL wrote it.
fn json_pair(row: &str, key: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(row).unwrap();
    let value = v.get(key).unwrap_or_else(|| panic!("no {key} in {row}"));
    format!("\"{key}\":{},", serde_json::to_string(value).unwrap())
}

/// jsonlog of PostgreSQL 15, 16 and 18: each session key alone, the backend
/// type, CONTEXT, the statement (the client's or an internal query) and the
/// severity. PostgreSQL writes a key only when it has a value, in a fixed
/// order; the keys added here go where it puts them.
#[test]
fn jsonlog_each_check_alone() {
    let time = TimeContext::new(Some("UTC")).unwrap();
    let read = |row: &str| verdicts(&mut JsonScanner::new(&time, test_lexicon()), &[row]);
    const FORGED: &str = "18-jsonlog-forged/log/postgresql-2026-11-22_083249.json";
    let raise = fixture_line(FORGED, 25);
    let statement = json_pair(&raise, "statement");
    assert!(statement.starts_with("\"statement\":\"DO $$ BEGIN RAISE LOG 'checkpoint starting: wal';"), "{statement}");

    for log in [
        "15-jsonlog-std/log/postgresql-2026-11-22_080808.json",
        "16-jsonlog-std/log/postgresql-2026-11-22_082442.json",
        FORGED,
    ] {
        let start = fixture_line(log, 8);
        assert!(
            start.contains(
                "\"error_severity\":\"LOG\",\"message\":\"checkpoint starting: wal\",\"backend_type\":\"checkpointer\""
            ),
            "{start}"
        );
        assert_eq!(read(&start), [Ok("checkpoint_start")], "{log}");
        assert_eq!(
            read(&swap(&start, "\"error_severity\":\"LOG\"", "\"error_severity\":\"WARNING\"")),
            [Err(SEVERITY)],
            "{log}"
        );
        for (before, key) in [
            ("\"pid\":", "\"user\":\"postgres\","),
            ("\"pid\":", "\"dbname\":\"postgres\","),
            ("\"session_id\":", "\"remote_host\":\"127.0.0.1\",\"remote_port\":47870,"),
            ("\"backend_type\":", "\"application_name\":\"forger\","),
        ] {
            assert_eq!(read(&swap(&start, before, &format!("{key}{before}"))), [Err(SESSION)], "{log}: {key}");
        }
        let before_backend = |pair: &str| swap(&start, "\"backend_type\":", &format!("{pair}\"backend_type\":"));
        assert_eq!(read(&swap(&start, "\"checkpointer\"", "\"client backend\"")), [Err(BACKEND)], "{log}");
        assert_eq!(read(&before_backend(&format!("\"context\":\"{RAISE_CONTEXT}\","))), [Err(CONTEXT)], "{log}");
        assert_eq!(read(&before_backend(&statement)), [Err(STATEMENT)], "{log}");
        assert_eq!(read(&before_backend("\"internal_query\":\"SELECT 1/0\",")), [Err(STATEMENT)], "{log}");
    }
    // The client's row without its session keys, CONTEXT and statement:
    // its backend type alone.
    let bare = ["user", "dbname", "remote_host", "remote_port", "context", "statement", "application_name"]
        .into_iter()
        .fold(raise.clone(), |row, key| swap(&row, &json_pair(&row, key), ""));
    assert!(bare.contains("\"backend_type\":\"client backend\""), "{bare}");
    assert_eq!(read(&raise), [Err(SESSION)]);
    assert_eq!(read(&bare), [Err(BACKEND)]);
}
