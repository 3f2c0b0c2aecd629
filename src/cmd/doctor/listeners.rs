//! The daemon's HTTP listeners (`[metrics]`, `[ingest]`): whether each takes
//! a connection now, tried from here, and what the running daemon last
//! recorded of it (a port that stopped accepting, a reload it could not apply).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

use crate::config::Config;
use crate::store::{ListenerRow, Store};

use super::finding::Finding;

const CHECK: &str = "listener";

/// How long a connection attempt may take before the port counts as silent.
const CONNECT: Duration = Duration::from_secs(3);

pub(super) fn check(config: &Config, db: &Path, daemon_running: bool) -> Vec<Finding> {
    let recorded = Store::open_read_only(db).and_then(|s| s.listeners().all()).unwrap_or_default();
    [("metrics", config.metrics.listen), ("ingest", config.ingest.listen)]
        .into_iter()
        .filter_map(|(name, listen)| Some(one(name, listen?, recorded.iter().find(|r| r.name == name), daemon_running)))
        .collect()
}

fn one(name: &str, listen: SocketAddr, row: Option<&ListenerRow>, daemon_running: bool) -> Finding {
    let why = match name {
        "ingest" => "the agents cannot deliver their batches: they keep them and retry, and the central falls behind",
        _ => "Prometheus cannot scrape walwatch: its alerts on checkpoints go silent",
    };
    if !daemon_running {
        return Finding::ok(
            CHECK,
            format!("{name} {listen}: not checked, the daemon is not running (see the daemon finding)"),
        );
    }
    if let Some(problem) = row.and_then(|r| r.problem.as_deref()) {
        let fix = match row.is_some_and(|r| r.up) {
            true => "fix what the problem names in walwatch.toml, then `walwatch config check` and `systemctl reload walwatch`",
            false => "see the daemon's log (journalctl -u walwatch); restart it once the cause is fixed (systemctl restart walwatch)",
        };
        return Finding::error(CHECK, format!("{name} {listen}: {problem}"), why, fix);
    }
    match TcpStream::connect_timeout(&reachable(listen), CONNECT) {
        Ok(_) => Finding::ok(CHECK, format!("{name} {listen} takes connections")),
        Err(e) => Finding::error(
            CHECK,
            format!("{name} {listen} takes no connection from here: {e}"),
            why,
            "restart the daemon (systemctl restart walwatch) and see its log (journalctl -u walwatch)",
        ),
    }
}

/// The address to connect to: a wildcard listener is reached on loopback.
fn reachable(listen: SocketAddr) -> SocketAddr {
    let ip = match listen.ip() {
        IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, listen.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_silent_port_and_a_recorded_problem_are_errors() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let open = listener.local_addr().unwrap();
        assert_eq!(format!("{:?}", one("ingest", open, None, true).status), "Ok");
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let f = one("metrics", closed, None, true);
        assert_eq!(format!("{:?}", f.status), "Error");
        assert!(f.message.contains("takes no connection from here"), "{}", f.message);
        let row = ListenerRow {
            name: "ingest".into(),
            address: format!("http://{open}"),
            up: false,
            problem: Some("cannot accept connections: Too many open files".into()),
            since: jiff::Timestamp::now(),
            open: 0,
            accepted: 0,
            requests: 0,
            refused: Vec::new(),
            updated_at: jiff::Timestamp::now(),
        };
        let f = one("ingest", open, Some(&row), true);
        assert_eq!(format!("{:?}", f.status), "Error");
        assert!(f.message.ends_with("Too many open files"), "{}", f.message);
        assert_eq!(reachable("0.0.0.0:9187".parse().unwrap()), "127.0.0.1:9187".parse().unwrap());
    }
}
