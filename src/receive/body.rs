//! A request body of Vector's `http` sink: decompressed as its
//! Content-Encoding says, then read as the events it carries — a JSON array
//! (`encoding.codec = "json"`, the default framing) or one JSON object a
//! line (`framing.method = "newline_delimited"`).

use std::io::Read;

use serde::Deserialize;
use thiserror::Error;

/// One line of a shipped file: Vector's file source gives the line as
/// `message`, the agent's host name as `host`, the file's path as `file`
/// and, with `offset_key = "offset"`, where in the file the line is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shipped {
    pub(crate) host: String,
    pub(crate) file: String,
    pub(crate) offset: u64,
    /// The line's bytes as the server wrote them (see [`raw_bytes`]).
    pub(crate) message: Vec<u8>,
}

/// Why a body was refused: each is a 4xx answer, never retried by Vector,
/// so the message says what to change in the agent's config.
#[derive(Debug, Error, PartialEq, Eq)]
pub(crate) enum BodyError {
    #[error("the body is over {limit} bytes decompressed (raise [ingest] max_batch_bytes or lower the sink's batch.max_bytes)")]
    TooLarge { limit: u64 },
    #[error(
        "Content-Encoding {0:?} is not taken: set the sink's compression to \"gzip\", \"zlib\", \"zstd\" or \"none\""
    )]
    Encoding(String),
    #[error("the body is not valid {encoding} data: {message}")]
    Corrupt { encoding: &'static str, message: String },
    #[error("event {index}: {message} (the sink needs encoding.codec = \"json\")")]
    Json { index: usize, message: String },
    #[error("event {index} has no {field:?}{}", hint(field))]
    Missing { index: usize, field: &'static str },
    /// Host and file name clusters, `status` lines and alert subjects: a
    /// line break or an escape sequence there could forge them, a bidi
    /// override reorder what a reader sees.
    #[error("event {index}: {field:?} holds a control or format character")]
    Control { index: usize, field: &'static str },
    #[error("event {index}: {field:?} is over {limit} bytes")]
    TooLong { index: usize, field: &'static str, limit: usize },
}

/// The longest host name taken (a DNS name's length).
pub(crate) const MAX_HOST: usize = 253;
/// The longest file path taken (Linux's PATH_MAX).
pub(crate) const MAX_FILE: usize = 4096;

fn hint(field: &str) -> &'static str {
    match field {
        "offset" => {
            ": set offset_key = \"offset\" in the agent's file source (walwatch needs it to take each line once)"
        }
        _ => ": ship the file source's events as they are (host and file are set by Vector's file source)",
    }
}

/// Decompresses `body` as `encoding` says, to at most `limit` bytes.
pub(crate) fn decode(body: Vec<u8>, encoding: Option<&str>, limit: u64) -> Result<Vec<u8>, BodyError> {
    let encoding = encoding.map(str::trim).filter(|e| !e.is_empty()).unwrap_or("identity");
    let reader: Box<dyn Read + '_> = match encoding.to_ascii_lowercase().as_str() {
        "identity" => {
            if body.len() as u64 > limit {
                return Err(BodyError::TooLarge { limit });
            }
            return Ok(body);
        }
        "gzip" | "x-gzip" => Box::new(flate2::read::MultiGzDecoder::new(&body[..])),
        "deflate" => Box::new(flate2::read::ZlibDecoder::new(&body[..])),
        "zstd" => Box::new(crate::source::zstd::ZstdFrames::new(&body[..])),
        _ => return Err(BodyError::Encoding(encoding.into())),
    };
    let name = match encoding {
        "deflate" => "zlib",
        "zstd" => "zstd",
        _ => "gzip",
    };
    let mut out = Vec::with_capacity(body.len() * 8);
    let read = reader.take(limit + 1).read_to_end(&mut out);
    read.map_err(|e| BodyError::Corrupt { encoding: name, message: e.to_string() })?;
    if out.len() as u64 > limit {
        return Err(BodyError::TooLarge { limit });
    }
    Ok(out)
}

#[derive(Deserialize)]
struct Event {
    message: Option<String>,
    host: Option<String>,
    file: Option<String>,
    offset: Option<Offset>,
}

/// Vector writes the offset as a number; a remap may have made it a string.
#[derive(Deserialize)]
#[serde(untagged)]
enum Offset {
    Number(u64),
    Text(String),
}

/// The events of a decompressed body, in the order sent.
pub(crate) fn events(body: &[u8]) -> Result<Vec<Shipped>, BodyError> {
    let start = body.iter().position(|b| !b.is_ascii_whitespace());
    let raw: Vec<Event> = match start.map(|i| body[i]) {
        None => Vec::new(),
        Some(b'[') => serde_json::from_slice(body).map_err(|e| json_error(0, &e))?,
        Some(_) => ndjson(body)?,
    };
    raw.into_iter().enumerate().map(|(index, e)| shipped(index, e)).collect()
}

fn ndjson(body: &[u8]) -> Result<Vec<Event>, BodyError> {
    body.split(|&b| b == b'\n')
        .filter(|line| line.iter().any(|b| !b.is_ascii_whitespace()))
        .enumerate()
        .map(|(index, line)| serde_json::from_slice(line).map_err(|e| json_error(index, &e)))
        .collect()
}

fn json_error(index: usize, e: &serde_json::Error) -> BodyError {
    BodyError::Json { index, message: e.to_string() }
}

fn shipped(index: usize, e: Event) -> Result<Shipped, BodyError> {
    let missing = |field| BodyError::Missing { index, field };
    let offset = match e.offset.ok_or(missing("offset"))? {
        Offset::Number(n) => n,
        Offset::Text(t) => t.trim().parse().map_err(|_| missing("offset"))?,
    };
    let host = e.host.filter(|h| !h.is_empty()).ok_or(missing("host"))?;
    let file = e.file.filter(|f| !f.is_empty()).ok_or(missing("file"))?;
    let host = name(index, "host", host, MAX_HOST)?;
    let file = name(index, "file", file, MAX_FILE)?;
    let message = raw_bytes(e.message.ok_or(missing("message"))?);
    Ok(Shipped { host, file, offset, message })
}

/// The bytes of a line Vector read with `encoding.charset = "x-user-defined"`
/// (what `vector-config` writes): every byte 0x80-0xFF arrives as U+F780-U+F7FF
/// and is turned back here, so a log line that is not UTF-8 (a client's
/// name in Latin-1, a cut multibyte character) reaches the spool byte for
/// byte, as a local import reads it. Vector's default decoding would have
/// replaced such bytes with U+FFFD, changing what the trust checks read.
/// A line with any other non-ASCII character came from an agent decoding
/// UTF-8: it is kept as it came.
pub(crate) fn raw_bytes(message: String) -> Vec<u8> {
    const FIRST: u32 = 0xF780;
    let mapped = |c: char| (FIRST..FIRST + 0x80).contains(&(c as u32));
    if message.is_ascii() || !message.chars().all(|c| c.is_ascii() || mapped(c)) {
        return message.into_bytes();
    }
    message.chars().map(|c| if c.is_ascii() { c as u8 } else { (c as u32 - FIRST + 0x80) as u8 }).collect()
}

/// A host or file name as walwatch keeps it: bounded, without control or
/// format characters, in NFC (a name spelt with combining characters and
/// its precomposed spelling are one name, one cluster).
fn name(index: usize, field: &'static str, text: String, limit: usize) -> Result<String, BodyError> {
    use unicode_normalization::{is_nfc, UnicodeNormalization};
    if text.len() > limit {
        return Err(BodyError::TooLong { index, field, limit });
    }
    if text.chars().any(|c| c.is_control() || crate::output::is_format(c)) {
        return Err(BodyError::Control { index, field });
    }
    let text = if is_nfc(&text) { text } else { text.nfc().collect() };
    match text.len() > limit {
        true => Err(BodyError::TooLong { index, field, limit }),
        false => Ok(text),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    const LINE: &str = "2026-11-25 07:00:00.123 UTC [812] LOG:  checkpoint starting: time";

    fn event(offset: u64) -> serde_json::Value {
        serde_json::json!({"message": LINE, "host": "db-1", "file": "/var/log/postgresql/postgresql-15-main.log",
                           "offset": offset, "source_type": "file", "timestamp": "2026-11-25T07:00:00.2Z"})
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    #[test]
    fn a_json_array_and_ndjson_give_the_same_events() {
        let array = serde_json::to_vec(&vec![event(0), event(70)]).unwrap();
        let ndjson = format!("{}\n{}", event(0), event(70));
        let want = vec![
            Shipped {
                host: "db-1".into(),
                file: "/var/log/postgresql/postgresql-15-main.log".into(),
                offset: 0,
                message: LINE.into(),
            },
            Shipped {
                host: "db-1".into(),
                file: "/var/log/postgresql/postgresql-15-main.log".into(),
                offset: 70,
                message: LINE.into(),
            },
        ];
        assert_eq!(events(&array).unwrap(), want);
        assert_eq!(events(ndjson.as_bytes()).unwrap(), want);
        assert_eq!(events(b" \n").unwrap(), vec![]);
    }

    #[test]
    fn gzip_zlib_and_zstd_bodies_are_decoded_within_the_limit() {
        let plain = serde_json::to_vec(&vec![event(0)]).unwrap();
        assert_eq!(decode(gzip(&plain), Some("gzip"), 1 << 20).unwrap(), plain);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&plain).unwrap();
        assert_eq!(decode(z.finish().unwrap(), Some("deflate"), 1 << 20).unwrap(), plain);
        // The zstd command (tests/run.sh installs it) makes the frame.
        let mut child = std::process::Command::new("zstd")
            .args(["-c", "-q"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("the zstd command");
        child.stdin.take().unwrap().write_all(&plain).unwrap();
        let out = child.wait_with_output().unwrap().stdout;
        assert_eq!(decode(out, Some("zstd"), 1 << 20).unwrap(), plain);
        assert_eq!(decode(plain.clone(), None, 1 << 20).unwrap(), plain);
        let big = vec![b' '; 5000];
        assert_eq!(decode(gzip(&big), Some("gzip"), 4999), Err(BodyError::TooLarge { limit: 4999 }));
        assert_eq!(decode(big.clone(), None, 4999), Err(BodyError::TooLarge { limit: 4999 }));
        assert_eq!(decode(big, Some("snappy"), 1 << 20), Err(BodyError::Encoding("snappy".into())));
        let e = decode(b"not gzip".to_vec(), Some("gzip"), 1 << 20).unwrap_err();
        assert!(matches!(e, BodyError::Corrupt { encoding: "gzip", .. }), "{e}");
    }

    #[test]
    fn events_without_what_identifies_a_line_are_refused_by_index() {
        let no_offset = r#"[{"message":"x","host":"h","file":"f","offset":1},{"message":"x","host":"h","file":"f"}]"#;
        let e = events(no_offset.as_bytes()).unwrap_err();
        assert_eq!(e, BodyError::Missing { index: 1, field: "offset" });
        assert!(e.to_string().contains("offset_key = \"offset\""), "{e}");
        let e = events(br#"{"message":"x","file":"f","offset":1}"#).unwrap_err();
        assert_eq!(e, BodyError::Missing { index: 0, field: "host" });
        assert_eq!(events(br#"{"message":"x","host":"h","file":"f","offset":"12"}"#).unwrap()[0].offset, 12);
        let e = events(b"{\"message\":\"x\"}\nnot json\n").unwrap_err();
        assert!(matches!(e, BodyError::Json { index: 1, .. }), "{e}");
        let e = events(b"[{\"message\": 12}]").unwrap_err();
        assert!(matches!(e, BodyError::Json { index: 0, .. }), "{e}");
        // Names that would break a status line or a mail subject.
        let e = events(br#"{"message":"x","host":"db\r\nBcc: a@b","file":"f","offset":1}"#).unwrap_err();
        assert_eq!(e, BodyError::Control { index: 0, field: "host" });
        let e = events(b"{\"message\":\"x\",\"host\":\"h\",\"file\":\"/x\\u001b[2J.log\",\"offset\":1}").unwrap_err();
        assert_eq!(e, BodyError::Control { index: 0, field: "file" });
    }

    #[test]
    fn bytes_carried_as_x_user_defined_come_back_whole() {
        // A database name of 0xff bytes and a Latin-1 "é" (0xe9), as Vector's
        // x-user-defined decoding sends them.
        let sent = "FATAL:  database \"\u{f7ff}\u{f7ff}\" does not exist caf\u{f7e9}".to_string();
        assert_eq!(raw_bytes(sent), b"FATAL:  database \"\xff\xff\" does not exist caf\xe9".to_vec());
        // From an agent decoding UTF-8: as it came, replacement characters included.
        assert_eq!(raw_bytes("Schreiben=0,212 s \u{fffd}".into()), "Schreiben=0,212 s \u{fffd}".as_bytes());
        assert_eq!(raw_bytes("gr\u{fc}\u{f7ff}".into()), "gr\u{fc}\u{f7ff}".as_bytes(), "mixed: not x-user-defined");
        let event = serde_json::json!({"message": "a\u{f780}", "host": "h", "file": "/f", "offset": 0}).to_string();
        assert_eq!(events(event.as_bytes()).unwrap()[0].message, b"a\x80");
    }

    #[test]
    fn names_are_bounded_visible_and_spelt_one_way() {
        let event = |host: &str, file: &str| {
            serde_json::json!({"message": "x", "host": host, "file": file, "offset": 1}).to_string()
        };
        // A right-to-left override and a zero-width space: format characters.
        for host in ["db\u{202e}1-bd", "db\u{200b}-1"] {
            let e = events(event(host, "/f").as_bytes()).unwrap_err();
            assert_eq!(e, BodyError::Control { index: 0, field: "host" });
        }
        let long = "h".repeat(MAX_HOST + 1);
        assert_eq!(
            events(event(&long, "/f").as_bytes()).unwrap_err(),
            BodyError::TooLong { index: 0, field: "host", limit: MAX_HOST }
        );
        assert_eq!(events(event(&long[1..], "/f").as_bytes()).unwrap()[0].host.len(), MAX_HOST);
        let deep = format!("/{}", "d".repeat(MAX_FILE));
        assert!(matches!(events(event("h", &deep).as_bytes()), Err(BodyError::TooLong { field: "file", .. })));
        // "é" precomposed and as e + combining acute: one host, one file.
        let nfc = events(event("caf\u{e9}", "/log/caf\u{e9}.log").as_bytes()).unwrap();
        let nfd = events(event("cafe\u{301}", "/log/cafe\u{301}.log").as_bytes()).unwrap();
        assert_eq!((nfc[0].host.as_str(), nfc[0].file.as_str()), ("caf\u{e9}", "/log/caf\u{e9}.log"));
        assert_eq!((&nfd[0].host, &nfd[0].file), (&nfc[0].host, &nfc[0].file));
    }
}
