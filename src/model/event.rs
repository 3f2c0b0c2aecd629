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
pub struct Event {
    /// When PostgreSQL wrote the line, as a UTC instant.
    pub at: Timestamp,
    /// Process that wrote the line, when the format carries it.
    pub pid: Option<u32>,
    /// Byte offset of the record's first line within its (decompressed) source.
    pub offset: u64,
    /// 1-based line number of the record's first line within its source.
    pub line: u64,
    /// Tells apart several events of one kind from the same record (0 for
    /// the record's own event; 1, 2, … for forged lines embedded in it).
    pub nth: u32,
    pub body: EventBody,
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
    pub fn as_str(self) -> &'static str {
        match self {
            PointKind::Checkpoint => "checkpoint",
            PointKind::Restartpoint => "restartpoint",
        }
    }

    pub fn parse(name: &str) -> Option<PointKind> {
        [PointKind::Checkpoint, PointKind::Restartpoint].into_iter().find(|k| k.as_str() == name)
    }
}

impl std::fmt::Display for PointKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Every field of a `checkpoint complete:` / `restartpoint complete:` line.
/// Fields a given PostgreSQL version does not print are `None`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CompleteStats {
    pub buffers_written: i64,
    pub buffers_pct: f64,
    /// PostgreSQL 18+.
    pub slru_buffers_written: Option<i64>,
    pub wal_files_added: Option<i64>,
    pub wal_files_removed: Option<i64>,
    pub wal_files_recycled: Option<i64>,
    pub write_s: f64,
    pub sync_s: f64,
    pub total_s: f64,
    pub sync_files: Option<i64>,
    pub sync_longest_s: Option<f64>,
    pub sync_average_s: Option<f64>,
    pub distance_kb: Option<i64>,
    pub estimate_kb: Option<i64>,
    /// PostgreSQL 16+, as printed (`%X/%X`).
    pub lsn: Option<String>,
    pub redo_lsn: Option<String>,
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
            EventBody::Rejected { .. } => "rejected",
        }
    }
}

/// Why a checkpoint or restartpoint started, as walwatch reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Trigger {
    #[serde(rename = "shutdown")]
    Shutdown,
    #[serde(rename = "end-of-recovery")]
    EndOfRecovery,
    /// WAL volume: max_wal_size reached (a forced checkpoint).
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
    pub const ALL: [Trigger; 5] =
        [Trigger::Shutdown, Trigger::EndOfRecovery, Trigger::Wal, Trigger::Time, Trigger::Manual];

    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Shutdown => "shutdown",
            Trigger::EndOfRecovery => "end-of-recovery",
            Trigger::Wal => "wal",
            Trigger::Time => "time",
            Trigger::Manual => "manual",
        }
    }

    /// The trigger named `name` ("wal", "end-of-recovery", …).
    pub fn parse(name: &str) -> Option<Trigger> {
        Trigger::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// The trigger of a checkpoint, from its flag words: the first that
    /// applies in the order shutdown, end-of-recovery, wal, time, manual.
    pub fn of(flags: &[String]) -> Trigger {
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
