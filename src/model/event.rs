//! The vocabulary shared by every stage of the pipeline: what a PostgreSQL
//! log can tell us about checkpoints, in typed form.
//!
//! `frame` turns bytes into [`crate::frame::Record`]s, `classify` turns a
//! record into an [`EventBody`], `store` persists [`Event`]s. Nothing past
//! `classify` looks at log text again.

use jiff::Timestamp;
use serde::Serialize;

/// One recognised, trusted (or explicitly rejected) log event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Event {
    /// When PostgreSQL wrote the line, as a UTC instant.
    pub(crate) at: Timestamp,
    /// Process that wrote the line, when the format carries it.
    pub(crate) pid: Option<u32>,
    /// Byte offset of the record's first line within its (decompressed) source.
    pub(crate) offset: u64,
    /// 1-based line number of the record's first line within its source.
    pub(crate) line: u64,
    /// Tells apart several events of one kind from the same record (0 for
    /// the record's own event; 1, 2, … for forged lines embedded in it).
    pub(crate) nth: u32,
    pub(crate) body: EventBody,
}

/// Whether a checkpoint-shaped event came from a primary (checkpoint) or a
/// standby (restartpoint).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PointKind {
    Checkpoint,
    Restartpoint,
}

impl PointKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            PointKind::Checkpoint => "checkpoint",
            PointKind::Restartpoint => "restartpoint",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<PointKind> {
        [PointKind::Checkpoint, PointKind::Restartpoint].into_iter().find(|k| k.as_str() == name)
    }
}

impl std::fmt::Display for PointKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The figures of a `checkpoint complete:` / `restartpoint complete:` line,
/// listed once: the parser (`catalog`), the store's columns and
/// `walwatch checkpoints`' JSON keys and CSV header are all made from this
/// list, in this order. Each: its name (also the column and the key), its
/// kind (`Int`, `Real`, `Text`), and whether every version prints it
/// (`required`) or some do not (`optional`: `None` where a version does
/// not: sync files before 9.1, distance and estimate before 9.5, the LSNs
/// before 16, SLRU buffers before 18).
///
/// `$then` is a macro given the list as `name: Kind, need;` items.
macro_rules! point_figures {
    ($then:ident) => {
        $then! {
            buffers_written: Int, required;
            buffers_pct: Real, required;
            slru_buffers_written: Int, optional;
            wal_files_added: Int, optional;
            wal_files_removed: Int, optional;
            wal_files_recycled: Int, optional;
            write_s: Real, required;
            sync_s: Real, required;
            total_s: Real, required;
            sync_files: Int, optional;
            sync_longest_s: Real, optional;
            sync_average_s: Real, optional;
            distance_kb: Int, optional;
            estimate_kb: Int, optional;
            lsn: Text, optional;
            redo_lsn: Text, optional;
        }
    };
}
pub(crate) use point_figures;

/// A figure's Rust type as a complete line carries it.
macro_rules! figure_type {
    (Int, required) => { i64 };
    (Int, optional) => { Option<i64> };
    (Real, required) => { f64 };
    (Real, optional) => { Option<f64> };
    (Text, optional) => { Option<String> };
}

/// A figure's value from its text (`text` gives a named figure's text,
/// `real` reads a decimal as the log writes it); `None` for the whole line
/// when a required figure is missing or any figure does not read.
macro_rules! figure_from_text {
    ($text:ident, $real:ident, $name:expr, Int, required) => {
        $text($name)?.parse::<i64>().ok()?
    };
    ($text:ident, $real:ident, $name:expr, Real, required) => {
        $real($text($name)?)?
    };
    ($text:ident, $real:ident, $name:expr, Int, optional) => {
        match $text($name) {
            None => None,
            Some(s) => Some(s.parse::<i64>().ok()?),
        }
    };
    ($text:ident, $real:ident, $name:expr, Real, optional) => {
        match $text($name) {
            None => None,
            Some(s) => Some($real(s)?),
        }
    };
    ($text:ident, $real:ident, $name:expr, Text, optional) => {
        $text($name).map(str::to_string)
    };
}

macro_rules! complete_stats {
    ($($name:ident: $kind:ident, $need:ident;)*) => {
        /// Every figure of a complete line ([`point_figures`]).
        #[derive(Debug, Clone, PartialEq, Default)]
        pub struct CompleteStats {
            $(pub $name: figure_type!($kind, $need),)*
        }

        impl CompleteStats {
            /// The figures' names, in order.
            pub(crate) const FIGURES: &'static [&'static str] = &[$(stringify!($name)),*];
            /// How many figures there are.
            pub(crate) const COUNT: usize = Self::FIGURES.len();

            /// The figures read from their text: `text` gives a figure's
            /// text by name, `real` reads a decimal.
            pub(crate) fn parse<'t>(
                text: impl Fn(&str) -> Option<&'t str>,
                real: impl Fn(&str) -> Option<f64>,
            ) -> Option<CompleteStats> {
                Some(CompleteStats { $($name: figure_from_text!(text, real, stringify!($name), $kind, $need),)* })
            }

            /// The figures' values, in [`CompleteStats::FIGURES`]' order.
            pub(crate) fn values(&self) -> [Figure<'_>; Self::COUNT] {
                [$(Figure::from(&self.$name)),*]
            }
        }
    };
}
point_figures!(complete_stats);

macro_rules! cut_stats {
    ($($name:ident: $kind:ident, $need:ident;)*) => {
        /// The figures of a complete line cut short (a terminal's or a
        /// pager's cut, a file ending inside the line): each one the line
        /// printed whole before the cut, `None` for the rest.
        #[derive(Debug, Clone, PartialEq, Default)]
        pub struct CutStats {
            $(pub(crate) $name: figure_type!($kind, optional),)*
        }

        impl CutStats {
            /// The figures read from their text (`text` gives a figure's
            /// text by name, None for one after the cut); None when a text
            /// does not read.
            pub(crate) fn parse<'t>(
                text: impl Fn(&str) -> Option<&'t str>,
                real: impl Fn(&str) -> Option<f64>,
            ) -> Option<CutStats> {
                Some(CutStats { $($name: figure_from_text!(text, real, stringify!($name), $kind, optional),)* })
            }

            /// The figures' values, in [`CompleteStats::FIGURES`]' order.
            pub(crate) fn values(&self) -> [Figure<'_>; CompleteStats::COUNT] {
                [$(Figure::from(&self.$name)),*]
            }
        }
    };
}
point_figures!(cut_stats);

/// One figure's value, typed as the store keeps it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Figure<'a> {
    Int(Option<i64>),
    Real(Option<f64>),
    Text(Option<&'a str>),
}

/// As a CSV cell: the value as Rust prints it, nothing for none.
impl std::fmt::Display for Figure<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Figure::Int(Some(v)) => write!(f, "{v}"),
            Figure::Real(Some(v)) => write!(f, "{v}"),
            Figure::Text(Some(v)) => f.write_str(v),
            Figure::Int(None) | Figure::Real(None) | Figure::Text(None) => Ok(()),
        }
    }
}

impl From<&i64> for Figure<'_> {
    fn from(v: &i64) -> Self {
        Figure::Int(Some(*v))
    }
}

impl From<&Option<i64>> for Figure<'_> {
    fn from(v: &Option<i64>) -> Self {
        Figure::Int(*v)
    }
}

impl From<&f64> for Figure<'_> {
    fn from(v: &f64) -> Self {
        Figure::Real(Some(*v))
    }
}

impl From<&Option<f64>> for Figure<'_> {
    fn from(v: &Option<f64>) -> Self {
        Figure::Real(*v)
    }
}

impl<'a> From<&'a Option<String>> for Figure<'a> {
    fn from(v: &'a Option<String>) -> Self {
        Figure::Text(v.as_deref())
    }
}

/// How a shutdown was requested (`received smart|fast|immediate shutdown request`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShutdownMode {
    Smart,
    Fast,
    Immediate,
}

/// What a log record means. Flag words are normalised: `xlog` → `wal`,
/// `fast` → `immediate`.
#[derive(Debug, Clone, PartialEq)]
pub enum EventBody {
    /// `checkpoint starting: …` / `restartpoint starting: …`
    PointStart { kind: PointKind, flags: Vec<String> },
    /// `checkpoint complete: …` / `restartpoint complete: …`
    PointComplete { kind: PointKind, stats: Box<CompleteStats> },
    /// A complete line cut short where the cut is certain (a pager's `>`
    /// at its end, the input ending inside it): the checkpoint completed,
    /// and its figures are known up to the cut only.
    PointCut { kind: PointKind, stats: Box<CutStats> },
    /// `checkpoints are occurring too frequently (N seconds apart)`;
    /// `hint` tells whether the max_wal_size HINT followed it.
    TooFrequent { seconds: i64, hint: bool },
    /// `recovery restart point at X/Y` (standby).
    RecoveryRestartPoint { lsn: String },
    /// `parameter "X" changed to "Y"` (postmaster, after SIGHUP).
    ParameterChanged { name: String, value: String },
    /// `received SIGHUP, reloading configuration files`
    ConfigReload,
    /// `starting PostgreSQL 15.18 …` (12+); `version` is e.g. "15.18".
    ServerStart { version: Option<String> },
    /// `database system is ready to accept [read-only] connections`
    ServerReady { read_only: bool },
    /// `received … shutdown request`
    ShutdownRequest { mode: ShutdownMode },
    /// `database system is shut down`
    ServerShutdown,
    /// `redo starts at X/Y`
    RedoStart { lsn: String },
    /// `redo done at X/Y [system usage: … elapsed: S s]`
    RedoDone { lsn: String, elapsed_s: Option<f64> },
    /// `all server processes terminated; reinitializing` (crash restart)
    CrashReinit,
    /// `archive recovery complete`: the replay before it read WAL from an
    /// archive or a primary (point-in-time recovery, a promoted standby),
    /// not pg_wal after a crash.
    ArchiveRecoveryDone,
    /// A line that looked like an event but was written by a client session
    /// (RAISE LOG, a logged statement, …). Kept so it can be counted and shown.
    Rejected { looked_like: &'static str, reason: &'static str },
}

impl EventBody {
    /// Stable name used in the store and in JSON output.
    pub(crate) fn kind_name(&self) -> &'static str {
        match self {
            EventBody::PointStart { kind: PointKind::Checkpoint, .. } => "checkpoint_start",
            EventBody::PointStart { kind: PointKind::Restartpoint, .. } => "restartpoint_start",
            EventBody::PointComplete { kind: PointKind::Checkpoint, .. } => "checkpoint_complete",
            EventBody::PointComplete { kind: PointKind::Restartpoint, .. } => "restartpoint_complete",
            EventBody::PointCut { kind: PointKind::Checkpoint, .. } => "checkpoint_complete",
            EventBody::PointCut { kind: PointKind::Restartpoint, .. } => "restartpoint_complete",
            EventBody::TooFrequent { .. } => "too_frequent",
            EventBody::RecoveryRestartPoint { .. } => "recovery_restart_point",
            EventBody::ParameterChanged { .. } => "parameter_changed",
            EventBody::ConfigReload => "config_reload",
            EventBody::ServerStart { .. } => "server_start",
            EventBody::ServerReady { .. } => "server_ready",
            EventBody::ShutdownRequest { .. } => "shutdown_request",
            EventBody::ServerShutdown => "server_shutdown",
            EventBody::RedoStart { .. } => "redo_start",
            EventBody::RedoDone { .. } => "redo_done",
            EventBody::CrashReinit => "crash_reinit",
            EventBody::ArchiveRecoveryDone => "archive_recovery_done",
            EventBody::Rejected { .. } => "rejected",
        }
    }
}

/// Why a checkpoint or restartpoint started, as walwatch reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) enum Trigger {
    #[serde(rename = "shutdown")]
    Shutdown,
    #[serde(rename = "end-of-recovery")]
    EndOfRecovery,
    /// WAL volume: the WAL since the last checkpoint reached about
    /// max_wal_size / (1 + checkpoint_completion_target) (a forced checkpoint).
    #[serde(rename = "wal")]
    Wal,
    /// checkpoint_timeout.
    #[serde(rename = "time")]
    Time,
    /// Anything else: CHECKPOINT, a base backup, CREATE DATABASE, …
    #[serde(rename = "manual")]
    Manual,
}

impl Trigger {
    /// Every trigger, in the documented order.
    pub(crate) const ALL: [Trigger; 5] =
        [Trigger::Shutdown, Trigger::EndOfRecovery, Trigger::Wal, Trigger::Time, Trigger::Manual];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Trigger::Shutdown => "shutdown",
            Trigger::EndOfRecovery => "end-of-recovery",
            Trigger::Wal => "wal",
            Trigger::Time => "time",
            Trigger::Manual => "manual",
        }
    }

    /// The trigger named `name` ("wal", "end-of-recovery", …).
    pub(crate) fn parse(name: &str) -> Option<Trigger> {
        Trigger::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// The trigger of a checkpoint, from its flag words: the first that
    /// applies in the order shutdown, end-of-recovery, wal, time, manual.
    pub(crate) fn of(flags: &[String]) -> Trigger {
        let has = |w: &str| flags.iter().any(|f| f == w);
        [Trigger::Shutdown, Trigger::EndOfRecovery, Trigger::Wal, Trigger::Time]
            .into_iter()
            .find(|t| has(t.as_str()))
            .unwrap_or(Trigger::Manual)
    }
}

impl std::fmt::Display for Trigger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
