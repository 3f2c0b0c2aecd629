//! Integration tests, postgres group. Real PostgreSQL servers (initdb/pg_ctl, run as `postgres` when root): end to end, the daemon, syslog through rsyslog, lines a local user forges through rsyslog and journald, settings, the alert rules, the max_wal_size advice closed loop, the WAL a crash replays against the recovery model, `doctor` on clusters set up right and wrong, attacks on the prefix and csvlog, a PGDG data directory walwatch may not read, syslog without a prefix time and managed services' envelopes.
//!
//! One test binary per group (not one per file), so that `tests/support`
//! and the library are compiled and linked four times, not once per file.

#[path = "../support/mod.rs"]
mod support;

mod advice_postgres;
mod alerts_postgres;
mod attack_csvlog;
mod attack_prefix;
mod doctor_postgres;
mod daemon_postgres;
mod e2e_postgres;
mod managed_postgres;
mod never_silent_postgres;
mod recovery_postgres;
mod settings_postgres;
mod syslog_forgery_postgres;
mod syslog_postgres;
