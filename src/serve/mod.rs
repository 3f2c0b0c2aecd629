//! Serve: the HTTP listener both endpoints run on (`[metrics]`'s scrapes,
//! `[ingest]`'s batches). hyper's HTTP/1 server on a tokio runtime of its
//! own thread, HTTPS through tokio-rustls, every peer bounded before what
//! it could cost is spent ([`Limits`]): connections in all and per peer,
//! the head's size and time, the body's size and rate, the writes' time,
//! the requests handled at once.
//!
//! A [`Handler`] decides from the head alone whether to read the body (a
//! request without the right token is answered before one byte of its body
//! is read), then answers the whole request on a worker thread: the
//! handlers read and write SQLite, which blocks.
//!
//! admission (who is let in) → body (what is read) → health (what was
//! refused, whether the port still takes connections).

mod admission;
mod body;
mod health;
mod limits;
mod tls;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::{Body, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;
use tokio_io_timeout::TimeoutStream;
use tokio_rustls::TlsAcceptor;

use admission::{ConnState, Registry};
pub(crate) use body::BodyFault;
pub(crate) use health::{Health, Refusal, Report};
pub(crate) use limits::Limits;
pub(crate) use tls::server_config;

/// A request's head: what a handler decides on.
#[derive(Debug)]
pub(crate) struct Head {
    pub(crate) method: Method,
    /// The path, without the query.
    pub(crate) path: String,
    pub(crate) headers: HeaderMap,
    pub(crate) peer: SocketAddr,
}

impl Head {
    /// A header's value, when it is text.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// An answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) content_type: &'static str,
    pub(crate) body: Vec<u8>,
    pub(crate) headers: Vec<(&'static str, String)>,
}

impl Reply {
    /// Plain text, or JSON when it starts with `{`.
    pub(crate) fn text(status: u16, text: impl Into<String>) -> Reply {
        let text = text.into();
        let content_type = if text.starts_with('{') { "application/json" } else { "text/plain; charset=utf-8" };
        Reply { status, content_type, body: text.into_bytes(), headers: Vec::new() }
    }

    pub(crate) fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Reply {
        self.headers.push((name, value.into()));
        self
    }

    fn busy() -> Reply {
        Reply::text(503, "busy: every request slot is taken, try again\n").with_header("Retry-After", "1")
    }
}

/// What to do with a request, from its head.
pub(crate) enum Admit {
    /// Answer now; the body, if any, is never read.
    Answer(Reply),
    /// Read the body (at most `limit` bytes) and call [`Handler::serve`].
    Read { limit: u64 },
}

pub(crate) trait Handler: Send + Sync + 'static {
    /// Runs on the listener's thread: it must not block.
    fn admit(&self, head: &Head) -> Admit;
    /// Runs on a worker thread, with the whole body.
    fn serve(&self, head: Head, body: Vec<u8>) -> Reply;
    /// The answer to a body over `limit` bytes.
    fn too_large(&self, limit: u64) -> Reply {
        Reply::text(413, format!("the body is over {limit} bytes\n"))
    }
}

/// A running listener; [`Server::stop`] ends it.
pub(crate) struct Server {
    addr: SocketAddr,
    https: bool,
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
    health: Arc<Health>,
}

impl Server {
    /// Serves `handler` on `listener` (HTTPS with `tls`) on a thread named `name`.
    pub(crate) fn start(
        name: &str,
        listener: std::net::TcpListener,
        tls: Option<Arc<rustls::ServerConfig>>,
        limits: Limits,
        handler: Arc<dyn Handler>,
    ) -> std::io::Result<Server> {
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .max_blocking_threads(limits.max_in_flight.max(1) + 1)
            .thread_name(format!("{name}-worker"))
            .build()?;
        let health: Arc<Health> = Arc::default();
        health.started();
        let (stop, stopped) = watch::channel(false);
        let shared = Arc::new(Shared {
            registry: Registry::new(limits.max_connections, limits.max_connections_per_peer, Arc::clone(&health)),
            slots: Arc::new(Semaphore::new(limits.max_in_flight.max(1))),
            tls: tls.map(TlsAcceptor::from),
            limits,
            handler,
            health: Arc::clone(&health),
        });
        let https = shared.tls.is_some();
        let thread = {
            let health = Arc::clone(&health);
            std::thread::Builder::new().name(name.into()).spawn(move || {
                let _ended = Ended(health);
                let grace = shared.limits.shutdown_grace;
                runtime.block_on(accept_loop(listener, shared, stopped));
                runtime.shutdown_timeout(grace);
            })?
        };
        Ok(Server { addr, https, stop, thread: Some(thread), health })
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// "https" with a certificate, else "http".
    pub(crate) fn scheme(&self) -> &'static str {
        if self.https {
            "https"
        } else {
            "http"
        }
    }

    pub(crate) fn health(&self) -> &Arc<Health> {
        &self.health
    }

    /// Stops accepting, lets the requests under way finish for the
    /// shutdown grace, closes the rest.
    pub(crate) fn stop(mut self) {
        let _ = self.stop.send(true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// Marks the listener's thread ended, however it ends.
struct Ended(Arc<Health>);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.ended();
    }
}

/// What every connection of a listener shares.
struct Shared {
    registry: Arc<Registry>,
    /// Requests read and handled at once.
    slots: Arc<Semaphore>,
    tls: Option<TlsAcceptor>,
    limits: Limits,
    handler: Arc<dyn Handler>,
    health: Arc<Health>,
}

/// The shortest and longest pause after a failed accept (no descriptor
/// left, no memory): the loop backs off and goes on accepting.
const ACCEPT_BACKOFF: (Duration, Duration) = (Duration::from_millis(10), Duration::from_secs(1));

async fn accept_loop(listener: std::net::TcpListener, shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let listener = match TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => return tracing::error!(error = %e, "Cannot listen."),
    };
    let mut conns = JoinSet::new();
    let mut backoff = ACCEPT_BACKOFF.0;
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((tcp, peer)) => {
                    backoff = ACCEPT_BACKOFF.0;
                    shared.health.accept_ok();
                    take(&shared, &mut conns, tcp, peer, stop.clone());
                }
                Err(e) => {
                    if shared.health.accept_failed(&e) {
                        tracing::error!(error = %e, "Cannot accept connections; retrying.");
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = stop.changed() => break,
                    }
                    backoff = (backoff * 2).min(ACCEPT_BACKOFF.1);
                }
            }
        }
    }
    drop(listener);
    // The connections saw the stop too: they finish the request under way.
    let grace = shared.limits.shutdown_grace;
    let _ = tokio::time::timeout(grace, async { while conns.join_next().await.is_some() {} }).await;
    conns.abort_all();
}

/// Lets a connection in (or refuses it) and starts its task.
fn take(shared: &Arc<Shared>, conns: &mut JoinSet<()>, tcp: TcpStream, peer: SocketAddr, stop: watch::Receiver<bool>) {
    let place = match shared.registry.admit(&peer) {
        Ok(place) => place,
        Err(why) => {
            shared.health.refused(why);
            tracing::debug!(%peer, reason = why.name(), "Refused a connection.");
            return;
        }
    };
    let id = place.id();
    let task = {
        let shared = Arc::clone(shared);
        conns.spawn(async move {
            let _place = &place;
            connection(&shared, tcp, peer, Arc::clone(&place.state), stop).await;
        })
    };
    shared.registry.set_abort(id, task);
}

async fn connection(
    shared: &Arc<Shared>,
    tcp: TcpStream,
    peer: SocketAddr,
    state: Arc<ConnState>,
    stop: watch::Receiver<bool>,
) {
    let _ = tcp.set_nodelay(true);
    let mut io = TimeoutStream::new(tcp);
    io.set_write_timeout(Some(shared.limits.write_timeout));
    let io = Box::pin(io);
    match &shared.tls {
        None => http(shared, io, peer, state, stop).await,
        Some(acceptor) => match tokio::time::timeout(shared.limits.tls_handshake_timeout, acceptor.accept(io)).await {
            Ok(Ok(tls)) => http(shared, tls, peer, state, stop).await,
            Ok(Err(e)) => {
                shared.health.refused(Refusal::Tls);
                tracing::debug!(%peer, error = %e, "A TLS handshake failed.");
            }
            Err(_) => shared.health.refused(Refusal::Tls),
        },
    }
}

async fn http<I>(shared: &Arc<Shared>, io: I, peer: SocketAddr, state: Arc<ConnState>, mut stop: watch::Receiver<bool>)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let limits = &shared.limits;
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(limits.max_head_bytes.max(8192))
        .max_header_size(limits.max_head_bytes)
        .max_headers(limits.max_headers)
        .keep_alive(true);
    let service = {
        let shared = Arc::clone(shared);
        service_fn(move |request| {
            let (shared, state) = (Arc::clone(&shared), Arc::clone(&state));
            async move { Ok::<_, Infallible>(respond(&shared, request, peer, &state).await) }
        })
    };
    let conn = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    let ended = tokio::select! {
        ended = conn.as_mut() => ended,
        _ = stopped(&mut stop) => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = ended {
        if e.is_timeout() {
            shared.health.refused(Refusal::Timeout);
        } else if e.is_parse_too_large() {
            shared.health.refused(Refusal::TooLarge);
        }
        tracing::debug!(%peer, error = %e, "A connection ended.");
    }
}

/// Returns once a stop is asked for (or whoever could ask is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    loop {
        let asked = *stop.borrow_and_update();
        if asked || stop.changed().await.is_err() {
            return;
        }
    }
}

/// One request's answer. A body left unread or cut short closes the
/// connection after the answer (never drained: an announced size is no
/// reason to read or allocate anything).
async fn respond(
    shared: &Shared,
    request: Request<Incoming>,
    peer: SocketAddr,
    state: &ConnState,
) -> Response<Full<Bytes>> {
    use std::sync::atomic::Ordering::Relaxed;
    state.busy.store(true, Relaxed);
    let n = state.requests.fetch_add(1, Relaxed) + 1;
    shared.health.request();
    let (parts, body) = request.into_parts();
    let head = Head { method: parts.method, path: parts.uri.path().to_string(), headers: parts.headers, peer };
    let (reply, mut close) = match shared.handler.admit(&head) {
        Admit::Answer(reply) => (reply, !body.is_end_stream()),
        Admit::Read { limit } => read_and_serve(shared, head, body, limit).await,
    };
    close |= n >= shared.limits.max_requests_per_connection;
    match reply.status {
        401 => shared.health.refused(Refusal::Unauthorized),
        403 => shared.health.refused(Refusal::Forbidden),
        413 => shared.health.refused(Refusal::TooLarge),
        _ => {}
    }
    state.busy.store(false, Relaxed);
    response(reply, close)
}

/// (the answer, whether to close the connection after it)
async fn read_and_serve(shared: &Shared, head: Head, body: Incoming, limit: u64) -> (Reply, bool) {
    let announced = body.size_hint().exact();
    if announced.is_some_and(|n| n > limit) {
        return (shared.handler.too_large(limit), true);
    }
    let slot = Arc::clone(&shared.slots);
    let Ok(Ok(permit)) = tokio::time::timeout(shared.limits.queue_wait, slot.acquire_owned()).await else {
        shared.health.refused(Refusal::Busy);
        return (Reply::busy(), true);
    };
    let bytes = match body::read(body, announced, limit, &shared.limits).await {
        Ok(bytes) => bytes,
        Err(BodyFault::TooLarge) => return (shared.handler.too_large(limit), true),
        Err(BodyFault::TooSlow) => {
            shared.health.refused(Refusal::Timeout);
            let text = format!(
                "the body came slower than {} bytes/s or took over {} s\n",
                shared.limits.min_body_rate,
                shared.limits.max_body_time.as_secs()
            );
            return (Reply::text(408, text), true);
        }
        Err(BodyFault::Broken(e)) => return (Reply::text(400, format!("cannot read the body: {e}\n")), true),
    };
    let handler = Arc::clone(&shared.handler);
    let served = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        handler.serve(head, bytes)
    });
    match served.await {
        Ok(reply) => (reply, false),
        Err(e) => {
            tracing::error!(error = %e, "A request's handler failed.");
            (Reply::text(500, "the request could not be handled; see the daemon's log\n"), true)
        }
    }
}

fn response(reply: Reply, close: bool) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(reply.body)));
    *response.status_mut() = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(http::header::CONTENT_TYPE, HeaderValue::from_static(reply.content_type));
    for (name, value) in reply.headers {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.append(name, value);
        }
    }
    if close {
        headers.insert(http::header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}
