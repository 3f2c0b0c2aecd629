//! A client's statement longer than walwatch's framing buffer
//! (`frame::CHUNK_BYTES`, 2 MiB) must not shift the framing of what follows.
//! With default settings (`log_min_error_statement = error`) any client gets
//! a failing statement logged whole: `SELECT 1/0 /*` + 2.2 MB + a newline + a
//! fake record, or a statement of 1 000-byte lines with fake records among
//! them, once made walwatch count the fakes as checkpoints and swallow every
//! real record after them (csvlog lost its quote state at the cut).
//!
//! A real PostgreSQL server writes the log: real checkpoints (WAL-triggered
//! and CHECKPOINT commands) before and after the attack, and a shutdown
//! checkpoint. An oracle in this file that shares no code with walwatch (the
//! `csv` crate or serde_json over the whole file; a dumb line counter for
//! stderr) says what the server wrote, and walwatch's import must agree
//! record for record: same events at the same byte offsets and lines, the
//! same number of entries, every byte consumed, nothing forged.
//!
//! Also: csvlog records shaped like PostgreSQL 9.6–12 (23 columns,
//! no backend_type) are trusted or refused by their session columns alone.
//!
//! Needs the PostgreSQL server binaries; fails, never skips, without them.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde_json::Value;
use support::truth::{trigger_of, Truth};
use support::{describe, int, walwatch, walwatch_json, PgCluster, StopMode};
use walwatch::frame::CHUNK_BYTES;

/// The settings of every run; `log_destination` is added per test. No
/// rotation: the whole run is one file, read by the oracle in one go.
const SETTINGS: &[(&str, &str)] = &[
    ("logging_collector", "on"),
    ("log_checkpoints", "on"),
    ("log_line_prefix", "'%m [%p] %q%u@%d '"),
    ("lc_messages", "'C'"),
    ("log_timezone", "'UTC'"),
    ("max_wal_size", "'32MB'"),
    ("min_wal_size", "'32MB'"),
    ("log_rotation_size", "0"),
    ("log_rotation_age", "0"),
];

/// Fake checkpointer records in each format, as a client would embed them.
/// csv: bare fields (parse from a line start without any quote) and quoted ones.
const FAKE_CSV_BARE: &str = "2026-01-01 00:00:00.000 UTC,,,4242,,6b02a4a8.1092,1,,2026-01-01 00:00:00 UTC,,0,LOG,00000,checkpoint starting: wal,,,,,,,,,,checkpointer,,0";
const FAKE_CSV_QUOTED: &str = "2026-01-01 00:00:00.000 UTC,,,4242,,6b02a4a8.1092,2,,2026-01-01 00:00:00 UTC,,0,LOG,00000,\"checkpoint starting: wal\",,,,,,,,,\"\",\"checkpointer\",,0";
const FAKE_JSON: &str = r#"{"timestamp":"2026-01-01 00:00:00.000 UTC","pid":4242,"session_id":"6b02a4a8.1092","line_num":1,"error_severity":"LOG","message":"checkpoint starting: wal","backend_type":"checkpointer","query_id":0}"#;
const FAKE_STDERR: &str = "2026-01-01 00:00:00.000 UTC [4242] LOG:  checkpoint starting: wal";

/// Event kinds the checkpointer's records become.
const KINDS: [&str; 3] = ["checkpoint_start", "checkpoint_complete", "too_frequent"];

#[test]
fn csvlog_attack_forges_nothing_and_swallows_nothing() {
    let run = Run::new("'csvlog'", "csv", &[FAKE_CSV_BARE, FAKE_CSV_QUOTED]);
    let want = csv_oracle(&run.bytes);
    want.check_scenario(4);
    run.check_import(&want);
}

#[test]
fn jsonlog_attack_forges_nothing_and_swallows_nothing() {
    let run = Run::new("'jsonlog'", "json", &[FAKE_JSON]);
    let want = json_oracle(&run.bytes);
    want.check_scenario(2);
    run.check_import(&want);
}

/// stderr has no quotes to lose: every line of a statement after its first
/// is a TAB continuation, which never starts an entry. Past a cut (or a
/// skipped line) neither a TAB line nor the fake inside one is an event.
#[test]
fn stderr_attack_forges_nothing_and_swallows_nothing() {
    let run = Run::new("'stderr'", "log", &[FAKE_STDERR]);
    let truth = Truth::from_files(std::slice::from_ref(&run.log));
    let attacks = stderr_attacks(&run.bytes);
    check_stderr_scenario(&run.bytes, &truth, &attacks);

    let (db, report) = run.import();
    println!("{report}\noracle: {}", truth.brief());
    let summary = walwatch_json(&["summary", "--db", &db, "--format", "json"]);
    for (path, want) in truth.expected_summary() {
        // The attack records are session records holding look-alikes: how
        // many of their fakes are read as such depends on the cut.
        if path != "rejected" {
            assert_eq!(int(&summary, path), want, "summary {path}: {}\n{report}", truth.brief());
        }
    }
    // The multi-line statement's head (its first fake within it) is framed
    // and refused; past the cut its TAB lines belong to no entry.
    let rejected = int(&summary, "rejected");
    assert!((1..=1 + MULTI_LINE_FAKES as i64).contains(&rejected), "rejected {rejected}");
    assert_eq!(report_number(&report, "unparsed"), 0, "TAB lines past the cut are no failures\n{report}");
    let events = stored_events(Path::new(&db));
    let inside: Vec<_> = events.iter().filter(|e| attacks.iter().any(|a| a.contains(&e.0))).collect();
    assert!(inside.is_empty(), "events inside the attack records: {inside:?}");
    assert_eq!(stored_read_to(Path::new(&db)), (run.bytes.len() as u64, newlines(&run.bytes) + 1));
}

/// PostgreSQL 9.6–12 write 23 csv columns, without backend_type; a
/// record's session columns are then all that tells a client's record from
/// the checkpointer's. No such server is installed here, so the records are
/// a real PostgreSQL 13 log (tests/fixtures/13-csvlog-std) with the one
/// column 13 added removed. Each session column set on the checkpointer's
/// records must get every one of them refused; all empty, all are events.
#[test]
fn csvlog_of_23_columns_is_trusted_by_its_session_columns_only() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/13-csvlog-std");
    let truth: Value = serde_json::from_str(&fs::read_to_string(dir.join("truth.json")).unwrap()).unwrap();
    let counts = &truth["counts"];
    let starts = counts["checkpoint_start"]["total"].as_i64().unwrap();
    let completes = counts["checkpoint_complete"].as_i64().unwrap();
    let too_frequent = counts["too_frequent"].as_i64().unwrap();
    assert!(starts > 0 && completes > 0 && too_frequent > 0, "{counts}");
    let source = support::fixture_logs(&dir).into_iter().find(|f| f.extension().is_some_and(|e| e == "csv")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // (name, column, value); None: all session columns left empty.
    let cases = [
        ("none", None, ""),
        ("user_name", Some(1), "postgres"),
        ("database_name", Some(2), "postgres"),
        ("connection_from", Some(4), "[local]"),
        ("application_name", Some(22), "psql"),
    ];
    for (name, column, value) in cases {
        let log = tmp.path().join(format!("pg12-{name}.csv"));
        fs::write(&log, as_23_columns(&fs::read(&source).unwrap(), column.map(|c| (c, value)))).unwrap();
        let db = tmp.path().join(format!("pg12-{name}.db"));
        let db = db.to_str().unwrap();
        import_ok(db, &log);
        let s = walwatch_json(&["summary", "--db", db, "--format", "json"]);
        let refused = column.is_some();
        let accepted = |n: i64| if refused { 0 } else { n };
        let case = format!("{name} = {value:?}: {s}");
        assert_eq!(int(&s, "checkpoints.started"), accepted(starts), "{case}");
        assert_eq!(int(&s, "checkpoints.completed"), accepted(completes), "{case}");
        assert_eq!(int(&s, "too_frequent"), accepted(too_frequent), "{case}");
        let rejected = if refused { starts + completes + too_frequent } else { 0 };
        assert_eq!(int(&s, "rejected"), rejected, "{case}");
        if refused {
            let reasons = rejection_reasons(Path::new(db));
            assert_eq!(reasons, BTreeMap::from([("written by a client session".to_string(), rejected)]), "{case}");
        }
    }
}

// ---------------------------------------------------------------------------
// The PostgreSQL part
// ---------------------------------------------------------------------------

/// Fake records per multi-line attack statement.
const MULTI_LINE_FAKES: usize = 46;

/// `SELECT 1/0 /*` + 2.2 MB on one line, then the fake on a line of its own.
fn single_line_attack(fake: &str) -> String {
    format!("SELECT 1/0 /*{}\n{fake}\n*/;\n", "a".repeat(2_200_000))
}

/// A statement of 2 300 lines of 1 000 bytes, a fake record every 50 lines.
fn multi_line_attack(fake: &str) -> String {
    let mut sql = String::from("SELECT 1/0 /*\n");
    for i in 0..2300 {
        sql += if i % 50 == 25 { fake } else { "" };
        sql += &"b".repeat(if i % 50 == 25 { 0 } else { 999 });
        sql.push('\n');
    }
    sql + "*/;\n"
}

/// A server run with the attack in the middle; the server is stopped, and
/// its one log file of the format read.
struct Run {
    _pg: PgCluster,
    log: PathBuf,
    bytes: Vec<u8>,
    work: tempfile::TempDir,
}

impl Run {
    fn new(destination: &str, extension: &str, fakes: &[&str]) -> Run {
        let mut settings = SETTINGS.to_vec();
        settings.push(("log_destination", destination));
        let mut pg = PgCluster::init(&settings);
        pg.start();
        real_checkpoints(&pg, "before");
        let mut script = String::from("\\set ON_ERROR_STOP off\n");
        for fake in fakes {
            script += &single_line_attack(fake);
            script += &multi_line_attack(fake);
        }
        pg.psql(&script);
        real_checkpoints(&pg, "after");
        pg.stop(StopMode::Fast);
        let logs: Vec<PathBuf> =
            pg.log_files().into_iter().filter(|f| f.extension().is_some_and(|e| e == extension)).collect();
        assert_eq!(logs.len(), 1, "one .{extension} log expected: {logs:?}");
        let log = logs[0].clone();
        let bytes = fs::read(&log).unwrap();
        Run { _pg: pg, log, bytes, work: tempfile::tempdir().unwrap() }
    }

    /// Imports the log into a fresh store; returns the store and the report.
    fn import(&self) -> (String, String) {
        let db = self.work.path().join("w.db").to_str().unwrap().to_string();
        let report = import_ok(&db, &self.log);
        (db, report)
    }

    /// walwatch agrees with the oracle record for record.
    fn check_import(&self, want: &Expected) {
        let (db, report) = self.import();
        let db_path = Path::new(&db);
        println!("{report}");
        assert_eq!(report_number(&report, "entries"), want.records, "entries: one per record\n{report}");
        assert_eq!(report_number(&report, "lines"), newlines(&self.bytes), "lines\n{report}");
        assert_eq!(report_number(&report, "unparsed"), 0, "{report}");
        assert_eq!(report_number(&report, "rejected"), 0, "only the attack holds look-alikes\n{report}");
        let events = stored_events(db_path);
        assert_eq!(events, want.events, "events at the checkpointer's records, and only there");
        assert_eq!(stored_read_to(db_path), (self.bytes.len() as u64, newlines(&self.bytes) + 1), "every byte read");
        let s = walwatch_json(&["summary", "--db", &db, "--format", "json"]);
        for (trigger, n) in &want.triggers {
            assert_eq!(int(&s, &format!("checkpoints.by_trigger.{trigger}")), *n, "{trigger} checkpoints: {s}");
        }
        assert_eq!(int(&s, "checkpoints.started"), want.kind_count("checkpoint_start"), "{s}");
    }
}

/// WAL past max_wal_size (WAL-triggered checkpoints), then a CHECKPOINT.
fn real_checkpoints(pg: &PgCluster, name: &str) {
    pg.psql(&format!(
        "CREATE TABLE burst_{name} AS SELECT g, repeat('w', 400) AS pad FROM generate_series(1, 150000) g;\nCHECKPOINT;"
    ));
}

// ---------------------------------------------------------------------------
// The oracle: what the server wrote, read without walwatch's code
// ---------------------------------------------------------------------------

#[derive(Debug, Default)]
struct Expected {
    /// Records in the file.
    records: u64,
    /// (offset, line, kind) of every checkpointer record walwatch must store.
    events: BTreeSet<(u64, u64, String)>,
    /// checkpoint starts by trigger.
    triggers: BTreeMap<&'static str, i64>,
    /// Byte ranges of the attack records (a client's statement over 2 MiB).
    attacks: Vec<Range<u64>>,
    /// Fake records found inside the attack statements.
    fakes: usize,
}

/// One record as the oracle sees it.
struct Seen<'a> {
    at: Range<u64>,
    line: u64,
    backend_type: &'a str,
    message: &'a str,
    statement: &'a str,
}

impl Expected {
    fn add(&mut self, r: &Seen<'_>, fakes: &[&str]) {
        self.records += 1;
        if r.message == "division by zero" && r.statement.len() > CHUNK_BYTES {
            self.attacks.push(r.at.clone());
            self.fakes += fakes.iter().map(|f| r.statement.matches(f).count()).sum::<usize>();
        }
        if r.backend_type != "checkpointer" {
            return;
        }
        let kind = if let Some(flags) = r.message.strip_prefix("checkpoint starting: ") {
            *self.triggers.entry(trigger_of(flags)).or_default() += 1;
            "checkpoint_start"
        } else if r.message.starts_with("checkpoint complete: ") {
            "checkpoint_complete"
        } else if r.message.starts_with("checkpoints are occurring too frequently") {
            "too_frequent"
        } else {
            return;
        };
        self.events.insert((r.at.start, r.line, kind.to_string()));
    }

    fn kind_count(&self, kind: &str) -> i64 {
        self.events.iter().filter(|e| e.2 == kind).count() as i64
    }

    /// The server really wrote the attack between real checkpoints.
    fn check_scenario(&self, attacks: usize) {
        assert_eq!(self.attacks.len(), attacks, "attack records in the log");
        assert_eq!(self.fakes, attacks / 2 * (1 + MULTI_LINE_FAKES), "fake records inside them");
        let first = self.attacks[0].start;
        let last = self.attacks[attacks - 1].end;
        let before = self.events.iter().filter(|e| e.0 < first && e.2 == "checkpoint_start").count();
        let after = self.events.iter().filter(|e| e.0 >= last && e.2 == "checkpoint_start").count();
        assert!(before >= 2 && after >= 3, "real checkpoints before ({before}) and after ({after}) the attack");
        assert!(self.triggers.get("wal").is_some_and(|&n| n >= 1), "WAL-triggered checkpoints: {:?}", self.triggers);
    }
}

/// Every csv record of the file, read by the `csv` crate (PostgreSQL 15:
/// message 13, query 19, backend_type 23).
fn csv_oracle(bytes: &[u8]) -> Expected {
    let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(bytes);
    let mut lines = LineCounter::default();
    let mut want = Expected::default();
    let mut record = csv::StringRecord::new();
    let mut start = 0u64;
    while reader.read_record(&mut record).expect("the server writes valid csv") {
        let end = reader.position().byte();
        assert_eq!(record.position().map(|p| p.byte()), Some(start), "records follow each other");
        assert_eq!(record.len(), 26, "PostgreSQL 15 writes 26 columns");
        let seen = Seen {
            at: start..end,
            line: lines.line_at(bytes, start),
            backend_type: &record[23],
            message: &record[13],
            statement: &record[19],
        };
        want.add(&seen, &[FAKE_CSV_BARE, FAKE_CSV_QUOTED]);
        start = end;
    }
    assert_eq!(start, bytes.len() as u64);
    want
}

/// Every jsonlog line of the file, read by serde_json.
fn json_oracle(bytes: &[u8]) -> Expected {
    let mut want = Expected::default();
    let (mut start, mut line) = (0u64, 1u64);
    for text in bytes.split_inclusive(|&b| b == b'\n') {
        let v: Value = serde_json::from_slice(text).expect("the server writes one JSON object per line");
        let field = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        let (backend_type, message, statement) = (field("backend_type"), field("message"), field("statement"));
        let end = start + text.len() as u64;
        let seen = Seen { at: start..end, line, backend_type: &backend_type, message: &message, statement: &statement };
        want.add(&seen, &[FAKE_JSON]);
        (start, line) = (end, line + 1);
    }
    want
}

/// Line numbers of increasing byte offsets, counted incrementally.
#[derive(Default)]
struct LineCounter {
    offset: u64,
    line: u64,
}

impl LineCounter {
    fn line_at(&mut self, bytes: &[u8], offset: u64) -> u64 {
        let between = &bytes[self.offset as usize..offset as usize];
        self.line += between.iter().filter(|&&b| b == b'\n').count() as u64;
        self.offset = offset;
        self.line + 1
    }
}

/// The stderr attack records: a session's `ERROR:  division by zero` line
/// with its STATEMENT line and all their TAB continuation lines.
fn stderr_attacks(bytes: &[u8]) -> Vec<Range<u64>> {
    let mut attacks: Vec<Range<u64>> = Vec::new();
    let (mut offset, mut open) = (0u64, false);
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        let text = String::from_utf8_lossy(line);
        let end = offset + line.len() as u64;
        if text.contains(" postgres@postgres ERROR:  division by zero") {
            attacks.push(offset..end);
            open = true;
        } else if open && (text.starts_with('\t') || text.contains(" postgres@postgres STATEMENT:  ")) {
            attacks.last_mut().unwrap().end = end;
        } else {
            open = false;
        }
        offset = end;
    }
    attacks
}

/// The server really wrote the stderr attack between real checkpoints, its
/// fakes as TAB continuation lines.
fn check_stderr_scenario(bytes: &[u8], truth: &Truth, attacks: &[Range<u64>]) {
    assert_eq!(attacks.len(), 2, "both attack statements are in the log");
    assert!(attacks.iter().all(|a| a.end - a.start > CHUNK_BYTES as u64), "{attacks:?}");
    let tabbed = bytes.windows(FAKE_STDERR.len() + 1).filter(|w| w[0] == b'\t' && &w[1..] == FAKE_STDERR.as_bytes());
    assert_eq!(tabbed.count(), 1 + MULTI_LINE_FAKES, "the fakes are TAB continuation lines");
    let (first, last) = (attack_time(bytes, &attacks[0]), attack_time(bytes, &attacks[1]));
    let before = truth.start_list.iter().filter(|s| s.ts_key < first).count();
    let after = truth.start_list.iter().filter(|s| s.ts_key > last).count();
    assert!(before >= 2 && after >= 3, "real checkpoints before ({before}) and after ({after}) the attack");
    assert!(truth.wal >= 1, "WAL-triggered checkpoints: {}", truth.brief());
}

/// The time key of an attack record's first line.
fn attack_time(bytes: &[u8], attack: &Range<u64>) -> String {
    let at = attack.start as usize;
    let line = String::from_utf8_lossy(&bytes[at..at + 23]).into_owned();
    support::ts_key(&line)
}

fn newlines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| b == b'\n').count() as u64
}

// ---------------------------------------------------------------------------
// The walwatch part
// ---------------------------------------------------------------------------

/// `walwatch import` into `db`; returns its report.
fn import_ok(db: &str, log: &Path) -> String {
    let out = walwatch().args(["import", "--db", db, "--cluster", "attack"]).arg(log).output().unwrap();
    assert!(out.status.success(), "walwatch import: {}", describe(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// The number after `word ` in the import report (`entries 12,` …).
fn report_number(report: &str, word: &str) -> u64 {
    let pattern = format!("{word} ");
    let at = report.find(&pattern).unwrap_or_else(|| panic!("no {word:?} in {report}")) + pattern.len();
    let digits: String = report[at..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().unwrap_or_else(|_| panic!("no number after {word:?} in {report}"))
}

/// (offset, line, kind) of the stored checkpointer events.
fn stored_events(db: &Path) -> BTreeSet<(u64, u64, String)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn.prepare("SELECT offset, line, kind FROM line ORDER BY offset").unwrap();
    let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64, r.get(2)?))).unwrap();
    rows.map(Result::unwrap).filter(|e: &(u64, u64, String)| KINDS.contains(&e.2.as_str())).collect()
}

/// How far the store says the (only) source was read: (byte, line).
fn stored_read_to(db: &Path) -> (u64, u64) {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("SELECT read_to, line FROM source", [], |r| {
        Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64))
    })
    .unwrap()
}

/// Rejected events by reason.
fn rejection_reasons(db: &Path) -> BTreeMap<String, i64> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn.prepare("SELECT data FROM event WHERE kind = 'rejected'").unwrap();
    let mut reasons = BTreeMap::new();
    for data in stmt.query_map([], |r| r.get::<_, String>(0)).unwrap() {
        let v: Value = serde_json::from_str(&data.unwrap()).unwrap();
        *reasons.entry(v["reason"].as_str().unwrap_or("?").to_string()).or_default() += 1;
    }
    reasons
}

/// A PostgreSQL 13 csvlog rewritten in the 23 columns of 9.6–12 (without
/// backend_type), with `set` = (column, value) on the checkpointer's records.
fn as_23_columns(csv13: &[u8], set: Option<(usize, &str)>) -> Vec<u8> {
    let mut reader = csv::ReaderBuilder::new().has_headers(false).from_reader(csv13);
    let mut writer = csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::new());
    let mut changed = 0;
    for record in reader.records() {
        let record = record.unwrap();
        assert_eq!(record.len(), 24, "PostgreSQL 13 writes 24 columns");
        let mut fields: Vec<String> = record.iter().take(23).map(String::from).collect();
        if let Some((column, value)) = set.filter(|_| &record[23] == "checkpointer") {
            assert_eq!(fields[column], "", "column {column} was empty");
            fields[column] = value.to_string();
            changed += 1;
        }
        writer.write_record(&fields).unwrap();
    }
    assert!(set.is_none() || changed > 100, "{changed} checkpointer records changed");
    writer.into_inner().unwrap()
}
