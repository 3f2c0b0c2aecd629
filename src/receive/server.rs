//! The receiver: `POST /ingest/vector` on a [`serve`](crate::serve)
//! listener, each batch answered 2xx only once its lines are committed.
//!
//! Vector's http sink retries 408, 429 and 5xx (not 501) and drops a batch
//! answered with any other 4xx: 4xx is kept for requests that would fail
//! the same way again (bad token, a host the token may not write, bad
//! JSON, a batch over the limit), 503 for a store locked by another writer
//! or every slot taken, 507 for a spool that cannot be written (a full
//! disk): those come again.
//!
//! The token is checked on the head: a request without one is answered
//! before a byte of its body is read.

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use http::Method;
use thiserror::Error;

use super::body::{self, BodyError, Shipped};
use super::spool_dir::SpoolDir;
use super::streams::{ReceiveError, Streams, Taken};
use super::tokens::{self, Token, TokenError};
use crate::config::IngestSection;
use crate::serve::{self, Admit, Handler, Head, Limits, Reply, Server};
use crate::store::Store;

/// Where Vector's http sink posts.
pub(crate) const PATH: &str = "/ingest/vector";

/// How often the receiver looks for quiet files whose last entry it holds.
const TICK: Duration = Duration::from_millis(250);

#[derive(Debug, Error)]
pub(crate) enum StartError {
    #[error("[ingest] listen = \"{addr}\": cannot listen there: {reason}")]
    Bind { addr: SocketAddr, reason: String },
    #[error(transparent)]
    Tokens(#[from] TokenError),
    #[error("[ingest] {0}")]
    Tls(String),
    #[error("[ingest] spool {0}")]
    Spool(String),
    #[error("[ingest] cannot open the store: {0}")]
    Store(String),
    #[error("cannot start the ingest thread: {0}")]
    Thread(#[from] std::io::Error),
}

/// What a receiver needs that can fail, read before the one serving is
/// stopped: a reload whose settings cannot be served keeps the old one.
pub(crate) struct Prepared {
    section: IngestSection,
    tokens: Vec<Token>,
    tls: Option<Arc<rustls::ServerConfig>>,
    listener: TcpListener,
}

/// The running receiver; [`Receiver::stop`] ends it.
pub(crate) struct Receiver {
    server: Server,
    /// The bound socket, kept so that a reload on the same address never
    /// lets it go (no moment without a listener, no wait for the port).
    listener: TcpListener,
    ingest: Arc<Ingest>,
    ticker: Option<(Sender<()>, JoinHandle<()>)>,
    section: IngestSection,
}

/// The handler: tokens, the store and the streams.
struct Ingest {
    /// Read again at each reload: a token is revoked or added without a restart.
    tokens: Mutex<Arc<Vec<Token>>>,
    max_batch: u64,
    state: Mutex<State>,
    stored: AtomicU64,
}

struct State {
    store: Store,
    streams: Streams,
}

impl Receiver {
    /// Reads the tokens and the certificate and binds the address of
    /// `section`; None without `[ingest] listen`. `current` is the receiver
    /// serving now: on its address its socket is taken over, not bound again.
    pub(crate) fn prepare(section: &IngestSection, current: Option<&Receiver>) -> Result<Option<Prepared>, StartError> {
        let Some(addr) = section.listen else { return Ok(None) };
        let tokens = match &section.token_file {
            Some(path) => tokens::read_tokens(path)?,
            None => Vec::new(),
        };
        let tls = match &section.tls {
            Some((cert, key)) => Some(serve::server_config(cert, key).map_err(StartError::Tls)?),
            None => None,
        };
        let bind = |e: std::io::Error| StartError::Bind { addr, reason: e.to_string() };
        let listener = match current.filter(|c| c.section.listen == Some(addr) && addr.port() != 0) {
            Some(current) => current.listener.try_clone().map_err(bind)?,
            None => TcpListener::bind(addr).map_err(bind)?,
        };
        Ok(Some(Prepared { section: section.clone(), tokens, tls, listener }))
    }

    /// Serves what [`Receiver::prepare`] read, for the store at `db`.
    pub(crate) fn start(prepared: Prepared, db: &Path) -> Result<Receiver, StartError> {
        let Prepared { section, tokens, tls, listener } = prepared;
        warn_about(&tokens);
        let mut store = Store::open(db).map_err(|e| StartError::Store(e.to_string()))?;
        let dir = super::spool_dir::locate(&section, db, &mut store);
        let spool = SpoolDir::claim(&dir, &mut store).map_err(StartError::Spool)?;
        let streams = Streams::recover(&mut store, spool, section.clusters.clone(), section.settle)
            .map_err(|e| StartError::Store(e.to_string()))?;
        let ingest = Arc::new(Ingest {
            tokens: Mutex::new(Arc::new(tokens)),
            max_batch: section.max_batch_bytes,
            state: Mutex::new(State { store, streams }),
            stored: AtomicU64::new(0),
        });
        ingest.collect_stored();
        let limits = Limits {
            max_connections: section.max_connections,
            max_connections_per_peer: section.max_connections_per_peer,
            ..Limits::ingest()
        };
        let server =
            Server::start("ingest", listener.try_clone()?, tls, limits, Arc::clone(&ingest) as Arc<dyn Handler>)?;
        let ticker = {
            let (stop, stopped) = mpsc::channel();
            let ingest = Arc::clone(&ingest);
            let thread =
                std::thread::Builder::new().name("ingest-settle".into()).spawn(move || tick(&ingest, &stopped))?;
            Some((stop, thread))
        };
        Ok(Receiver { server, listener, ingest, ticker, section })
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// "https" with tls_cert and tls_key, else "http".
    pub(crate) fn scheme(&self) -> &'static str {
        self.server.scheme()
    }

    pub(crate) fn health(&self) -> &Arc<serve::Health> {
        self.server.health()
    }

    /// The settings it was started with (a reload with others restarts it).
    pub(crate) fn section(&self) -> &IngestSection {
        &self.section
    }

    /// Reads `token_file` again (a reload with the same `[ingest]`): tokens
    /// added or revoked take effect at once. A file that cannot be read, or
    /// holds none, keeps the tokens in force (the error says why).
    pub(crate) fn reload_tokens(&self) -> Result<usize, StartError> {
        let Some(path) = &self.section.token_file else { return Ok(0) };
        let tokens = tokens::read_tokens(path)?;
        warn_about(&tokens);
        let n = tokens.len();
        *self.ingest.tokens.lock().unwrap_or_else(PoisonError::into_inner) = Arc::new(tokens);
        Ok(n)
    }

    /// Events stored since the last call (the alert rules run when some arrived).
    pub(crate) fn take_stored(&self) -> u64 {
        self.ingest.stored.swap(0, Ordering::Relaxed)
    }

    /// Stops listening once the requests under way are answered.
    pub(crate) fn stop(mut self) {
        self.server.stop();
        if let Some((stop, thread)) = self.ticker.take() {
            drop(stop);
            let _ = thread.join();
        }
    }
}

/// Says what a token file lets a stolen or guessed token do.
fn warn_about(tokens: &[Token]) {
    for t in tokens.iter().filter(|t| t.any_host()) {
        tracing::warn!(line = t.line, "The ingest token on line {} may write any host: bind it to its agent's host (the token, then the host name or glob, on its line).", t.line);
    }
    for t in tokens.iter().filter(|t| t.weak()) {
        tracing::warn!(
            line = t.line,
            "The ingest token on line {} is shorter than {} characters: make a longer one (openssl rand -hex 24).",
            t.line,
            tokens::STRONG
        );
    }
}

/// Reads the held-back last entries of quiet files until `stopped` is dropped.
fn tick(ingest: &Ingest, stopped: &mpsc::Receiver<()>) {
    loop {
        match stopped.recv_timeout(TICK) {
            Err(RecvTimeoutError::Timeout) => {}
            _ => return,
        }
        let mut state = ingest.state();
        if state.streams.pending() {
            let State { store, streams } = &mut *state;
            if let Err(e) = streams.settle(store) {
                tracing::warn!(error = %e, "Cannot read the held-back last entries of shipped files; retrying.");
            }
        }
        drop(state);
        ingest.collect_stored();
    }
}

impl Ingest {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn tokens(&self) -> Arc<Vec<Token>> {
        Arc::clone(&self.tokens.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn collect_stored(&self) {
        let n = self.state().streams.take_stored();
        self.stored.fetch_add(n, Ordering::Relaxed);
    }

    /// The events of a request's body, or the answer refusing it.
    fn batch(&self, head: &Head, raw: Vec<u8>) -> Result<Vec<Shipped>, Reply> {
        let status = |e: BodyError| {
            let code = match e {
                BodyError::TooLarge { .. } => 413,
                BodyError::Encoding(_) => 415,
                _ => 400,
            };
            tracing::info!(remote = %head.peer, error = %e, "Refused a batch.");
            Reply::text(code, format!("{e}\n"))
        };
        let decoded = body::decode(raw, head.header("content-encoding"), self.max_batch).map_err(status)?;
        body::events(&decoded).map_err(status)
    }
}

impl Handler for Ingest {
    fn admit(&self, head: &Head) -> Admit {
        if head.path != PATH {
            return Admit::Answer(Reply::text(404, format!("walwatch takes Vector's batches at {PATH}\n")));
        }
        let tokens = self.tokens();
        if !tokens.is_empty() && tokens::find(&tokens, head.header("authorization")).is_none() {
            // Not logged one by one: a flood of them would flood the log too;
            // the listener's refusal count says how many.
            tracing::debug!(remote = %head.peer, "Refused a batch: no or a wrong bearer token.");
            let reply = Reply::text(401, "a bearer token from [ingest] token_file is needed\n");
            return Admit::Answer(reply.with_header("WWW-Authenticate", "Bearer"));
        }
        match head.method {
            Method::POST => Admit::Read { limit: self.max_batch },
            // Vector's healthcheck.
            Method::GET | Method::HEAD => Admit::Answer(Reply::text(200, "ok\n")),
            _ => Admit::Answer(Reply::text(405, format!("POST {PATH}\n"))),
        }
    }

    fn serve(&self, head: Head, raw: Vec<u8>) -> Reply {
        let batch = match self.batch(&head, raw) {
            Ok(batch) => batch,
            Err(reply) => return reply,
        };
        let tokens = self.tokens();
        let token = tokens::find(&tokens, head.header("authorization"));
        if token.is_none() && !tokens.is_empty() {
            // Revoked by a reload while its body was read.
            return Reply::text(401, "a bearer token from [ingest] token_file is needed\n");
        }
        if let Some(token) = token {
            if let Some(line) = batch.iter().find(|l| !token.allows(&l.host)) {
                tracing::warn!(remote = %head.peer, host = ?line.host, token_line = token.line, "Refused a batch: its token may not write that host.");
                let text = format!(
                    "the token (line {} of [ingest] token_file) may write {}, not host {:?}\n",
                    token.line,
                    token.hosts(),
                    line.host
                );
                return Reply::text(403, text);
            }
        }
        let answer = {
            let mut state = self.state();
            let State { store, streams } = &mut *state;
            take(store, streams, batch)
        };
        self.collect_stored();
        answer
    }

    fn too_large(&self, limit: u64) -> Reply {
        Reply::text(413, format!("{}\n", BodyError::TooLarge { limit }))
    }
}

fn take(store: &mut Store, streams: &mut Streams, batch: Vec<Shipped>) -> Reply {
    let sent = batch.len();
    match streams.take(store, batch) {
        Ok(Taken { lines, duplicates, events }) => {
            tracing::debug!(sent, lines, duplicates, events, "Took a batch of shipped lines.");
            Reply::text(
                200,
                format!("{{\"lines\":{sent},\"taken\":{lines},\"duplicates\":{duplicates},\"events\":{events}}}\n"),
            )
        }
        Err(e) if e.busy() => {
            Reply::text(503, format!("the store is busy, try again: {e}\n")).with_header("Retry-After", "1")
        }
        Err(e @ ReceiveError::Spool { .. }) => {
            tracing::error!(error = %e, "Cannot keep shipped lines; the agents will send them again.");
            Reply::text(507, format!("{e}\n"))
        }
        Err(e) => {
            tracing::error!(error = %e, "Cannot take a batch of shipped lines; the agents will send it again.");
            Reply::text(500, format!("{e}\n"))
        }
    }
}

/// What `config check` and `doctor` read of `[ingest]`, as a reload reads
/// it: the tokens and the certificate. Their problems, in that order.
pub(crate) fn check(section: &IngestSection) -> Vec<String> {
    let mut problems = Vec::new();
    if section.listen.is_none() {
        return problems;
    }
    if let Some(path) = &section.token_file {
        if let Err(e) = tokens::read_tokens(path) {
            problems.push(e.to_string());
        }
    }
    if let Some((cert, key)) = &section.tls {
        if let Err(e) = serve::server_config(cert, key) {
            problems.push(format!("[ingest] {e}"));
        }
    }
    problems
}
