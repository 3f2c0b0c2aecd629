//! How typed values are stored: times as INTEGER microseconds since the
//! Unix epoch (UTC), kinds and triggers as their names. One conversion each
//! way, so that a column's type is decided in one place; rows elsewhere in
//! the store read these types, never the raw integers and strings.

use jiff::Timestamp;
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ValueRef};

use crate::model::alert::{AlertState, Channel, NoticeKind, Resolution, Severity};
use crate::model::event::{PointKind, Trigger};

/// A time as the store writes it.
pub(crate) fn to_micros(t: Timestamp) -> i64 {
    t.as_microsecond()
}

/// A stored time. Only walwatch writes these columns, from valid
/// timestamps; a value out of jiff's range (a file edited by hand) reads as
/// the epoch rather than failing the whole query.
pub(crate) fn from_micros(us: i64) -> Timestamp {
    Timestamp::from_microsecond(us).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// A nullable stored time.
pub(crate) fn opt_from_micros(us: Option<i64>) -> Option<Timestamp> {
    us.map(from_micros)
}

/// A name the schema's CHECK constraints allow; anything else is a corrupt row.
fn named<T>(value: ValueRef<'_>, parse: fn(&str) -> Option<T>) -> FromSqlResult<T> {
    let text = value.as_str()?;
    parse(text).ok_or_else(|| FromSqlError::Other(format!("unknown value {text:?}").into()))
}

/// Columns that hold a name: read through the type's own `parse`.
macro_rules! named_columns {
    ($($kind:ty),* $(,)?) => {
        $(impl FromSql for $kind {
            fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
                named(value, <$kind>::parse)
            }
        })*
    };
}

named_columns!(PointKind, Trigger, Severity, AlertState, Resolution, NoticeKind, Channel);
