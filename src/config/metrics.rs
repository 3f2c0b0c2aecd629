//! `[metrics]`: the OpenMetrics endpoint for Prometheus. Off
//! unless `listen` is set: a daemon opens no port it was not asked to.

use std::net::SocketAddr;

use serde::Deserialize;
use toml::Spanned;

use super::problem::{socket_address, Problem};

/// The port the README and config/walwatch.toml suggest: outside the ports
/// Prometheus' exporters usually take, so it can be used as it is.
pub const SUGGESTED_PORT: u16 = 10187;

/// `[metrics]`
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetricsSection {
    /// Where `GET /metrics` is served; None: no endpoint.
    pub listen: Option<SocketAddr>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMetrics {
    listen: Option<Spanned<String>>,
}

impl RawMetrics {
    pub(super) fn validate(self) -> Result<MetricsSection, Problem> {
        let examples = [&format!("127.0.0.1:{SUGGESTED_PORT}")[..], &format!("[::1]:{SUGGESTED_PORT}")];
        let listen = self.listen.as_ref().map(|t| socket_address(t, examples)).transpose()?;
        Ok(MetricsSection { listen })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn parse(text: &str) -> Result<MetricsSection, String> {
        crate::config::parse(text, Path::new("/etc/walwatch/walwatch.toml"))
            .map(|c| c.metrics)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn off_by_default_and_read_when_set() {
        assert_eq!(parse("").unwrap().listen, None);
        assert_eq!(parse("[metrics]\n").unwrap().listen, None);
        let on = parse("[metrics]\nlisten = \"127.0.0.1:10187\"\n").unwrap();
        assert_eq!(on.listen, Some("127.0.0.1:10187".parse().unwrap()));
        let v6 = parse("[metrics]\nlisten = \"[::1]:9999\"\n").unwrap();
        assert_eq!(v6.listen, Some("[::1]:9999".parse().unwrap()));
    }

    #[test]
    fn mistakes_point_at_the_value() {
        let cases = [
            ("[metrics]\nlisten = \"localhost:10187\"\n", ":2:10: metrics.listen:", "is not an IP address and port"),
            ("[metrics]\nlisten = \"127.0.0.1\"\n", ":2:10: metrics.listen:", "e.g. \"127.0.0.1:10187\""),
            ("[metrics]\nport = 10187\n", ":2:1:", "unknown field"),
        ];
        for (text, at, says) in cases {
            let e = parse(text).unwrap_err();
            assert!(e.contains(at) && e.contains(says), "{text:?}: {e}");
        }
    }
}
