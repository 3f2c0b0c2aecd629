//! The listeners' state, recorded in the store at each heartbeat: `status`
//! names one that takes no connection (or serves settings older than the
//! config), the metrics have an up/down series for each, `doctor` checks it.

use std::collections::HashMap;
use std::net::SocketAddr;

use jiff::Timestamp;

use crate::config::Config;
use crate::metrics::Endpoint;
use crate::receive::Receiver;
use crate::serve::Report;
use crate::store::{ListenerRow, Store, StoreError};

pub(crate) const METRICS: &str = "metrics";
pub(crate) const INGEST: &str = "ingest";

/// What a reload could not apply, by listener.
pub(crate) type ReloadProblems = HashMap<&'static str, String>;

/// What the daemon runs, as of now.
pub(crate) struct Seen<'a> {
    pub(crate) config: &'a Config,
    pub(crate) metrics: Option<&'a Endpoint>,
    pub(crate) receiver: Option<&'a Receiver>,
    pub(crate) reload_problems: &'a ReloadProblems,
}

/// Records each configured listener (a row each) and forgets the others.
pub(crate) fn record(store: &mut Store, seen: &Seen) -> Result<(), StoreError> {
    let metrics = seen.metrics.map(|e| (format!("http://{}", e.addr()), e.health().report()));
    let ingest = seen.receiver.map(|r| (format!("{}://{}", r.scheme(), r.addr()), r.health().report()));
    let wanted = [(METRICS, seen.config.metrics.listen, metrics), (INGEST, seen.config.ingest.listen, ingest)];
    let mut names = Vec::new();
    for (name, listen, running) in wanted {
        let Some(listen) = listen else { continue };
        names.push(name);
        store.listeners_mut().record(&row(name, listen, running, seen.reload_problems.get(name)))?;
    }
    store.listeners_mut().keep(&names)
}

/// A listener's row: down when it does not run (a reload could not start
/// it) or its port takes no connection; a reload's problem is said while
/// it serves on.
fn row(name: &str, listen: SocketAddr, running: Option<(String, Report)>, reload: Option<&String>) -> ListenerRow {
    let now = Timestamp::now();
    let Some((address, report)) = running else {
        let problem = reload.cloned().unwrap_or_else(|| "not running".into());
        return ListenerRow {
            name: name.into(),
            address: format!("{listen}"),
            up: false,
            problem: Some(problem),
            since: now,
            open: 0,
            accepted: 0,
            requests: 0,
            refused: Vec::new(),
            updated_at: now,
        };
    };
    let (since, problem) = match (&report.problem, reload) {
        (Some((at, why)), _) => (*at, Some(why.clone())),
        (None, Some(why)) => (now, Some(why.clone())),
        (None, None) => (now, None),
    };
    ListenerRow {
        name: name.into(),
        address,
        up: report.up,
        problem,
        since,
        open: report.open,
        accepted: report.accepted,
        requests: report.requests,
        refused: report.refused.iter().map(|(r, n)| (r.name().to_string(), *n)).collect(),
        updated_at: now,
    }
}
