//! TLS for `[ingest]` (`tls_cert`, `tls_key`): rustls in front of the HTTP
//! receiver. tiny_http serves plain HTTP on a loopback port of its own; each
//! TLS connection on the configured address is decrypted here and relayed
//! to it, its answers encrypted back. The agents see HTTPS only.
//!
//! One connection, two threads: one reads the agent's TLS records and
//! passes the plaintext on, the other writes the receiver's answers into
//! the same TLS session. The session is shared under a mutex that is never
//! held across a blocking read.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConfig, ServerConnection};

/// The certificate chain and key, read and checked as a pair.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect())
        .map_err(|e| format!("tls_cert {}: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!("tls_cert {}: no PEM certificate in it", cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("tls_key {}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map(Arc::new)
        .map_err(|e| format!("tls_cert and tls_key do not make a pair: {e}"))
}

/// The TLS listener relaying to the receiver at `inner`.
pub struct Front {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    addr: SocketAddr,
}

impl Front {
    pub fn start(listener: TcpListener, inner: SocketAddr, config: Arc<ServerConfig>) -> io::Result<Front> {
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("ingest-tls".into())
                .spawn(move || accept(&listener, inner, &config, &stop))?
        };
        Ok(Front { stop, thread: Some(thread), addr })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn accept(listener: &TcpListener, inner: SocketAddr, config: &Arc<ServerConfig>, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((client, peer)) => {
                let config = Arc::clone(config);
                let spawned = std::thread::Builder::new().name("ingest-tls-conn".into()).spawn(move || {
                    if let Err(e) = relay(client, inner, config) {
                        tracing::debug!(%peer, error = %e, "An ingest TLS connection ended.");
                    }
                });
                if let Err(e) = spawned {
                    tracing::warn!(error = %e, "Cannot take an ingest TLS connection.");
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => {
                tracing::warn!(error = %e, "Cannot accept an ingest TLS connection.");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// Relays one agent's connection until either side closes it.
fn relay(client: TcpStream, inner: SocketAddr, config: Arc<ServerConfig>) -> io::Result<()> {
    client.set_nonblocking(false)?;
    // An agent that connects and says nothing does not keep a thread forever.
    client.set_read_timeout(Some(Duration::from_secs(300)))?;
    let plain = TcpStream::connect(inner)?;
    let session = Arc::new(Mutex::new(ServerConnection::new(config).map_err(io::Error::other)?));
    let answers = {
        let (session, mut client, mut plain) = (Arc::clone(&session), client.try_clone()?, plain.try_clone()?);
        std::thread::Builder::new().name("ingest-tls-out".into()).spawn(move || {
            let _ = answer(&session, &mut plain, &mut client);
            let _ = client.shutdown(Shutdown::Both);
        })?
    };
    let result = requests(&session, &mut client.try_clone()?, &mut plain.try_clone()?);
    let _ = plain.shutdown(Shutdown::Both);
    let _ = client.shutdown(Shutdown::Both);
    let _ = answers.join();
    result
}

fn lock(session: &Mutex<ServerConnection>) -> std::sync::MutexGuard<'_, ServerConnection> {
    session.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The agent's TLS records in, their plaintext to the receiver (and the
/// handshake's own records back to the agent).
fn requests(session: &Mutex<ServerConnection>, client: &mut TcpStream, plain: &mut TcpStream) -> io::Result<()> {
    let mut buf = vec![0u8; 64 << 10];
    let mut text = Vec::new();
    loop {
        let n = client.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        text.clear();
        {
            let mut s = lock(session);
            s.read_tls(&mut &buf[..n])?;
            let state = s.process_new_packets().map_err(io::Error::other);
            // Alerts and handshake records go out even when the packet was bad.
            flush(&mut s, client)?;
            let state = state?;
            if state.plaintext_bytes_to_read() > 0 {
                let mut reader = s.reader();
                match reader.read_to_end(&mut text) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
            }
            if state.peer_has_closed() && text.is_empty() {
                return Ok(());
            }
        }
        plain.write_all(&text)?;
    }
}

/// The receiver's answers, encrypted, to the agent.
fn answer(session: &Mutex<ServerConnection>, plain: &mut TcpStream, client: &mut TcpStream) -> io::Result<()> {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = plain.read(&mut buf)?;
        if n == 0 {
            let mut s = lock(session);
            s.send_close_notify();
            return flush(&mut s, client);
        }
        let mut s = lock(session);
        s.writer().write_all(&buf[..n])?;
        flush(&mut s, client)?;
    }
}

fn flush(session: &mut ServerConnection, client: &mut TcpStream) -> io::Result<()> {
    while session.wants_write() {
        session.write_tls(client)?;
    }
    Ok(())
}
