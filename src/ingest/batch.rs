//! One read of a source: records framed chunk by chunk, classified into
//! events, and committed in batches with the position reached, so that a
//! crash or a stop loses nothing already read and repeats nothing.

use std::sync::atomic::{AtomicBool, Ordering};

use super::reader::FormatReader;
use super::{ImportReport, IngestError};
use crate::catalog::Catalog;
use crate::classify::{self, Outcome};
use crate::frame::{self, Pos, Record, Scan, Tail};
use crate::model::event::{Event, EventBody};
use crate::store::{SourceRow, SourceSpec, Store, StoreError};

/// How one read goes: the scanner, where it starts, what to do with the
/// end of the input, the daemon's stop flag and keep-alive, and the
/// progress told after every chunk.
pub(super) struct Reading<'a> {
    pub scanner: &'a mut dyn Scan,
    pub start: Pos,
    pub tail: Tail,
    pub stop: Option<&'a AtomicBool>,
    pub alive: Option<fn()>,
    /// The size of a plain file, for `progress`.
    pub total: Option<u64>,
    pub progress: &'a dyn Fn(super::Progress),
}

pub(super) fn run(
    store: &mut Store,
    row: &mut SourceRow,
    spec: &SourceSpec<'_>,
    reader: Box<dyn std::io::Read>,
    Reading { scanner, start, tail, stop, alive, total, progress }: Reading<'_>,
    kit: &FormatReader,
    report: &mut ImportReport,
) -> Result<Pos, IngestError> {
    let catalog = Catalog::global();
    let path = spec.path.to_string();
    let mut batch = Batch { events: Vec::new(), reached: start, committed: start };
    let result = frame::drive(reader, scanner, start, tail, |records, reached| {
        batch.events.extend(classify_all(catalog, kit, &records, report));
        batch.reached = reached;
        if batch.is_full() {
            report.stored += batch.commit(store, row, spec)?;
        }
        if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            return Err(IngestError::Stopped);
        }
        if let Some(alive) = alive {
            alive();
        }
        let (read_to, read) = (batch.reached.offset, batch.reached.offset - start.offset);
        progress(super::Progress { read_to, read, total, events: report.event_count() });
        Ok::<(), IngestError>(())
    });
    let result = match result {
        Err(IngestError::Stopped) => Ok(batch.reached),
        other => other,
    };
    // Whatever happened, what was read before it is kept.
    report.stored += batch.commit(store, row, spec)?;
    result.map_err(|e| match e {
        IngestError::Read { source, .. } => IngestError::Read { path: path.clone(), source },
        other => other,
    })
}

/// Events waiting for their commit, with the position they were read up to.
pub(super) struct Batch {
    events: Vec<Event>,
    reached: Pos,
    committed: Pos,
}

impl Batch {
    /// Commit at least every this many events or bytes of log: large enough
    /// that SQLite's per-commit cost vanishes, small enough to bound memory.
    pub(super) const MAX_EVENTS: usize = 10_000;
    const MAX_BYTES: u64 = 64 << 20;

    fn is_full(&self) -> bool {
        self.events.len() >= Self::MAX_EVENTS || self.reached.offset - self.committed.offset >= Self::MAX_BYTES
    }

    fn commit(&mut self, store: &mut Store, row: &mut SourceRow, spec: &SourceSpec<'_>) -> Result<u64, StoreError> {
        if self.reached == self.committed {
            return Ok(0);
        }
        let added = store.commit_batch(row, spec, &self.events, self.reached)?;
        self.events.clear();
        self.committed = self.reached;
        Ok(added as u64)
    }
}

fn classify_all(catalog: &Catalog, kit: &FormatReader, records: &[Record], report: &mut ImportReport) -> Vec<Event> {
    let mut events = Vec::new();
    for record in records {
        let outcome = classify::classify(catalog, record);
        let Some(at) = record.time else {
            report.unparsed += 1;
            report.unreadable += u64::from(outcome != Outcome::Ignored);
            continue;
        };
        let event =
            |nth, body| Event { at, pid: record.origin.pid, offset: record.offset, line: record.line, nth, body };
        match outcome {
            Outcome::Event(body) => {
                *report.events.entry(body.kind_name()).or_default() += 1;
                events.push(event(0, body));
            }
            Outcome::Rejected { looked_like, reason } => {
                report.rejected += 1;
                report.first_rejected.get_or_insert((record.line, reason));
                events.push(event(0, EventBody::Rejected { looked_like, reason }));
            }
            Outcome::Unparsed(kind) => {
                report.unparsed += 1;
                report.unreadable += 1;
                if report.warnings.len() < 20 {
                    report.warnings.push(format!(
                        "line {}: a {kind} line in a shape walwatch does not know: {:.200}",
                        record.line, record.message
                    ));
                }
            }
            Outcome::Ignored => {}
        }
        let embedded = classify::embedded_lookalikes(catalog, record, |l| kit.message_of(l));
        for (nth, looked_like) in (1..).zip(embedded) {
            let reason = "inside another entry (e.g. a logged statement)";
            report.rejected += 1;
            report.first_rejected.get_or_insert((record.line, reason));
            events.push(event(nth, EventBody::Rejected { looked_like, reason }));
        }
    }
    events
}
