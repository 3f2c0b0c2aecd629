//! `[alerts]`: reminders, and one sub-table per rule id
//! (`[alerts.forced_checkpoints]`, …).
//!
//! This module knows no rule. It keeps the rule tables as written, with
//! the file's text, and each rule (crate::alert::rules) reads its own
//! table with [`RuleTables::read`] into the config type it owns: the error
//! of a bad value then still points at its file:line:column.

use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use toml::Spanned;

use super::problem::{interval, Problem};
use super::ConfigError;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct AlertsSection {
    /// Re-notify an open, unacknowledged alert this often; None: never.
    pub reminder_interval: Option<Duration>,
    /// `[alerts.<id>]`, for the rules to read.
    pub rules: RuleTables,
}

/// The `[alerts.<id>]` tables of a file, unread.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RuleTables {
    /// The whole file, so that a rule's table is read with its spans.
    text: Arc<str>,
    path: PathBuf,
    /// Every `<id>` written, with the span of its key, in file order.
    ids: Vec<(String, Range<usize>)>,
}

impl RuleTables {
    /// Without tables the file is not kept: configs equal in every value compare equal.
    fn new(text: &str, path: &Path, ids: Vec<(String, Range<usize>)>) -> RuleTables {
        if ids.is_empty() {
            return RuleTables::default();
        }
        RuleTables { text: text.into(), path: path.to_path_buf(), ids }
    }

    /// The rule ids that have a table, in file order.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.ids.iter().map(|(id, _)| id.as_str())
    }

    /// `[alerts.<id>]` read as `T` (whose `Deserialize` checks the values);
    /// None when the file has no such table.
    pub(crate) fn read<T: DeserializeOwned>(&self, id: &str) -> Result<Option<T>, ConfigError> {
        if !self.ids.iter().any(|(i, _)| i == id) {
            return Ok(None);
        }
        let seed = Descend { path: &["alerts", id], value: PhantomData::<T> };
        seed.deserialize(toml::Deserializer::new(&self.text))
            .map_err(|e| super::invalid(&self.text, &self.path, Problem::from_toml(&e)))
    }

    /// The error for `[alerts.<id>]` when no rule has that id.
    pub(crate) fn unknown(&self, id: &str, known: &[&str]) -> ConfigError {
        let span = self.ids.iter().find(|(i, _)| i == id).map_or(0..0, |(_, span)| span.clone());
        let expected: Vec<String> =
            std::iter::once("reminder_interval").chain(known.iter().copied()).map(|k| format!("`{k}`")).collect();
        let message = format!("unknown field `{id}`, expected one of {}", expected.join(", "));
        super::invalid(&self.text, &self.path, Problem { span, message })
    }
}

/// Deserializes the value at `path` (keys of nested tables) of a document
/// and skips the rest, so the value keeps the document's spans.
struct Descend<'a, T> {
    path: &'a [&'a str],
    value: PhantomData<T>,
}

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for Descend<'_, T> {
    type Value = Option<T>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<T>, D::Error> {
        if self.path.is_empty() {
            T::deserialize(deserializer).map(Some)
        } else {
            deserializer.deserialize_map(self)
        }
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for Descend<'_, T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a table with the key {:?}", self.path[0])
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<T>, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == self.path[0] {
                found = map.next_value_seed(Descend { path: &self.path[1..], value: PhantomData::<T> })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// `[alerts]` as written: `reminder_interval`, and the rule tables' keys.
pub(super) struct RawAlerts {
    reminder_interval: Option<Spanned<String>>,
    rule_ids: Vec<(String, Range<usize>)>,
}

impl<'de> Deserialize<'de> for RawAlerts {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(RawAlertsVisitor)
    }
}

struct RawAlertsVisitor;

impl<'de> Visitor<'de> for RawAlertsVisitor {
    type Value = RawAlerts;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the [alerts] table")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawAlerts, A::Error> {
        let mut raw = RawAlerts { reminder_interval: None, rule_ids: Vec::new() };
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            if key.get_ref() == "reminder_interval" {
                raw.reminder_interval = Some(map.next_value()?);
            } else {
                map.next_value::<IgnoredAny>()?;
                raw.rule_ids.push((key.get_ref().clone(), key.span()));
            }
        }
        Ok(raw)
    }
}

impl RawAlerts {
    /// The section, its rule tables kept with the file's `text` for the rules to read.
    pub(crate) fn validate(self, text: &str, path: &Path) -> Result<AlertsSection, Problem> {
        let mut a = AlertsSection { rules: RuleTables::new(text, path, self.rule_ids), ..AlertsSection::default() };
        if let Some(value) = &self.reminder_interval {
            a.reminder_interval = if value.get_ref() == "off" { None } else { Some(interval(value)?) };
        }
        Ok(a)
    }
}

/// Serde helpers for the values of rule tables, with the messages the rest
/// of the file uses; an error points at the value.
pub(crate) mod value {
    use std::time::Duration;

    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};

    /// A duration written "1h", "30m", "7d".
    pub(crate) mod interval {
        use super::*;

        pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
            let text = String::deserialize(d)?;
            crate::timefmt::parse_duration(&text).map_err(D::Error::custom)
        }

        pub(crate) fn serialize<S: Serializer>(value: &Duration, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_str(&crate::timefmt::format_duration(*value))
        }
    }

    /// An integer of at least 1.
    pub(crate) fn at_least_one<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
        let v = i64::deserialize(d)?;
        u32::try_from(v)
            .ok()
            .filter(|v| *v >= 1)
            .ok_or_else(|| D::Error::custom(format!("must be at least 1, not {v}")))
    }

    /// A share: above 0, at most 1.
    pub(crate) fn share<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        within(d, |v| v > 0.0 && v <= 1.0, "a share is above 0 and at most 1, e.g. 0.5")
    }

    /// A finite number for which `ok` holds, else `message` and the value.
    pub(crate) fn within<'de, D: Deserializer<'de>>(
        d: D,
        ok: impl Fn(f64) -> bool,
        message: &str,
    ) -> Result<f64, D::Error> {
        let v = f64::deserialize(d)?;
        if v.is_finite() && ok(v) {
            Ok(v)
        } else {
            Err(D::Error::custom(format!("{message}, not {v}")))
        }
    }
}
