//! Azure Database for PostgreSQL's logs as its diagnostic settings export
//! them (to a storage account or an event hub: one JSON record per line,
//! `"category":"PostgreSQLLogs"`, `"operationName":"LogEvent"`). The
//! record's `properties` hold PostgreSQL's line in one of two shapes:
//!
//! * Flexible Server: `message` is the whole stderr line, prefix and level
//!   included; a DETAIL comes apart in `detail`.
//! * Single Server: `prefix` is the line's log_line_prefix (`%t-%c-`),
//!   `errorLevel` its level and `message` the bare message; Single Server
//!   prints the checkpoint's flags in its complete line
//!   (`checkpoint complete (212): wrote …`), which is read as the plain
//!   line.
//!
//! Either way the stderr line is rebuilt (with its DETAIL as a second line
//! under the same prefix) and read by the stderr scanner, session fields
//! and trust checks included.

use serde::Deserialize;

use super::envelope::Unwrapped;

#[derive(Deserialize)]
struct Record {
    time: Option<String>,
    category: Option<String>,
    properties: Option<Properties>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Properties {
    prefix: Option<String>,
    message: Option<String>,
    detail: Option<String>,
    error_level: Option<String>,
}

/// Whether `line` is an Azure diagnostic record of PostgreSQL's log.
pub(crate) fn looks_like(line: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(line).is_ok_and(|v| {
        v.get("category").and_then(|c| c.as_str()).is_some_and(|c| c.starts_with("PostgreSQL"))
            && v.get("properties").is_some_and(|p| p.get("message").is_some())
    })
}

pub(crate) fn open(line: &[u8]) -> Unwrapped {
    let Ok(r) = serde_json::from_slice::<Record>(line) else { return Unwrapped::Broken };
    let Some(p) = r.properties.filter(|_| r.category.as_deref() == Some("PostgreSQLLogs")) else {
        return Unwrapped::Foreign;
    };
    let time = r.time.as_deref().and_then(|t| t.parse().ok());
    let (Some(message), Some(level)) = (p.message, p.error_level) else { return Unwrapped::Broken };
    let (prefix, first) = match p.prefix.filter(|x| !x.is_empty()) {
        Some(prefix) => {
            let first = format!("{prefix}{level}:  {}", unflagged(&message));
            (prefix, first)
        }
        None => {
            // The prefix is what comes before the level in the whole line.
            let Some(at) = message.find(&format!("{level}:  ")) else { return Unwrapped::Broken };
            (message[..at].to_string(), message)
        }
    };
    let mut text = first;
    if let Some(detail) = p.detail.filter(|d| !d.is_empty()) {
        text += &format!("\n{prefix}DETAIL:  {detail}");
    }
    Unwrapped::Text { text: text.into_bytes(), time, uid: None }
}

/// Single Server's `checkpoint complete (212): ` without its flags.
fn unflagged(message: &str) -> std::borrow::Cow<'_, str> {
    for head in ["checkpoint complete", "restartpoint complete", "checkpoint starting", "restartpoint starting"] {
        let Some(rest) = message.strip_prefix(head).and_then(|r| r.strip_prefix(" (")) else { continue };
        if let Some((flags, tail)) = rest.split_once("):") {
            if !flags.is_empty() && flags.bytes().all(|b| b.is_ascii_digit()) {
                return format!("{head}:{tail}").into();
            }
        }
    }
    message.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rebuilds_both_servers_lines() {
        let single = br#"{"time":"2023-02-27T23:26:18Z","category":"PostgreSQLLogs","operationName":"LogEvent","properties":{"prefix":"2023-02-27 23:26:18 UTC-63fd3286.d4-","message":"checkpoint complete (212): wrote 0 buffers (0.0%)","detail":"","errorLevel":"LOG"}}"#;
        assert!(looks_like(single));
        let time = Some("2023-02-27T23:26:18Z".parse().unwrap());
        let text = b"2023-02-27 23:26:18 UTC-63fd3286.d4-LOG:  checkpoint complete: wrote 0 buffers (0.0%)".to_vec();
        assert_eq!(open(single), Unwrapped::Text { text, time, uid: None });
        let flexible = br#"{"time":"2023-02-27T22:21:11.830Z","category":"PostgreSQLLogs","properties":{"message":"2023-02-27 22:21:11.823 UTC [2030] [user=postgres,db=postgres,app=pgbench] LOG:  duration: 0.053 ms","detail":"parameters: $1 = '4234'","errorLevel":"LOG"}}"#;
        let Unwrapped::Text { text, .. } = open(flexible) else { panic!() };
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "2023-02-27 22:21:11.823 UTC [2030] [user=postgres,db=postgres,app=pgbench] LOG:  duration: 0.053 ms\n2023-02-27 22:21:11.823 UTC [2030] [user=postgres,db=postgres,app=pgbench] DETAIL:  parameters: $1 = '4234'"
        );
        assert_eq!(open(br#"{"category":"PostgreSQLFlexSessions","properties":{"message":"x"}}"#), Unwrapped::Foreign);
        assert_eq!(
            open(br#"{"category":"PostgreSQLLogs","properties":{"message":"no level here","errorLevel":"LOG"}}"#),
            Unwrapped::Broken
        );
        assert_eq!(unflagged("checkpoint complete (x): wrote"), "checkpoint complete (x): wrote");
        assert_eq!(unflagged("checkpoint starting (4): time"), "checkpoint starting: time");
    }
}
