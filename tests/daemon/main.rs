//! Integration tests, daemon group. The daemon: rotation, stop, `forget` while it runs, alerts mailed through an outage, several processes on one store, clock skew, the Prometheus endpoint scraped by the real Prometheus, the systemd unit (systemd-analyze), and a central walwatch fed by Vector agents (hostile peers, and the attacks a fleet must refuse as a host does).
//!
//! One test binary per group (not one per file), so that `tests/support`
//! and the library are compiled and linked four times, not once per file.

#[path = "../support/mod.rs"]
mod support;

mod clock_skew;
mod daemon_alerts;
mod daemon_forget;
mod daemon_never_silent;
mod daemon_retention;
mod daemon_rotation;
mod daemon_start_at;
mod daemon_stop;
mod fleet_attacks;
mod fleet_hostile;
mod prometheus;
mod status_monitor;
mod store_concurrency;
mod store_group;
mod systemd_unit;
mod vector_ingest;
