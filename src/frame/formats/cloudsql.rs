//! Cloud SQL for PostgreSQL's log as Cloud Logging exports it (a sink to
//! Cloud Storage, `gcloud logging read --format=json` flattened to lines):
//! one LogEntry per line, PostgreSQL's stderr line in `textPayload` (or in
//! `jsonPayload.message`, as agents that parse it write it), the entry's
//! `timestamp` in RFC 3339. The line keeps Cloud SQL's log_line_prefix
//! (`%m [%p]: [%l-1] db=%d,user=%u `), so its session fields and trust
//! checks are the stderr scanner's.

use serde::Deserialize;

use super::envelope::Unwrapped;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    text_payload: Option<String>,
    json_payload: Option<JsonPayload>,
    timestamp: Option<String>,
}

#[derive(Deserialize)]
struct JsonPayload {
    message: Option<String>,
}

/// Whether `line` is a Cloud Logging entry with a text or JSON payload.
pub(crate) fn looks_like(line: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(line).is_ok_and(|v| {
        v.get("textPayload").is_some_and(|t| t.is_string()) || v.pointer("/jsonPayload/message").is_some()
    })
}

/// The stderr line of one LogEntry.
pub(crate) fn open(line: &[u8]) -> Unwrapped {
    let Ok(e) = serde_json::from_slice::<Entry>(line) else { return Unwrapped::Broken };
    let time = e.timestamp.as_deref().and_then(|t| t.parse().ok());
    match e.text_payload.or_else(|| e.json_payload.and_then(|j| j.message)) {
        Some(text) => Unwrapped::Text { text: text.trim_end_matches('\n').as_bytes().to_vec(), time, uid: None },
        None => Unwrapped::Foreign,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_text_and_json_payloads() {
        let text = br#"{"insertId":"s=1","logName":"projects/p/logs/cloudsql.googleapis.com%2Fpostgres.log","resource":{"type":"cloudsql_database"},"severity":"INFO","textPayload":"2024-03-01 10:00:00.123 UTC [27]: [5-1] db=,user= LOG:  checkpoint starting: time","timestamp":"2024-03-01T10:00:00.123456Z"}"#;
        let time = Some("2024-03-01T10:00:00.123456Z".parse().unwrap());
        let want = b"2024-03-01 10:00:00.123 UTC [27]: [5-1] db=,user= LOG:  checkpoint starting: time".to_vec();
        assert_eq!(open(text), Unwrapped::Text { text: want.clone(), time, uid: None });
        assert!(looks_like(text));
        let json = br#"{"jsonPayload":{"message":"2024-03-01 10:00:00.123 UTC [27]: [5-1] db=,user= LOG:  checkpoint starting: time\n"}}"#;
        assert_eq!(open(json), Unwrapped::Text { text: want, time: None, uid: None });
        assert!(looks_like(json));
        assert_eq!(open(br#"{"protoPayload":{"methodName":"x"}}"#), Unwrapped::Foreign);
        assert_eq!(open(b"{\"textPayload\": 3}"), Unwrapped::Broken);
        assert_eq!(open(b"2024-03-01 10:00:00 UTC LOG:  x"), Unwrapped::Broken);
        assert!(!looks_like(br#"{"timestamp":"2024-03-01 10:00:00.123 UTC","message":"x"}"#));
    }
}
