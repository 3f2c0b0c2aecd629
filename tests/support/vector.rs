//! A stand-in for a Vector agent, for the tests of `[ingest]`. Vector itself
//! is in no registry this machine can reach, so this replays what its
//! documented components send (vector.dev docs and source, read through the
//! search tool; see design/anchors.md §7):
//! - the `file` source: one event per line, `message` without its newline,
//!   `host`, `file` (the path) and, with `offset_key = "offset"`, the byte
//!   offset of the line in the file; with the multiline rule walwatch's
//!   `vector-config` writes, a line starting with a TAB is joined to the one
//!   before with "\n" (one event, the first line's offset);
//! - the `http` sink: `encoding.codec = "json"`, a JSON array (or NDJSON with
//!   `framing.method = "newline_delimited"`), `compression = "gzip"`
//!   (Content-Encoding: gzip), `auth.strategy = "bearer"`; a batch answered
//!   408, 429 or 5xx (not 501), or not answered, is sent again unchanged;
//!   any other 4xx drops it.

use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The lines of one shipped file, as the file source makes them events.
pub struct Agent {
    pub host: String,
    pub file: String,
    events: Vec<Value>,
    next: usize,
}

impl Agent {
    /// The events of `content` as the file source reads it; `keep` chooses
    /// the events forwarded (a `filter` transform), all when None.
    pub fn read(host: &str, file: &str, content: &[u8], keep: Option<&dyn Fn(&str) -> bool>) -> Agent {
        let mut events: Vec<(u64, String)> = Vec::new();
        let mut offset = 0u64;
        for line in content.split_inclusive(|&b| b == b'\n') {
            let text = String::from_utf8_lossy(line.strip_suffix(b"\n").unwrap_or(line)).into_owned();
            match events.last_mut() {
                Some(last) if text.starts_with('\t') => {
                    last.1.push('\n');
                    last.1.push_str(&text);
                }
                _ => events.push((offset, text)),
            }
            offset += line.len() as u64;
        }
        let events = events
            .into_iter()
            .filter(|(_, m)| keep.is_none_or(|k| k(m)))
            .map(|(offset, message)| {
                json!({"message": message, "host": host, "file": file, "offset": offset,
                       "source_type": "file", "timestamp": "2026-11-25T07:00:00.000000Z"})
            })
            .collect();
        Agent { host: host.into(), file: file.into(), events, next: 0 }
    }

    /// The next batch of at most `n` events; None when all were sent.
    pub fn batch(&mut self, n: usize) -> Option<Vec<Value>> {
        if self.next >= self.events.len() {
            return None;
        }
        let end = (self.next + n).min(self.events.len());
        let batch = self.events[self.next..end].to_vec();
        self.next = end;
        Some(batch)
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }
}

/// A request body as the http sink makes it.
pub fn body(events: &[Value], ndjson: bool, gzip: bool) -> Vec<u8> {
    let plain = if ndjson {
        events.iter().map(Value::to_string).collect::<Vec<_>>().join("\n").into_bytes()
    } else {
        serde_json::to_vec(events).unwrap()
    };
    if !gzip {
        return plain;
    }
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&plain).unwrap();
    enc.finish().unwrap()
}

/// One POST as the sink sends it: (status, body), or the transport error.
pub fn post(url: &str, token: Option<&str>, body: &[u8], ndjson: bool, gzip: bool) -> Result<(u16, String), String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into();
    let content_type = if ndjson { "application/x-ndjson" } else { "application/json" };
    let mut request = agent.post(url).header("Content-Type", content_type);
    if gzip {
        request = request.header("Content-Encoding", "gzip");
    }
    if let Some(t) = token {
        request = request.header("Authorization", &format!("Bearer {t}"));
    }
    let mut response = request.send(body).map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    Ok((status, response.body_mut().read_to_string().unwrap_or_default()))
}

/// Sends `body` as the sink does until it is taken: again after 408, 429,
/// 5xx (not 501) or no answer, with a short back-off; panics on an answer
/// the sink would drop the batch for, or after `limit`.
pub fn deliver(url: &str, token: Option<&str>, body: &[u8], ndjson: bool, gzip: bool, limit: Duration) -> Value {
    let started = Instant::now();
    loop {
        match post(url, token, body, ndjson, gzip) {
            Ok((200..=299, text)) => return serde_json::from_str(&text).unwrap_or(Value::String(text)),
            Ok((status, text)) if status == 501 || (400..500).contains(&status) && ![408, 429].contains(&status) => {
                panic!("the sink would drop this batch: {status} {text}")
            }
            Ok(_) | Err(_) if started.elapsed() < limit => std::thread::sleep(Duration::from_millis(100)),
            other => panic!("not taken within {limit:?}: {other:?}"),
        }
    }
}
