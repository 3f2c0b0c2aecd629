//! A log exported as one JSON array: Cloud Logging's download
//! (`gcloud logging read --format=json`, the console's "Download JSON"),
//! pretty-printed, newest entry first by default.
//!
//! walwatch reads logs as lines in time order, so such a file is turned
//! into one compact entry per line, oldest first, before anything else
//! reads it (like a compressed file is decompressed): Cloud SQL's entries
//! are then the JSON lines `frame::formats::cloudsql` reads. The whole array is
//! held in memory while it is reordered; exports are bounded by Cloud
//! Logging's download limits.

use std::io::{self, Read};

use jiff::Timestamp;
use serde_json::Value;

/// Whether `head` starts like an array of objects (`[` then `{`, after
/// white space): no PostgreSQL log line does.
pub(crate) fn looks_like(head: &[u8]) -> bool {
    let mut bytes = head.iter().copied().filter(|b| !b.is_ascii_whitespace());
    bytes.next() == Some(b'[') && matches!(bytes.next(), Some(b'{') | Some(b']'))
}

/// The array's entries, one compact JSON object per line, oldest first.
/// An entry without a readable `timestamp` keeps the order of the export
/// (reversed when the export runs newest first, judged by its ends).
pub(crate) fn to_lines(reader: impl Read) -> io::Result<Vec<u8>> {
    let entries: Vec<Value> = serde_json::from_reader(io::BufReader::new(reader))
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("not a JSON array of log entries: {e}")))?;
    let mut entries: Vec<(Option<Timestamp>, Value)> = entries.into_iter().map(|e| (time_of(&e), e)).collect();
    let newest_first = match (entries.first(), entries.last()) {
        (Some((Some(first), _)), Some((Some(last), _))) => first > last,
        _ => false,
    };
    if newest_first {
        // Entries of one instant (a warning and its HINT) keep their order.
        entries.reverse();
    }
    if entries.iter().all(|(t, _)| t.is_some()) {
        entries.sort_by_key(|(t, _)| *t);
    }
    let mut out = Vec::new();
    for (_, entry) in entries {
        serde_json::to_writer(&mut out, &entry)?;
        out.push(b'\n');
    }
    Ok(out)
}

/// A LogEntry's `timestamp` (when the line was written), else its
/// `receiveTimestamp`.
fn time_of(entry: &Value) -> Option<Timestamp> {
    ["timestamp", "receiveTimestamp"].iter().find_map(|k| entry.get(k)?.as_str()?.parse::<Timestamp>().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(time: &str, text: &str) -> String {
        format!("  {{\n    \"textPayload\": \"{text}\",\n    \"timestamp\": \"{time}\"\n  }}")
    }

    fn lines(out: &[u8]) -> Vec<String> {
        String::from_utf8(out.to_vec())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["textPayload"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn only_an_array_of_objects_looks_like_one() {
        assert!(looks_like(b"[\n  {\n    \"insertId\": \"x\""));
        assert!(looks_like(b" [ ]"));
        assert!(!looks_like(b"[1-1] db=,user= LOG:  x"));
        assert!(!looks_like(b"2026-11-24 10:00:00 UTC [1] LOG:  x"));
        assert!(!looks_like(b"{\"textPayload\": \"x\"}"));
        assert!(!looks_like(b""));
    }

    /// gcloud's default order: newest first; one instant's two entries (a
    /// warning, then its HINT) stay in the order they were written.
    #[test]
    fn newest_first_exports_are_read_oldest_first() {
        let text = format!(
            "[\n{},\n{},\n{},\n{}\n]\n",
            entry("2026-11-24T10:00:02.5Z", "complete"),
            entry("2026-11-24T10:00:01.000001Z", "start"),
            entry("2026-11-24T10:00:01Z", "hint"),
            entry("2026-11-24T10:00:01Z", "warning"),
        );
        assert_eq!(lines(&to_lines(text.as_bytes()).unwrap()), ["warning", "hint", "start", "complete"]);
    }

    #[test]
    fn oldest_first_exports_keep_their_order() {
        let text = format!(
            "[{},{},{},{}]",
            entry("2026-11-24T10:00:01Z", "warning"),
            entry("2026-11-24T10:00:01Z", "hint"),
            entry("2026-11-24T11:00:00.5+01:00", "earlier by its offset"),
            entry("2026-11-24T10:00:03Z", "complete"),
        );
        let want = ["earlier by its offset", "warning", "hint", "complete"];
        assert_eq!(lines(&to_lines(text.as_bytes()).unwrap()), want);
    }

    #[test]
    fn a_torn_array_is_an_error_that_says_where() {
        let e = to_lines(&b"[\n  {\"textPayload\": \"x\"},\n  {\"textPay"[..]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("line 3"), "{e}");
    }
}
