//! jsonlog (PostgreSQL 15+): one JSON object per line. Keys are written only
//! when they have a value; `error_severity` is never translated.
//!
//! PostgreSQL escapes control characters, quotes and backslashes inside JSON
//! strings, so a newline in the log always ends a record: a line longer than
//! the buffer (a client's statement) is skipped to its newline and the next
//! record starts there, with no state to carry.

use serde::Deserialize;

use super::time::TimeContext;
use super::{lines, Consumed, FrameStats, Needles, Origin, Pos, Record, Scan};
use crate::classify::catalog::Catalog;

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
    pub fn new(time: &'t TimeContext) -> Self {
        JsonScanner { time, needles: Needles::global(), catalog: Catalog::global(), stats: FrameStats::default() }
    }

    fn parse(&mut self, line: &[u8], pos: Pos) -> Option<Record> {
        let Ok(e) = serde_json::from_slice::<Entry>(line) else {
            self.stats.unparsed += 1;
            return None;
        };
        let Some(severity) = e.error_severity.as_deref().and_then(|s| self.catalog.severity(s)) else {
            self.stats.unparsed += 1;
            return None;
        };
        let present = |f: &Option<String>| f.as_deref().is_some_and(|v| !v.is_empty());
        let session = present(&e.user) || present(&e.dbname) || present(&e.remote_host) || present(&e.application_name);
        Some(Record {
            offset: pos.offset,
            line: pos.line,
            time: e.timestamp.as_deref().and_then(|t| self.time.parse(t).ok()),
            origin: Origin { pid: e.pid, backend_type: e.backend_type, session, session_checkable: true },
            severity,
            message: e.message.unwrap_or_default(),
            detail: e.detail,
            hint: e.hint,
            context: e.context,
            statement: e.statement.or(e.internal_query),
        })
    }
}

impl Scan for JsonScanner<'_> {
    fn scan(&mut self, region: &[u8], pos: Pos, _last: bool, emit: &mut dyn FnMut(Record)) -> Consumed {
        let newlines = lines::count(region);
        let physical = newlines + u64::from(region.last().is_some_and(|&b| b != b'\n'));
        self.stats.lines += physical;
        self.stats.entries += physical;
        let (mut done, mut counted, mut line) = (0usize, 0usize, pos.line);
        let hits: Vec<usize> = self.needles.find_iter(region).collect();
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
            if let Some(record) = self.parse(lines::text(region, start), at) {
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
