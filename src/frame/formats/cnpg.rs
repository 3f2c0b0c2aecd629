//! CloudNativePG's log: the instance manager writes every line as JSON
//! (`level`, `ts`, `logger`, `msg`, `logging_pod`). PostgreSQL's csvlog
//! records come with `"logger":"postgres","msg":"record"` and the csvlog
//! columns by name in `record`; what PostgreSQL wrote to stderr before its
//! logging collector ran comes with `"logger":"postgres"` and the line in
//! `msg`; other loggers are the operator's own.
//!
//! A record is rewritten in jsonlog's field names and read by the jsonlog
//! scanner: the user, database, host and application of a session go
//! along, so a session's record is rejected as in PostgreSQL's own logs.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::envelope::Unwrapped;

#[derive(Deserialize)]
struct Entry {
    logger: Option<String>,
    msg: Option<String>,
    ts: Option<Value>,
    record: Option<Map<String, Value>>,
}

/// csvlog's column names as CNPG writes them, and jsonlog's for the same field.
const FIELDS: &[(&str, &str)] = &[
    ("log_time", "timestamp"),
    ("user_name", "user"),
    ("database_name", "dbname"),
    ("connection_from", "remote_host"),
    ("error_severity", "error_severity"),
    ("message", "message"),
    ("detail", "detail"),
    ("hint", "hint"),
    ("internal_query", "internal_query"),
    ("context", "context"),
    ("query", "statement"),
    ("application_name", "application_name"),
    ("backend_type", "backend_type"),
];

/// Whether `line` is one of CloudNativePG's JSON lines.
pub(crate) fn looks_like(line: &[u8]) -> bool {
    serde_json::from_slice::<Value>(line).is_ok_and(|v| {
        v.get("logger").is_some_and(Value::is_string)
            && v.get("msg").is_some()
            && (v.get("record").is_some() || v.get("logging_pod").is_some() || v.get("logging_podName").is_some())
    })
}

pub(crate) fn open(line: &[u8]) -> Unwrapped {
    let Ok(e) = serde_json::from_slice::<Entry>(line) else { return Unwrapped::Broken };
    if e.logger.as_deref() != Some("postgres") {
        return Unwrapped::Foreign;
    }
    let time = e.ts.as_ref().and_then(instant);
    match (e.record, e.msg) {
        (Some(record), _) => match jsonlog_line(&record) {
            Some(line) => Unwrapped::Json { line, time },
            None => Unwrapped::Broken,
        },
        (None, Some(msg)) => Unwrapped::Text { text: msg.trim_end_matches('\n').as_bytes().to_vec(), time, uid: None },
        (None, None) => Unwrapped::Broken,
    }
}

/// CNPG's `ts`: seconds since the epoch (a float), or RFC 3339 in newer releases.
fn instant(ts: &Value) -> Option<jiff::Timestamp> {
    match ts {
        Value::Number(n) => jiff::Timestamp::from_microsecond((n.as_f64()? * 1e6).round() as i64).ok(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// The record in jsonlog's form; empty columns left out, as jsonlog does.
fn jsonlog_line(record: &Map<String, Value>) -> Option<Vec<u8>> {
    let mut out = Map::new();
    for (csv, json) in FIELDS {
        if let Some(v) = record.get(*csv).and_then(Value::as_str).filter(|v| !v.is_empty()) {
            out.insert((*json).into(), Value::String(v.into()));
        }
    }
    let pid =
        record.get("process_id").and_then(|p| p.as_str().map(str::parse::<u32>).or(p.as_u64().map(|n| Ok(n as u32))));
    match pid {
        Some(Ok(pid)) => out.insert("pid".into(), Value::from(pid)),
        Some(Err(_)) => return None,
        None => None,
    };
    serde_json::to_vec(&Value::Object(out)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CloudNativePG's documented example (docs/src/logging.md), its message
    /// a checkpoint's, and a session's record.
    #[test]
    fn records_become_jsonlog_lines() {
        let line = br#"{"level":"info","ts":1619781249.7188137,"logger":"postgres","msg":"record","logging_pod":"cluster-example-1","record":{"log_time":"2021-04-30 11:14:09.718 UTC","user_name":"","database_name":"","process_id":"25","connection_from":"","session_id":"608be681.19","session_line_num":"1","command_tag":"","session_start_time":"2021-04-30 11:14:09 UTC","virtual_transaction_id":"","transaction_id":"0","error_severity":"LOG","sql_state_code":"00000","message":"checkpoint starting: time","detail":"","hint":"","internal_query":"","internal_query_pos":"","context":"","query":"","query_pos":"","location":"","application_name":"","backend_type":"checkpointer"}}"#;
        assert!(looks_like(line));
        let Unwrapped::Json { line: json, time } = open(line) else { panic!("{:?}", open(line)) };
        let v: Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"timestamp": "2021-04-30 11:14:09.718 UTC", "pid": 25, "error_severity": "LOG",
                "message": "checkpoint starting: time", "backend_type": "checkpointer"})
        );
        assert_eq!(time, Some("2021-04-30T11:14:09.718814Z".parse().unwrap()));
        let session = br#"{"level":"info","ts":"2024-01-01T00:00:00Z","logger":"postgres","msg":"record","record":{"log_time":"2024-01-01 00:00:00.000 UTC","user_name":"app","database_name":"app","process_id":"77","error_severity":"LOG","message":"checkpoint starting: wal","application_name":"psql"}}"#;
        let Unwrapped::Json { line: json, .. } = open(session) else { panic!() };
        let v: Value = serde_json::from_slice(&json).unwrap();
        assert_eq!((v["user"].as_str(), v["dbname"].as_str(), v["pid"].as_u64()), (Some("app"), Some("app"), Some(77)));
    }

    #[test]
    fn raw_lines_operator_lines_and_broken_ones() {
        let raw = br#"{"level":"info","ts":"2024-01-01T00:00:00.5Z","logger":"postgres","msg":"2024-01-01 00:00:00.500 UTC [23] LOG:  redirecting log output to logging collector process","pipe":"stderr","logging_pod":"c-1"}"#;
        assert_eq!(
            open(raw),
            Unwrapped::Text {
                text: b"2024-01-01 00:00:00.500 UTC [23] LOG:  redirecting log output to logging collector process"
                    .to_vec(),
                time: Some("2024-01-01T00:00:00.5Z".parse().unwrap()),
                uid: None
            }
        );
        let operator = br#"{"level":"info","ts":"2024-01-01T00:00:00Z","logger":"instance-manager","msg":"checkpoint starting","logging_pod":"c-1"}"#;
        assert_eq!(open(operator), Unwrapped::Foreign);
        assert_eq!(open(br#"{"logger":"postgres","msg":"record","record":{"process_id":"x"}}"#), Unwrapped::Broken);
        assert_eq!(open(b"not json"), Unwrapped::Broken);
        assert!(!looks_like(br#"{"timestamp":"2024-01-01 00:00:00 UTC","message":"x"}"#));
    }
}
