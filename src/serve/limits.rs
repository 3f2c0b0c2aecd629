//! What one peer may cost a listener: every bound is checked before the
//! memory or the time it protects is spent.

use std::time::Duration;

/// The bounds of one listener. [`Limits::ingest`] and [`Limits::metrics`]
/// are the two endpoints' defaults; `[ingest]` can change the connection
/// counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Connections open at once. When full, the oldest connection with no
    /// request under way is closed to make room (a thousand idle sockets
    /// cannot lock the agents out); when every one is busy, the new one is.
    pub(crate) max_connections: usize,
    /// Connections open at once from one address (an IPv6 /64 counts as
    /// one): above it a new connection is closed at once.
    pub(crate) max_connections_per_peer: usize,
    /// The request line and headers together, in bytes (hyper answers 431).
    pub(crate) max_head_bytes: usize,
    pub(crate) max_headers: usize,
    /// From the connection (or the previous answer) to the last header:
    /// a peer that says nothing, or sends its head a byte at a time, is
    /// cut off after it (hyper's header read timeout, also the keep-alive
    /// idle time).
    pub(crate) header_timeout: Duration,
    /// A body may take this long before [`Limits::min_body_rate`] applies.
    pub(crate) body_grace: Duration,
    /// Bytes per second a body must average after the grace period (a
    /// body announced large and sent slowly is answered 408 and closed).
    pub(crate) min_body_rate: u64,
    /// The longest any body may take, whatever its rate.
    pub(crate) max_body_time: Duration,
    /// A write the peer does not read within this time ends the connection.
    pub(crate) write_timeout: Duration,
    pub(crate) tls_handshake_timeout: Duration,
    /// Requests read and handled at once; the rest wait for a slot.
    pub(crate) max_in_flight: usize,
    /// How long a request waits for a slot before it is answered 503
    /// with Retry-After.
    pub(crate) queue_wait: Duration,
    /// Requests on one connection; the answer to the last says `close`.
    pub(crate) max_requests_per_connection: u64,
    /// How long a stop waits for the requests under way.
    pub(crate) shutdown_grace: Duration,
}

impl Limits {
    /// The receiver of Vector agents' batches. Bodies are large (up to
    /// `max_batch_bytes`) and sent by few peers, a slot each.
    pub(crate) fn ingest() -> Limits {
        Limits {
            max_connections: 2048,
            max_connections_per_peer: 64,
            max_head_bytes: 16 << 10,
            max_headers: 64,
            header_timeout: Duration::from_secs(15),
            body_grace: Duration::from_secs(5),
            min_body_rate: 64 << 10,
            max_body_time: Duration::from_secs(120),
            write_timeout: Duration::from_secs(30),
            tls_handshake_timeout: Duration::from_secs(10),
            max_in_flight: 4,
            queue_wait: Duration::from_secs(10),
            max_requests_per_connection: 10_000,
            // With the metrics' below, within the 5 s walwatch takes to stop.
            shutdown_grace: Duration::from_secs(2),
        }
    }

    /// The Prometheus endpoint: a scraper or two, no bodies, answers of a
    /// few megabytes at most.
    pub(crate) fn metrics() -> Limits {
        Limits {
            max_connections: 128,
            max_connections_per_peer: 16,
            max_head_bytes: 16 << 10,
            max_headers: 64,
            header_timeout: Duration::from_secs(15),
            body_grace: Duration::from_secs(2),
            min_body_rate: 1 << 10,
            max_body_time: Duration::from_secs(5),
            write_timeout: Duration::from_secs(30),
            tls_handshake_timeout: Duration::from_secs(10),
            max_in_flight: 2,
            queue_wait: Duration::from_secs(10),
            max_requests_per_connection: 10_000,
            shutdown_grace: Duration::from_secs(1),
        }
    }
}
