//! The independent truth the real-PostgreSQL tests compare walwatch with: a
//! dumb line counter over the raw stderr log (prefix `%m [%p] ` with an
//! optional `%q%u@%d `), written without any of walwatch's code.

use std::fs;
use std::path::PathBuf;

use super::ts_key;

/// Messages only the checkpointer may write; a session record containing one
/// anywhere (TAB-continuations included) is a forgery walwatch must reject.
pub const LOOKALIKES: &[&str] = &[
    "checkpoint starting:",
    "checkpoint complete:",
    "restartpoint starting:",
    "restartpoint complete:",
    "checkpoints are occurring too frequently",
];

/// One server-written `checkpoint starting:` line.
#[derive(Debug, Clone, PartialEq)]
pub struct Start {
    pub ts_key: String,
    pub flags: String,
    pub file: String,
}

#[derive(Debug, Default)]
pub struct Truth {
    pub starts: i64,
    pub completes: i64,
    pub shutdown: i64,
    pub end_of_recovery: i64,
    pub wal: i64,
    pub time: i64,
    pub manual: i64,
    /// Starts whose flags are exactly "immediate force wait" (CHECKPOINT cmd).
    pub immediate_force_wait: i64,
    /// Starts flagged `immediate force`, whatever their trigger.
    pub immediate_force: i64,
    pub too_frequent: i64,
    pub parameter_changes: i64,
    /// Session records (user@db in the prefix) holding a LOOKALIKES phrase.
    pub forged_records: i64,
    pub start_list: Vec<Start>,
}

/// One prefixed line: `<ts> [<pid>] [user@db ]LEVEL:  message`.
struct Line<'a> {
    ts: &'a str,
    session: bool,
    level: &'a str,
    msg: &'a str,
}

/// None for lines not starting with a timestamp, e.g. TAB continuations.
fn parse_line(line: &str) -> Option<Line<'_>> {
    let b = line.as_bytes();
    if b.len() < 20 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return None;
    }
    let open = line.find(" [")?;
    let close = open + line[open..].find("] ")?;
    if !line[open + 2..close].bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let rest = &line[close + 2..];
    let colon = rest.find(":  ")?;
    let head = &rest[..colon]; // "LOG" or "user@db LOG"
    let level = head.rsplit(' ').next().unwrap_or(head);
    Some(Line { ts: &line[..open], session: head.contains(' '), level, msg: &rest[colon + 3..] })
}

/// Secondary lines belong to the record before them.
fn is_secondary(level: &str) -> bool {
    matches!(level, "DETAIL" | "HINT" | "QUERY" | "CONTEXT" | "STATEMENT" | "LOCATION")
}

/// Trigger precedence as documented: shutdown, end-of-recovery, wal, time,
/// else manual. `xlog` is the pre-10 spelling of `wal`.
pub fn trigger_of(flags: &str) -> &'static str {
    let has = |w: &str| flags.split_whitespace().any(|f| f == w);
    if has("shutdown") {
        "shutdown"
    } else if has("end-of-recovery") {
        "end-of-recovery"
    } else if has("wal") || has("xlog") {
        "wal"
    } else if has("time") {
        "time"
    } else {
        "manual"
    }
}

impl Truth {
    pub fn from_files(files: &[PathBuf]) -> Truth {
        let mut t = Truth::default();
        for f in files {
            let text = String::from_utf8_lossy(&fs::read(f).expect("read log")).into_owned();
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            t.add_text(&text, &name);
        }
        t
    }

    fn add_text(&mut self, text: &str, file: &str) {
        // (is the current record a session's, has it a look-alike yet)
        let mut record = (false, false);
        for raw in text.lines() {
            let parsed = parse_line(raw);
            if let Some(l) = parsed.as_ref().filter(|l| !is_secondary(l.level)) {
                self.forged_records += i64::from(record.0 && record.1);
                record = (l.session, false);
            }
            record.1 |= LOOKALIKES.iter().any(|p| raw.contains(p));
            match parsed {
                Some(l) if !l.session && l.level == "LOG" => self.count(l.ts, l.msg, file),
                _ => {}
            }
        }
        self.forged_records += i64::from(record.0 && record.1);
    }

    /// The files holding start lines, in the order first seen.
    pub fn start_files(&self) -> Vec<String> {
        let mut files: Vec<String> = Vec::new();
        for s in &self.start_list {
            if !files.contains(&s.file) {
                files.push(s.file.clone());
            }
        }
        files
    }

    /// What `walwatch summary --format json` must say about this log (a
    /// primary: no restartpoints), as (dotted path, count).
    pub fn expected_summary(&self) -> Vec<(&'static str, i64)> {
        vec![
            ("checkpoints.started", self.starts),
            ("checkpoints.completed", self.completes),
            ("checkpoints.by_trigger.shutdown", self.shutdown),
            ("checkpoints.by_trigger.end-of-recovery", self.end_of_recovery),
            ("checkpoints.by_trigger.wal", self.wal),
            ("checkpoints.by_trigger.time", self.time),
            ("checkpoints.by_trigger.manual", self.manual),
            ("restartpoints.started", 0),
            ("restartpoints.completed", 0),
            ("too_frequent", self.too_frequent),
            ("parameter_changes", self.parameter_changes),
            ("rejected", self.forged_records),
        ]
    }

    /// Everything but start_list, on one line.
    pub fn brief(&self) -> String {
        format!(
            "starts={} completes={} wal={} time={} manual={} (immediate force wait={}) \
             shutdown={} end-of-recovery={} too_frequent={} parameter_changes={} forged_records={}",
            self.starts,
            self.completes,
            self.wal,
            self.time,
            self.manual,
            self.immediate_force_wait,
            self.shutdown,
            self.end_of_recovery,
            self.too_frequent,
            self.parameter_changes,
            self.forged_records
        )
    }

    fn count(&mut self, ts: &str, msg: &str, file: &str) {
        if let Some(flags) = msg.strip_prefix("checkpoint starting: ") {
            self.starts += 1;
            match trigger_of(flags) {
                "shutdown" => self.shutdown += 1,
                "end-of-recovery" => self.end_of_recovery += 1,
                "wal" => self.wal += 1,
                "time" => self.time += 1,
                _ => self.manual += 1,
            }
            let has = |w: &str| flags.split_whitespace().any(|f| f == w);
            self.immediate_force_wait += i64::from(flags.trim() == "immediate force wait");
            self.immediate_force += i64::from(has("immediate") && has("force"));
            self.start_list.push(Start { ts_key: ts_key(ts), flags: flags.trim().to_string(), file: file.into() });
        } else if msg.starts_with("checkpoint complete: ") {
            self.completes += 1;
        } else if msg.starts_with("checkpoints are occurring too frequently (") {
            self.too_frequent += 1;
        } else if msg.starts_with("parameter \"") && msg.contains("\" changed to \"") {
            self.parameter_changes += 1;
        }
    }
}
