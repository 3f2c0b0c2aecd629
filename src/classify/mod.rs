//! Classification: a framed [`Record`] becomes a typed, trusted event — or a
//! counted rejection when a client session wrote something that looks like one.

pub(crate) mod trust;

#[cfg(test)]
mod each_check;
#[cfg(test)]
mod tests;

use crate::catalog::{Catalog, Classification};
use crate::frame::{Cut, Record};
use crate::model::event::EventBody;

/// What a record turned out to be.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A real event.
    Event(EventBody),
    /// Looked like an event but was not written by the server process that logs it.
    Rejected { looked_like: &'static str, reason: &'static str },
    /// Started like a known event but did not fit any known shape (a new
    /// PostgreSQL version?): counted and reported, never guessed at.
    Unparsed(&'static str),
    /// Anything else.
    Ignored,
}

/// Classifies one record.
///
/// A record whose line was certainly cut ([`Cut`]) is never read as a
/// whole line: a complete line gives what it says up to the cut
/// ([`EventBody::PointCut`]); any other event's line cut by a pager is
/// unparsed (`checkpoint starting: immediate force>` may have gone on with
/// `wait wal`). At the end of the input a line that reads whole is whole
/// but for its line break, as PostgreSQL writes nothing after one.
pub fn classify(catalog: &Catalog, record: &Record) -> Outcome {
    let whole = catalog.classify(&record.message);
    let cut = match (record.cut, &whole) {
        (Cut::Whole, _) | (Cut::AtEnd, Classification::Event(_)) => None,
        (Cut::Marked | Cut::AtEnd, _) => catalog.classify_cut(&record.message),
    };
    let whole = match (record.cut, cut, whole) {
        (_, Some(body), _) => Classification::Event(body),
        (Cut::Marked, None, Classification::Event(body)) => Classification::Unparsed(body.kind_name()),
        (_, None, whole) => whole,
    };
    match whole {
        Classification::Other => Ignored,
        Classification::Unparsed(kind) => match trust::verdict(record, kind) {
            Ok(()) => Outcome::Unparsed(kind),
            Err(_) => Ignored,
        },
        Classification::Event(body) => {
            let body = with_hint(catalog, record, body);
            match trust::verdict(record, body.kind_name()) {
                Ok(()) => Outcome::Event(body),
                Err(reason) => Outcome::Rejected { looked_like: body.kind_name(), reason },
            }
        }
    }
}

use Outcome::Ignored;

/// The too-frequent warning carries its HINT on a separate line.
fn with_hint(catalog: &Catalog, record: &Record, body: EventBody) -> EventBody {
    match body {
        EventBody::TooFrequent { seconds, .. } => EventBody::TooFrequent {
            seconds,
            hint: record.hint.as_deref().is_some_and(|h| catalog.is_too_frequent_hint(h)),
        },
        other => other,
    }
}

/// Lines embedded in another entry (the continuation lines of a logged
/// statement, say) that would be events if they stood alone: forgeries to
/// count. `message_of` extracts the message from a whole log line in the
/// source's own format, or None when the line is not one.
pub(crate) fn embedded_lookalikes(
    catalog: &Catalog,
    record: &Record,
    message_of: impl Fn(&str) -> Option<String>,
) -> Vec<&'static str> {
    let continuation = record.message.lines().skip(1);
    let statement = record.statement.iter().flat_map(|s| s.lines());
    continuation
        .chain(statement)
        .filter_map(|line| match catalog.classify(&message_of(line)?) {
            Classification::Event(body) => Some(body.kind_name()),
            _ => None,
        })
        .collect()
}
