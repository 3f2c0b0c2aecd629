//! A stand-in for a Vector agent, for the tests of `[ingest]`. Vector itself
//! is in no registry this machine can reach, so this replays what its
//! documented components send (vector.dev's documentation and Vector's
//! source):
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
//!
//! [`Agent::configured`] reads what a generated config says instead of
//! assuming it: the file source its `include` picks, that source's
//! `max_line_bytes` and multiline rule, every transform on the way to the
//! sink, and the sink's `batch.max_bytes`.

use std::fs;
use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::daemon::{Daemon, Workspace, POLL_INTERVAL};

/// The lines of one shipped file, as the file source makes them events.
pub struct Agent {
    pub host: String,
    pub file: String,
    events: Vec<Value>,
    next: usize,
}

impl Agent {
    /// The events of `content` as the file source reads it with the TAB
    /// continuation rule `vector-config` writes for stderr logs.
    pub fn read(host: &str, file: &str, content: &[u8]) -> Agent {
        let tab = Multiline::new(r"^[^\t]", r"^\t", "continue_through");
        let events = multiline(lines(content, usize::MAX, Some(X_USER_DEFINED)), Some(&tab));
        Agent::of(host, file, events)
    }

    /// The events an agent running `config` (a Vector config, TOML) sends
    /// for `file` holding `content`: the file source whose `include`
    /// matches the path, lines over its `max_line_bytes` discarded, its
    /// multiline rule applied; then every transform between that source and
    /// the sink, in order; then the sink's `batch.max_bytes`, over which
    /// Vector drops an event. A transform this stand-in does not model fails
    /// the test: it would make the agent ship something else than what is
    /// tested.
    pub fn configured(config: &str, host: &str, file: &str, content: &[u8]) -> Agent {
        let config: toml::Value = toml::from_str(config).expect("the agent's config is TOML");
        let sources = config["sources"].as_table().expect("[sources]");
        let (id, source) = sources
            .iter()
            .find(|(_, s)| {
                s["include"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|g| glob::Pattern::new(g.as_str().unwrap()).unwrap().matches(file))
            })
            .unwrap_or_else(|| panic!("no source of the agent's config reads {file}"));
        assert_eq!(source["type"].as_str(), Some("file"), "{id}");
        // Vector's default when the config does not set it.
        let max_line = source.get("max_line_bytes").map_or(102_400, |v| v.as_integer().unwrap() as usize);
        let rule = source.get("multiline").map(|m| {
            let text = |k: &str| m[k].as_str().unwrap_or_else(|| panic!("multiline.{k}")).to_string();
            Multiline::new(&text("start_pattern"), &text("condition_pattern"), &text("mode"))
        });
        let charset = source.get("encoding").and_then(|e| e.get("charset")).map(|c| c.as_str().unwrap());
        assert!(
            charset.is_none_or(|c| c == X_USER_DEFINED),
            "{id}: a charset the stand-in does not model: {charset:?}"
        );
        let mut events = multiline(lines(content, max_line, charset), rule.as_ref());
        // The components from the source to the sink: each reads the one before.
        let (sink, path) = route(&config, id);
        for (name, transform) in path {
            events = apply(&name, &transform, events);
        }
        assert_eq!(sink["type"].as_str(), Some("http"), "the sink");
        let max_batch = sink["batch"]["max_bytes"].as_integer().map_or(10_000_000, |v| v as usize);
        let mut agent = Agent::of(host, file, events);
        agent.events.retain(|e| e.to_string().len() <= max_batch);
        agent
    }

    fn of(host: &str, file: &str, events: Vec<(u64, String)>) -> Agent {
        let events = events
            .into_iter()
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

    /// Every event, in order.
    pub fn events(&self) -> &[Value] {
        &self.events
    }
}

/// The WHATWG encoding `vector-config` sets as the file source's
/// `encoding.charset`: each byte 0x80-0xFF becomes U+F780-U+F7FF.
const X_USER_DEFINED: &str = "x-user-defined";

/// The file source's lines: (offset, text without its newline). A line
/// without a newline yet is not read (the writer is still writing it); one
/// over `max_line_bytes` is discarded. With `encoding.charset =
/// "x-user-defined"` every byte is carried (encoding_rs' decoder); without
/// a charset, bytes that are not UTF-8 become U+FFFD, as the sink's JSON
/// encoding writes them.
fn lines(content: &[u8], max_line_bytes: usize, charset: Option<&str>) -> Vec<(u64, String)> {
    let decode = |text: &[u8]| match charset {
        Some(_) => text
            .iter()
            .map(|&b| if b < 0x80 { b as char } else { char::from_u32(0xF700 + b as u32).unwrap() })
            .collect(),
        None => String::from_utf8_lossy(text).into_owned(),
    };
    let mut out = Vec::new();
    let mut offset = 0u64;
    for line in content.split_inclusive(|&b| b == b'\n') {
        if let Some(text) = line.strip_suffix(b"\n") {
            if text.len() <= max_line_bytes {
                out.push((offset, decode(text)));
            }
        }
        offset += line.len() as u64;
    }
    out
}

/// A file source's `multiline` rule (Vector's line aggregation, its
/// timeout aside: every line is there at once, and a timeout only flushes
/// a group early, which changes no byte the central keeps).
struct Multiline {
    start: regex::Regex,
    condition: regex::Regex,
    mode: String,
}

impl Multiline {
    fn new(start: &str, condition: &str, mode: &str) -> Multiline {
        assert!(
            ["continue_through", "continue_past", "halt_before", "halt_with"].contains(&mode),
            "multiline mode {mode}"
        );
        Multiline {
            start: regex::Regex::new(start).unwrap(),
            condition: regex::Regex::new(condition).unwrap(),
            mode: mode.into(),
        }
    }
}

/// Lines grouped as Vector's line aggregation groups them: a group opens on
/// a line matching the start pattern (any other line passes alone), and the
/// mode says which next lines join it; joined with "\n", at the first
/// line's offset.
fn multiline(lines: Vec<(u64, String)>, rule: Option<&Multiline>) -> Vec<(u64, String)> {
    let Some(rule) = rule else { return lines };
    let mut out = Vec::new();
    let mut open: Option<(u64, String)> = None;
    let join = |group: &mut (u64, String), text: &str| {
        group.1.push('\n');
        group.1.push_str(text);
    };
    for (offset, text) in lines {
        let Some(mut group) = open.take() else {
            if rule.start.is_match(&text) {
                open = Some((offset, text));
            } else {
                out.push((offset, text));
            }
            continue;
        };
        let matched = rule.condition.is_match(&text);
        match (rule.mode.as_str(), matched) {
            ("continue_through", true) | ("continue_past", true) | ("halt_before", false) | ("halt_with", false) => {
                join(&mut group, &text);
                open = Some(group);
            }
            ("continue_through", false) | ("halt_before", true) => {
                out.push(group);
                open = Some((offset, text));
            }
            _ => {
                // continue_past's one more line, halt_with's last one.
                join(&mut group, &text);
                out.push(group);
            }
        }
    }
    out.extend(open);
    out
}

/// The sink the source `from` reaches, and the transforms on the way, in
/// order.
fn route(config: &toml::Value, from: &str) -> (toml::Value, Vec<(String, toml::Value)>) {
    let reads = |component: &toml::Value, id: &str| {
        component["inputs"].as_array().is_some_and(|i| i.iter().any(|v| v.as_str() == Some(id)))
    };
    let mut path = Vec::new();
    let mut at = from.to_string();
    loop {
        let transforms = config.get("transforms").and_then(|t| t.as_table()).cloned().unwrap_or_default();
        if let Some((id, t)) = transforms.iter().find(|(_, t)| reads(t, &at)) {
            path.push((id.clone(), t.clone()));
            at = id.clone();
            continue;
        }
        let sinks = config["sinks"].as_table().expect("[sinks]");
        let (_, sink) = sinks.iter().find(|(_, s)| reads(s, &at)).unwrap_or_else(|| panic!("nothing reads {at}"));
        return (sink.clone(), path);
    }
}

/// A transform, as Vector applies it to the events. Only what walwatch has
/// ever generated is modelled: a `filter` whose condition keeps the events
/// whose message matches one of a list of regexes (VRL's `match_any`).
fn apply(id: &str, transform: &toml::Value, events: Vec<(u64, String)>) -> Vec<(u64, String)> {
    let kind = transform["type"].as_str().unwrap_or("?");
    let condition = transform.get("condition").and_then(|c| c.as_str()).unwrap_or("");
    assert!(
        kind == "filter" && condition.contains("match_any(string!(.message), ["),
        "transform {id} (type {kind}) is not modelled by tests/support/vector.rs: model it before shipping it"
    );
    let patterns: Vec<regex::Regex> = condition
        .lines()
        .filter_map(|l| l.trim().trim_end_matches(',').strip_prefix("r'")?.strip_suffix('\''))
        .map(|p| regex::Regex::new(p).unwrap())
        .collect();
    events.into_iter().filter(|(_, m)| patterns.iter().any(|p| p.is_match(m))).collect()
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

/// The agents' token in every central's token file.
pub const TOKEN: &str = "s3cr3t-agent-token";

/// A real `walwatch run` with `[ingest]` on a free port of 127.0.0.1.
pub struct Central {
    pub ws: Workspace,
    pub url: String,
    pub daemon: Daemon,
}

impl Central {
    /// A central with `extra` appended to its `[ingest]` section.
    pub fn start(extra: &str) -> Central {
        Central::start_in(Workspace::new(), extra, "http")
    }

    pub fn start_in(ws: Workspace, extra: &str, scheme: &str) -> Central {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let tokens = ws.path().join("tokens");
        fs::write(&tokens, format!("# agents\nother-token\n{TOKEN}\n")).unwrap();
        let config = format!(
            "[store]\npath = {:?}\n\n[daemon]\npoll_interval = {POLL_INTERVAL:?}\nentry_settle = \"300ms\"\n\n\
             [ingest]\nlisten = \"127.0.0.1:{port}\"\ntoken_file = {:?}\nsettle = \"1s\"\n{extra}",
            ws.db().to_str().unwrap(),
            tokens.to_str().unwrap()
        );
        fs::write(ws.config_path(), config).unwrap();
        let daemon = ws.start();
        let url = format!("{scheme}://127.0.0.1:{port}/ingest/vector");
        let mut central = Central { ws, url, daemon };
        if scheme == "http" {
            central.wait_listening();
        } else {
            let log = central.ws.path().join("daemon.log");
            central.daemon.wait_until("the HTTPS endpoint is announced", || {
                let text = fs::read_to_string(&log).unwrap_or_default();
                text.contains("batches at https://").then_some(()).ok_or(text)
            });
        }
        central
    }

    pub fn wait_listening(&mut self) {
        let url = self.url.clone();
        self.daemon
            .wait_until("the ingest endpoint answers", || post(&url, Some(TOKEN), b"[]", false, false).map(drop));
    }

    pub fn restart(&mut self) {
        self.daemon = self.ws.start();
        self.wait_listening();
    }

    /// Delivers `events` as the sink does (gzip, retried) and returns the answer.
    pub fn send(&self, events: &[Value], ndjson: bool) -> Value {
        deliver(&self.url, Some(TOKEN), &body(events, ndjson, true), ndjson, true, Duration::from_secs(20))
    }
}
