//! The HTTP receiver: `POST /ingest/vector` on a thread of its own, one
//! request at a time (a file's batches are then taken in the order they
//! arrive), answered 2xx only once the batch's lines are committed.
//!
//! Vector's http sink retries 408, 429 and 5xx (not 501) and drops a batch
//! answered with any other 4xx: 4xx is kept for requests that would fail
//! the same way again (bad token, bad JSON, a batch over the limit), 503
//! for a store locked by another writer, 507 for a spool that cannot be
//! written (a full disk): those come again.

use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use subtle::ConstantTimeEq;
use thiserror::Error;
use tiny_http::{Header, Method, Request, Response, Server};

use super::body::{self, BodyError};
use super::streams::{ReceiveError, Streams, Taken};
use super::tls::{self, Front};
use crate::config::IngestSection;
use crate::store::Store;

/// Where Vector's http sink posts.
pub const PATH: &str = "/ingest/vector";

/// How often the receiver looks for quiet files whose last entry it holds.
const TICK: Duration = Duration::from_millis(250);

#[derive(Debug, Error)]
pub enum StartError {
    #[error("[ingest] listen = \"{addr}\": cannot listen there: {reason}")]
    Bind { addr: SocketAddr, reason: String },
    #[error("[ingest] token_file {path}: {reason}")]
    Tokens { path: PathBuf, reason: String },
    #[error("[ingest] {0}")]
    Tls(String),
    #[error("cannot start the ingest thread: {0}")]
    Thread(#[from] std::io::Error),
}

/// The running receiver; [`Receiver::stop`] ends its thread.
pub struct Receiver {
    server: Arc<Server>,
    stop: Arc<AtomicBool>,
    stored: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
    /// `tls_cert`/`tls_key`: the HTTPS front relaying to `server`.
    front: Option<Front>,
    tokens: Arc<Mutex<Vec<String>>>,
    addr: SocketAddr,
    section: IngestSection,
}

/// What the receiver thread needs.
struct Context {
    /// Read again at each reload: a token is revoked or added without a restart.
    tokens: Arc<Mutex<Vec<String>>>,
    max_batch: u64,
    stop: Arc<AtomicBool>,
    stored: Arc<AtomicU64>,
}

impl Receiver {
    /// Listens at `[ingest] listen` (port 0: any free port) for the store at `db`.
    pub fn start(section: &IngestSection, db: &Path) -> Result<Option<Receiver>, StartError> {
        let Some(addr) = section.listen else { return Ok(None) };
        let tokens = match &section.token_file {
            Some(path) => read_tokens(path)?,
            None => Vec::new(),
        };
        let tokens = Arc::new(Mutex::new(tokens));
        let bind = |e: &dyn std::fmt::Display| StartError::Bind { addr, reason: e.to_string() };
        let (server, front) = match &section.tls {
            None => (Server::from_listener(listen_on(addr).map_err(|e| bind(&e))?, None).map_err(|e| bind(&e))?, None),
            Some((cert, key)) => {
                let config = tls::server_config(cert, key).map_err(StartError::Tls)?;
                let listener = listen_on(addr).map_err(|e| bind(&e))?;
                // Plain HTTP on a loopback port only the front connects to.
                let inner = Server::http("127.0.0.1:0").map_err(|e| bind(&e))?;
                let inner_addr = inner.server_addr().to_ip().ok_or_else(|| bind(&"no inner address"))?;
                (inner, Some(Front::start(listener, inner_addr, config)?))
            }
        };
        let bound = match &front {
            Some(f) => f.addr(),
            None => server.server_addr().to_ip().unwrap_or(addr),
        };
        let server = Arc::new(server);
        let (stop, stored) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
        let context = Context {
            tokens: Arc::clone(&tokens),
            max_batch: section.max_batch_bytes,
            stop: Arc::clone(&stop),
            stored: Arc::clone(&stored),
        };
        let (dir, rules, db, settle) =
            (section.spool_dir(db), section.clusters.clone(), db.to_path_buf(), section.settle);
        let thread = {
            let server = Arc::clone(&server);
            std::thread::Builder::new()
                .name("ingest".into())
                .spawn(move || receive(&server, &db, dir, rules, settle, &context))?
        };
        Ok(Some(Receiver {
            server,
            stop,
            stored,
            thread: Some(thread),
            front,
            tokens,
            addr: bound,
            section: section.clone(),
        }))
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// "https" with tls_cert and tls_key, else "http".
    pub fn scheme(&self) -> &'static str {
        if self.front.is_some() {
            "https"
        } else {
            "http"
        }
    }

    /// The settings it was started with (a reload with others restarts it).
    pub fn section(&self) -> &IngestSection {
        &self.section
    }

    /// Reads `token_file` again (a reload with the same `[ingest]`): tokens
    /// added or revoked take effect at once. A file that cannot be read, or
    /// holds none, keeps the tokens in force (said as an error).
    pub fn reload_tokens(&self) -> Result<usize, StartError> {
        let Some(path) = &self.section.token_file else { return Ok(0) };
        let tokens = read_tokens(path)?;
        let n = tokens.len();
        *self.tokens.lock().unwrap_or_else(PoisonError::into_inner) = tokens;
        Ok(n)
    }

    /// Events stored since the last call (the alert rules run when some arrived).
    pub fn take_stored(&self) -> u64 {
        self.stored.swap(0, Ordering::Relaxed)
    }

    /// Stops listening once the request under way is answered.
    pub fn stop(mut self) {
        if let Some(front) = self.front.take() {
            front.stop();
        }
        self.stop.store(true, Ordering::Relaxed);
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// How long a bind waits for the address to be let go: a reload that
/// changes `[ingest]` stops the receiver and starts it again on the same
/// address, and the old listener's socket is closed by its accept thread a
/// moment after the stop returns.
const REBIND_WAIT: Duration = Duration::from_secs(3);

/// A listener on `addr`, retried while the address is still in use (see
/// [`REBIND_WAIT`]); any other error at once.
fn listen_on(addr: SocketAddr) -> std::io::Result<std::net::TcpListener> {
    let deadline = std::time::Instant::now() + REBIND_WAIT;
    loop {
        match std::net::TcpListener::bind(addr) {
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50))
            }
            result => return result,
        }
    }
}

/// The accepted bearer tokens: one a line, blank lines and `#` comments left out.
pub fn read_tokens(path: &Path) -> Result<Vec<String>, StartError> {
    let err = |reason: String| StartError::Tokens { path: path.to_path_buf(), reason };
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    let tokens: Vec<String> =
        text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(String::from).collect();
    if tokens.is_empty() {
        return Err(err("holds no token (one a line): no agent could send".into()));
    }
    Ok(tokens)
}

fn receive(
    server: &Server,
    db: &Path,
    dir: PathBuf,
    rules: Vec<crate::config::IngestCluster>,
    settle: Duration,
    cx: &Context,
) {
    let opened = Store::open(db).map_err(ReceiveError::from).and_then(|mut store| {
        let streams = Streams::recover(&mut store, dir, rules, settle)?;
        Ok((store, streams))
    });
    let (mut store, mut streams) = match opened {
        Ok(both) => both,
        Err(e) => {
            tracing::error!(error = %e, "Cannot take shipped log lines: every request is answered 503 until a restart.");
            return refuse_all(server, cx, &e.to_string());
        }
    };
    cx.stored.fetch_add(streams.take_stored(), Ordering::Relaxed);
    while !cx.stop.load(Ordering::Relaxed) {
        match server.recv_timeout(TICK) {
            Ok(Some(request)) => handle(request, &mut store, &mut streams, cx),
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "Cannot accept an ingest connection."),
        }
        if streams.pending() {
            if let Err(e) = streams.settle(&mut store) {
                tracing::warn!(error = %e, "Cannot read the held-back last entries of shipped files; retrying.");
            }
        }
        cx.stored.fetch_add(streams.take_stored(), Ordering::Relaxed);
    }
}

fn refuse_all(server: &Server, cx: &Context, why: &str) {
    while !cx.stop.load(Ordering::Relaxed) {
        if let Ok(Some(request)) = server.recv_timeout(TICK) {
            respond(request, 503, &format!("walwatch cannot take shipped lines: {why}\n"), true);
        }
    }
}

fn handle(mut request: Request, store: &mut Store, streams: &mut Streams, cx: &Context) {
    let path = request.url().split('?').next().unwrap_or_default().to_string();
    if path != PATH {
        return respond(request, 404, &format!("walwatch takes Vector's batches at {PATH}\n"), false);
    }
    let tokens = cx.tokens.lock().unwrap_or_else(PoisonError::into_inner).clone();
    if !authorized(&request, &tokens) {
        tracing::warn!(remote = ?request.remote_addr(), "Refused a batch: no or a wrong bearer token.");
        return respond(request, 401, "a bearer token from [ingest] token_file is needed\n", false);
    }
    match request.method() {
        Method::Post => {}
        // Vector's healthcheck.
        Method::Get | Method::Head => return respond(request, 200, "ok\n", false),
        _ => return respond(request, 405, &format!("POST {PATH}\n"), false),
    }
    let (status, text) = match read_batch(&mut request, cx.max_batch) {
        Err((status, e)) => {
            tracing::warn!(remote = ?request.remote_addr(), error = %e, "Refused a batch.");
            (status, format!("{e}\n"))
        }
        Ok(batch) => take(store, streams, batch),
    };
    respond(request, status, &text, status == 503)
}

/// The events of the request, or the status and reason to refuse it with.
fn read_batch(request: &mut Request, max: u64) -> Result<Vec<body::Shipped>, (u16, BodyError)> {
    let too_large = (413, BodyError::TooLarge { limit: max });
    if request.body_length().is_some_and(|n| n as u64 > max) {
        return Err(too_large);
    }
    let encoding = header(request, "Content-Encoding");
    let mut raw = Vec::new();
    let read = request.as_reader().take(max + 1).read_to_end(&mut raw);
    if let Err(e) = read {
        return Err((400, BodyError::Corrupt { encoding: "request", message: e.to_string() }));
    }
    if raw.len() as u64 > max {
        return Err(too_large);
    }
    let status = |e: BodyError| {
        let code = match e {
            BodyError::TooLarge { .. } => 413,
            BodyError::Encoding(_) => 415,
            _ => 400,
        };
        (code, e)
    };
    let decoded = body::decode(raw, encoding.as_deref(), max).map_err(status)?;
    body::events(&decoded).map_err(status)
}

fn take(store: &mut Store, streams: &mut Streams, batch: Vec<body::Shipped>) -> (u16, String) {
    let sent = batch.len();
    match streams.take(store, batch) {
        Ok(Taken { lines, duplicates, events }) => {
            tracing::debug!(sent, lines, duplicates, events, "Took a batch of shipped lines.");
            (200, format!("{{\"lines\":{sent},\"taken\":{lines},\"duplicates\":{duplicates},\"events\":{events}}}\n"))
        }
        Err(e) if e.busy() => (503, format!("the store is busy, try again: {e}\n")),
        Err(e @ ReceiveError::Spool { .. }) => {
            tracing::error!(error = %e, "Cannot keep shipped lines; the agents will send them again.");
            (507, format!("{e}\n"))
        }
        Err(e) => {
            tracing::error!(error = %e, "Cannot take a batch of shipped lines; the agents will send it again.");
            (500, format!("{e}\n"))
        }
    }
}

/// Whether the request carries one of `tokens` (any request when there are
/// none: a loopback listener). Every token is compared, each in constant time.
fn authorized(request: &Request, tokens: &[String]) -> bool {
    if tokens.is_empty() {
        return true;
    }
    let given = header(request, "Authorization");
    let Some(given) = given.as_deref().and_then(|v| v.strip_prefix("Bearer ")) else { return false };
    let given = given.trim().as_bytes();
    tokens.iter().fold(0u8, |any, t| any | t.as_bytes().ct_eq(given).unwrap_u8()) == 1
}

fn header(request: &Request, name: &'static str) -> Option<String> {
    request.headers().iter().find(|h| h.field.equiv(name)).map(|h| h.value.as_str().to_string())
}

fn respond(request: Request, status: u16, text: &str, retry_soon: bool) {
    let content_type = if text.starts_with('{') { "application/json" } else { "text/plain; charset=utf-8" };
    let mut response = Response::from_string(text).with_status_code(status);
    // ASCII constants: from_bytes cannot refuse them.
    if let Ok(h) = Header::from_bytes("Content-Type", content_type) {
        response.add_header(h);
    }
    if retry_soon {
        if let Ok(h) = Header::from_bytes("Retry-After", "1") {
            response.add_header(h);
        }
    }
    if status == 401 {
        if let Ok(h) = Header::from_bytes("WWW-Authenticate", "Bearer") {
            response.add_header(h);
        }
    }
    if let Err(e) = request.respond(response) {
        tracing::debug!(error = %e, "Cannot send the ingest answer.");
    }
}
