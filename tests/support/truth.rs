//! The independent truth the real-PostgreSQL and fixture tests compare
//! walwatch with: a dumb counter over the raw log, written without any of
//! walwatch's code (no `src/`, no `parsers/`).
//!
//! It reads what the fixtures and the test servers write:
//! * stderr with any `log_line_prefix` built from `%m %t %p %l %q %u %d %a %h
//!   %b` (turned into one regex; a record starts at a line the regex matches,
//!   TAB lines continue it);
//! * syslog as rsyslogd writes it: the envelope and `[seq-chunk] ` are cut
//!   off, `#011` is a TAB, and the rest is read as stderr;
//! * csvlog (the `csv` crate) and jsonlog (`serde_json`), chosen by the file
//!   extension `.csv` / `.json`;
//! * `lc_messages` C, de, fr and ja, from a small hand-typed table of the
//!   message heads (PostgreSQL 15's catalogs, src/backend/po/*.po).
//!
//! A record is a real event when its severity is LOG, no client session wrote
//! it (no `%q` tail, no user/database/application/host, `%b` or backend_type
//! not `client backend`), it carries no CONTEXT or STATEMENT, and its message
//! starts with the event's head. A too-frequent warning has its HINT when the
//! next line of the same pid is a HINT about max_wal_size (csv/json: the hint
//! field).
//!
//! `forged_records` counts what walwatch must reject: each record that starts
//! like an event but is not real, plus each line inside a record (a message's
//! continuation lines, a statement's lines) that is a whole log line of the
//! same format whose message starts like an event.

use std::fs;
use std::path::{Path, PathBuf};

use regex::Regex;
use serde_json::Value;

use super::ts_key;

/// Messages only the checkpointer may write (English); kept for tests that
/// look for them in raw text.
pub const LOOKALIKES: &[&str] = &[
    "checkpoint starting:",
    "checkpoint complete:",
    "restartpoint starting:",
    "restartpoint complete:",
    "checkpoints are occurring too frequently",
];

/// The message heads of one `lc_messages` language, typed in by hand.
pub struct Heads {
    pub checkpoint_start: &'static str,
    pub restartpoint_start: &'static str,
    pub checkpoint_complete: &'static str,
    pub restartpoint_complete: &'static str,
    pub recovery_restart_point: &'static str,
    pub too_frequent: &'static str,
    /// The HINT text of the too-frequent warning, up to its final period.
    pub hint: &'static str,
    /// `parameter "%s" changed to "%s"`: (what it starts with, what follows the name).
    pub parameter_changed: (&'static str, &'static str),
    /// The severity word of a HINT line.
    pub hint_level: &'static str,
    /// Severity words of the lines that belong to the record before them, in
    /// the order DETAIL, HINT, QUERY, CONTEXT, STATEMENT, LOCATION.
    pub secondary: &'static [&'static str],
}

pub const ENGLISH: Heads = Heads {
    checkpoint_start: "checkpoint starting:",
    restartpoint_start: "restartpoint starting:",
    checkpoint_complete: "checkpoint complete:",
    restartpoint_complete: "restartpoint complete:",
    recovery_restart_point: "recovery restart point at ",
    too_frequent: "checkpoints are occurring too frequently (",
    hint: "Consider increasing the configuration parameter \"max_wal_size\"",
    parameter_changed: ("parameter \"", "\" changed to \""),
    hint_level: "HINT",
    secondary: &["DETAIL", "HINT", "QUERY", "CONTEXT", "STATEMENT", "LOCATION"],
};

pub const GERMAN: Heads = Heads {
    checkpoint_start: "Checkpoint beginnt:",
    restartpoint_start: "Restart-Punkt beginnt:",
    checkpoint_complete: "Checkpoint komplett:",
    restartpoint_complete: "Restart-Punkt komplett:",
    recovery_restart_point: "Recovery-Restart-Punkt bei ",
    too_frequent: "Checkpoints passieren zu oft (",
    hint: "Erhöhen Sie eventuell den Konfigurationsparameter »max_wal_size«",
    parameter_changed: ("Parameter »", "« auf »"),
    hint_level: "TIPP",
    secondary: &["DETAIL", "TIPP", "ANFRAGE", "ZUSAMMENHANG", "ANWEISUNG", "ORT"],
};

pub const FRENCH: Heads = Heads {
    checkpoint_start: "début du checkpoint :",
    restartpoint_start: "début du restartpoint :",
    checkpoint_complete: "checkpoint terminé :",
    restartpoint_complete: "restartpoint terminé :",
    recovery_restart_point: "la ré-exécution en restauration commence à ",
    // The French message goes on on a second line: "\n(toutes les %d secondes)".
    too_frequent: "les points de vérification (checkpoints) arrivent trop fréquemment",
    hint: "Considérez l'augmentation du paramètre « max_wal_size »",
    parameter_changed: ("paramètre « ", " » modifié par « "),
    hint_level: "ASTUCE",
    secondary: &["DÉTAIL", "ASTUCE", "REQUÊTE", "CONTEXTE", "INSTRUCTION", "EMPLACEMENT"],
};

pub const JAPANESE: Heads = Heads {
    checkpoint_start: "チェックポイント開始:",
    restartpoint_start: "リスタートポイント開始:",
    checkpoint_complete: "チェックポイント完了:",
    restartpoint_complete: "リスタートポイント完了:",
    recovery_restart_point: "リカバリ再開ポイントは",
    too_frequent: "チェックポイントの発生周期が短すぎます(",
    hint: "設定パラメータ\"max_wal_size\"を増やすことを検討してください",
    parameter_changed: ("パラメータ\"", "\"は\""),
    hint_level: "ヒント",
    secondary: &["詳細", "ヒント", "問い合わせ", "文脈", "文", "場所"],
};

impl Heads {
    /// The table for an `lc_messages` value ("C", "de_DE.UTF-8", ...).
    pub fn for_lc_messages(lc: &str) -> &'static Heads {
        match lc.get(..2).unwrap_or("") {
            "de" => &GERMAN,
            "fr" => &FRENCH,
            "ja" => &JAPANESE,
            _ if matches!(lc, "C" | "POSIX" | "") || lc.starts_with("en") => &ENGLISH,
            _ => panic!("no message heads typed in for lc_messages {lc:?}"),
        }
    }

    /// The event kind a message starts like, if any.
    pub fn kind_of(&self, msg: &str) -> Option<&'static str> {
        let (param, changed) = self.parameter_changed;
        if msg.starts_with(self.checkpoint_start) {
            Some("checkpoint_start")
        } else if msg.starts_with(self.restartpoint_start) {
            Some("restartpoint_start")
        } else if msg.starts_with(self.checkpoint_complete) {
            Some("checkpoint_complete")
        } else if msg.starts_with(self.restartpoint_complete) {
            Some("restartpoint_complete")
        } else if msg.starts_with(self.recovery_restart_point) {
            Some("recovery_restart_point")
        } else if msg.starts_with(self.too_frequent) {
            Some("too_frequent")
        } else if msg.starts_with(param) && msg.lines().next().unwrap_or("").contains(changed) {
            Some("parameter_changed")
        } else {
            None
        }
    }
}

/// How to read a log: the stderr prefix (also used for the `.log` files next
/// to csvlog/jsonlog ones, and inside syslog lines), whether the stderr
/// files are syslog, and the messages' language.
pub struct Layout {
    pub prefix: String,
    pub syslog: bool,
    pub heads: &'static Heads,
}

impl Layout {
    /// The test servers' layout: `%m [%p] %q%u@%d `, English.
    pub fn default_stderr() -> Layout {
        Layout { prefix: "%m [%p] %q%u@%d ".into(), syslog: false, heads: &ENGLISH }
    }

    /// rsyslogd's file of a server logging with that prefix, English.
    pub fn syslog(prefix: &str) -> Layout {
        Layout { prefix: prefix.into(), syslog: true, heads: &ENGLISH }
    }

    /// From a fixture's truth.json (`log_line_prefix`, `lc_messages`).
    pub fn of_fixture(truth: &Value) -> Layout {
        Layout {
            prefix: truth["log_line_prefix"].as_str().expect("log_line_prefix").into(),
            syslog: false,
            heads: Heads::for_lc_messages(truth["lc_messages"].as_str().expect("lc_messages")),
        }
    }
}

/// One server-written `checkpoint starting:` line.
#[derive(Debug, Clone, PartialEq)]
pub struct Start {
    /// [`ts_key`] of the log's timestamp in UTC, or the raw timestamp when
    /// its zone is none of those the counter knows ([`zone_offset_s`]).
    pub ts_key: String,
    pub flags: String,
    pub file: String,
    /// 1-based line where the record starts.
    pub line: usize,
}

/// A checkpoint cycle as the raw log shows it ([`Truth::cycles`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedCycle {
    /// The trigger of the start that ends it.
    pub trigger: &'static str,
    /// From the start before it to its own start.
    pub seconds: f64,
    /// What its checkpoint's complete line prints; None: no complete line.
    pub distance_kb: Option<f64>,
}

/// Seconds since the epoch of a UTC [`ts_key`] ("YYYYMMDDHHMMSSmmm").
fn key_seconds(key: &str) -> f64 {
    let civil = jiff::civil::DateTime::strptime("%Y%m%d%H%M%S", &key[..14]).unwrap_or_else(|e| panic!("{key}: {e}"));
    let whole = civil.to_zoned(jiff::tz::TimeZone::UTC).unwrap().timestamp().as_second();
    whole as f64 + key[14..].parse::<f64>().unwrap() / 1000.0
}

/// The `distance=N kB` of a complete line, in kB.
pub fn distance_kb(message: &str) -> f64 {
    let at = message.find("distance=").unwrap_or_else(|| panic!("no distance in {message}"));
    match numbers(&message[at..]).first() {
        Some(Num::Dec(kb)) => *kb,
        other => panic!("distance {other:?} in {message}"),
    }
}

/// One server-written `checkpoint complete:` / `restartpoint complete:` record.
#[derive(Debug, Clone, PartialEq)]
pub struct Complete {
    pub kind: &'static str,
    /// As [`Start::ts_key`].
    pub ts_key: String,
    pub file: String,
    /// 1-based line where the record starts.
    pub line: usize,
    pub message: String,
}

/// A number in a complete line, as printed: an LSN or a decimal (German
/// messages print some with a comma).
#[derive(Debug, PartialEq)]
pub enum Num {
    Lsn(String),
    Dec(f64),
}

/// Every number of a message, in order, whatever its language: for a
/// complete line, buffers, percent, (SLRU buffers, 18+), WAL files
/// added/removed/recycled, write/sync/total, sync files, longest, average,
/// distance, estimate, (LSN and redo LSN, 17+).
pub fn numbers(message: &str) -> Vec<Num> {
    let re = Regex::new(r"\b[0-9A-F]+/[0-9A-F]+\b|[0-9]+(?:[.,][0-9]+)?").unwrap();
    re.find_iter(message)
        .map(|m| match m.as_str() {
            s if s.contains('/') => Num::Lsn(s.to_string()),
            s => Num::Dec(s.replace(',', ".").parse().unwrap()),
        })
        .collect()
}

/// The checkpoint fields walwatch stores (`checkpoints --format json` keys,
/// `checkpoint` table columns) in the order a complete line prints them.
pub const COMPLETE_FIELDS: [&str; 16] = [
    "buffers_written",
    "buffers_pct",
    "slru_buffers_written",
    "wal_files_added",
    "wal_files_removed",
    "wal_files_recycled",
    "write_s",
    "sync_s",
    "total_s",
    "sync_files",
    "sync_longest_s",
    "sync_average_s",
    "distance_kb",
    "estimate_kb",
    "lsn",
    "redo_lsn",
];

/// A `checkpoints --format json` object's fields as [`Num`]s, in print order
/// (nulls, for fields this version does not log, left out).
pub fn stored_numbers(cp: &Value) -> Vec<Num> {
    COMPLETE_FIELDS
        .iter()
        .filter_map(|f| match &cp[*f] {
            Value::Null => None,
            Value::String(s) => Some(Num::Lsn(s.clone())),
            Value::Number(n) => Some(Num::Dec(n.as_f64().unwrap())),
            other => panic!("{f} is {other} in {cp}"),
        })
        .collect()
}

/// Each complete line of the log equals, number for number, the one
/// `checkpoints --format json` row completed at that line's time (UTC logs).
pub fn assert_complete_numbers(cps: &[Value], t: &Truth, who: &str) {
    let completed: Vec<&Value> = cps.iter().filter(|cp| cp["completed_at"].is_string()).collect();
    assert_eq!(completed.len(), t.complete_list.len(), "[{who}] completed rows vs complete lines");
    for c in &t.complete_list {
        let same_time: Vec<&&Value> =
            completed.iter().filter(|cp| ts_key(cp["completed_at"].as_str().unwrap()) == c.ts_key).collect();
        assert_eq!(
            same_time.len(),
            1,
            "[{who}] rows completed at {} ({} line {}): {same_time:?}",
            c.ts_key,
            c.file,
            c.line
        );
        let (got, want) = (stored_numbers(same_time[0]), numbers(&c.message));
        assert_eq!(got, want, "[{who}] stored (left) vs printed numbers of {} line {}: {}", c.file, c.line, c.message);
    }
}

const TRIGGERS: [&str; 5] = ["shutdown", "end-of-recovery", "wal", "time", "manual"];

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
    pub restartpoint_starts: i64,
    pub restartpoint_completes: i64,
    /// Restartpoint starts by trigger, in the order of TRIGGERS.
    pub restartpoint_by_trigger: [i64; 5],
    pub recovery_restart_points: i64,
    pub too_frequent: i64,
    /// Too-frequent warnings carrying their HINT.
    pub hints: i64,
    pub parameter_changes: i64,
    /// What walwatch must reject (see the module comment).
    pub forged_records: i64,
    pub start_list: Vec<Start>,
    pub complete_list: Vec<Complete>,
}

/// One log record, whatever the format.
#[derive(Debug, Default)]
struct Rec {
    line: usize,
    ts: String,
    pid: String,
    client: bool,
    level: String,
    /// The whole message, continuation lines joined with '\n'.
    msg: String,
    hint: Option<String>,
    context: bool,
    statement: Option<String>,
}

/// A compiled stderr prefix.
struct PrefixRe {
    re: Regex,
}

impl PrefixRe {
    /// `^<prefix>(?P<level>...) ?:  (?P<msg>.*)$`, the `%q` tail optional.
    fn new(spec: &str) -> PrefixRe {
        let mut re = String::from("^");
        let mut open_q = false;
        let mut chars = spec.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                re.push_str(&regex::escape(&c.to_string()));
                continue;
            }
            let piece = match chars.next().expect("dangling % in prefix") {
                'm' => r"(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \S+)",
                't' => r"(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+)",
                'p' => r"(?P<pid>\d+)",
                'l' => r"\d+",
                'u' => r"(?P<u>\S*?)",
                'd' => r"(?P<d>\S*?)",
                'a' => r"(?P<a>.*?)",
                'h' => r"(?P<h>\S*?)",
                'b' => r"(?P<b>.*?)",
                'q' => {
                    open_q = true;
                    "(?P<q>"
                }
                '%' => "%",
                other => panic!("prefix escape %{other} not known to the test counter"),
            };
            re.push_str(piece);
        }
        if open_q {
            re.push_str(")?");
        }
        re.push_str(r"(?P<level>[^\s:]+) ?:  (?P<msg>.*)$");
        PrefixRe { re: Regex::new(&re).expect("prefix regex") }
    }

    /// (ts, pid, client, level, message) of a prefixed line.
    fn parse(&self, line: &str) -> Option<(String, String, bool, String, String)> {
        let c = self.re.captures(line)?;
        let get = |n: &str| c.name(n).map(|m| m.as_str()).unwrap_or("");
        let client = c.name("q").is_some()
            || ["u", "d", "a", "h"].iter().any(|n| !get(n).is_empty())
            || get("b") == "client backend";
        Some((get("ts").into(), get("pid").into(), client, get("level").into(), get("msg").into()))
    }
}

/// Strips rsyslogd's envelope `Mon DD HH:MM:SS host ident[pid]: [seq-chunk] `
/// (or with an RFC 3339 time) and turns `#011` back into TABs (`#012`, a
/// newline, is left to the caller); None for
/// other lines. Also returns the sender's pid and the envelope's time: RFC 3339 in UTC as
/// `YYYY-MM-DD HH:MM:SS.ffffff UTC`, else as written.
fn unwrap_syslog(line: &str) -> Option<(String, String, String)> {
    let (head, rest) = line.split_once("]: [")?;
    let (seq, text) = rest.split_once("] ")?;
    if !seq.split('-').all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    let stamp = head.split(' ').next().unwrap_or("");
    let time = match stamp.strip_suffix("+00:00").or_else(|| stamp.strip_suffix('Z')) {
        Some(utc) if stamp.as_bytes().get(10) == Some(&b'T') => format!("{} UTC", utc.replacen('T', " ", 1)),
        _ => head.get(..15).unwrap_or("").to_string(),
    };
    let pid = head.rsplit('[').next().unwrap_or("").to_string();
    Some((time, pid, text.replace("#011", "\t")))
}

fn stderr_records(text: &str, prefix: &PrefixRe, heads: &Heads, syslog: bool) -> Vec<Rec> {
    // First the entries (one per prefixed line, with its TAB lines).
    let mut entries: Vec<Rec> = Vec::new();
    // A syslog message sent whole (syslog_split_messages = off) holds all
    // of an entry's lines, rsyslog's `#012` between them.
    let lines = text.lines().enumerate().flat_map(|(i, raw)| match (syslog, unwrap_syslog(raw)) {
        (false, _) => vec![(i, String::new(), String::new(), raw.to_string())],
        (true, None) => vec![],
        (true, Some((ts, pid, body))) => {
            body.split("#012").map(|l| (i, ts.clone(), pid.clone(), l.to_string())).collect::<Vec<_>>()
        }
    });
    for (i, envelope_ts, envelope_pid, line) in lines {
        let line = line.as_str();
        if let Some((ts, pid, client, level, msg)) = prefix.parse(line) {
            // A prefix without a time or pid: the envelope's date the line
            // and name its process.
            let ts = if ts.is_empty() { envelope_ts } else { ts };
            let pid = if pid.is_empty() { envelope_pid } else { pid };
            entries.push(Rec { line: i + 1, ts, pid, client, level, msg, ..Rec::default() });
        } else if let Some(last) = entries.last_mut() {
            last.msg.push('\n');
            last.msg.push_str(line.strip_prefix('\t').unwrap_or(line));
        }
    }
    // Then secondary lines of the same pid join the record before them.
    let mut records: Vec<Rec> = Vec::new();
    for e in entries {
        let joins = heads.secondary.contains(&e.level.as_str())
            && records.last().is_some_and(|r| r.pid == e.pid && r.client == e.client);
        if !joins {
            records.push(e);
            continue;
        }
        let r = records.last_mut().unwrap();
        match e.level.as_str() {
            l if l == heads.hint_level => r.hint = Some(e.msg),
            l if l == heads.secondary[3] => r.context = true,
            l if l == heads.secondary[4] => r.statement = Some(e.msg),
            _ => {}
        }
    }
    records
}

/// csvlog columns (PostgreSQL 13+; 9.6-12 lack the last ones). A client
/// wrote it when user, database, host or application is set, or its
/// backend_type says so.
fn csv_rec(fields: &csv::StringRecord, line: usize) -> Rec {
    let f = |i: usize| fields.get(i).unwrap_or("").to_string();
    let opt = |i: usize| Some(f(i)).filter(|s| !s.is_empty());
    Rec {
        line,
        ts: f(0),
        pid: f(3),
        client: [1, 2, 4, 22].iter().any(|&i| !f(i).is_empty()) || f(23) == "client backend",
        level: f(11),
        msg: f(13),
        hint: opt(15),
        context: !f(18).is_empty(),
        statement: opt(19),
    }
}

fn csv_records(text: &str) -> Vec<Rec> {
    let mut r = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(text.as_bytes());
    let mut out = Vec::new();
    let mut rec = csv::StringRecord::new();
    loop {
        let line = r.position().line() as usize;
        match r.read_record(&mut rec) {
            Ok(true) => out.push(csv_rec(&rec, line)),
            Ok(false) => break,
            Err(e) => panic!("csvlog line {line}: {e}"),
        }
    }
    out
}

fn json_rec(v: &Value, line: usize) -> Rec {
    let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let opt = |k: &str| Some(s(k)).filter(|x| !x.is_empty());
    Rec {
        line,
        ts: s("timestamp"),
        pid: v.get("pid").map(|p| p.to_string()).unwrap_or_default(),
        client: !s("user").is_empty() || !s("dbname").is_empty() || s("backend_type") == "client backend",
        level: s("error_severity"),
        msg: s("message"),
        hint: opt("hint"),
        context: !s("context").is_empty(),
        statement: opt("statement"),
    }
}

fn json_records(text: &str) -> Vec<Rec> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("jsonlog line {}: {e}", i + 1));
            json_rec(&v, i + 1)
        })
        .collect()
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Stderr,
    Csv,
    Json,
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

/// The offset from UTC, in seconds, of a zone as the fixtures' servers
/// print it (`%m`): UTC and the abbreviations of their log_timezones
/// (Europe/Berlin and Paris, Asia/Kolkata and Tokyo, America/New_York;
/// "IST" is India's here), or a numeric offset (`+03`, `-0330`), which
/// PostgreSQL prints for a zone without an abbreviation. Typed in, not
/// looked up: the counter shares no time code with walwatch.
fn zone_offset_s(zone: &str) -> Option<i64> {
    const NAMED: [(&str, i64); 9] = [
        ("UTC", 0),
        ("GMT", 0),
        ("Z", 0),
        ("CET", 3600),
        ("CEST", 7200),
        ("IST", 19_800),
        ("JST", 32_400),
        ("EST", -18_000),
        ("EDT", -14_400),
    ];
    if let Some((_, offset)) = NAMED.iter().find(|(name, _)| *name == zone) {
        return Some(*offset);
    }
    let (sign, digits) = match zone.split_at_checked(1)? {
        ("+", d) => (1, d.replace(':', "")),
        ("-", d) => (-1, d.replace(':', "")),
        _ => return None,
    };
    let (hours, minutes) = match digits.len() {
        2 => (digits.parse::<i64>().ok()?, 0),
        4 => (digits[..2].parse::<i64>().ok()?, digits[2..].parse::<i64>().ok()?),
        _ => return None,
    };
    Some(sign * (hours * 3600 + minutes * 60))
}

/// [`ts_key`] of a log timestamp in UTC, the raw text when its zone is not
/// one [`zone_offset_s`] knows.
fn key_or_raw(ts: &str) -> String {
    let ts = ts.trim();
    let Some((civil, offset)) = ts.rsplit_once(' ').and_then(|(c, z)| Some((c, zone_offset_s(z)?))) else {
        return ts.to_string();
    };
    let fmt = if civil.contains('.') { "%Y-%m-%d %H:%M:%S%.f" } else { "%Y-%m-%d %H:%M:%S" };
    let utc = jiff::civil::DateTime::strptime(fmt, civil)
        .ok()
        .and_then(|local| local.checked_sub(jiff::SignedDuration::from_secs(offset)).ok());
    match utc {
        Some(utc) => ts_key(&format!("{} UTC", utc.strftime("%Y-%m-%d %H:%M:%S%.3f"))),
        None => ts.to_string(),
    }
}

impl Truth {
    /// The test servers' logs: `%m [%p] %q%u@%d `, English.
    pub fn from_files(files: &[PathBuf]) -> Truth {
        Truth::read(files, &Layout::default_stderr())
    }

    /// Any log the counter knows (see the module comment).
    pub fn read(files: &[PathBuf], layout: &Layout) -> Truth {
        let prefix = PrefixRe::new(&layout.prefix);
        let mut t = Truth::default();
        for f in files {
            let text = String::from_utf8_lossy(&fs::read(f).expect("read log")).into_owned();
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            let kind = match Path::new(&name).extension().and_then(|e| e.to_str()) {
                Some("csv") => Kind::Csv,
                Some("json") => Kind::Json,
                _ => Kind::Stderr,
            };
            let records = match kind {
                Kind::Csv => csv_records(&text),
                Kind::Json => json_records(&text),
                Kind::Stderr => stderr_records(&text, &prefix, layout.heads, layout.syslog),
            };
            for r in &records {
                t.add(r, &name, kind, &prefix, layout.heads);
            }
        }
        t
    }

    fn add(&mut self, r: &Rec, file: &str, kind: Kind, prefix: &PrefixRe, heads: &Heads) {
        let first = r.msg.lines().next().unwrap_or("");
        let looks = heads.kind_of(first);
        let real = r.level == "LOG" && !r.client && !r.context && r.statement.is_none();
        if looks.is_some() && !real {
            self.forged_records += 1;
        }
        // Whole log lines inside the record: each would be an event alone.
        let inner = r.msg.lines().skip(1).chain(r.statement.iter().flat_map(|s| s.lines()));
        for line in inner {
            let msg = match kind {
                Kind::Stderr => prefix.parse(line).map(|p| p.4),
                Kind::Csv => {
                    let mut rd =
                        csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(line.as_bytes());
                    rd.records().next().and_then(Result::ok).and_then(|f| f.get(13).map(String::from))
                }
                Kind::Json => serde_json::from_str::<Value>(line)
                    .ok()
                    .and_then(|v| v.get("message").and_then(Value::as_str).map(String::from)),
            };
            if msg.is_some_and(|m| heads.kind_of(m.lines().next().unwrap_or("")).is_some()) {
                self.forged_records += 1;
            }
        }
        let Some(looks) = looks.filter(|_| real) else { return };
        match looks {
            "checkpoint_start" | "restartpoint_start" => {
                let head = if looks == "checkpoint_start" { heads.checkpoint_start } else { heads.restartpoint_start };
                let flags = first[head.len()..].trim().to_string();
                let trig = trigger_of(&flags);
                if looks == "restartpoint_start" {
                    self.restartpoint_starts += 1;
                    self.restartpoint_by_trigger[TRIGGERS.iter().position(|t| *t == trig).unwrap()] += 1;
                    return;
                }
                self.starts += 1;
                match trig {
                    "shutdown" => self.shutdown += 1,
                    "end-of-recovery" => self.end_of_recovery += 1,
                    "wal" => self.wal += 1,
                    "time" => self.time += 1,
                    _ => self.manual += 1,
                }
                let has = |w: &str| flags.split_whitespace().any(|f| f == w);
                self.immediate_force_wait += i64::from(flags == "immediate force wait");
                self.immediate_force += i64::from(has("immediate") && has("force"));
                self.start_list.push(Start { ts_key: key_or_raw(&r.ts), flags, file: file.into(), line: r.line });
            }
            "checkpoint_complete" | "restartpoint_complete" => {
                if looks == "checkpoint_complete" {
                    self.completes += 1;
                } else {
                    self.restartpoint_completes += 1;
                }
                self.complete_list.push(Complete {
                    kind: looks,
                    ts_key: key_or_raw(&r.ts),
                    file: file.into(),
                    line: r.line,
                    message: r.msg.clone(),
                });
            }
            "recovery_restart_point" => self.recovery_restart_points += 1,
            "too_frequent" => {
                self.too_frequent += 1;
                self.hints += i64::from(r.hint.as_deref().is_some_and(|h| h.starts_with(heads.hint)));
            }
            "parameter_changed" => self.parameter_changes += 1,
            _ => unreachable!(),
        }
    }

    /// The checkpoint cycles the log shows, in order: from each
    /// server-written start to the next one in the same file, with the
    /// distance the second one's complete line prints (the first complete
    /// after it in its file, before the next start). UTC logs.
    pub fn cycles(&self) -> Vec<LoggedCycle> {
        let complete_after = |s: &Start, until: usize| {
            self.complete_list
                .iter()
                .find(|c| c.kind == "checkpoint_complete" && c.file == s.file && c.line > s.line && c.line < until)
        };
        self.start_list
            .windows(2)
            .filter(|w| w[0].file == w[1].file)
            .map(|w| {
                let next_line = self.start_list.iter().find(|s| s.file == w[1].file && s.line > w[1].line);
                let complete = complete_after(&w[1], next_line.map_or(usize::MAX, |s| s.line));
                LoggedCycle {
                    trigger: trigger_of(&w[1].flags),
                    seconds: key_seconds(&w[1].ts_key) - key_seconds(&w[0].ts_key),
                    distance_kb: complete.map(|c| distance_kb(&c.message)),
                }
            })
            .collect()
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

    /// What `walwatch summary --format json` must say about this log, as
    /// (dotted path, count).
    pub fn expected_summary(&self) -> Vec<(&'static str, i64)> {
        let rp = |t: &str| self.restartpoint_by_trigger[TRIGGERS.iter().position(|x| *x == t).unwrap()];
        vec![
            ("checkpoints.started", self.starts),
            ("checkpoints.completed", self.completes),
            ("checkpoints.by_trigger.shutdown", self.shutdown),
            ("checkpoints.by_trigger.end-of-recovery", self.end_of_recovery),
            ("checkpoints.by_trigger.wal", self.wal),
            ("checkpoints.by_trigger.time", self.time),
            ("checkpoints.by_trigger.manual", self.manual),
            ("restartpoints.started", self.restartpoint_starts),
            ("restartpoints.completed", self.restartpoint_completes),
            ("restartpoints.by_trigger.shutdown", rp("shutdown")),
            ("restartpoints.by_trigger.end-of-recovery", rp("end-of-recovery")),
            ("restartpoints.by_trigger.wal", rp("wal")),
            ("restartpoints.by_trigger.time", rp("time")),
            ("restartpoints.by_trigger.manual", rp("manual")),
            ("too_frequent", self.too_frequent),
            ("parameter_changes", self.parameter_changes),
            ("rejected", self.forged_records),
        ]
    }

    /// Everything but the lists, on one line.
    pub fn brief(&self) -> String {
        format!(
            "starts={} completes={} wal={} time={} manual={} (immediate force wait={}) \
             shutdown={} end-of-recovery={} restartpoints={}/{} recovery_restart_points={} \
             too_frequent={} hints={} parameter_changes={} forged_records={}",
            self.starts,
            self.completes,
            self.wal,
            self.time,
            self.manual,
            self.immediate_force_wait,
            self.shutdown,
            self.end_of_recovery,
            self.restartpoint_starts,
            self.restartpoint_completes,
            self.recovery_restart_points,
            self.too_frequent,
            self.hints,
            self.parameter_changes,
            self.forged_records
        )
    }
}
