//! `walwatch import --undated`: a stderr log whose lines carry no time (an
//! empty `log_line_prefix`, a paste with the prefix cut off) read in file
//! order. Nothing of it is stored: without times its events cannot join the
//! history, the alert rules or the digest, which all reason in time. What
//! file order alone tells is reported: the events by kind, the checkpoints
//! paired start to complete, their triggers, and the distances between
//! them, from which a lower bound on `max_wal_size` follows.

use std::collections::{BTreeMap, HashMap};

use super::reader::{self, PrefixChoice};
use super::{IngestError, Options};
use crate::catalog::Catalog;
use crate::classify::{self, Outcome};
use crate::frame::formats::stderr::StderrScanner;
use crate::frame::time::TimeContext;
use crate::frame::{self, Format, Pos, Scan, Tail};
use crate::model::event::{EventBody, PointKind, Trigger};
use crate::source::Source;

/// One checkpoint or restartpoint of an undated log, in file order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UndatedPoint {
    pub(crate) kind: PointKind,
    /// The line of its start (or of its complete line, without a start).
    pub(crate) line: u64,
    /// None without a start line.
    pub(crate) trigger: Option<Trigger>,
    pub(crate) completed: bool,
    /// The complete line was cut short (see `frame::Cut`).
    pub(crate) truncated: bool,
    pub(crate) distance_kb: Option<i64>,
    pub(crate) estimate_kb: Option<i64>,
}

/// What an undated log says, in file order.
#[derive(Debug, Clone, Default)]
pub(crate) struct UndatedReport {
    pub(crate) name: String,
    pub(crate) prefix: String,
    pub(crate) lines: u64,
    pub(crate) entries: u64,
    /// Events read, by kind (rejected ones excluded).
    pub(crate) events: BTreeMap<&'static str, u64>,
    pub(crate) rejected: u64,
    pub(crate) unparsed: u64,
    pub(crate) unmatched: u64,
    pub(crate) points: Vec<UndatedPoint>,
    /// `parameter "X" changed to "Y"` lines, in order.
    pub(crate) changes: Vec<(String, String)>,
}

/// Reads `path`, a stderr log whose `log_line_prefix` has no time.
pub(crate) fn read_undated(path: &str, opts: &Options, time: &TimeContext) -> Result<UndatedReport, IngestError> {
    let source = Source::open(path)?;
    let name = source.name.clone();
    let format = opts.format.unwrap_or_else(|| Format::detect_named(&source.name, source.head()));
    let refuse = |message: String| IngestError::Prefix { path: name.clone(), message };
    if format != Format::Stderr {
        return Err(refuse(format!(
            "--undated reads stderr logs whose log_line_prefix has no time; this is a {} log, whose lines are \
             dated: import it without --undated",
            format.as_str()
        )));
    }
    let choice = PrefixChoice { given: opts.prefix.as_deref(), hint: None };
    let prefix = reader::undated_prefix(&choice, &source, &name)?;
    if reader::dates(&prefix) {
        return Err(refuse(format!(
            "log_line_prefix {:?} dates its lines: import it without --undated",
            prefix.spec()
        )));
    }
    let mut report =
        UndatedReport { name: name.clone(), prefix: prefix.spec().to_string(), ..UndatedReport::default() };
    let mut scanner = StderrScanner::new(prefix, time, reader::lexicon());
    let input = source.into_reader(0).map_err(|e| IngestError::Read { path: name.clone(), source: e })?;
    let catalog = Catalog::global();
    let mut pairing = Pairing::default();
    frame::drive(input, &mut scanner, Pos::START, Tail::Take, |records, _| {
        for record in &records {
            match classify::classify(catalog, record) {
                Outcome::Event(body) => {
                    *report.events.entry(body.kind_name()).or_default() += 1;
                    pairing.event(&mut report, record.line, record.origin.pid, body);
                }
                Outcome::Rejected { .. } => report.rejected += 1,
                Outcome::Unparsed(_) => report.unparsed += 1,
                Outcome::Ignored => {}
            }
        }
        Ok::<(), IngestError>(())
    })
    .map_err(|e| match e {
        IngestError::Read { source, .. } => IngestError::Read { path: name.clone(), source },
        other => other,
    })?;
    let stats = scanner.stats();
    (report.lines, report.entries) = (stats.lines, stats.entries);
    report.unparsed += stats.unparsed;
    report.unmatched = stats.unmatched;
    report.rejected += stats.inside_names;
    Ok(report)
}

/// Start and complete lines paired in file order: a complete line closes
/// the latest open start of its kind and process; a server start or stop
/// leaves nothing open.
#[derive(Default)]
struct Pairing {
    open: HashMap<(&'static str, Option<u32>), usize>,
}

impl Pairing {
    fn event(&mut self, report: &mut UndatedReport, line: u64, pid: Option<u32>, body: EventBody) {
        let points = &mut report.points;
        match body {
            EventBody::PointStart { kind, flags } => {
                self.open.insert((kind.as_str(), pid), points.len());
                points.push(UndatedPoint {
                    kind,
                    line,
                    trigger: Some(Trigger::of(&flags)),
                    completed: false,
                    truncated: false,
                    distance_kb: None,
                    estimate_kb: None,
                });
            }
            EventBody::PointComplete { kind, stats } => {
                self.complete(points, kind, pid, line, false, stats.distance_kb, stats.estimate_kb)
            }
            EventBody::PointCut { kind, stats } => {
                self.complete(points, kind, pid, line, true, stats.distance_kb, stats.estimate_kb)
            }
            EventBody::ServerStart { .. } | EventBody::ServerShutdown | EventBody::CrashReinit => self.open.clear(),
            EventBody::ParameterChanged { name, value } => report.changes.push((name, value)),
            _ => {}
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn complete(
        &mut self,
        points: &mut Vec<UndatedPoint>,
        kind: PointKind,
        pid: Option<u32>,
        line: u64,
        truncated: bool,
        distance_kb: Option<i64>,
        estimate_kb: Option<i64>,
    ) {
        let index = match self.open.remove(&(kind.as_str(), pid)) {
            Some(i) => i,
            None => {
                points.push(UndatedPoint {
                    kind,
                    line,
                    trigger: None,
                    completed: false,
                    truncated: false,
                    distance_kb: None,
                    estimate_kb: None,
                });
                points.len() - 1
            }
        };
        let p = &mut points[index];
        (p.completed, p.truncated, p.distance_kb, p.estimate_kb) = (true, truncated, distance_kb, estimate_kb);
    }
}
