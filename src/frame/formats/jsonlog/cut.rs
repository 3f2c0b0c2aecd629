//! A jsonlog entry whose line the input ended inside (a copy cut short, a
//! file truncated by a crash): what it holds up to the cut, as a whole
//! entry serde can read. PostgreSQL writes a flat object of strings and
//! numbers, so the cut falls in a key, in a value, or between them:
//! - inside the value of a text key (`message`, `detail`, …): the text up
//!   to the cut is kept and the object closed after it (an escape sequence
//!   the cut split is dropped);
//! - anywhere else: the object is closed after the last pair it holds
//!   whole. A number or other value at the cut may be missing digits, so it
//!   is dropped too.

/// Keys whose value may be kept cut: the texts the classifier reads up to a cut.
const TEXT_KEYS: [&[u8]; 6] = [b"message", b"detail", b"hint", b"context", b"statement", b"internal_query"];

/// Where the scan of the object stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// `{` or `,` seen: a key (or `}`) comes next.
    Key,
    /// A key read: its `:` comes next.
    Colon,
    /// `:` seen: the value comes next.
    Value,
    /// A non-string value is being read, or a value was read: `,` or `}`.
    After,
}

/// `line`, an entry cut at its end, closed into JSON; None when it holds no
/// whole pair, or is no object.
pub(crate) fn close(line: &[u8]) -> Option<Vec<u8>> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let body = line.strip_prefix(b"{")?;
    let (mut expect, mut whole_end, mut key) = (Expect::Key, None, &b""[..]);
    let mut i = 0;
    while i < body.len() {
        match (body[i], expect) {
            (b'"', Expect::Key | Expect::Value) => {
                let Some(len) = string_len(&body[i + 1..]) else {
                    // The cut is inside this string.
                    let text = expect == Expect::Value && TEXT_KEYS.contains(&key);
                    return Some(closed(body, text.then(|| without_split_escape(body)), whole_end));
                };
                if expect == Expect::Key {
                    key = &body[i + 1..i + 1 + len];
                    expect = Expect::Colon;
                } else {
                    whole_end = Some(i + len + 2);
                    expect = Expect::After;
                }
                i += len + 2;
                continue;
            }
            (b':', Expect::Colon) => expect = Expect::Value,
            (b',', Expect::After) => {
                whole_end = whole_end.max(Some(i));
                expect = Expect::Key;
            }
            (b'}', Expect::After | Expect::Key) => return None, // whole: nothing was cut
            (b' ' | b'\t', _) => {}
            (_, Expect::Value) => expect = Expect::After,
            (_, Expect::After) => {}
            _ => return None,
        }
        i += 1;
    }
    Some(closed(body, None, whole_end))
}

/// The object: `{`, the pairs before `whole_end`, and the cut text value
/// if any, closed.
fn closed(body: &[u8], cut_text: Option<&[u8]>, whole_end: Option<usize>) -> Vec<u8> {
    let mut out = b"{".to_vec();
    match cut_text {
        Some(text) => {
            out.extend_from_slice(text);
            out.extend_from_slice(b"\"}");
        }
        None => {
            // A non-string value at the cut ended where the body does, but may lack digits.
            let end = whole_end.unwrap_or(0);
            out.extend_from_slice(body[..end].strip_suffix(b",").unwrap_or(&body[..end]));
            out.push(b'}');
        }
    }
    out
}

/// The length of the JSON string starting just after its opening quote, up
/// to its closing quote; None when the input ends inside it.
fn string_len(s: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// `s`, which ends inside a string, without an escape sequence the end split
/// (`\`, `\u12`).
fn without_split_escape(s: &[u8]) -> &[u8] {
    let mut i = 0;
    let mut split = None;
    while i < s.len() {
        if s[i] == b'\\' {
            let need = if s.get(i + 1) == Some(&b'u') { 6 } else { 2 };
            if i + need > s.len() {
                split = Some(i);
                break;
            }
            i += need;
        } else {
            i += 1;
        }
    }
    &s[..split.unwrap_or(s.len())]
}

#[cfg(test)]
mod tests {
    use super::close;

    /// A real PostgreSQL 15 checkpointer entry (tests/fixtures/cst).
    const ENTRY: &str = r#"{"timestamp":"2026-11-29 09:38:30.602 CST","pid":16486,"session_id":"6b0b8213.4066","line_num":14,"session_start":"2026-11-29 01:38:27 UTC","txid":0,"error_severity":"LOG","message":"checkpoint complete: wrote 1330 buffers (8.1%); 0 WAL file(s) added, 0 removed, 1 recycled; write=0.014 s, sync=0.008 s, total=0.031 s; sync files=10, longest=0.004 s, average=0.001 s; distance=16384 kB, estimate=16384 kB","backend_type":"checkpointer","query_id":0}"#;

    fn closed_at(len: usize) -> Option<serde_json::Value> {
        close(&ENTRY.as_bytes()[..len]).map(|json| serde_json::from_slice(&json).unwrap())
    }

    #[test]
    fn a_cut_inside_the_message_keeps_its_text() {
        let at = ENTRY.find("0 WAL file").unwrap() + 5;
        let v = closed_at(at).unwrap();
        assert_eq!(v["message"], "checkpoint complete: wrote 1330 buffers (8.1%); 0 WAL");
        assert_eq!((v["pid"].as_u64(), v["error_severity"].as_str()), (Some(16486), Some("LOG")));
        assert!(v.get("backend_type").is_none());
    }

    #[test]
    fn a_cut_elsewhere_keeps_the_whole_pairs_before_it() {
        // Inside the number of pid: pid dropped, the time kept.
        let v = closed_at(ENTRY.find("16486").unwrap() + 3).unwrap();
        assert_eq!(v.as_object().unwrap().keys().collect::<Vec<_>>(), ["timestamp"]);
        // Inside backend_type's value and inside a key: up to the message.
        for at in [ENTRY.find("checkpointer\"").unwrap() + 4, ENTRY.find("\"backend_type").unwrap() + 4] {
            let v = closed_at(at).unwrap();
            assert!(v["message"].as_str().unwrap().ends_with("estimate=16384 kB"), "{at}");
            assert!(v.get("backend_type").is_none(), "{at}");
        }
        // Right after a comma, a colon, a quote.
        for needle in [",\"pid\"", "\"pid\":", "\"message\":\""] {
            let v = closed_at(ENTRY.find(needle).unwrap() + needle.len()).unwrap();
            assert_eq!(v["timestamp"], "2026-11-29 09:38:30.602 CST", "{needle}");
        }
    }

    /// The entry with a space after each `:` and `,`, as a JSON tool
    /// re-serialising the log writes it: read the same up to the cut.
    #[test]
    fn spaces_between_tokens_are_skipped() {
        let spaced = ENTRY.replace("\":", "\": ").replace(",\"", ", \"");
        let at = spaced.find("0 WAL file").unwrap() + 5;
        let v: serde_json::Value = serde_json::from_slice(&close(&spaced.as_bytes()[..at]).unwrap()).unwrap();
        assert_eq!(v["message"], "checkpoint complete: wrote 1330 buffers (8.1%); 0 WAL");
        assert_eq!((v["pid"].as_u64(), v["error_severity"].as_str()), (Some(16486), Some("LOG")));
        let at = spaced.find("16486").unwrap() + 3;
        let v: serde_json::Value = serde_json::from_slice(&close(&spaced.as_bytes()[..at]).unwrap()).unwrap();
        assert_eq!(v.as_object().unwrap().keys().collect::<Vec<_>>(), ["timestamp"]);
    }

    /// Quotes inside a value are escaped (`\"`): no end of the string.
    #[test]
    fn an_escaped_quote_does_not_end_a_string() {
        let entry = r#"{"timestamp":"2026-11-29 09:38:30.602 CST","pid":16486,"error_severity":"LOG","message":"checkpoints are occurring too frequently (2 seconds apart)","hint":"Consider increasing the configuration parameter \"max_wal_size\".","backend_type":"checkpointer","query_id":0}"#;
        let at = entry.find("checkpointer").unwrap() + 3;
        let v: serde_json::Value = serde_json::from_slice(&close(&entry.as_bytes()[..at]).unwrap()).unwrap();
        assert_eq!(v["hint"], "Consider increasing the configuration parameter \"max_wal_size\".");
        assert_eq!(v.as_object().unwrap().len(), 5);
        // Cut inside the hint, after an escaped quote: its text up to the cut.
        let at = entry.find("max_wal_size").unwrap() + 3;
        let v: serde_json::Value = serde_json::from_slice(&close(&entry.as_bytes()[..at]).unwrap()).unwrap();
        assert_eq!(v["hint"], "Consider increasing the configuration parameter \"max");
    }

    #[test]
    fn a_split_escape_is_dropped() {
        for cut in [r#"{"message":"a \"#, r#"{"message":"a \u00"#] {
            let v: serde_json::Value = serde_json::from_slice(&close(cut.as_bytes()).unwrap()).unwrap();
            assert_eq!(v["message"], "a ", "{cut}");
        }
    }

    /// Whole escapes before the cut, the last one ending right at it, stay.
    #[test]
    fn whole_escapes_are_kept() {
        let cases = [
            (r#"{"message":"a \"b\" c"#, "a \"b\" c"),
            (r#"{"message":"x \\ \u00e9\n\""#, "x \\ é\n\""),
            (r#"{"message":"\t\u00e9"#, "\té"),
            (r#"{"message":"\t\u00e9\u00"#, "\té"),
        ];
        for (cut, want) in cases {
            let v: serde_json::Value = serde_json::from_slice(&close(cut.as_bytes()).unwrap()).unwrap();
            assert_eq!(v["message"], want, "{cut}");
        }
    }

    #[test]
    fn a_whole_entry_or_no_object_is_not_closed() {
        assert_eq!(close(ENTRY.as_bytes()), None);
        assert_eq!(close(b"not json"), None);
        assert_eq!(close(b"[1,2"), None);
    }

    /// Every cut of a real entry closes into JSON serde reads, or into nothing.
    #[test]
    fn every_cut_closes_into_json() {
        for len in 1..ENTRY.len() {
            if let Some(json) = close(&ENTRY.as_bytes()[..len]) {
                let text = String::from_utf8_lossy(&json).into_owned();
                assert!(serde_json::from_slice::<serde_json::Value>(&json).is_ok(), "{len}: {text}");
            }
        }
    }
}
