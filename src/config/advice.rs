//! `[advice]`: how the max_wal_size suggestion reads the checkpoint history.

use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::problem::{interval, Problem};

#[derive(Debug, Clone, PartialEq)]
pub struct AdviceSection {
    /// How far back the WAL rate is sampled.
    pub lookback: Duration,
    /// The percentile of per-cycle WAL rates, weighted by each cycle's time, taken as the peak (0 < p <= 100).
    pub percentile: f64,
    /// Fewer usable checkpoint cycles than this: no suggestion, only a note.
    pub min_samples: usize,
    /// Safety factor on top of the projected need (>= 1).
    pub headroom: f64,
    /// The longest a crash recovery may take at the worst moment.
    pub max_recovery: Option<Duration>,
    /// The most WAL pg_wal may hold, MB.
    pub max_pg_wal_mb: Option<u64>,
}

impl Default for AdviceSection {
    fn default() -> Self {
        AdviceSection {
            lookback: Duration::from_secs(7 * 86_400),
            percentile: 95.0,
            min_samples: 5,
            headroom: 1.25,
            max_recovery: None,
            max_pg_wal_mb: None,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAdvice {
    lookback: Option<Spanned<String>>,
    percentile: Option<Spanned<f64>>,
    min_samples: Option<Spanned<i64>>,
    headroom: Option<Spanned<f64>>,
    max_recovery: Option<Spanned<String>>,
    max_pg_wal: Option<Spanned<String>>,
}

impl RawAdvice {
    pub(crate) fn validate(self) -> Result<AdviceSection, Problem> {
        self.validate_over(&AdviceSection::default())
    }

    /// The keys given, over `base`: a cluster's `[cluster.advice]` over `[advice]`.
    pub(crate) fn validate_over(self, base: &AdviceSection) -> Result<AdviceSection, Problem> {
        let mut advice = base.clone();
        if let Some(text) = &self.lookback {
            advice.lookback = interval(text)?;
        }
        if let Some(p) = &self.percentile {
            advice.percentile = within(p, |v| v > 0.0 && v <= 100.0, "percentile must be above 0 and at most 100")?;
        }
        if let Some(n) = &self.min_samples {
            let v = *n.get_ref();
            if v < 1 {
                return Err(Problem::at(n, format!("min_samples must be at least 1, not {v}")));
            }
            advice.min_samples = v as usize;
        }
        if let Some(h) = &self.headroom {
            advice.headroom = within(h, |v| (1.0..=10.0).contains(&v), "headroom is a factor from 1 to 10, e.g. 1.25")?;
        }
        if let Some(text) = &self.max_recovery {
            advice.max_recovery = Some(interval(text)?);
        }
        if let Some(text) = &self.max_pg_wal {
            advice.max_pg_wal_mb = Some(size_mb(text)?);
        }
        Ok(advice)
    }
}

/// `[advice]` and each cluster's `[cluster.advice]` over it, by cluster name.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Advices {
    global: AdviceSection,
    clusters: std::collections::BTreeMap<String, AdviceSection>,
}

impl Advices {
    pub(crate) fn new(global: AdviceSection, clusters: std::collections::BTreeMap<String, AdviceSection>) -> Advices {
        Advices { global, clusters }
    }

    /// The advice settings of `cluster`: its own, else `[advice]`.
    pub(crate) fn of(&self, cluster: &str) -> &AdviceSection {
        self.clusters.get(cluster).unwrap_or(&self.global)
    }
}

impl From<AdviceSection> for Advices {
    fn from(global: AdviceSection) -> Advices {
        Advices { global, clusters: Default::default() }
    }
}

/// A size as postgresql.conf writes one ("20GB", "512MB"), in whole MB: at
/// least two 16 MB segments, the least pg_wal ever holds.
fn size_mb(text: &Spanned<String>) -> Result<u64, Problem> {
    let hint = "a size such as \"20GB\" or \"512MB\"";
    match crate::guc::units::parse("max_wal_size", text.get_ref(), None) {
        Ok(crate::guc::units::Parsed::Bytes(b)) if b >= 32.0 * 1_048_576.0 => Ok((b / 1_048_576.0).floor() as u64),
        Ok(_) => Err(Problem::at(text, format!("{:?} is below 32MB (two WAL segments): {hint}", text.get_ref()))),
        Err(e) => Err(Problem::at(text, format!("{e}: {hint}"))),
    }
}

fn within(value: &Spanned<f64>, ok: impl Fn(f64) -> bool, message: &str) -> Result<f64, Problem> {
    let v = *value.get_ref();
    if v.is_finite() && ok(v) {
        Ok(v)
    } else {
        Err(Problem::at(value, format!("{message}, not {v}")))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::AdviceSection;

    fn advice(line: &str) -> Result<AdviceSection, String> {
        let text = format!("[advice]\n{line}\n");
        crate::config::parse(&text, Path::new("t.toml")).map(|c| c.advice).map_err(|e| e.to_string())
    }

    /// The caps the sizing model relies on, at both ends: a percentile
    /// above 0 and at most 100, a headroom from 1 to 10, at least 1 sample.
    #[test]
    fn every_advice_value_is_held_within_its_caps() {
        assert_eq!(advice("percentile = 100.0").unwrap().percentile, 100.0);
        assert_eq!(advice("percentile = 0.001").unwrap().percentile, 0.001);
        let over = "t.toml:2:14: advice.percentile: percentile must be above 0 and at most 100, not 100.001";
        assert_eq!(advice("percentile = 100.001").unwrap_err(), over);
        let nan = "t.toml:2:14: advice.percentile: percentile must be above 0 and at most 100, not NaN";
        assert_eq!(advice("percentile = nan").unwrap_err(), nan);
        assert_eq!(advice("headroom = 1.0").unwrap().headroom, 1.0);
        assert_eq!(advice("headroom = 10.0").unwrap().headroom, 10.0);
        let over = "t.toml:2:12: advice.headroom: headroom is a factor from 1 to 10, e.g. 1.25, not 10.001";
        assert_eq!(advice("headroom = 10.001").unwrap_err(), over);
        let under = "t.toml:2:12: advice.headroom: headroom is a factor from 1 to 10, e.g. 1.25, not 0.999";
        assert_eq!(advice("headroom = 0.999").unwrap_err(), under);
        let inf = "t.toml:2:12: advice.headroom: headroom is a factor from 1 to 10, e.g. 1.25, not inf";
        assert_eq!(advice("headroom = inf").unwrap_err(), inf);
        assert_eq!(advice("min_samples = 1").unwrap().min_samples, 1);
        let none = "t.toml:2:15: advice.min_samples: min_samples must be at least 1, not 0";
        assert_eq!(advice("min_samples = 0").unwrap_err(), none);
        assert_eq!(advice("").unwrap(), AdviceSection::default());
    }

    /// The two bounds: a duration and a size as postgresql.conf writes them.
    #[test]
    fn bounds_are_a_duration_and_a_size() {
        let a = advice("max_recovery = \"2min\"\nmax_pg_wal = \"20GB\"").unwrap();
        assert_eq!((a.max_recovery, a.max_pg_wal_mb), (Some(std::time::Duration::from_secs(120)), Some(20_480)));
        assert_eq!(advice("max_pg_wal = \"32MB\"").unwrap().max_pg_wal_mb, Some(32));
        let small = "t.toml:2:14: advice.max_pg_wal: \"31MB\" is below 32MB (two WAL segments): a size such as \
                     \"20GB\" or \"512MB\"";
        assert_eq!(advice("max_pg_wal = \"31MB\"").unwrap_err(), small);
        assert!(advice("max_pg_wal = \"lots\"").unwrap_err().starts_with("t.toml:2:14: advice.max_pg_wal: "));
        assert!(advice("max_recovery = \"0s\"").unwrap_err().starts_with("t.toml:2:16: advice.max_recovery: "));
    }

    /// Each cluster's advice: its own where it has `[cluster.advice]`, else
    /// `[advice]`; a name no cluster has gets `[advice]` too.
    #[test]
    fn each_cluster_reads_its_own_advice() {
        let text = "[advice]\nheadroom = 1.5\n\n[[cluster]]\nname = \"a\"\nlogs = [\"/l/a/*.log\"]\n[cluster.advice]\nheadroom = 2.0\n\n[[cluster]]\nname = \"b\"\nlogs = [\"/l/b/*.log\"]\n";
        let config = crate::config::parse(text, Path::new("t.toml")).unwrap();
        let advices = config.advices();
        let headroom = |name: &str| (advices.of(name).headroom, config.advice_for(name).headroom);
        assert_eq!(headroom("a"), (2.0, 2.0));
        assert_eq!(headroom("b"), (1.5, 1.5));
        assert_eq!(headroom("elsewhere"), (1.5, 1.5));
        assert_eq!(super::Advices::from(config.advice.clone()).of("a").headroom, 1.5);
    }
}
