//! jsonlog (PostgreSQL 15+): one JSON object per line. Keys are written only
//! when they have a value; `error_severity` is never translated.
//!
//! PostgreSQL escapes control characters, quotes and backslashes inside JSON
//! strings, so a newline in the log always ends a record: a line longer than
//! the buffer (a client's statement) is skipped to its newline and the next
//! record starts there, with no state to carry.

mod cut;

use serde::Deserialize;

use super::zone_evidence;
use crate::catalog::Catalog;
use crate::frame::time::TimeContext;
use crate::frame::{lines, Consumed, Cut, FrameStats, Lexicon, Needles, Origin, Pos, Record, Scan};

#[derive(Deserialize)]
struct Entry {
    timestamp: Option<String>,
    user: Option<String>,
    dbname: Option<String>,
    pid: Option<u32>,
    remote_host: Option<String>,
    error_severity: Option<String>,
    message: Option<String>,
    detail: Option<String>,
    hint: Option<String>,
    internal_query: Option<String>,
    context: Option<String>,
    statement: Option<String>,
    application_name: Option<String>,
    backend_type: Option<String>,
}

pub struct JsonScanner<'t> {
    time: &'t TimeContext,
    needles: &'static Needles,
    catalog: &'static Catalog,
    stats: FrameStats,
}

impl<'t> JsonScanner<'t> {
    pub fn new(time: &'t TimeContext, lexicon: &'static Lexicon) -> Self {
        JsonScanner { time, needles: &lexicon.needles, catalog: lexicon.catalog, stats: FrameStats::default() }
    }

    /// `line` as an entry; `at_end`: the input ended inside it (it has no
    /// newline and nothing follows), so it may be cut short: what it holds
    /// up to the cut is read ([`cut::close`]) and the record marked so.
    fn parse(&mut self, line: &[u8], pos: Pos, at_end: bool) -> Option<Record> {
        let (entry, cut) = match serde_json::from_slice::<Entry>(line) {
            Ok(e) => (Some(e), Cut::Whole),
            Err(_) if at_end => {
                let closed = cut::close(line).and_then(|json| serde_json::from_slice::<Entry>(&json).ok());
                (closed, Cut::AtEnd)
            }
            Err(_) => (None, Cut::Whole),
        };
        let Some(e) = entry else {
            self.stats.misfit(self.catalog, pos.line, &lines::lossy(line));
            return None;
        };
        let Some(severity) = e.error_severity.as_deref().and_then(|s| self.catalog.severity(s)) else {
            self.stats.misfit(self.catalog, pos.line, &lines::lossy(line));
            return None;
        };
        let present = |f: &Option<String>| f.as_deref().is_some_and(|v| !v.is_empty());
        let session = present(&e.user) || present(&e.dbname) || present(&e.remote_host) || present(&e.application_name);
        let mut record = Record {
            offset: pos.offset,
            line: pos.line,
            time: None,
            origin: Origin {
                pid: e.pid,
                backend_type: e.backend_type,
                session,
                session_checkable: true,
                doubt: None,
                uid: None,
            },
            severity,
            message: e.message.unwrap_or_default(),
            detail: e.detail,
            hint: e.hint,
            context: e.context,
            statement: e.statement.or(e.internal_query),
            cut,
        };
        // What the entry says of the zone first: a reload of log_timezone
        // is written in the zone it sets.
        let severity_word = e.error_severity.as_deref().unwrap_or_default();
        zone_evidence::learn_from_columns(self.time, self.catalog, &record, severity_word);
        record.time = e.timestamp.as_deref().and_then(|t| self.time.parse(t).ok());
        Some(record)
    }
}

impl Scan for JsonScanner<'_> {
    fn scan(&mut self, region: &[u8], pos: Pos, last: bool, emit: &mut dyn FnMut(Record)) -> Consumed {
        let newlines = lines::count(region);
        let physical = newlines + u64::from(region.last().is_some_and(|&b| b != b'\n'));
        self.stats.lines += physical;
        self.stats.entries += physical;
        let (mut done, mut counted, mut line) = (0usize, 0usize, pos.line);
        let hits = self.needles.hits(region);
        for hit in hits {
            if hit < done {
                continue;
            }
            let start = lines::start_of(region, hit);
            line += lines::count(&region[counted..start]);
            counted = start;
            done = lines::next_start(region, start);
            self.stats.candidates += 1;
            let at = Pos { offset: pos.offset + start as u64, line };
            let at_end = last && done == region.len() && region.last() != Some(&b'\n');
            if let Some(record) = self.parse(lines::text(region, start), at, at_end) {
                emit(record);
            }
        }
        Consumed { bytes: region.len(), newlines }
    }

    fn skip(&mut self, piece: &[u8], _first: bool, last: bool) -> Option<usize> {
        let end = memchr::memchr(b'\n', piece).map(|i| i + 1).or(last.then_some(piece.len()));
        if end.is_some() {
            self.stats.lines += 1;
            self.stats.entries += 1;
            self.stats.oversized += 1;
        }
        end
    }

    fn stats(&self) -> &FrameStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::testing::{boundaries, check_growing_file, frame_all};
    use crate::frame::{LogSeverity, Tail};
    use serde_json::json;

    /// A finished stream ending inside its last entry: read up to the cut
    /// (the keys before it, the message's text), marked cut at the end; a
    /// growing file's (Wait) last line waits; an entry cut before its
    /// message holds no event.
    #[test]
    fn a_finished_stream_ending_inside_an_entry_frames_it_as_cut() {
        let time = TimeContext::new(Some("UTC")).unwrap();
        let complete = "checkpoint complete: wrote 3 buffers (0.0%); 0 WAL file(s) added, 0 removed, 0 recycled";
        let whole = format!("{}{}", event_line("checkpoint starting: wal"), event_line(complete));
        let read = |len: usize, tail: Tail| {
            let mut scanner = JsonScanner::new(&time, crate::frame::test_lexicon());
            frame_all(&mut scanner, &whole.as_bytes()[..len], 1 << 20, tail, Pos::START).0
        };
        let cut = whole.rfind("0 WAL file").unwrap() + 5;
        let records = read(cut, Tail::Take);
        assert_eq!(records.len(), 2);
        assert_eq!((records[0].cut, records[1].cut), (Cut::Whole, Cut::AtEnd));
        assert_eq!(records[1].message, "checkpoint complete: wrote 3 buffers (0.0%); 0 WAL");
        // The test lines' keys are sorted (serde_json's map): backend_type
        // before the cut is kept, pid after it is not.
        assert_eq!((records[1].origin.pid, records[1].origin.backend_type.as_deref()), (None, Some("checkpointer")));
        let records = read(whole.len() - 1, Tail::Take);
        assert_eq!((records[1].cut, records[1].origin.backend_type.as_deref()), (Cut::Whole, Some("checkpointer")));
        assert_eq!(read(cut, Tail::Wait).len(), 1);
        // Cut before its message: nothing of an event is left (here a
        // record without a message, found by the "checkpointer" before it).
        let records = read(whole.rfind("\"message\"").unwrap(), Tail::Take);
        assert!(records.len() == 1 || records[1].message.is_empty(), "{records:?}");
    }

    /// A checkpointer record as PostgreSQL 15 writes it.
    fn event_line(message: &str) -> String {
        let v = json!({"timestamp": "2026-11-22 08:15:38.417 UTC", "pid": 28304, "session_id": "6b02a4a8.6e90",
            "line_num": 2, "session_start": "2026-11-22 08:15:36 UTC", "txid": 0, "error_severity": "LOG",
            "message": message, "backend_type": "checkpointer", "query_id": 0});
        format!("{v}\n")
    }

    /// A client's failed statement, logged with it (log_min_error_statement).
    fn error_line(statement: &str) -> String {
        let v = json!({"timestamp": "2026-11-22 08:15:40.001 UTC", "user": "postgres", "dbname": "postgres",
            "pid": 28400, "remote_host": "[local]", "session_id": "6b02a4a8.6ef0", "line_num": 3, "ps": "SELECT",
            "session_start": "2026-11-22 08:15:39 UTC", "vxid": "3/7", "txid": 0, "error_severity": "ERROR",
            "state_code": "22012", "message": "division by zero", "statement": statement,
            "application_name": "psql", "backend_type": "client backend", "query_id": 0});
        format!("{v}\n")
    }

    /// A statement line of exactly `len` bytes: escaped quotes and
    /// backslashes, and a whole fake record on a line of its own.
    fn statement_line(len: usize) -> String {
        let head = format!("SELECT 1/0 /* \"\\\" \\\\\"\n{}\\\\\\\"\n", event_line("checkpoint starting: wal"));
        let line = |filler: &str| error_line(&format!("{head}{filler}*/"));
        let extra = len.checked_sub(line("").len()).expect("the line holds at least the head");
        // `\"` takes 4 bytes escaped, `x` one.
        let out = line(&("\\\"".repeat(extra / 4) + &"x".repeat(extra % 4)));
        assert_eq!(out.len(), len, "the filler was sized for the line");
        out
    }

    fn frame(data: &[u8], chunk: usize) -> (Vec<Record>, Pos, FrameStats) {
        let time = TimeContext::new(Some("UTC")).unwrap();
        let mut scanner = JsonScanner::new(&time, crate::frame::test_lexicon());
        let (records, end) = frame_all(&mut scanner, data, chunk, Tail::Take, Pos::START);
        (records, end, scanner.stats().clone())
    }

    /// Statements a few bytes under, at and over the buffer size: the
    /// oversized ones are skipped to their own newline, the others framed
    /// with their escapes intact, and the events around them land exactly.
    #[test]
    fn lines_around_the_buffer_size_frame_exactly() {
        let events = [event_line("checkpoint starting: wal"), event_line("checkpoint starting: time")];
        for chunk in [1024usize, 1500] {
            for len in chunk - 3..=chunk + 3 {
                let statement = statement_line(len);
                let log = [events[0].clone(), statement.clone(), events[1].clone(), statement.clone()];
                let data = log.concat().into_bytes();
                let at = boundaries(&log);
                let (records, end, stats) = frame(&data, chunk);
                let fits = statement.len() <= chunk;
                let got: Vec<(u64, u64, LogSeverity)> =
                    records.iter().map(|r| (r.offset, r.line, r.severity)).collect();
                let mut want = vec![(at[0].offset, 1, LogSeverity::Log), (at[2].offset, 3, LogSeverity::Log)];
                if fits {
                    want.insert(1, (at[1].offset, 2, LogSeverity::Error));
                    want.push((at[3].offset, 4, LogSeverity::Error));
                }
                assert_eq!(got, want, "chunk {chunk}, statement line {}", statement.len());
                let parsed: serde_json::Value = serde_json::from_str(&statement).unwrap();
                for r in records.iter().filter(|r| r.severity == LogSeverity::Error) {
                    assert_eq!(r.statement.as_deref(), parsed["statement"].as_str(), "escapes kept");
                }
                assert_eq!(records[0].message, "checkpoint starting: wal");
                assert_eq!(end, at[4], "chunk {chunk}, statement line {}", statement.len());
                assert_eq!((stats.entries, stats.lines), (4, 4), "chunk {chunk}, statement line {}", statement.len());
                assert_eq!(
                    stats.oversized,
                    if fits { 0 } else { 2 },
                    "chunk {chunk}, statement line {}",
                    statement.len()
                );
            }
        }
    }

    /// A record comes from a session when it names a user, a database, a
    /// client host or an application (each alone is enough; an empty value
    /// is none); lines that are not JSON or hold no severity PostgreSQL
    /// writes are counted unparsed; a line with several needles is framed
    /// once; a finished stream's last line needs no newline.
    #[test]
    fn sessions_unparsed_lines_and_the_last_line_are_framed_exactly() {
        let with = |fields: serde_json::Value| {
            let mut v = json!({"timestamp": "2026-11-22 08:15:41.002 UTC", "pid": 28500, "session_id": "6b02a4a8.6f54",
                "line_num": 1, "session_start": "2026-11-22 08:15:41 UTC", "txid": 0, "error_severity": "LOG",
                "message": "checkpoint starting: wal", "backend_type": "client backend", "query_id": 0});
            v.as_object_mut().unwrap().extend(fields.as_object().unwrap().clone());
            format!("{v}\n")
        };
        let too_frequent = "{\"timestamp\":\"2026-11-22 08:08:11.535 UTC\",\"pid\":24696,\"session_id\":\"6b02a2e8.6078\",\"line_num\":1,\"session_start\":\"2026-11-22 08:08:08 UTC\",\"txid\":0,\"error_severity\":\"LOG\",\"message\":\"checkpoints are occurring too frequently (3 seconds apart)\",\"hint\":\"Consider increasing the configuration parameter \\\"max_wal_size\\\".\",\"backend_type\":\"checkpointer\",\"query_id\":0}\n";
        let log = [
            too_frequent.to_string(),
            with(json!({"user": "postgres"})),
            with(json!({"dbname": "postgres"})),
            with(json!({"remote_host": "[local]"})),
            with(json!({"application_name": "psql"})),
            with(json!({"user": "", "dbname": "", "remote_host": "", "application_name": ""})),
            // A line torn short (no closing brace), then an unknown severity
            // and none at all.
            with(json!({})).replace("}\n", "\n"),
            with(json!({"error_severity": "NOTALEVEL"})),
            with(json!({"error_severity": null})),
            event_line("checkpoint starting: time").trim_end().to_string(),
        ];
        let at = boundaries(&log);
        let (records, end, stats) = frame(log.concat().as_bytes(), 1 << 20);
        let got: Vec<(u64, u64, &str, bool)> =
            records.iter().map(|r| (r.offset, r.line, r.message.as_str(), r.origin.session)).collect();
        let wal = "checkpoint starting: wal";
        assert_eq!(
            got,
            [
                (at[0].offset, 1, "checkpoints are occurring too frequently (3 seconds apart)", false),
                (at[1].offset, 2, wal, true),
                (at[2].offset, 3, wal, true),
                (at[3].offset, 4, wal, true),
                (at[4].offset, 5, wal, true),
                (at[5].offset, 6, wal, false),
                (at[9].offset, 10, "checkpoint starting: time", false),
            ]
        );
        assert_eq!(
            records[0].hint.as_deref(),
            Some("Consider increasing the configuration parameter \"max_wal_size\".")
        );
        assert_eq!(end, at[10]);
        // The three hold a checkpoint line's message: unmatched, not merely unparsed.
        assert_eq!(
            (stats.entries, stats.lines, stats.candidates, stats.unparsed, stats.unmatched, stats.oversized),
            (10, 10, 10, 0, 3, 0)
        );
        assert_eq!(stats.first_unmatched.as_ref().map(|(line, _)| *line), Some(7));
    }

    /// A file read while PostgreSQL is writing it, stopped at any byte
    /// (inside a long statement line included) and read on: the rest of a
    /// line is never read as a line of its own.
    #[test]
    fn a_growing_file_read_at_any_cut_frames_like_the_whole() {
        let time = TimeContext::new(Some("UTC")).unwrap();
        let statement = statement_line(900);
        let log = [
            event_line("checkpoint starting: wal"),
            statement.clone(),
            event_line("checkpoint starting: time"),
            statement,
        ];
        for chunk in [512, 64 << 10] {
            check_growing_file(|| Box::new(JsonScanner::new(&time, crate::frame::test_lexicon())), &log, chunk);
        }
    }
}
