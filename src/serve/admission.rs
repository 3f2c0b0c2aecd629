//! Which connections a listener keeps: at most so many in all and so many
//! per peer address. When the listener is full, the oldest connection with
//! no request under way makes room (the one that never sent a request
//! first): sockets opened and left idle by anyone cannot keep the agents
//! out, they only cycle among themselves.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use tokio::task::AbortHandle;

use super::health::{Health, Refusal};

/// The address a peer's share is counted by: an IPv4 address, or an IPv6
/// /64 (one host's usual allocation: its 2^64 addresses are one peer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct PeerKey(u128);

impl PeerKey {
    pub(crate) fn of(addr: &SocketAddr) -> PeerKey {
        match addr.ip() {
            IpAddr::V4(v4) => PeerKey(u32::from(v4) as u128),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => PeerKey(u32::from(v4) as u128),
                None => PeerKey((u128::from(v6) >> 64) | 1 << 127),
            },
        }
    }
}

/// What the connection's own task and the registry share.
#[derive(Debug, Default)]
pub(crate) struct ConnState {
    /// A request is being read or answered.
    pub(crate) busy: AtomicBool,
    pub(crate) requests: AtomicU64,
}

struct Entry {
    peer: PeerKey,
    since: Instant,
    state: Arc<ConnState>,
    abort: Option<AbortHandle>,
}

#[derive(Default)]
struct Table {
    next: u64,
    conns: HashMap<u64, Entry>,
    per_peer: HashMap<PeerKey, usize>,
}

/// The open connections of one listener.
pub(crate) struct Registry {
    max: usize,
    max_per_peer: usize,
    table: Mutex<Table>,
    health: Arc<Health>,
}

/// Held by a connection's task: dropping it (the task ended or was
/// aborted) gives the place back.
pub(crate) struct Place {
    id: u64,
    registry: Arc<Registry>,
    pub(crate) state: Arc<ConnState>,
}

impl Registry {
    pub(crate) fn new(max: usize, max_per_peer: usize, health: Arc<Health>) -> Arc<Registry> {
        Arc::new(Registry { max: max.max(1), max_per_peer: max_per_peer.max(1), table: Mutex::default(), health })
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A place for a connection from `peer`, or why there is none. When
    /// full, an idle connection is closed to make room.
    pub(crate) fn admit(self: &Arc<Registry>, peer: &SocketAddr) -> Result<Place, Refusal> {
        let key = PeerKey::of(peer);
        let mut table = self.table();
        if table.per_peer.get(&key).copied().unwrap_or(0) >= self.max_per_peer {
            return Err(Refusal::PeerLimit);
        }
        if table.conns.len() >= self.max {
            let victim = evictable(&table).ok_or(Refusal::Full)?;
            if let Some(entry) = remove(&mut table, victim) {
                if let Some(abort) = entry.abort {
                    abort.abort();
                }
                self.health.refused(Refusal::Evicted);
                self.health.closed();
            }
        }
        let id = table.next;
        table.next += 1;
        let state = Arc::new(ConnState::default());
        table.conns.insert(id, Entry { peer: key, since: Instant::now(), state: Arc::clone(&state), abort: None });
        *table.per_peer.entry(key).or_default() += 1;
        self.health.opened();
        Ok(Place { id, registry: Arc::clone(self), state })
    }

    /// Records how to close the connection in `place` (once its task exists).
    pub(crate) fn set_abort(&self, place_id: u64, abort: AbortHandle) {
        if let Some(entry) = self.table().conns.get_mut(&place_id) {
            entry.abort = Some(abort);
        }
    }

    #[cfg(test)]
    pub(crate) fn open(&self) -> usize {
        self.table().conns.len()
    }
}

impl Place {
    pub(crate) fn id(&self) -> u64 {
        self.id
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut table = self.registry.table();
        // Gone already when it was evicted (counted closed then).
        if remove(&mut table, self.id).is_some() {
            self.registry.health.closed();
        }
    }
}

fn remove(table: &mut Table, id: u64) -> Option<Entry> {
    let entry = table.conns.remove(&id)?;
    if let Some(n) = table.per_peer.get_mut(&entry.peer) {
        *n -= 1;
        if *n == 0 {
            table.per_peer.remove(&entry.peer);
        }
    }
    Some(entry)
}

/// The connection to close for a new one: not busy, never asked anything
/// rather than idle between requests, the oldest first.
fn evictable(table: &Table) -> Option<u64> {
    table
        .conns
        .iter()
        .filter(|(_, e)| !e.state.busy.load(Ordering::Relaxed))
        .min_by_key(|(_, e)| (e.state.requests.load(Ordering::Relaxed) > 0, e.since))
        .map(|(id, _)| *id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_peer_gets_its_share_and_an_ipv6_64_is_one_peer() {
        let registry = Registry::new(10, 2, Arc::default());
        let a = registry.admit(&addr("192.0.2.1:1000")).unwrap();
        let _b = registry.admit(&addr("192.0.2.1:1001")).unwrap();
        assert_eq!(registry.admit(&addr("192.0.2.1:1002")).err(), Some(Refusal::PeerLimit));
        let _c = registry.admit(&addr("192.0.2.2:1000")).unwrap();
        drop(a);
        assert!(registry.admit(&addr("192.0.2.1:1003")).is_ok());
        let _d = registry.admit(&addr("[2001:db8::1]:1")).unwrap();
        let _e = registry.admit(&addr("[2001:db8::ffff:2]:1")).unwrap();
        assert_eq!(registry.admit(&addr("[2001:db8::3]:1")).err(), Some(Refusal::PeerLimit));
        // Another /64 is another peer; an IPv4-mapped address is its IPv4 peer.
        assert!(registry.admit(&addr("[2001:db8:0:1::1]:1")).is_ok());
        assert_eq!(PeerKey::of(&addr("[::ffff:192.0.2.2]:5")), PeerKey::of(&addr("192.0.2.2:6")));
    }

    #[test]
    fn a_full_listener_closes_its_oldest_idle_connection_first() {
        let health: Arc<Health> = Arc::default();
        let registry = Registry::new(3, 10, Arc::clone(&health));
        let served = registry.admit(&addr("192.0.2.1:1")).unwrap();
        served.state.requests.store(1, Ordering::Relaxed);
        let silent = registry.admit(&addr("192.0.2.2:1")).unwrap();
        let busy = registry.admit(&addr("192.0.2.3:1")).unwrap();
        busy.state.busy.store(true, Ordering::Relaxed);
        // Full: the one that never asked anything goes, though it is younger.
        let new = registry.admit(&addr("192.0.2.4:1")).unwrap();
        new.state.requests.store(1, Ordering::Relaxed);
        assert_eq!(registry.open(), 3);
        let table = registry.table();
        assert!(!table.conns.contains_key(&silent.id()) && table.conns.contains_key(&served.id()));
        drop(table);
        drop(silent);
        assert_eq!(registry.open(), 3, "an evicted place dropped later frees nothing twice");
        // Then the idle one between requests; a busy one never.
        let _newer = registry.admit(&addr("192.0.2.5:1")).unwrap();
        assert!(!registry.table().conns.contains_key(&served.id()));
        let report = health.report();
        assert_eq!(report.refused.iter().find(|(r, _)| *r == Refusal::Evicted).map(|x| x.1), Some(2));
    }

    #[test]
    fn a_listener_whose_connections_are_all_busy_refuses_the_new_one() {
        let registry = Registry::new(1, 10, Arc::default());
        let busy = registry.admit(&addr("192.0.2.1:1")).unwrap();
        busy.state.busy.store(true, Ordering::Relaxed);
        assert_eq!(registry.admit(&addr("192.0.2.2:1")).err(), Some(Refusal::Full));
    }
}
