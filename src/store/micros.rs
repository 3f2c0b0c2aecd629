//! Times in the store: INTEGER microseconds since the Unix epoch, UTC. One
//! conversion each way, so that the column type is decided in one place.

use jiff::Timestamp;

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
