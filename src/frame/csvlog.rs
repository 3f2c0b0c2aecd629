//! csvlog: one CSV record per entry; quoted fields may hold newlines, so
//! record boundaries are found with a quote-aware scan (a line inside a quoted
//! statement can look exactly like a record start — see the forged fixtures).
//!
//! Columns (PostgreSQL docs, "Using CSV-Format Log Output"): 23 up to 12,
//! 24 in 13 (+backend_type), 26 from 14 (+leader_pid, query_id).

use super::time::TimeContext;
use super::{lines, Consumed, FrameStats, Needles, Origin, Pos, Record, Scan};
use crate::classify::catalog::Catalog;

const LOG_TIME: usize = 0;
const USER: usize = 1;
const DATABASE: usize = 2;
const PID: usize = 3;
const CONNECTION_FROM: usize = 4;
const SEVERITY: usize = 11;
const MESSAGE: usize = 13;
const DETAIL: usize = 14;
const HINT: usize = 15;
const INTERNAL_QUERY: usize = 16;
const CONTEXT: usize = 18;
const QUERY: usize = 19;
const APPLICATION: usize = 22;
const BACKEND_TYPE: usize = 23;
/// The fewest columns any version writes.
const MIN_COLUMNS: usize = 23;

/// Whether `line` looks like the start of a csvlog record: a timestamp, then a comma.
pub fn looks_like(line: &[u8]) -> bool {
    let ts_end = memchr::memchr(b',', line).unwrap_or(0);
    ts_end >= 19
        && line[..4].iter().all(u8::is_ascii_digit)
        && line[4] == b'-'
        && memchr::memchr_iter(b',', line).count() >= 12
}

pub struct CsvScanner<'t> {
    time: &'t TimeContext,
    needles: &'static Needles,
    catalog: &'static Catalog,
    stats: FrameStats,
}

impl<'t> CsvScanner<'t> {
    pub fn new(time: &'t TimeContext) -> Self {
        CsvScanner { time, needles: Needles::global(), catalog: Catalog::global(), stats: FrameStats::default() }
    }

    fn parse(&mut self, bytes: &[u8], pos: Pos) -> Option<Record> {
        let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(bytes);
        let mut row = csv::ByteRecord::new();
        if !matches!(reader.read_byte_record(&mut row), Ok(true)) || row.len() < MIN_COLUMNS {
            self.stats.unparsed += 1;
            return None;
        }
        let get = |i: usize| row.get(i).map(|f| lines::lossy(f).into_owned()).filter(|s| !s.is_empty());
        let severity_word = get(SEVERITY).unwrap_or_default();
        let Some(severity) = self.catalog.severity(&severity_word) else {
            self.stats.unparsed += 1;
            return None;
        };
        let session = [USER, DATABASE, CONNECTION_FROM, APPLICATION].iter().any(|&i| get(i).is_some());
        Some(Record {
            offset: pos.offset,
            line: pos.line,
            time: get(LOG_TIME).and_then(|t| self.time.parse(&t).ok()),
            origin: Origin {
                pid: get(PID).and_then(|p| p.parse().ok()),
                backend_type: get(BACKEND_TYPE),
                session,
                session_checkable: true,
                doubt: None,
            },
            severity,
            message: get(MESSAGE).unwrap_or_default(),
            detail: get(DETAIL),
            hint: get(HINT),
            context: get(CONTEXT),
            statement: get(QUERY).or_else(|| get(INTERNAL_QUERY)),
        })
    }
}

/// End (exclusive, after the newline) of the CSV record starting at `start`,
/// or None when it does not end inside `buf`.
fn record_end(buf: &[u8], start: usize) -> Option<usize> {
    let mut quoted = false;
    for i in memchr::memchr2_iter(b'"', b'\n', &buf[start..]) {
        match buf[start + i] {
            b'"' => quoted = !quoted,
            _ if !quoted => return Some(start + i + 1),
            _ => {}
        }
    }
    None
}

impl Scan for CsvScanner<'_> {
    fn scan(&mut self, region: &[u8], pos: Pos, last: bool, emit: &mut dyn FnMut(Record)) -> Consumed {
        let hits: Vec<usize> = self.needles.find_iter(region).collect();
        let mut hits = hits.into_iter().peekable();
        let (mut start, mut line) = (0usize, pos.line);
        while start < region.len() {
            let end = match record_end(region, start) {
                Some(end) => end,
                None if last => region.len(),
                None => break,
            };
            let newlines = lines::count(&region[start..end]);
            self.stats.entries += 1;
            self.stats.lines += newlines.max(1);
            let mut candidate = false;
            while hits.next_if(|&h| h < end).is_some() {
                candidate = true;
            }
            if candidate {
                self.stats.candidates += 1;
                let at = Pos { offset: pos.offset + start as u64, line };
                if let Some(record) = self.parse(&region[start..end], at) {
                    emit(record);
                }
            }
            line += newlines;
            start = end;
        }
        Consumed { bytes: start, newlines: line - pos.line }
    }

    fn stats(&self) -> &FrameStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_boundaries_respect_quotes() {
        let buf = b"a,\"x\ny\",b\nc,d\n";
        assert_eq!(record_end(buf, 0), Some(10));
        assert_eq!(record_end(buf, 10), Some(14));
        assert_eq!(record_end(b"a,\"open\n", 0), None);
        assert_eq!(record_end(b"a,\"say \"\"hi\"\"\"\n", 0), Some(15));
    }

    #[test]
    fn recognises_csvlog_lines() {
        assert!(looks_like(b"2026-11-22 08:15:36.065 UTC,,,28301,,6b02a4a8.6e8d,1,,2026-11-22 08:15:36 UTC,,0,LOG,00000,\"x\",,,,,,,,,\"\",\"postmaster\""));
        assert!(!looks_like(b"2026-11-22 08:04:20.708 UTC [21752] LOG:  starting"));
    }
}
