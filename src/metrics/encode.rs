//! The snapshot as metric families, through prometheus-client's encoders
//! (one collector, so the names and their order live in one place).

use std::collections::HashMap;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;

use super::histogram::{ClusterHists, Hist, LastPoint};
use super::Snapshot;
use crate::analyze::storm;
use crate::model::event::Trigger;

/// A snapshot to encode once.
#[derive(Debug)]
pub(super) struct Families(pub(crate) Snapshot);

type Labels<'a> = Vec<(&'static str, &'a str)>;

impl Collector for Families {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let s = &self.0;
        self.points(&mut encoder)?;
        let too_frequent =
            s.clusters.iter().map(|c| (vec![("cluster", c.as_str())], *s.too_frequent.get(c).unwrap_or(&0)));
        counters(
            &mut encoder,
            "walwatch_checkpoint_too_frequent",
            "\"checkpoints are occurring too frequently\" warnings stored",
            too_frequent,
        )?;
        self.histograms(&mut encoder)?;
        self.last_figures(&mut encoder)?;
        self.advice(&mut encoder)?;
        self.alerts(&mut encoder)?;
        let lag = s.lag.iter().map(|(c, f, n)| (vec![("cluster", c.as_str()), ("file", f.as_str())], *n as f64));
        gauges(&mut encoder, "walwatch_follow_lag_bytes", "Bytes of a followed file not read yet", lag)?;
        let last = s.last_event.iter().map(|(c, t)| (vec![("cluster", c.as_str())], *t));
        gauges(
            &mut encoder,
            "walwatch_last_event_timestamp_seconds",
            "Log time of the cluster's newest event (leaving out events dated ahead of the clock)",
            last,
        )?;
        self.listeners(&mut encoder)?;
        let version = [(vec![("version", env!("CARGO_PKG_VERSION"))], 1.0)];
        gauges(&mut encoder, "walwatch_build_info", "The walwatch version serving these metrics", version)
    }
}

impl Families {
    /// Each listener's state (1 taking connections, 0 not) and what it
    /// refused, by reason.
    fn listeners(&self, encoder: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let rows = &self.0.listeners;
        fn labels(l: &crate::store::ListenerRow) -> Labels<'_> {
            vec![("listener", l.name.as_str()), ("address", l.address.as_str())]
        }
        let up = rows.iter().map(|l| (labels(l), if l.up { 1.0 } else { 0.0 }));
        gauges(
            encoder,
            "walwatch_listener_up",
            "Whether the listener takes connections (0: its port takes none, or it does not run)",
            up,
        )?;
        let open = rows.iter().map(|l| (labels(l), l.open as f64));
        gauges(encoder, "walwatch_listener_connections", "Connections the listener holds open", open)?;
        let mut refused: Vec<(Labels<'_>, i64)> = Vec::new();
        for l in rows {
            for (reason, n) in &l.refused {
                refused.push((vec![("listener", l.name.as_str()), ("reason", reason.as_str())], *n as i64));
            }
        }
        counters(
            encoder,
            "walwatch_listener_refused",
            "Connections and requests the listener turned away since the daemon started, by reason",
            refused,
        )
    }

    /// Every cluster gets a series for each kind and trigger, zeros
    /// included: a counter that appears at 1 would lose its first increase
    /// to `increase()`.
    fn points(&self, encoder: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let s = &self.0;
        let started: HashMap<(&str, &str, &str), i64> =
            s.points.iter().map(|p| ((p.cluster.as_str(), p.kind.as_str(), p.trigger.as_str()), p.started)).collect();
        let mut series: Vec<(Labels<'_>, i64)> = Vec::new();
        for cluster in &s.clusters {
            for kind in ["checkpoint", "restartpoint"] {
                for trigger in Trigger::ALL.map(Trigger::as_str) {
                    let n = started.get(&(cluster.as_str(), kind, trigger)).copied().unwrap_or(0);
                    series.push((vec![("cluster", cluster), ("kind", kind), ("trigger", trigger)], n));
                }
                // Started points whose trigger walwatch could not tell (none
                // so far in real logs): counted, not hidden.
                if let Some(&n) = started.get(&(cluster.as_str(), kind, "")).filter(|n| **n > 0) {
                    series.push((vec![("cluster", cluster), ("kind", kind), ("trigger", "unknown")], n));
                }
            }
        }
        counters(encoder, "walwatch_checkpoints", "Checkpoints and restartpoints started, by trigger", series)
    }

    fn histograms(&self, encoder: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let s = &self.0;
        let empty = ClusterHists::default();
        let of = |c: &String| s.histograms.get(c).unwrap_or(&empty);
        let mut durations: Vec<(Labels<'_>, &Hist)> = Vec::new();
        for c in &s.clusters {
            let h = of(c);
            for (phase, hist) in [("write", &h.write), ("sync", &h.sync), ("total", &h.total)] {
                durations.push((vec![("cluster", c.as_str()), ("phase", phase)], hist));
            }
        }
        histograms(
            encoder,
            "walwatch_checkpoint_duration_seconds",
            "Write, sync and total time of completed checkpoints and restartpoints",
            durations,
        )?;
        let distances = s.clusters.iter().map(|c| (vec![("cluster", c.as_str())], &of(c).distance));
        histograms(
            encoder,
            "walwatch_checkpoint_distance_bytes",
            "WAL written between two checkpoints (the complete line's distance)",
            distances,
        )?;
        let rates = s.clusters.iter().map(|c| (vec![("cluster", c.as_str())], &of(c).write_rate));
        histograms(
            encoder,
            "walwatch_checkpoint_write_rate_bytes_per_second",
            "The rate each completed checkpoint wrote its buffers at (8 kB buffers over its write time)",
            rates,
        )
    }

    fn last_figures(&self, encoder: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let s = &self.0;
        let last = |pick: fn(&LastPoint) -> Option<i64>| {
            s.histograms.iter().filter_map(move |(c, h)| {
                let kb = h.last.as_ref().and_then(pick)?;
                Some((vec![("cluster", c.as_str())], kb as f64 * 1024.0))
            })
        };
        gauges(
            encoder,
            "walwatch_checkpoint_last_distance_bytes",
            "Distance of the newest completed checkpoint",
            last(|l| l.distance_kb),
        )?;
        gauges(
            encoder,
            "walwatch_checkpoint_last_estimate_bytes",
            "Estimate of the newest completed checkpoint",
            last(|l| l.estimate_kb),
        )?;
        let rate = s.histograms.iter().filter_map(|(c, h)| Some((vec![("cluster", c.as_str())], h.last?.write_rate?)));
        gauges(
            encoder,
            "walwatch_checkpoint_last_write_rate_bytes_per_second",
            "The rate the newest completed checkpoint wrote its buffers at",
            rate,
        )?;
        let pace = s.histograms.iter().filter_map(|(c, h)| {
            let last = h.last?;
            let pacing = s.advice.get(c)?.pacing?;
            Some((vec![("cluster", c.as_str())], storm::pace_ratio(pacing, last.trigger, last.write_s)?))
        });
        gauges(
            encoder,
            "walwatch_checkpoint_last_pace_ratio",
            "How many times faster than a timed checkpoint the newest WAL- or time-triggered checkpoint wrote \
             (checkpoint_timeout x checkpoint_completion_target over its write time)",
            pace,
        )
    }

    fn advice(&self, encoder: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let a = &self.0.advice;
        let rate = a.iter().filter_map(|(c, v)| Some((vec![("cluster", c.as_str())], v.wal_rate?)));
        gauges(
            encoder,
            "walwatch_wal_rate_bytes_per_second",
            "The suggest model's peak WAL rate (its [advice] percentile of the cycles' rates)",
            rate,
        )?;
        let settings = a.iter().flat_map(|(c, v)| {
            v.settings.iter().map(move |(name, x)| (vec![("cluster", c.as_str()), ("name", *name)], *x))
        });
        gauges(
            encoder,
            "walwatch_setting",
            "Settings in effect: max_wal_size and min_wal_size in bytes, checkpoint_timeout in seconds, \
             checkpoint_completion_target",
            settings,
        )?;
        let suggested = a.iter().filter_map(|(c, v)| Some((vec![("cluster", c.as_str())], v.suggested_max_wal_size?)));
        gauges(
            encoder,
            "walwatch_suggested_max_wal_size_bytes",
            "max_wal_size as `walwatch suggest` advises it",
            suggested,
        )
    }

    fn alerts(&self, encoder: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let open = self.0.alerts.iter().map(|((c, rule, severity), n)| {
            (vec![("cluster", c.as_str()), ("rule", rule.as_str()), ("severity", severity.as_str())], *n as f64)
        });
        gauges(encoder, "walwatch_alerts_firing", "Open walwatch alerts (firing or notified, not resolved)", open)
    }
}

fn descriptor<'s>(
    encoder: &'s mut DescriptorEncoder<'_>,
    name: &'s str,
    help: &str,
    kind: MetricType,
) -> Result<MetricEncoder<'s>, std::fmt::Error> {
    encoder.encode_descriptor(name, help, None, kind)
}

/// `name` without `_total`: the encoder adds it.
fn counters<L: EncodeLabelSet>(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (L, i64)>,
) -> Result<(), std::fmt::Error> {
    let mut family = descriptor(encoder, name, help, MetricType::Counter)?;
    for (labels, n) in series {
        family.encode_family(&labels)?.encode_counter::<NoLabelSet, _, u64>(&(n.max(0) as u64), None)?;
    }
    Ok(())
}

fn gauges<L: EncodeLabelSet>(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (L, f64)>,
) -> Result<(), std::fmt::Error> {
    let mut family = descriptor(encoder, name, help, MetricType::Gauge)?;
    for (labels, v) in series {
        family.encode_family(&labels)?.encode_gauge(&v)?;
    }
    Ok(())
}

fn histograms<'h, L: EncodeLabelSet>(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (L, &'h Hist)>,
) -> Result<(), std::fmt::Error> {
    let mut family = descriptor(encoder, name, help, MetricType::Histogram)?;
    for (labels, h) in series {
        family.encode_family(&labels)?.encode_histogram::<NoLabelSet>(h.sum, h.count(), &h.buckets(), None)?;
    }
    Ok(())
}
