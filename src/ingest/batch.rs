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
    pub(crate) scanner: &'a mut dyn Scan,
    pub(crate) start: Pos,
    pub(crate) tail: Tail,
    pub(crate) stop: Option<&'a AtomicBool>,
    pub(crate) alive: Option<fn()>,
    /// The size of a plain file, for `progress`.
    pub(crate) total: Option<u64>,
    pub(crate) progress: &'a dyn Fn(super::Progress),
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
    let mut server = ServerUid { known: store.clusters().server_uid(row.cluster_id)?, learnt: None };
    let result = frame::drive(reader, scanner, start, tail, |records, reached| {
        batch.events.extend(classify_all(catalog, kit, &records, report, &mut server));
        if let Some(uid) = server.learnt.take() {
            // Kept at once, before the batch that taught it: a later read
            // (a restart, the next file) must not learn it from a forger.
            server.known = Some(store.clusters_mut().learn_server_uid(row.cluster_id, uid)?);
        }
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
        let added = super::pairing::commit(store, row, spec, &self.events, self.reached)?;
        self.events.clear();
        self.committed = self.reached;
        Ok(added as u64)
    }
}

/// Why a record sent by another uid than the server's is refused.
pub(crate) const FOREIGN_UID: &str =
    "sent by another user than the server's (journald's _UID): a local user's logger -t postgres";

/// The uid the cluster's server runs as, for the records whose log names
/// their sender's uid (journald's `_UID`, which the kernel vouches for):
/// the store's, else that of the first record accepted as an event — the
/// server's first lines come before anything a local user could forge
/// into a log walwatch has never read. Every other uid is refused.
pub(super) struct ServerUid {
    known: Option<u32>,
    /// Learnt from this read's records, for the store to keep.
    learnt: Option<u32>,
}

impl ServerUid {
    /// `outcome` of a record sent by `uid`, refused when that is not the server's.
    fn judge(&mut self, outcome: Outcome, uid: Option<u32>) -> Outcome {
        let Some(uid) = uid else { return outcome };
        match (self.known, outcome) {
            (Some(server), Outcome::Event(body)) if server != uid => {
                Outcome::Rejected { looked_like: body.kind_name(), reason: FOREIGN_UID }
            }
            // Unreadable lines are counted only when they could be the server's.
            (Some(server), Outcome::Unparsed(_)) if server != uid => Outcome::Ignored,
            (None, outcome @ Outcome::Event(_)) => {
                (self.known, self.learnt) = (Some(uid), Some(uid));
                outcome
            }
            (_, outcome) => outcome,
        }
    }
}

fn classify_all(
    catalog: &Catalog,
    kit: &FormatReader,
    records: &[Record],
    report: &mut ImportReport,
    server: &mut ServerUid,
) -> Vec<Event> {
    let mut events = Vec::new();
    for record in records {
        let outcome = server.judge(classify::classify(catalog, record), record.origin.uid);
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
                if let EventBody::PointCut { .. } = body {
                    report.truncated += 1;
                    if report.warnings.len() < 20 {
                        let how = match record.cut {
                            frame::Cut::Marked => "cut by a pager (`>`)",
                            _ => "cut by the end of the input",
                        };
                        report.warnings.push(format!(
                            "line {}: a {} line {how}: its figures before the cut are stored, the rest left unknown, the checkpoint marked truncated",
                            record.line,
                            body.kind_name()
                        ));
                    }
                }
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
