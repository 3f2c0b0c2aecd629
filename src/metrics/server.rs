//! The HTTP endpoint: `GET /metrics` on a [`serve`](crate::serve)
//! listener, scrapes answered one at a time from a read-only connection of
//! its own, so a scrape never holds up the follow loop; the advice is
//! computed on a thread of its own and only read by a scrape.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use http::Method;
use thiserror::Error;

use super::{AdviceBoard, Advisor, Format, Params, Scraper};
use crate::serve::{self, Admit, Handler, Head, Limits, Reply, Server};

/// How often the advisor looks for clusters whose advice is due.
const ADVISE_EVERY: Duration = Duration::from_secs(1);

#[derive(Debug, Error)]
pub(crate) enum ServeError {
    /// The address is taken or not this machine's: the daemon refuses to
    /// start rather than run without the endpoint it was asked for.
    #[error("[metrics] listen = \"{addr}\": cannot listen there: {reason}")]
    Bind { addr: SocketAddr, reason: String },
    #[error("cannot start the metrics thread: {0}")]
    Thread(#[from] std::io::Error),
}

/// The running endpoint; [`Endpoint::stop`] ends it.
pub(crate) struct Endpoint {
    server: Server,
    scrapes: Arc<Scrapes>,
    /// Dropped to stop the advisor.
    advisor_stop: Option<Sender<()>>,
    advisor: Option<JoinHandle<()>>,
    /// The address asked for (`[metrics] listen`; port 0 stays 0 here).
    listen: SocketAddr,
}

/// The handler: one scraper, its settings.
struct Scrapes {
    db: PathBuf,
    params: Mutex<Params>,
    scraper: Mutex<Scraper>,
}

impl Endpoint {
    /// Listens on `addr` (port 0: any free port, see [`Endpoint::addr`]) and
    /// serves the store at `db`.
    pub(crate) fn start(addr: SocketAddr, db: &Path, params: Params) -> Result<Endpoint, ServeError> {
        let listener =
            std::net::TcpListener::bind(addr).map_err(|e| ServeError::Bind { addr, reason: e.to_string() })?;
        let board = AdviceBoard::default();
        let mut scraper = Scraper::new(Arc::clone(&board));
        // The first read counts the whole history (a second or so for a year
        // of 50 clusters): done now, before Prometheus' first scrape arrives.
        if let Err(e) = scraper.scrape(db, &params) {
            tracing::warn!(error = %e, "Cannot read the metrics from the store.");
        }
        let scrapes =
            Arc::new(Scrapes { db: db.to_path_buf(), params: Mutex::new(params), scraper: Mutex::new(scraper) });
        let server =
            Server::start("metrics", listener, None, Limits::metrics(), Arc::clone(&scrapes) as Arc<dyn Handler>)?;
        let (advisor_stop, stop) = mpsc::channel();
        let advisor = {
            let scrapes = Arc::clone(&scrapes);
            std::thread::Builder::new()
                .name("metrics-advice".into())
                .spawn(move || advise(board, &scrapes.db, &scrapes.params, stop))?
        };
        Ok(Endpoint { server, scrapes, advisor_stop: Some(advisor_stop), advisor: Some(advisor), listen: addr })
    }

    /// The address bound.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// The address it was asked to listen on.
    pub(crate) fn listen(&self) -> SocketAddr {
        self.listen
    }

    pub(crate) fn health(&self) -> &Arc<serve::Health> {
        self.server.health()
    }

    /// New settings from a reloaded config, from the next scrape on.
    pub(crate) fn reload(&self, params: Params) {
        *self.scrapes.params.lock().unwrap_or_else(PoisonError::into_inner) = params;
    }

    /// Stops listening; a scrape under way is finished first.
    pub(crate) fn stop(mut self) {
        self.server.stop();
        self.advisor_stop.take();
        if let Some(thread) = self.advisor.take() {
            let _ = thread.join();
        }
    }
}

impl Handler for Scrapes {
    fn admit(&self, head: &Head) -> Admit {
        if head.path != "/metrics" {
            return Admit::Answer(Reply::text(404, "walwatch serves its metrics at /metrics\n"));
        }
        match head.method {
            Method::GET | Method::HEAD => Admit::Read { limit: 0 },
            _ => Admit::Answer(Reply::text(405, "GET /metrics\n")),
        }
    }

    fn serve(&self, head: Head, _body: Vec<u8>) -> Reply {
        let params = self.params.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let format = Format::negotiate(head.header("accept"));
        let mut scraper = self.scraper.lock().unwrap_or_else(PoisonError::into_inner);
        match scraper.scrape(&self.db, &params).and_then(|s| s.render(format)) {
            Ok(body) => {
                Reply { status: 200, content_type: format.content_type(), body: body.into_bytes(), headers: Vec::new() }
            }
            Err(e) => {
                tracing::warn!(error = %e, "Cannot read the metrics from the store.");
                Reply::text(500, format!("cannot read the metrics from the store: {e}\n"))
            }
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
