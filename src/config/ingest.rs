//! `[ingest]`: the central walwatch of a fleet, taking the log lines Vector
//! agents ship. Off unless `listen` is set. A listener on
//! anything but a loopback address needs `token_file`: a port that accepts
//! log lines from anyone lets anyone write events into the store.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::problem::{absolute, interval, one_of, socket_address, time_zone, Problem};
use super::FORMATS;

/// The port the README and config/walwatch.toml suggest (next to the
/// metrics endpoint's).
pub const SUGGESTED_PORT: u16 = 10188;

/// The largest request body taken, after decompression: Vector's http sink
/// batches at most 10 MB (`batch.max_bytes`) before encoding; JSON adds the
/// field names.
pub(crate) const DEFAULT_MAX_BATCH: u64 = 64 << 20;

/// How long a shipped file's last entry waits for lines that may belong to
/// it (a HINT, continuation lines) by default: the agent may send them in
/// its next batch, a `batch.timeout_secs` (1 s by default) later.
pub(crate) const DEFAULT_SETTLE: std::time::Duration = std::time::Duration::from_secs(5);

/// `[ingest]`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestSection {
    /// Where `POST /ingest/vector` is served; None: no receiver.
    pub listen: Option<SocketAddr>,
    /// The accepted bearer tokens, one a line.
    pub(crate) token_file: Option<PathBuf>,
    /// Where each shipped file's lines are kept; None: `ingest/` beside the store.
    pub(crate) spool: Option<PathBuf>,
    /// `tls_cert` and `tls_key` (PEM): HTTPS instead of HTTP.
    pub(crate) tls: Option<(PathBuf, PathBuf)>,
    /// The largest request body, decompressed.
    pub max_batch_bytes: u64,
    /// How long a file's last entry is held after its last batch.
    pub settle: std::time::Duration,
    /// `[[ingest.cluster]]`: which cluster a (host, file) belongs to, first match wins.
    pub clusters: Vec<IngestCluster>,
    /// Connections open at once, in all and from one address (an IPv6 /64).
    pub(crate) max_connections: usize,
    pub(crate) max_connections_per_peer: usize,
}

/// Connections the receiver keeps open at once: well under the unit's
/// LimitNOFILE, with room for the store, the logs and the spools.
pub(crate) const DEFAULT_MAX_CONNECTIONS: usize = 2048;

/// Connections from one address: an agent keeps one or two; a few hosts
/// behind one NAT address each have theirs.
pub(crate) const DEFAULT_MAX_CONNECTIONS_PER_PEER: usize = 64;

/// `[[ingest.cluster]]`: shipped files whose host and path match the globs
/// belong to the cluster `name` (`{host}` in it is the host's name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestCluster {
    pub host: String,
    pub(crate) file: String,
    pub name: String,
    /// One of [`FORMATS`].
    pub(crate) format: String,
    /// The server's log_line_prefix, or "auto".
    pub(crate) prefix: String,
    pub(crate) timezone: Option<String>,
}

impl Default for IngestSection {
    fn default() -> Self {
        IngestSection {
            listen: None,
            token_file: None,
            spool: None,
            tls: None,
            max_batch_bytes: DEFAULT_MAX_BATCH,
            settle: DEFAULT_SETTLE,
            clusters: Vec::new(),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_peer: DEFAULT_MAX_CONNECTIONS_PER_PEER,
        }
    }
}

impl IngestSection {
    /// The spool directory for a store at `store`: `[ingest] spool`, else
    /// `<store's name>-ingest` beside it (`walwatch.db` → `walwatch-ingest`),
    /// one per store even when several share a directory.
    pub(crate) fn spool_dir(&self, store: &Path) -> PathBuf {
        if let Some(dir) = &self.spool {
            return dir.clone();
        }
        let stem = store.file_stem().map_or_else(|| "walwatch".into(), |s| s.to_string_lossy());
        store.parent().unwrap_or(Path::new(".")).join(format!("{stem}-ingest"))
    }

    /// Where releases before the per-store spool kept it when `spool` is
    /// not set: `ingest/` beside the store (shared by every store there).
    pub(crate) fn shared_spool_dir(&self, store: &Path) -> Option<PathBuf> {
        match self.spool {
            Some(_) => None,
            None => Some(store.parent().unwrap_or(Path::new(".")).join("ingest")),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawIngest {
    listen: Option<Spanned<String>>,
    token_file: Option<Spanned<PathBuf>>,
    spool: Option<Spanned<PathBuf>>,
    tls_cert: Option<Spanned<PathBuf>>,
    tls_key: Option<Spanned<PathBuf>>,
    max_batch_bytes: Option<Spanned<i64>>,
    settle: Option<Spanned<String>>,
    max_connections: Option<Spanned<i64>>,
    max_connections_per_peer: Option<Spanned<i64>>,
    #[serde(default, rename = "cluster")]
    clusters: Vec<RawIngestCluster>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIngestCluster {
    host: Option<Spanned<String>>,
    file: Option<Spanned<String>>,
    name: Option<Spanned<String>>,
    format: Option<Spanned<String>>,
    prefix: Option<String>,
    timezone: Option<Spanned<String>>,
}

impl RawIngest {
    pub(super) fn validate(self) -> Result<IngestSection, Problem> {
        let examples = [&format!("0.0.0.0:{SUGGESTED_PORT}")[..], &format!("[::]:{SUGGESTED_PORT}")];
        let listen = self.listen.as_ref().map(|t| socket_address(t, examples)).transpose()?;
        let token_file = self.token_file.as_ref().map(absolute).transpose()?.map(Path::to_path_buf);
        if let (Some(addr), None, Some(text)) = (listen, &token_file, &self.listen) {
            if !addr.ip().is_loopback() {
                let message = format!(
                    "listen = {:?} accepts log lines from the network: set token_file (the bearer tokens the Vector agents send, one a line)",
                    text.get_ref()
                );
                return Err(Problem::at(text, message));
            }
        }
        let spool = self.spool.as_ref().map(absolute).transpose()?.map(Path::to_path_buf);
        let cert = self.tls_cert.as_ref().map(absolute).transpose()?.map(Path::to_path_buf);
        let key = self.tls_key.as_ref().map(absolute).transpose()?.map(Path::to_path_buf);
        let tls = match (cert, key, &self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key), _, _) => Some((cert, key)),
            (None, None, _, _) => None,
            (_, _, Some(given), _) => {
                return Err(Problem::at(given, "tls_cert needs tls_key (the certificate's private key, PEM)".into()))
            }
            (_, _, _, Some(given)) => {
                return Err(Problem::at(given, "tls_key needs tls_cert (the certificate chain, PEM)".into()))
            }
            _ => None,
        };
        let max_batch_bytes = match &self.max_batch_bytes {
            Some(v) if *v.get_ref() < 1024 => {
                return Err(Problem::at(v, format!("max_batch_bytes = {} is below 1024", v.get_ref())))
            }
            Some(v) => *v.get_ref() as u64,
            None => DEFAULT_MAX_BATCH,
        };
        let settle = self.settle.as_ref().map(interval).transpose()?.unwrap_or(DEFAULT_SETTLE);
        let max_connections = count(&self.max_connections, "max_connections")?.unwrap_or(DEFAULT_MAX_CONNECTIONS);
        let max_connections_per_peer = count(&self.max_connections_per_peer, "max_connections_per_peer")?
            .unwrap_or(DEFAULT_MAX_CONNECTIONS_PER_PEER);
        if let Some(v) = self.max_connections_per_peer.as_ref().filter(|_| max_connections_per_peer > max_connections) {
            let message = format!(
                "max_connections_per_peer = {max_connections_per_peer} is above max_connections = {max_connections}"
            );
            return Err(Problem::at(v, message));
        }
        let clusters = self.clusters.into_iter().map(RawIngestCluster::validate).collect::<Result<_, _>>()?;
        Ok(IngestSection {
            listen,
            token_file,
            spool,
            tls,
            max_batch_bytes,
            settle,
            clusters,
            max_connections,
            max_connections_per_peer,
        })
    }
}

impl RawIngestCluster {
    fn validate(self) -> Result<IngestCluster, Problem> {
        let host = self.host.as_ref().map(pattern).transpose()?.unwrap_or_else(|| "*".into());
        let file = self.file.as_ref().map(pattern).transpose()?.unwrap_or_else(|| "*".into());
        let name = match &self.name {
            Some(n) if n.get_ref().trim().is_empty() => {
                return Err(Problem::at(n, "a cluster name must not be empty".into()))
            }
            Some(n) => n.get_ref().trim().to_string(),
            None => DEFAULT_NAME.into(),
        };
        let format = self.format.as_ref().map(|f| one_of(f, &FORMATS, "format")).transpose()?;
        let timezone = self.timezone.as_ref().map(|z| time_zone(z, "the server's log_timezone")).transpose()?;
        Ok(IngestCluster {
            host,
            file,
            name,
            format: format.unwrap_or_else(|| "auto".into()),
            prefix: self.prefix.unwrap_or_else(|| "auto".into()),
            timezone,
        })
    }
}

/// The most connections a listener may keep: each is a descriptor, and the
/// unit's LimitNOFILE is 65536.
const MOST_CONNECTIONS: i64 = 32_768;

/// A connection count between 1 and [`MOST_CONNECTIONS`].
fn count(value: &Option<Spanned<i64>>, key: &str) -> Result<Option<usize>, Problem> {
    match value {
        Some(v) if !(1..=MOST_CONNECTIONS).contains(v.get_ref()) => {
            Err(Problem::at(v, format!("{key} = {} is not between 1 and {MOST_CONNECTIONS}", v.get_ref())))
        }
        Some(v) => Ok(Some(*v.get_ref() as usize)),
        None => Ok(None),
    }
}

/// The cluster name of a file no `[[ingest.cluster]]` names otherwise.
pub(crate) const DEFAULT_NAME: &str = "{host}:{file}";

fn pattern(text: &Spanned<String>) -> Result<String, Problem> {
    glob::Pattern::new(text.get_ref())
        .map(|_| text.get_ref().clone())
        .map_err(|e| Problem::at(text, format!("{:?} is not a glob pattern: {e}", text.get_ref())))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn parse(text: &str) -> Result<IngestSection, String> {
        crate::config::parse(text, Path::new("/etc/walwatch/walwatch.toml"))
            .map(|c| c.ingest)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn off_by_default_and_read_when_set() {
        assert_eq!(parse("").unwrap(), IngestSection::default());
        let on = parse(
            "[ingest]\nlisten = \"0.0.0.0:10188\"\ntoken_file = \"/etc/walwatch/tokens\"\n\
             [[ingest.cluster]]\nhost = \"db-*\"\nfile = \"/var/log/postgresql/*.log\"\nname = \"{host}\"\n\
             timezone = \"Europe/Paris\"\n[[ingest.cluster]]\nprefix = \"%m [%p] \"\n",
        )
        .unwrap();
        assert_eq!(on.listen, Some("0.0.0.0:10188".parse().unwrap()));
        assert_eq!(on.token_file.as_deref(), Some(Path::new("/etc/walwatch/tokens")));
        assert_eq!((on.max_batch_bytes, on.settle), (DEFAULT_MAX_BATCH, DEFAULT_SETTLE));
        assert_eq!(on.clusters.len(), 2);
        assert_eq!(
            on.clusters[0],
            IngestCluster {
                host: "db-*".into(),
                file: "/var/log/postgresql/*.log".into(),
                name: "{host}".into(),
                format: "auto".into(),
                prefix: "auto".into(),
                timezone: Some("Europe/Paris".into()),
            }
        );
        assert_eq!((on.clusters[1].host.as_str(), on.clusters[1].name.as_str()), ("*", DEFAULT_NAME));
        assert_eq!(on.clusters[1].prefix, "%m [%p] ");
        let store = Path::new("/var/lib/walwatch/walwatch.db");
        assert_eq!(on.spool_dir(store), Path::new("/var/lib/walwatch/walwatch-ingest"));
        assert_eq!(on.shared_spool_dir(store).unwrap(), Path::new("/var/lib/walwatch/ingest"));
        assert_eq!(on.spool_dir(Path::new("/srv/b.db")), Path::new("/srv/b-ingest"));
        assert_eq!((on.max_connections, on.max_connections_per_peer), (2048, 64));
        let set =
            parse("[ingest]\nspool = \"/srv/spool\"\nmax_connections = 100\nmax_connections_per_peer = 5\n").unwrap();
        assert_eq!((set.spool_dir(store), set.shared_spool_dir(store)), (Path::new("/srv/spool").into(), None));
        assert_eq!((set.max_connections, set.max_connections_per_peer), (100, 5));
    }

    #[test]
    fn mistakes_point_at_the_value() {
        let cases = [
            ("[ingest]\nlisten = \"db:10188\"\n", ":2:10: ingest.listen:", "is not an IP address and port"),
            ("[ingest]\nlisten = \"0.0.0.0:10188\"\n", ":2:10: ingest.listen:", "set token_file"),
            ("[ingest]\nlisten = \"127.0.0.1:1\"\ntoken_file = \"tokens\"\n", ":3:14:", "not an absolute path"),
            ("[ingest]\nmax_batch_bytes = 10\n", ":2:19:", "below 1024"),
            ("[ingest]\nsettle = \"soon\"\n", ":2:10:", "soon"),
            ("[ingest]\ntls = true\n", ":2:1:", "unknown field"),
            ("[ingest]\ntls_cert = \"/etc/walwatch/c.pem\"\n", ":2:12:", "tls_cert needs tls_key"),
            ("[ingest]\ntls_key = \"/etc/walwatch/k.pem\"\n", ":2:11:", "tls_key needs tls_cert"),
            ("[ingest]\nmax_connections = 0\n", ":2:19:", "not between 1 and 32768"),
            ("[ingest]\nmax_connections = 10\nmax_connections_per_peer = 11\n", ":3:28:", "above max_connections"),
            ("[[ingest.cluster]]\nhost = \"db-[\"\n", ":2:8:", "is not a glob pattern"),
            ("[[ingest.cluster]]\nformat = \"xml\"\n", ":2:10:", "format"),
            ("[[ingest.cluster]]\nname = \" \"\n", ":2:8:", "must not be empty"),
        ];
        for (text, at, says) in cases {
            let e = parse(text).unwrap_err();
            assert!(e.contains(at) && e.contains(says), "{text:?}: {e}");
        }
    }

    #[test]
    fn a_loopback_listener_needs_no_token() {
        let on = parse("[ingest]\nlisten = \"127.0.0.1:10188\"\n").unwrap();
        assert_eq!((on.listen.unwrap().port(), on.token_file), (10188, None));
    }
}
