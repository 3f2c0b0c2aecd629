//! The message catalog: every PostgreSQL message walwatch recognises, as data.
//!
//! The data lives in `parsers/` (TOML message families, a filtered copy of the
//! translation TSV, the prefilter needles) and is compiled into the binary
//! with `include_str!`. [`Catalog::global`] builds the lookup tables once;
//! each template's regex is compiled lazily on first use.
//!
//! A template is an English msgid shape or a translated msgstr (any branch,
//! any plural form). It becomes an anchored regex whose captures are the
//! printf arguments in C order (translations keep that order).

mod data;
pub(crate) mod level;
mod template;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, MatchKind};
use regex::Regex;

use crate::model::event::{CompleteStats, CutStats, EventBody, PointKind, ShutdownMode};
use data::{build_levels, load_translations, FamilyFile};
use level::{LineLevel, LogSeverity};
use template::{build_pattern, parse_format, read_cut, substitute, unparsed_prefix, Piece};

/// The message families, in priority order.
const FAMILIES: &[(&str, &str)] = &[
    ("point_start.toml", include_str!("../../parsers/point_start.toml")),
    ("point_complete.toml", include_str!("../../parsers/point_complete.toml")),
    ("too_frequent.toml", include_str!("../../parsers/too_frequent.toml")),
    ("recovery_restart_point.toml", include_str!("../../parsers/recovery_restart_point.toml")),
    ("config.toml", include_str!("../../parsers/config.toml")),
    ("lifecycle.toml", include_str!("../../parsers/lifecycle.toml")),
];
const LEVELS: &str = include_str!("../../parsers/levels.toml");
const I18N_TSV: &str = include_str!("../../parsers/messages-i18n.tsv");
const NEEDLES: &str = include_str!("../../parsers/needles.txt");

/// What [`Catalog::classify`] makes of a primary message.
#[derive(Debug, Clone, PartialEq)]
pub enum Classification {
    /// A recognised event with its fields.
    Event(EventBody),
    /// Starts like a known event (named by its kind, e.g.
    /// `"checkpoint_complete"`) but does not match any known shape.
    Unparsed(&'static str),
    /// Anything else.
    Other,
}

/// MessageKind names usable in `unparsed = "…"` (the `EventBody::kind_name`s).
const KIND_NAMES: &[&str] = &[
    "checkpoint_start",
    "restartpoint_start",
    "checkpoint_complete",
    "restartpoint_complete",
    "too_frequent",
    "recovery_restart_point",
    "parameter_changed",
    "config_reload",
    "server_start",
    "server_ready",
    "shutdown_request",
    "server_shutdown",
    "redo_start",
    "redo_done",
    "crash_reinit",
    "archive_recovery_done",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MessageKind {
    PointStart,
    PointComplete,
    TooFrequent,
    RecoveryRestartPoint,
    ParameterChanged,
    ConfigReload,
    ServerStart,
    ServerReady,
    ShutdownRequest,
    ServerShutdown,
    RedoStart,
    RedoDone,
    CrashReinit,
    ArchiveRecoveryDone,
    /// The `%s` of "redo done … system usage: %s"; not classified itself.
    CpuUsage,
    /// Documented only; not classified.
    None,
}

impl MessageKind {
    fn parse(s: &str) -> Option<MessageKind> {
        Some(match s {
            "point_start" => MessageKind::PointStart,
            "point_complete" => MessageKind::PointComplete,
            "too_frequent" => MessageKind::TooFrequent,
            "recovery_restart_point" => MessageKind::RecoveryRestartPoint,
            "parameter_changed" => MessageKind::ParameterChanged,
            "config_reload" => MessageKind::ConfigReload,
            "server_start" => MessageKind::ServerStart,
            "server_ready" => MessageKind::ServerReady,
            "shutdown_request" => MessageKind::ShutdownRequest,
            "server_shutdown" => MessageKind::ServerShutdown,
            "redo_start" => MessageKind::RedoStart,
            "redo_done" => MessageKind::RedoDone,
            "crash_reinit" => MessageKind::CrashReinit,
            "archive_recovery_done" => MessageKind::ArchiveRecoveryDone,
            "cpu_usage" => MessageKind::CpuUsage,
            "none" => MessageKind::None,
            _ => return None,
        })
    }
}

// ------------------------------------------------------------------ catalog

/// One recognised message (all its shapes share the event builder).
struct Message {
    #[cfg_attr(not(test), allow(dead_code))]
    id: String,
    kind: MessageKind,
    args: Vec<String>,
    set: HashMap<String, String>,
    unparsed: Option<&'static str>,
}

/// One concrete template: an English shape or a translation.
struct Template {
    msg: usize,
    /// "en" or the TSV language code (first one seen for this pattern).
    #[cfg_attr(not(test), allow(dead_code))]
    lang: String,
    /// The format string, unescaped (for diagnostics and tests).
    #[cfg_attr(not(test), allow(dead_code))]
    format: String,
    pattern: String,
    regex: OnceLock<Option<Regex>>,
    /// Literal text any matching message contains verbatim.
    segments: Vec<String>,
    /// Unparsed detection prefix, when the message has `unparsed`.
    prefix: Option<String>,
    /// The format's pieces, for reading a line cut short (complete lines only).
    pieces: Vec<Piece>,
}

impl Template {
    fn regex(&self) -> Option<&Regex> {
        self.regex.get_or_init(|| Regex::new(&self.pattern).ok()).as_ref()
    }
}

/// The recognised PostgreSQL messages, severities and line prefixes.
pub struct Catalog {
    messages: Vec<Message>,
    /// Classifiable templates, in priority order (families, English first).
    templates: Vec<Template>,
    /// Templates of the CPU usage string inside "redo done … system usage: %s".
    usage: Vec<Template>,
    needles: Vec<String>,
    automaton: AhoCorasick,
    /// needle index → indices into `templates` whose literal text contains it.
    needle_templates: Vec<Vec<u32>>,
    markers: Vec<(String, LineLevel)>,
    severities: HashMap<String, LogSeverity>,
    hints: HashSet<String>,
    /// Translations whose conversions do not line up with the msgid's
    /// (message id, language): left unrecognised.
    #[cfg_attr(not(test), allow(dead_code))]
    skipped: Vec<(String, String)>,
}

/// A data error found while building the catalog (a bug in `parsers/`).
#[derive(Debug, thiserror::Error)]
pub(crate) enum CatalogError {
    #[error("{file}: {source}")]
    Toml { file: &'static str, source: toml::de::Error },
    #[error("message {id}: {what}")]
    Message { id: String, what: String },
    #[error("needle automaton: {0}")]
    Needles(String),
    #[error("levels.toml: {0}")]
    Levels(String),
}

/// Hint comparison key: trimmed, without one final "." / "。".
fn hint_key(s: &str) -> &str {
    let s = s.trim();
    s.strip_suffix('.').or_else(|| s.strip_suffix('。')).unwrap_or(s).trim_end()
}

impl Catalog {
    /// The catalog built from the embedded data (once per process).
    pub fn global() -> &'static Catalog {
        static GLOBAL: OnceLock<Catalog> = OnceLock::new();
        GLOBAL.get_or_init(|| Catalog::build().expect("embedded parsers/ data is valid"))
    }

    /// Build from the embedded data. Regexes are compiled lazily.
    pub(crate) fn build() -> Result<Catalog, CatalogError> {
        let tr = load_translations();
        let mut messages = Vec::new();
        let mut templates = Vec::new();
        let mut usage = Vec::new();
        let mut hints = HashSet::new();
        let mut seen: HashSet<(usize, String)> = HashSet::new();
        let mut skipped = Vec::new();

        for (file, text) in FAMILIES {
            let fam: FamilyFile = toml::from_str(text).map_err(|source| CatalogError::Toml { file, source })?;
            for def in fam.message {
                let err = |what: String| CatalogError::Message { id: def.id.clone(), what };
                let kind =
                    MessageKind::parse(&def.event).ok_or_else(|| err(format!("unknown event {:?}", def.event)))?;
                if kind == MessageKind::None {
                    continue;
                }
                let unparsed = match &def.unparsed {
                    None => None,
                    Some(u) => Some(
                        *KIND_NAMES
                            .iter()
                            .find(|k| **k == u.as_str())
                            .ok_or_else(|| err(format!("unknown unparsed kind {u:?}")))?,
                    ),
                };
                let mi = messages.len();
                let mut formats: Vec<(String, String, bool)> = Vec::new();
                for id in std::iter::once(&def.msgid).chain(def.msgid_plural.iter()) {
                    formats.push(("en".into(), id.clone(), true));
                    for (lang, s) in tr.get(id).into_iter().flatten() {
                        formats.push((lang.clone(), s.clone(), false));
                    }
                }
                for (lang, format, english) in formats {
                    let pieces = parse_format(&format);
                    let n = template::arg_count(&pieces);
                    if n != def.args.len() {
                        if english {
                            return Err(err(format!("{n} conversions but {} args", def.args.len())));
                        }
                        skipped.push((def.id.clone(), lang));
                        continue; // a translation we cannot map: it stays unrecognised
                    }
                    let extra = if english { def.extra_after.as_deref() } else { None };
                    let (pattern, segments) = build_pattern(&pieces, &def.args, extra);
                    if !seen.insert((mi, pattern.clone())) {
                        continue;
                    }
                    let prefix = unparsed.and_then(|_| unparsed_prefix(&pieces));
                    let pieces = if kind == MessageKind::PointComplete { pieces } else { Vec::new() };
                    let t =
                        Template { msg: mi, lang, format, pattern, regex: OnceLock::new(), segments, prefix, pieces };
                    if kind == MessageKind::CpuUsage {
                        usage.push(t);
                    } else {
                        templates.push(t);
                    }
                }
                messages.push(Message { id: def.id, kind, args: def.args, set: def.set, unparsed });
            }
            for h in fam.hint {
                for text in std::iter::once(&h.msgid).chain(tr.get(&h.msgid).into_iter().flatten().map(|(_, s)| s)) {
                    let filled = substitute(&parse_format(text), &h.substitute);
                    hints.insert(hint_key(&filled).to_string());
                }
            }
        }

        let needles: Vec<String> =
            NEEDLES.lines().filter(|l| !l.is_empty() && !l.starts_with('#')).map(str::to_string).collect();
        let automaton = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .build(&needles)
            .map_err(|e| CatalogError::Needles(e.to_string()))?;
        let needle_templates = needles
            .iter()
            .map(|n| {
                templates
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| t.segments.iter().any(|s| s.contains(n.as_str())))
                    .map(|(i, _)| i as u32)
                    .collect()
            })
            .collect();

        let (markers, severities) = build_levels(&tr)?;
        Ok(Catalog {
            messages,
            templates,
            usage,
            needles,
            automaton,
            needle_templates,
            markers,
            severities,
            hints,
            skipped,
        })
    }

    /// Literal strings for a multi-needle prefilter: every classifiable
    /// template (every language) contains at least one of them, within its
    /// Unparsed prefix when it has one.
    pub(crate) fn needles(&self) -> &[String] {
        &self.needles
    }

    /// Every literal that can follow `log_line_prefix` on a stderr line:
    /// `"<severity word>:  "` and each secondary prefix, English first, then
    /// the translations; deduplicated (first wins).
    pub fn markers(&self) -> &[(String, LineLevel)] {
        &self.markers
    }

    /// A severity word as csvlog (translated) or jsonlog (English) writes it.
    pub(crate) fn severity(&self, word: &str) -> Option<LogSeverity> {
        self.severities.get(word).copied()
    }

    /// Whether `hint` is the max_wal_size HINT of the too-frequent message
    /// (any language or version; a missing or extra final period is ignored).
    pub(crate) fn is_too_frequent_hint(&self, hint: &str) -> bool {
        self.hints.contains(hint_key(hint))
    }

    /// Classify a primary message (continuation lines joined with '\n').
    pub fn classify(&self, message: &str) -> Classification {
        let mut hit = [0u64; 16];
        let mut any = false;
        let mut wide: Vec<u32> = Vec::new();
        for m in self.automaton.find_overlapping_iter(message) {
            for &t in &self.needle_templates[m.pattern().as_usize()] {
                any = true;
                let (w, b) = ((t / 64) as usize, t % 64);
                if w < hit.len() {
                    hit[w] |= 1 << b;
                } else {
                    wide.push(t);
                }
            }
        }
        if !any {
            return Classification::Other;
        }
        wide.sort_unstable();
        wide.dedup();
        let candidates = || {
            hit.iter()
                .enumerate()
                .flat_map(|(w, bits)| {
                    (0..64).filter(move |b| bits & (1u64 << b) != 0).map(move |b| (w * 64 + b) as u32)
                })
                .chain(wide.iter().copied())
                .map(|i| &self.templates[i as usize])
        };
        for t in candidates() {
            let Some(re) = t.regex() else { continue };
            if let Some(caps) = re.captures(message) {
                let msg = &self.messages[t.msg];
                match (self.build_event(msg, &caps), msg.unparsed) {
                    (Some(ev), _) => return Classification::Event(ev),
                    (None, Some(kind)) => return Classification::Unparsed(kind),
                    // A shape shared by several kinds (9.6–13's "%s starting:"):
                    // the kinds' own prefixes below say which.
                    (None, None) => break,
                }
            }
        }
        for t in candidates() {
            if let Some(p) = &t.prefix {
                if message.starts_with(p.as_str()) {
                    if let Some(kind) = self.messages[t.msg].unparsed {
                        return Classification::Unparsed(kind);
                    }
                }
            }
        }
        Classification::Other
    }

    /// Reads a complete line that is certainly cut short (see
    /// [`crate::frame::Cut`]): the figures it prints whole before the cut,
    /// the rest None. None unless the message holds, whole, the text that
    /// names the event (everything before its first figure) and then
    /// follows one of the complete line's shapes (any version, any
    /// language) up to its end. Of several shapes, the one that reads the
    /// most of the message wins; they name the same figures up to there.
    pub(crate) fn classify_cut(&self, message: &str) -> Option<EventBody> {
        let mut best: Option<(usize, &Template, Vec<Option<&str>>)> = None;
        for t in self.templates.iter().filter(|t| !t.pieces.is_empty()) {
            let msg = &self.messages[t.msg];
            let Some((read, values)) = read_cut(&t.pieces, &msg.args, message) else { continue };
            if best.as_ref().is_none_or(|(most, ..)| read > *most) {
                best = Some((read, t, values));
            }
        }
        let (_, t, values) = best?;
        let msg = &self.messages[t.msg];
        let get = |name: &str| -> Option<&str> {
            match msg.args.iter().position(|a| a == name) {
                Some(i) => values.get(i).copied().flatten(),
                None => msg.set.get(name).map(String::as_str),
            }
        };
        let kind = match get("point")? {
            "checkpoint" => PointKind::Checkpoint,
            "restartpoint" => PointKind::Restartpoint,
            _ => return None,
        };
        Some(EventBody::PointCut { kind, stats: Box::new(CutStats::parse(get, parse_decimal)?) })
    }

    fn build_event(&self, msg: &Message, caps: &regex::Captures<'_>) -> Option<EventBody> {
        let get = |name: &str| -> Option<&str> {
            match msg.args.iter().position(|a| a == name) {
                Some(i) => caps.get(i + 1).map(|m| m.as_str()),
                None => msg.set.get(name).map(String::as_str),
            }
        };
        let int = |name: &str| -> Option<i64> { get(name)?.parse().ok() };
        let point = || match get("point")? {
            "checkpoint" => Some(PointKind::Checkpoint),
            "restartpoint" => Some(PointKind::Restartpoint),
            _ => None,
        };
        Some(match msg.kind {
            MessageKind::PointStart => EventBody::PointStart {
                kind: point()?,
                flags: get("flags").unwrap_or("").split_whitespace().map(flag).collect::<Option<_>>()?,
            },
            MessageKind::PointComplete => {
                EventBody::PointComplete { kind: point()?, stats: Box::new(CompleteStats::parse(get, parse_decimal)?) }
            }
            MessageKind::TooFrequent => EventBody::TooFrequent { seconds: int("seconds")?, hint: false },
            MessageKind::RecoveryRestartPoint => EventBody::RecoveryRestartPoint { lsn: get("lsn")?.to_string() },
            MessageKind::ParameterChanged => {
                EventBody::ParameterChanged { name: get("name")?.to_string(), value: get("value")?.to_string() }
            }
            MessageKind::ConfigReload => EventBody::ConfigReload,
            MessageKind::ServerStart => EventBody::ServerStart { version: get("version").and_then(version_of) },
            MessageKind::ServerReady => EventBody::ServerReady { read_only: get("read_only")? == "true" },
            MessageKind::ShutdownRequest => EventBody::ShutdownRequest {
                mode: match get("mode")? {
                    "smart" => ShutdownMode::Smart,
                    "fast" => ShutdownMode::Fast,
                    "immediate" => ShutdownMode::Immediate,
                    _ => return None,
                },
            },
            MessageKind::ServerShutdown => EventBody::ServerShutdown,
            MessageKind::RedoStart => EventBody::RedoStart { lsn: get("lsn")?.to_string() },
            MessageKind::RedoDone => EventBody::RedoDone {
                lsn: get("lsn")?.to_string(),
                elapsed_s: get("usage").and_then(|u| self.usage_elapsed(u)),
            },
            MessageKind::CrashReinit => EventBody::CrashReinit,
            MessageKind::ArchiveRecoveryDone => EventBody::ArchiveRecoveryDone,
            MessageKind::CpuUsage | MessageKind::None => return None,
        })
    }

    /// `elapsed` seconds of a (translated) "CPU: user: …, elapsed: … s" string.
    fn usage_elapsed(&self, usage: &str) -> Option<f64> {
        self.usage.iter().find_map(|t| {
            let caps = t.regex()?.captures(usage)?;
            let i = self.messages[t.msg].args.iter().position(|a| a == "elapsed_s")?;
            parse_decimal(caps.get(i + 1)?.as_str())
        })
    }
}

/// A checkpoint flag word, normalised (`xlog` → `wal`, `fast` → `immediate`).
/// The words are never translated and PostgreSQL 9.6–18 print no others, so
/// anything else — `wal@`, `wal x` — is not a checkpointer's line (text glued
/// to a forged one, see `frame::spliced`) and is reported as unparsed.
fn flag(word: &str) -> Option<String> {
    Some(
        match word {
            "xlog" | "wal" => "wal",
            "fast" | "immediate" => "immediate",
            "shutdown" | "end-of-recovery" | "force" | "wait" | "time" | "flush-all" => word,
            _ => return None,
        }
        .to_string(),
    )
}

/// "0.16" or "0,16" → 0.16.
fn parse_decimal(s: &str) -> Option<f64> {
    if s.contains(',') {
        s.replacen(',', ".", 1).parse().ok()
    } else {
        s.parse().ok()
    }
}

/// "PostgreSQL 15.18 (Debian …) on …" → "15.18"; "PostgreSQL 17beta1 on" → "17beta1".
fn version_of(s: &str) -> Option<String> {
    let rest = s.strip_prefix("PostgreSQL ")?;
    let v: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '.').collect();
    let v = v.trim_end_matches('.');
    (!v.is_empty()).then(|| v.to_string())
}
