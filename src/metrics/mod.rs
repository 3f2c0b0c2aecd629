//! The Prometheus endpoint: `GET /metrics` in the OpenMetrics
//! text format, or Prometheus' text format 0.0.4 when the scraper does not
//! ask for OpenMetrics.
//!
//! Every value is read from the store at scrape time, through a read-only
//! connection of the endpoint's own: the store stays the one truth, a
//! counter is a count of stored rows (so it survives a daemon restart and
//! `rate()` never sees a false reset), and a scrape never waits on the
//! follow loop nor makes it wait. What is costly to recount is kept between
//! scrapes: the histograms ([`histogram`]); the advice per cluster (the
//! suggest model) is computed by an [`Advisor`] on a thread of its own and
//! only read by a scrape. Each scrape builds a fresh registry from a
//! [`Snapshot`].

mod encode;
pub(crate) mod histogram;
mod newest;
mod read;
pub(crate) mod server;

use std::collections::BTreeMap;
use std::time::Duration;

use prometheus_client::registry::Registry;
use thiserror::Error;

use crate::config::Advices;
use crate::store::checkpoints::PointTotal;
use crate::store::StoreError;
use histogram::ClusterHists;

pub use read::{AdviceBoard, Advisor, Scraper};
pub(crate) use server::Endpoint;

/// The OpenMetrics content type of the answer, as the specification spells it.
pub(crate) const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The Prometheus text format's content type.
pub(crate) const PROMETHEUS_TEXT: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// The two text formats a scrape can be answered in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    OpenMetrics,
    PrometheusText,
}

impl Format {
    /// The format an `Accept` header prefers: OpenMetrics when it ranks
    /// `application/openmetrics-text` at least as high as any other type
    /// it accepts (Prometheus sends it first), the 0.0.4 text otherwise,
    /// which is also what a scraper sending no header gets.
    pub(crate) fn negotiate(accept: Option<&str>) -> Format {
        let Some(accept) = accept else { return Format::PrometheusText };
        let mut best: Option<(f64, Format)> = None;
        for item in accept.split(',') {
            let mut parts = item.split(';').map(str::trim);
            let media = parts.next().unwrap_or_default().to_ascii_lowercase();
            let q = parts
                .filter_map(|p| p.strip_prefix("q=").or_else(|| p.strip_prefix("Q=")))
                .find_map(|q| q.trim().parse::<f64>().ok())
                .unwrap_or(1.0);
            let format = match media.as_str() {
                "application/openmetrics-text" => Format::OpenMetrics,
                "text/plain" | "text/*" | "*/*" => Format::PrometheusText,
                _ => continue,
            };
            if q > 0.0 && best.is_none_or(|(b, _)| q > b) {
                best = Some((q, format));
            }
        }
        best.map_or(Format::PrometheusText, |(_, f)| f)
    }

    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => OPENMETRICS,
            Format::PrometheusText => PROMETHEUS_TEXT,
        }
    }
}

/// What a scrape needs from the configuration (replaced on SIGHUP).
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// `[alerts.clock_skew] tolerance`: an event dated further ahead is never the newest.
    pub skew_tolerance: Duration,
    pub advice: Advices,
    /// The clusters the daemon follows: only their files' lag is shown (an
    /// imported log that grew since is not walwatch's to keep up with, as
    /// `status` says too). None: every cluster's.
    pub followed: Option<Vec<String>>,
}

/// The advice-related gauges of one cluster.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Advice {
    /// The suggest model's peak (the `[advice] percentile`) WAL rate, bytes/s.
    pub(crate) wal_rate: Option<f64>,
    pub suggested_max_wal_size: Option<f64>,
    /// max_wal_size, min_wal_size (bytes), checkpoint_timeout (seconds),
    /// checkpoint_completion_target, as in effect now.
    pub(crate) settings: Vec<(&'static str, f64)>,
    /// The pacing in force now, when checkpoint_timeout is known
    /// ([`crate::analyze::storm::PacingTimeline`]): the newest
    /// checkpoint's pace ratio is judged by it.
    pub(crate) pacing: Option<crate::analyze::storm::Pacing>,
}

/// Everything one scrape exposes, read from the store.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Every cluster in the store, in name order.
    pub(crate) clusters: Vec<String>,
    pub(crate) points: Vec<PointTotal>,
    pub(crate) too_frequent: BTreeMap<String, i64>,
    pub(crate) histograms: BTreeMap<String, ClusterHists>,
    pub(crate) advice: BTreeMap<String, Advice>,
    /// Open alerts by (cluster, rule, severity).
    pub(crate) alerts: BTreeMap<(String, String, String), i64>,
    /// (cluster, file, bytes written but not read yet).
    pub(crate) lag: Vec<(String, String, u64)>,
    /// Seconds since the epoch of each cluster's newest event.
    pub last_event: BTreeMap<String, f64>,
    /// The daemon's listeners as it last recorded them.
    pub(crate) listeners: Vec<crate::store::ListenerRow>,
}

#[derive(Debug, Error)]
pub enum ScrapeError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot encode the metrics: {0}")]
    Encode(#[from] std::fmt::Error),
}

impl Snapshot {
    /// The exposition text in `format`.
    pub(crate) fn render(self, format: Format) -> Result<String, ScrapeError> {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(encode::Families(self)));
        let mut out = String::new();
        match format {
            Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut out, &registry)?,
            Format::PrometheusText => prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)?,
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
