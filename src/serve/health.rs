//! What a listener has been through, for `status`, `doctor` and the
//! metrics: whether it still takes connections, and what it refused.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use jiff::Timestamp;

/// Why a connection or a request was turned away (a counter each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Refusal {
    /// The peer's address already had its share of connections.
    PeerLimit,
    /// Every connection was busy and the listener full.
    Full,
    /// An idle connection closed to make room for a new one.
    Evicted,
    /// The head did not arrive in time, or a body was too slow.
    Timeout,
    /// A head or a body over its limit.
    TooLarge,
    /// Every request slot stayed taken for the queue wait (503).
    Busy,
    /// The TLS handshake failed or took too long.
    Tls,
    /// No or a wrong credential (401).
    Unauthorized,
    /// A credential that may not do what was asked (403).
    Forbidden,
}

impl Refusal {
    pub(crate) const ALL: [Refusal; 9] = [
        Refusal::PeerLimit,
        Refusal::Full,
        Refusal::Evicted,
        Refusal::Timeout,
        Refusal::TooLarge,
        Refusal::Busy,
        Refusal::Tls,
        Refusal::Unauthorized,
        Refusal::Forbidden,
    ];

    /// The name in the store and the metrics' `reason` label.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Refusal::PeerLimit => "peer_limit",
            Refusal::Full => "full",
            Refusal::Evicted => "evicted",
            Refusal::Timeout => "timeout",
            Refusal::TooLarge => "too_large",
            Refusal::Busy => "busy",
            Refusal::Tls => "tls",
            Refusal::Unauthorized => "unauthorized",
            Refusal::Forbidden => "forbidden",
        }
    }
}

/// Shared between a listener's thread and whoever watches it.
#[derive(Debug, Default)]
pub(crate) struct Health {
    /// The listener's thread is running (cleared when it ends, panic or not).
    running: AtomicBool,
    ended_at: Mutex<Option<Timestamp>>,
    /// The last accept failed (no descriptor left, say), and none has
    /// succeeded since: the port takes no new connection.
    accept_failing: Mutex<Option<(Timestamp, String)>>,
    open: AtomicU64,
    accepted: AtomicU64,
    requests: AtomicU64,
    refused: [AtomicU64; Refusal::ALL.len()],
}

/// A copy of [`Health`] at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Report {
    pub(crate) up: bool,
    /// Why it is down, and since when.
    pub(crate) problem: Option<(Timestamp, String)>,
    pub(crate) open: u64,
    pub(crate) accepted: u64,
    pub(crate) requests: u64,
    pub(crate) refused: Vec<(Refusal, u64)>,
}

impl Health {
    pub(super) fn started(&self) {
        self.running.store(true, Ordering::Relaxed);
    }

    pub(super) fn ended(&self) {
        self.running.store(false, Ordering::Relaxed);
        *self.ended_at.lock().unwrap_or_else(PoisonError::into_inner) = Some(Timestamp::now());
    }

    pub(super) fn accept_ok(&self) {
        self.accepted.fetch_add(1, Ordering::Relaxed);
        let mut failing = self.accept_failing.lock().unwrap_or_else(PoisonError::into_inner);
        if failing.take().is_some() {
            tracing::info!("Accepting connections again.");
        }
    }

    /// Returns whether this is the first failure of a run (worth a warning).
    pub(super) fn accept_failed(&self, error: &std::io::Error) -> bool {
        let mut failing = self.accept_failing.lock().unwrap_or_else(PoisonError::into_inner);
        let first = failing.is_none();
        if first {
            *failing = Some((Timestamp::now(), format!("cannot accept connections: {error}")));
        }
        first
    }

    pub(super) fn opened(&self) {
        self.open.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn closed(&self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
    }

    pub(super) fn request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn refused(&self, why: Refusal) {
        let i = Refusal::ALL.iter().position(|r| *r == why).unwrap_or(0);
        self.refused[i].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn report(&self) -> Report {
        let problem = self.accept_failing.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let running = self.running.load(Ordering::Relaxed);
        let problem = match (running, problem) {
            (false, _) => {
                let at = *self.ended_at.lock().unwrap_or_else(PoisonError::into_inner);
                Some((at.unwrap_or_else(Timestamp::now), "its thread has ended".to_string()))
            }
            (true, p) => p,
        };
        Report {
            up: problem.is_none(),
            problem,
            open: self.open.load(Ordering::Relaxed),
            accepted: self.accepted.load(Ordering::Relaxed),
            requests: self.requests.load(Ordering::Relaxed),
            refused: Refusal::ALL.iter().zip(&self.refused).map(|(r, n)| (*r, n.load(Ordering::Relaxed))).collect(),
        }
    }
}
