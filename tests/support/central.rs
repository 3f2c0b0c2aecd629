//! A central walwatch for the tests of the fleet path: the real daemon with
//! `[ingest]` (and `[metrics]`) on loopback ports, plain or HTTPS with a
//! test CA, and the raw sockets a hostile peer would use against it.

use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::daemon::{Daemon, Workspace, POLL_INTERVAL};
use super::vector::{body, post};

/// A token bound to any host (a token file of an earlier release).
pub const TOKEN: &str = "s3cr3t-agent-token-0123456789";

pub struct Central {
    pub ws: Workspace,
    pub port: u16,
    pub metrics_port: u16,
    pub daemon: Daemon,
    /// The test CA's certificate when the central serves HTTPS.
    pub ca: Option<PathBuf>,
}

/// A free loopback port.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Central {
    /// A central whose token file holds `tokens` (whole lines), with
    /// `extra` appended to `[ingest]`; HTTPS with a test CA when `tls`.
    pub fn start(tokens: &str, extra: &str, tls: bool) -> Central {
        let ws = Workspace::new();
        Central::start_in(ws, tokens, extra, tls, None)
    }

    /// [`Central::start`] with the daemon's open-file limit set to `nofile`.
    pub fn start_in(ws: Workspace, tokens: &str, extra: &str, tls: bool, nofile: Option<u64>) -> Central {
        let (port, metrics_port) = (free_port(), free_port());
        let token_file = ws.path().join("tokens");
        fs::write(&token_file, tokens).unwrap();
        let mut ingest =
            format!("listen = \"127.0.0.1:{port}\"\ntoken_file = {:?}\n{extra}", token_file.to_str().unwrap());
        let ca = tls.then(|| {
            let (cert, key, ca) = test_ca(&ws);
            ingest += &format!("tls_cert = {:?}\ntls_key = {:?}\n", cert.to_str().unwrap(), key.to_str().unwrap());
            ca
        });
        let config = format!(
            "[store]\npath = {:?}\n\n[daemon]\npoll_interval = {POLL_INTERVAL:?}\nentry_settle = \"300ms\"\n\n\
             [metrics]\nlisten = \"127.0.0.1:{metrics_port}\"\n\n[ingest]\n{ingest}",
            ws.db().to_str().unwrap(),
        );
        fs::write(ws.config_path(), config).unwrap();
        let daemon = match nofile {
            None => ws.start(),
            Some(n) => Daemon::start_limited(&ws.config_path(), &ws.db(), &ws.path().join("daemon.log"), n),
        };
        let mut central = Central { ws, port, metrics_port, daemon, ca };
        central.wait_listening();
        central
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    pub fn url(&self) -> String {
        let scheme = if self.ca.is_some() { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}/ingest/vector", self.port)
    }

    pub fn wait_listening(&mut self) {
        self.wait_announced(1);
    }

    /// Stops the daemon (SIGTERM) and starts it again on the same store.
    pub fn restart(&mut self) {
        let before = self.announced();
        self.daemon.terminate();
        self.daemon = self.ws.start();
        self.wait_announced(before + 1);
    }

    /// How many times the daemon's log announced the receiver.
    fn announced(&self) -> usize {
        let text = fs::read_to_string(self.ws.path().join("daemon.log")).unwrap_or_default();
        text.matches("Taking Vector agents' batches at").count()
    }

    fn wait_announced(&mut self, times: usize) {
        let log = self.ws.path().join("daemon.log");
        self.daemon.wait_until("the ingest endpoint is announced", || {
            let text = fs::read_to_string(&log).unwrap_or_default();
            (text.matches("Taking Vector agents' batches at").count() >= times).then_some(()).ok_or(text)
        });
    }

    /// An agent (ureq) that trusts the test CA when the central has one.
    pub fn agent(&self) -> ureq::Agent {
        let mut config =
            ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(Duration::from_secs(30)));
        if let Some(ca) = &self.ca {
            let pem = fs::read(ca).unwrap();
            let roots = vec![ureq::tls::Certificate::from_pem(&pem).unwrap()];
            let tls =
                ureq::tls::TlsConfig::builder().root_certs(ureq::tls::RootCerts::Specific(std::sync::Arc::new(roots)));
            config = config.tls_config(tls.build());
        }
        config.build().into()
    }

    /// One batch through `agent` with `token`: (status, answer, how long it took).
    pub fn send_with(&self, agent: &ureq::Agent, token: &str, events: &[Value]) -> (u16, String, Duration) {
        let started = Instant::now();
        let mut r = agent
            .post(&self.url())
            .header("Authorization", &format!("Bearer {token}"))
            .header("Content-Encoding", "gzip")
            .header("Content-Type", "application/json")
            .send(&body(events, false, true)[..])
            .unwrap();
        let status = r.status().as_u16();
        (status, r.body_mut().read_to_string().unwrap_or_default(), started.elapsed())
    }

    /// One plain-HTTP batch (status, answer).
    pub fn post(&self, token: &str, events: &[Value]) -> (u16, String) {
        post(&self.url(), Some(token), &body(events, false, false), false, false).unwrap()
    }

    /// `walwatch status --format json` of the central's store.
    pub fn status(&self) -> (Option<i32>, Value) {
        let out = super::daemon::walwatch()
            .args(["status", "--db", self.ws.db().to_str().unwrap(), "--format", "json"])
            .output()
            .unwrap();
        (out.status.code(), serde_json::from_slice(&out.stdout).unwrap_or(Value::Null))
    }

    /// The listener `name` as `status` shows it.
    pub fn listener(&self, name: &str) -> Value {
        let (_, status) = self.status();
        status["listeners"].as_array().into_iter().flatten().find(|l| l["name"] == name).cloned().unwrap_or(Value::Null)
    }

    pub fn metrics(&self) -> String {
        ureq::get(format!("http://127.0.0.1:{}/metrics", self.metrics_port))
            .call()
            .map(|mut r| r.body_mut().read_to_string().unwrap_or_default())
            .unwrap_or_default()
    }
}

/// A test CA and a certificate for 127.0.0.1 signed by it, made by the
/// openssl tool: (certificate, key, the CA's certificate).
pub fn test_ca(ws: &Workspace) -> (PathBuf, PathBuf, PathBuf) {
    let script = r#"set -e
        ec="-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
        openssl req -x509 $ec -days 2 -subj /CN=walwatch-test-ca -keyout ca.key -out ca.crt 2>/dev/null
        openssl req $ec -subj /CN=localhost -keyout ingest.key -out ingest.csr 2>/dev/null
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' > ext
        openssl x509 -req -in ingest.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile ext -out ingest.crt 2>/dev/null"#;
    let made = std::process::Command::new("sh").args(["-c", script]).current_dir(ws.path()).output().unwrap();
    assert!(made.status.success(), "openssl: {}", String::from_utf8_lossy(&made.stderr));
    (ws.path().join("ingest.crt"), ws.path().join("ingest.key"), ws.path().join("ca.crt"))
}

/// A connection from the loopback address `from` (127.x.y.z: each is
/// another peer to the central).
pub fn connect_from(from: [u8; 4], to: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    socket.bind(&SocketAddr::from((from, 0)).into())?;
    socket.connect_timeout(&to.into(), Duration::from_secs(5))?;
    Ok(socket.into())
}

/// Sends `request` and reads what comes back until the peer closes or
/// `wait` passes: (the status line, whether the connection was closed).
pub fn exchange(to: SocketAddr, request: &[u8], wait: Duration) -> (String, bool) {
    let mut stream = TcpStream::connect(to).unwrap();
    stream.set_read_timeout(Some(wait)).unwrap();
    let _ = stream.write_all(request);
    let mut answer = Vec::new();
    let closed = matches!(read_until_closed(&mut stream, &mut answer), Ok(()));
    let text = String::from_utf8_lossy(&answer).into_owned();
    (text.lines().next().unwrap_or_default().to_string(), closed)
}

/// Ok once the peer closed; Err when the read timed out (or failed).
pub fn read_until_closed(stream: &mut TcpStream, into: &mut Vec<u8>) -> std::io::Result<()> {
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => into.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

/// The daemon's resident memory, in kB.
pub fn rss_kb(pid: u32) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status.lines().find_map(|l| l.strip_prefix("VmRSS:")).unwrap().trim().trim_end_matches(" kB").parse().unwrap()
}

/// The descriptors the daemon holds open.
pub fn open_files(pid: u32) -> usize {
    fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
}

/// Raises this process's soft open-file limit to its hard one: the tests
/// open a thousand sockets.
pub fn raise_nofile() {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    if let Some(hard) = limit.maximum {
        let _ = setrlimit(Resource::Nofile, Rlimit { current: Some(hard), maximum: Some(hard) });
    }
}

/// Polls `probe` until it is Ok (for up to ten seconds), or panics with
/// its last answer.
pub fn eventually<T>(what: &str, mut probe: impl FnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match probe() {
            Ok(v) => return v,
            Err(e) if Instant::now() > deadline => panic!("{what}: not within 10 s: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}
