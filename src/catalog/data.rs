//! Loading the embedded `parsers/` data: TOML definitions, translations,
//! severity words and secondary prefixes.

use std::collections::{HashMap, HashSet};

use serde::Deserialize;

use super::level::{LineLevel, LogSeverity, Secondary};
use super::template::c_unescape;
use super::{CatalogError, I18N_TSV, LEVELS};

// ------------------------------------------------------------------ TOML data

#[derive(Deserialize)]
pub(super) struct FamilyFile {
    #[serde(default)]
    pub(super) message: Vec<MessageDef>,
    #[serde(default)]
    pub(super) hint: Vec<HintDef>,
}

#[derive(Deserialize)]
#[allow(dead_code)] // `versions` is documentation
pub(super) struct MessageDef {
    pub(super) id: String,
    pub(super) event: String,
    #[serde(default)]
    pub(super) versions: String,
    pub(super) msgid: String,
    #[serde(default)]
    pub(super) msgid_plural: Option<String>,
    #[serde(default)]
    pub(super) args: Vec<String>,
    #[serde(default)]
    pub(super) set: HashMap<String, String>,
    #[serde(default)]
    pub(super) unparsed: Option<String>,
    #[serde(default)]
    pub(super) extra_after: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct HintDef {
    pub(super) msgid: String,
    #[serde(default)]
    pub(super) substitute: Vec<String>,
}

#[derive(Deserialize)]
pub(super) struct LevelsFile {
    pub(super) level: Vec<LevelDef>,
    pub(super) prefix: Vec<PrefixDef>,
}

#[derive(Deserialize)]
pub(super) struct LevelDef {
    pub(super) word: String,
    pub(super) severity: String,
    #[serde(default)]
    pub(super) aliases: Vec<String>,
}

#[derive(Deserialize)]
pub(super) struct PrefixDef {
    pub(super) msgid: String,
    pub(super) secondary: String,
}

pub(super) type Translations = HashMap<String, Vec<(String, String)>>;

/// msgid (unescaped) → [(lang, msgstr unescaped)], translated rows only.
pub(super) fn load_translations() -> Translations {
    let mut map: Translations = HashMap::new();
    for line in I18N_TSV.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() < 7 || cols[5] != "translated" || cols[3].is_empty() {
            continue;
        }
        map.entry(c_unescape(cols[2])).or_default().push((cols[0].to_string(), c_unescape(cols[3])));
    }
    map
}

fn severity_of(s: &str) -> Option<LogSeverity> {
    Some(match s {
        "debug" => LogSeverity::Debug,
        "log" => LogSeverity::Log,
        "info" => LogSeverity::Info,
        "notice" => LogSeverity::Notice,
        "warning" => LogSeverity::Warning,
        "error" => LogSeverity::Error,
        "fatal" => LogSeverity::Fatal,
        "panic" => LogSeverity::Panic,
        _ => return None,
    })
}

fn secondary_of(s: &str) -> Option<Secondary> {
    Some(match s {
        "detail" => Secondary::Detail,
        "hint" => Secondary::Hint,
        "query" => Secondary::Query,
        "context" => Secondary::Context,
        "statement" => Secondary::Statement,
        "location" => Secondary::Location,
        "backtrace" => Secondary::Backtrace,
        _ => return None,
    })
}

pub(super) type Levels = (Vec<(String, LineLevel)>, HashMap<String, LogSeverity>);

pub(super) fn build_levels(tr: &Translations) -> Result<Levels, CatalogError> {
    let lv: LevelsFile = toml::from_str(LEVELS).map_err(|e| CatalogError::Levels(e.to_string()))?;
    let mut markers: Vec<(String, LineLevel)> = Vec::new();
    let mut seen = HashSet::new();
    let mut severities = HashMap::new();
    // (msgid, level, is severity word) in English-first order
    let mut entries: Vec<(String, LineLevel, bool)> = Vec::new();
    for l in &lv.level {
        let sev = severity_of(&l.severity).ok_or_else(|| CatalogError::Levels(format!("severity {:?}", l.severity)))?;
        for a in &l.aliases {
            severities.entry(a.clone()).or_insert(sev);
        }
        entries.push((l.word.clone(), LineLevel::Primary(sev), true));
    }
    for p in &lv.prefix {
        let sec =
            secondary_of(&p.secondary).ok_or_else(|| CatalogError::Levels(format!("secondary {:?}", p.secondary)))?;
        entries.push((p.msgid.clone(), LineLevel::Secondary(sec), false));
    }
    let mut push = |text: &str, level: LineLevel, word: bool| {
        let marker = if word {
            if let LineLevel::Primary(sev) = level {
                severities.entry(text.to_string()).or_insert(sev);
            }
            format!("{text}:  ")
        } else {
            // up to the first conversion (LOCATION:  %s, %s:%d)
            text.split('%').next().unwrap_or("").to_string()
        };
        if !marker.trim().is_empty() && seen.insert(marker.clone()) {
            markers.push((marker, level));
        }
    };
    for (msgid, level, word) in &entries {
        push(msgid, *level, *word);
    }
    for (msgid, level, word) in &entries {
        for (_, s) in tr.get(msgid).into_iter().flatten() {
            push(s, *level, *word);
        }
    }
    Ok((markers, severities))
}
