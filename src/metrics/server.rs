//! The HTTP listener: a thread of its own answering one request at a
//! time (Prometheus scrapes every few seconds at most), so a scrape never
//! holds up the follow loop, and a slow scrape only delays the next one.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use thiserror::Error;
use tiny_http::{Header, Method, Request, Response, Server};

use super::{AdviceBoard, Advisor, Format, Params, Scraper};

/// How often the advisor looks for clusters whose advice is due.
const ADVISE_EVERY: Duration = Duration::from_secs(1);

#[derive(Debug, Error)]
pub enum ServeError {
    /// The address is taken or not this machine's: the daemon refuses to
    /// start rather than run without the endpoint it was asked for.
    #[error("[metrics] listen = \"{addr}\": cannot listen there: {reason}")]
    Bind { addr: SocketAddr, reason: String },
    #[error("cannot start the metrics thread: {0}")]
    Thread(#[from] std::io::Error),
}

/// The running endpoint; [`Endpoint::stop`] ends its thread.
pub struct Endpoint {
    server: Arc<Server>,
    params: Arc<Mutex<Params>>,
    thread: Option<JoinHandle<()>>,
    /// Dropped to stop the advisor.
    advisor_stop: Option<Sender<()>>,
    advisor: Option<JoinHandle<()>>,
    addr: SocketAddr,
    /// The address asked for (`[metrics] listen`; port 0 stays 0 here).
    listen: SocketAddr,
}

impl Endpoint {
    /// Listens on `addr` (port 0: any free port, see [`Endpoint::addr`]) and
    /// serves the store at `db`.
    pub fn start(addr: SocketAddr, db: &Path, params: Params) -> Result<Endpoint, ServeError> {
        let server = Server::http(addr).map_err(|e| ServeError::Bind { addr, reason: e.to_string() })?;
        let listen = addr;
        let addr = server.server_addr().to_ip().unwrap_or(addr);
        let server = Arc::new(server);
        let params = Arc::new(Mutex::new(params));
        let board = AdviceBoard::default();
        let thread = {
            let (server, params, db, board) =
                (Arc::clone(&server), Arc::clone(&params), db.to_path_buf(), Arc::clone(&board));
            std::thread::Builder::new().name("metrics".into()).spawn(move || serve(&server, &db, &params, board))?
        };
        let (advisor_stop, stop) = mpsc::channel();
        let advisor = {
            let (params, db) = (Arc::clone(&params), db.to_path_buf());
            std::thread::Builder::new()
                .name("metrics-advice".into())
                .spawn(move || advise(board, &db, &params, stop))?
        };
        Ok(Endpoint {
            server,
            params,
            thread: Some(thread),
            advisor_stop: Some(advisor_stop),
            advisor: Some(advisor),
            addr,
            listen,
        })
    }

    /// The address bound.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address it was asked to listen on.
    pub fn listen(&self) -> SocketAddr {
        self.listen
    }

    /// New settings from a reloaded config, from the next scrape on.
    pub fn reload(&self, params: Params) {
        *self.params.lock().unwrap_or_else(PoisonError::into_inner) = params;
    }

    /// Stops listening; a scrape under way is finished first.
    pub fn stop(mut self) {
        self.server.unblock();
        self.advisor_stop.take();
        for thread in [self.thread.take(), self.advisor.take()].into_iter().flatten() {
            let _ = thread.join();
        }
    }
}

fn serve(server: &Server, db: &Path, params: &Mutex<Params>, board: AdviceBoard) {
    let mut scraper = Scraper::new(board);
    // The first read counts the whole history (a second or so for a year
    // of 50 clusters): done now, before Prometheus' first scrape arrives.
    let first = params.lock().unwrap_or_else(PoisonError::into_inner).clone();
    if let Err(e) = scraper.scrape(db, &first) {
        tracing::warn!(error = %e, "Cannot read the metrics from the store.");
    }
    for request in server.incoming_requests() {
        let params = params.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let (status, content_type, body) = answer(&request, &mut scraper, db, &params);
        let mut response = Response::from_string(body).with_status_code(status);
        // Both content types are ASCII constants: from_bytes cannot refuse them.
        if let Ok(header) = Header::from_bytes("Content-Type", content_type) {
            response.add_header(header);
        }
        // A scraper that hung up gets nothing; the next one is served.
        if let Err(e) = request.respond(response) {
            tracing::debug!(error = %e, "Cannot send the metrics answer.");
        }
    }
}

/// (status, content type, body) for one request.
fn answer(request: &Request, scraper: &mut Scraper, db: &Path, params: &Params) -> (u16, &'static str, String) {
    const PLAIN: &str = "text/plain; charset=utf-8";
    let path = request.url().split('?').next().unwrap_or_default();
    if path != "/metrics" {
        return (404, PLAIN, "walwatch serves its metrics at /metrics\n".into());
    }
    if !matches!(request.method(), Method::Get | Method::Head) {
        return (405, PLAIN, "GET /metrics\n".into());
    }
    let accept = request.headers().iter().find(|h| h.field.equiv("Accept")).map(|h| h.value.as_str());
    let format = Format::negotiate(accept);
    match scraper.scrape(db, params).and_then(|s| s.render(format)) {
        Ok(body) => (200, format.content_type(), body),
        Err(e) => {
            tracing::warn!(error = %e, "Cannot read the metrics from the store.");
            (500, PLAIN, format!("cannot read the metrics from the store: {e}\n"))
        }
    }
}

/// The advisor's loop: a pass every [`ADVISE_EVERY`] until `stop` is dropped.
fn advise(board: AdviceBoard, db: &Path, params: &Mutex<Params>, stop: mpsc::Receiver<()>) {
    let mut advisor = Advisor::new(board);
    loop {
        let params = params.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let stopping = || matches!(stop.try_recv(), Err(mpsc::TryRecvError::Disconnected));
        if let Err(e) = advisor.refresh(db, &params, &stopping) {
            tracing::warn!(error = %e, "Cannot compute the advice for the metrics.");
        }
        match stop.recv_timeout(ADVISE_EVERY) {
            Err(RecvTimeoutError::Timeout) => continue,
            _ => return,
        }
    }
}
