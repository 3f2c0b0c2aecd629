//! PostgreSQL's log read back from journald: `journalctl -o json`
//! (`journald-json`: one entry per line, PostgreSQL's line in `MESSAGE`)
//! and `journalctl`'s plain output (`journald`: syslog's envelope,
//! `Nov 22 08:04:20 host postgres[123]: `).
//!
//! A server under systemd that logs to stderr reaches the journal through
//! a stream whose `_PID` is the postmaster's, whatever process wrote the
//! line: such lines are read as the stderr lines they are (the prefix's
//! `%p` is the writer). A server that logs to syslog reaches it through
//! syslog(3), its messages `[N-k] `-numbered and `_PID` the sender: those
//! are read as syslog, the journal's fields as the envelope.
//!
//! Who sent an entry: journald takes `_PID` and `_UID` from the socket's
//! credentials (SCM_CREDENTIALS, checked by the kernel), while
//! `SYSLOG_PID` and `SYSLOG_IDENTIFIER` are whatever the sender wrote
//! (`logger -t postgres --id=<pid>` writes both). So the syslog line is
//! rebuilt with `_PID` — a `%p` naming another process is then refused
//! (`frame::formats::syslog`) — and `_UID` goes with the record, for the check that
//! the server's user sent it (`ingest::batch`). `_COMM` is not used: it is
//! the executable's file name, which any user picks by copying a binary,
//! and journald leaves it out when the sender has exited before it looks.

use serde::Deserialize;
use serde_json::Value;

use super::envelope::Unwrapped;
use super::syslog;

/// The fields of `journalctl -o json` that matter here.
#[derive(Deserialize)]
struct Entry {
    #[serde(rename = "MESSAGE")]
    message: Option<Value>,
    #[serde(rename = "_PID")]
    pid: Option<String>,
    #[serde(rename = "_UID")]
    uid: Option<String>,
    #[serde(rename = "SYSLOG_IDENTIFIER")]
    ident: Option<String>,
    #[serde(rename = "_HOSTNAME")]
    host: Option<String>,
    #[serde(rename = "__REALTIME_TIMESTAMP")]
    realtime: Option<String>,
}

/// Whether `line` is an entry of `journalctl -o json`.
pub(crate) fn looks_like_json(line: &[u8]) -> bool {
    serde_json::from_slice::<Value>(line)
        .is_ok_and(|v| v.get("__REALTIME_TIMESTAMP").is_some() && v.get("MESSAGE").is_some())
}

/// Whether `line` is `journalctl`'s plain output of a line PostgreSQL wrote
/// to stderr (no syslog sequence number), or its header.
pub(crate) fn looks_like_plain(line: &[u8]) -> bool {
    line.starts_with(b"-- Logs begin at ")
        || line.starts_with(b"-- Journal begins at ")
        || syslog::split(line).is_some_and(|(_, _, seq)| !seq)
}

/// MESSAGE: a string, or an array of bytes when it is not UTF-8 or holds
/// control characters.
fn message(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Array(a) => a.iter().map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok())).collect(),
        _ => None,
    }
}

/// Whether a MESSAGE came through syslog(3): `[N] ` or `[N-k] ` first.
pub(crate) fn numbered(message: &[u8]) -> bool {
    let Some(rest) = message.strip_prefix(b"[") else { return false };
    let Some(end) = memchr::memchr(b']', rest) else { return false };
    let seq = &rest[..end];
    rest.get(end + 1) == Some(&b' ')
        && seq.split(|&b| b == b'-').all(|n| !n.is_empty() && n.len() <= 20 && n.iter().all(u8::is_ascii_digit))
        && seq.iter().filter(|&&b| b == b'-').count() <= 1
}

/// One entry of `journalctl -o json`: its MESSAGE for the stderr scanner,
/// or (`as_syslog`) rebuilt as the syslog line it was sent as.
pub(crate) fn open_json(line: &[u8], as_syslog: bool) -> Unwrapped {
    let Ok(e) = serde_json::from_slice::<Entry>(line) else { return Unwrapped::Broken };
    let Some(text) = e.message.as_ref().and_then(message) else { return Unwrapped::Foreign };
    let text = text.strip_suffix(b"\n").map(<[u8]>::to_vec).unwrap_or(text);
    let time = e
        .realtime
        .as_deref()
        .and_then(|t| t.parse::<i64>().ok())
        .and_then(|us| jiff::Timestamp::from_microsecond(us).ok());
    let uid = e.uid.as_deref().and_then(|u| u.parse::<u32>().ok());
    if !as_syslog {
        return Unwrapped::Text { text, time, uid };
    }
    let (Some(time), Some(pid)) = (time, e.pid.as_deref().and_then(|p| p.parse::<u32>().ok())) else {
        return Unwrapped::Broken;
    };
    let ident = e.ident.as_deref().unwrap_or("postgres").replace(|c: char| c.is_whitespace() || c == '[', "_");
    let host = e.host.as_deref().unwrap_or("-").replace(char::is_whitespace, "_");
    let mut rebuilt = format!("{time} {host} {ident}[{pid}]: ").into_bytes();
    rebuilt.extend_from_slice(&text);
    Unwrapped::Text { text: rebuilt, time: Some(time), uid }
}

/// One line of plain `journalctl` output: the text after the envelope,
/// dated by it (`written`: the year of a time that has none). A line that
/// ends with `>` was cut by the pager at the terminal's width (`less -S`,
/// which `journalctl` and `systemctl status` page through): its text
/// before the `>` is read, marked cut. The lines `systemctl status` prints
/// above the journal's are another program's.
pub(crate) fn open_plain(line: &[u8], written: &jiff::Zoned) -> Unwrapped {
    if line.starts_with(b"-- ") || line.is_empty() || status_line(line) {
        return Unwrapped::Foreign;
    }
    let Some((raw, text, _)) = syslog::split(line) else { return Unwrapped::Broken };
    let time = syslog::envelope_time(raw, written);
    match text.strip_suffix(b">") {
        Some(kept) => Unwrapped::Cut { text: kept.to_vec(), time },
        None => Unwrapped::Text { text: text.to_vec(), time, uid: None },
    }
}

/// The bullets `systemctl status` starts a unit's line with (active,
/// inactive, failed, reloading; `*` without a UTF-8 locale).
const BULLETS: [&str; 5] = ["\u{25cf} ", "\u{25cb} ", "\u{00d7} ", "\u{21bb} ", "* "];

/// Whether `line` is `systemctl status`'s first line: a bullet, then the
/// unit's name and description (`● postgresql@15-main.service - PostgreSQL
/// Cluster 15-main`).
pub(crate) fn looks_like_status(line: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(line) else { return false };
    BULLETS.iter().any(|b| {
        text.strip_prefix(b).and_then(|rest| rest.split_once(' ')).is_some_and(|(unit, rest)| {
            unit.contains('.') && !unit.contains('[') && (rest.starts_with("- ") || rest.is_empty())
        })
    })
}

/// Whether `line` is one of the lines `systemctl status` prints before
/// the journal's: the unit's line, an indented `Key: value` (`Loaded:`,
/// `Active:`, `Main PID:`, `CGroup:`…), a line of the process tree, or the
/// pager's `lines 1-23/23 (END)`.
fn status_line(line: &[u8]) -> bool {
    if looks_like_status(line) {
        return true;
    }
    let Ok(text) = std::str::from_utf8(line) else { return false };
    if text.strip_prefix("lines ").is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit())) {
        return true;
    }
    let body = text.trim_start_matches(' ');
    if body.len() == text.len() {
        return false;
    }
    if body.starts_with(['\u{251c}', '\u{2514}', '\u{2502}', '|', '`']) {
        return true;
    }
    body.split_once(':').is_some_and(|(key, _)| {
        key.len() <= 16
            && key.starts_with(|c: char| c.is_ascii_uppercase())
            && key.chars().all(|c| c.is_ascii_alphanumeric() || c == ' ' || c == '-')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STDERR: &[u8] = br#"{"__CURSOR":"s=1","__REALTIME_TIMESTAMP":"1795334663386123","_PID":"21752","_UID":"105","_COMM":"postgres","SYSLOG_IDENTIFIER":"postgres","PRIORITY":"6","_HOSTNAME":"db1","MESSAGE":"2026-11-22 08:04:23.386 UTC [21760] LOG:  checkpoint starting: wal"}"#;

    #[test]
    fn json_entries_give_their_message_and_time() {
        assert!(looks_like_json(STDERR));
        let time = Some("2026-11-22T08:04:23.386123Z".parse().unwrap());
        let text = b"2026-11-22 08:04:23.386 UTC [21760] LOG:  checkpoint starting: wal".to_vec();
        assert_eq!(open_json(STDERR, false), Unwrapped::Text { text, time, uid: Some(105) });
        let bytes = br#"{"__REALTIME_TIMESTAMP":"1","MESSAGE":[76,79,71,9,255]}"#;
        assert_eq!(
            open_json(bytes, false),
            Unwrapped::Text {
                text: b"LOG\t\xff".to_vec(),
                time: Some(jiff::Timestamp::from_microsecond(1).unwrap()),
                uid: None
            }
        );
        assert_eq!(open_json(br#"{"__REALTIME_TIMESTAMP":"1","MESSAGE":null}"#, false), Unwrapped::Foreign);
        assert_eq!(open_json(b"{", false), Unwrapped::Broken);
    }

    #[test]
    fn syslog_messages_are_rebuilt_as_syslog_lines() {
        let line = br#"{"__REALTIME_TIMESTAMP":"1795334663386123","_PID":"21760","SYSLOG_IDENTIFIER":"postgres","_HOSTNAME":"db1","MESSAGE":"[5-2] \t(3 s)"}"#;
        assert!(numbered(b"[5-2] \t(3 s)") && numbered(b"[5] x") && !numbered(b"[5-] x") && !numbered(b"[local] x"));
        let Unwrapped::Text { text, .. } = open_json(line, true) else { panic!() };
        assert_eq!(text, b"2026-11-22T08:04:23.386123Z db1 postgres[21760]: [5-2] \t(3 s)");
        assert_eq!(syslog::split(&text).map(|(_, t, seq)| (t, seq)), Some((&b"\t(3 s)"[..], true)));
        assert_eq!(open_json(br#"{"MESSAGE":"[5] x"}"#, true), Unwrapped::Broken, "no time or pid");
    }

    /// `logger -t postgres --id=21760` as another user: journald keeps what
    /// the sender wrote in SYSLOG_PID and what the kernel said in _PID and
    /// _UID. The line is rebuilt under the real sender's pid, and its uid
    /// goes with it.
    #[test]
    fn the_kernel_vouched_sender_is_used_not_the_one_the_message_claims() {
        let forged = br#"{"__REALTIME_TIMESTAMP":"1795334663386123","_PID":"30001","_UID":"65534","SYSLOG_PID":"21760","SYSLOG_IDENTIFIER":"postgres","_HOSTNAME":"db1","_TRANSPORT":"syslog","MESSAGE":"[91-1] 2026-11-22 08:04:23.386 UTC [21760] LOG:  checkpoint starting: wal"}"#;
        assert_eq!(
            open_json(forged, true),
            Unwrapped::Text {
                text: b"2026-11-22T08:04:23.386123Z db1 postgres[30001]: [91-1] 2026-11-22 08:04:23.386 UTC [21760] LOG:  checkpoint starting: wal".to_vec(),
                time: Some("2026-11-22T08:04:23.386123Z".parse().unwrap()),
                uid: Some(65534)
            }
        );
    }

    #[test]
    fn plain_lines_lose_their_envelope() {
        let written = "2026-11-22T09:00:00Z".parse::<jiff::Timestamp>().unwrap().to_zoned(jiff::tz::TimeZone::UTC);
        let line =
            b"Nov 22 08:04:23 db1 postgres[21752]: 2026-11-22 08:04:23.386 UTC [21760] LOG:  checkpoint starting: wal";
        assert!(looks_like_plain(line));
        assert!(!looks_like_plain(b"Nov 22 08:04:23 db1 postgres[21752]: [3-1] LOG:  x"), "syslog's");
        assert!(looks_like_plain(
            b"-- Journal begins at Sun 2026-11-22 08:00:00 UTC, ends at Sun 2026-11-22 09:00:00 UTC. --"
        ));
        assert_eq!(
            open_plain(line, &written),
            Unwrapped::Text {
                text: b"2026-11-22 08:04:23.386 UTC [21760] LOG:  checkpoint starting: wal".to_vec(),
                time: Some("2026-11-22T08:04:23Z".parse().unwrap()),
                uid: None
            }
        );
        assert_eq!(open_plain(b"-- Boot 0123 --", &written), Unwrapped::Foreign);
        assert_eq!(open_plain(b"garbage", &written), Unwrapped::Broken);
    }

    /// `systemctl status`: the unit's lines are another program's, and a
    /// journal line the pager cut (`>` last) is read up to the cut, marked.
    #[test]
    fn systemctl_status_lines_and_pager_cuts() {
        let written = "2026-11-28T20:00:00Z".parse::<jiff::Timestamp>().unwrap().to_zoned(jiff::tz::TimeZone::UTC);
        let unit = "\u{25cf} postgresql@15-main.service - PostgreSQL Cluster 15-main";
        assert!(looks_like_status(unit.as_bytes()));
        assert!(looks_like_status(b"* postgresql.service - PostgreSQL database server"));
        assert!(!looks_like_status(b"* a list item"));
        for line in [
            unit,
            "     Loaded: loaded (/lib/systemd/system/postgresql@.service; enabled-runtime; preset: enabled)",
            "   Main PID: 4349 (postgres)",
            "     CGroup: /system.slice/system-postgresql.slice/postgresql@15-main.service",
            "             \u{251c}\u{2500}4349 /usr/lib/postgresql/15/bin/postgres -D /var/lib/postgresql/15/ma>",
            "lines 1-23/23 (END)",
        ] {
            assert_eq!(open_plain(line.as_bytes(), &written), Unwrapped::Foreign, "{line}");
        }
        let cut = b"Nov 28 19:22:37 pghost postgres[4349]: 2026-11-28 19:22:37.247 UTC [4353] LOG:  checkpoint complete: wrote 66 buffers (0.4%); 1>";
        assert_eq!(
            open_plain(cut, &written),
            Unwrapped::Cut {
                text: b"2026-11-28 19:22:37.247 UTC [4353] LOG:  checkpoint complete: wrote 66 buffers (0.4%); 1"
                    .to_vec(),
                time: Some("2026-11-28T19:22:37Z".parse().unwrap()),
            }
        );
        // An indented line that is no `Key:` of systemctl's stays broken.
        assert_eq!(open_plain(b"   2026-11-28 19:22:37.247 UTC [4353] LOG:  x", &written), Unwrapped::Broken);
    }
}
