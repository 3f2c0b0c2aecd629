//! What a record says of the zone its log's times are written in, for the
//! `CST` that is China's rather than US Central
//! ([`TimeContext::learn_zone`], [`TimeContext::learn_language`]): the
//! postmaster's `parameter "log_timezone" changed to "X"`, and the
//! language a server process writes in. Read before the record's own time,
//! since the reload line is itself written in the new zone.

use crate::catalog::{Catalog, Classification};
use crate::frame::time::TimeContext;
use crate::frame::{LogSeverity, Record};
use crate::model::event::EventBody;

/// The setting whose reload line dates the lines after it (and itself).
pub(crate) const LOG_TIMEZONE: &str = "log_timezone";

/// The zone a record sets when it reads as the postmaster's reload of
/// log_timezone by the trust checks' rules for it (`classify::trust`, a
/// layer above): LOG, not doubted, no session, postmaster if the format
/// says who wrote it, no CONTEXT or STATEMENT.
pub(crate) fn zone_set_by(catalog: &Catalog, record: &Record) -> Option<String> {
    if !record.message.contains(LOG_TIMEZONE) || !postmasters(record) {
        return None;
    }
    match catalog.classify(&record.message) {
        Classification::Event(EventBody::ParameterChanged { name, value }) if name == LOG_TIMEZONE => Some(value),
        _ => None,
    }
}

fn postmasters(record: &Record) -> bool {
    record.severity == LogSeverity::Log
        && record.origin.doubt.is_none()
        && !record.origin.session
        && record.origin.backend_type.as_deref().is_none_or(|b| b == "postmaster")
        && record.context.is_none()
        && record.statement.is_none()
}

/// What a csvlog or jsonlog record (whose columns name the process and
/// cannot be forged by a client's text) says of its log's zone, learned
/// before its time is read: the severity word (csvlog translates it), the
/// message of a server process (jsonlog does not translate the severity;
/// a client's text never counts), a reload of log_timezone.
pub(crate) fn learn_from_columns(time: &TimeContext, catalog: &Catalog, record: &Record, severity_word: &str) {
    time.learn_language(severity_word);
    let server = matches!(record.origin.backend_type.as_deref(), Some("postmaster" | "checkpointer" | "startup"));
    if server && !record.origin.session {
        time.learn_text_language(&record.message);
    }
    if let Some(zone) = zone_set_by(catalog, record) {
        time.learn_zone(&zone);
    }
}
