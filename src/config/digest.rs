//! `[digest]`: the daily mail — when, in which zone, to whom,
//! for which clusters.

use jiff::civil::Time;
use lettre::message::Mailbox;
use serde::Deserialize;
use toml::Spanned;

use super::mail::mailbox;
use super::problem::{time_zone, Problem};
use super::Config;
use crate::model::alert::NoticeKind;

/// `[digest]`
#[derive(Debug, Clone, PartialEq)]
pub struct DigestSection {
    /// Default: true when `[mail]` is set (there is no digest without it).
    pub(crate) enabled: bool,
    /// The wall-clock time the previous day's digest goes out.
    pub(crate) at: Time,
    /// An IANA zone; None: the system's.
    pub(crate) timezone: Option<String>,
    /// Empty: the alert recipients (`[mail] to`).
    pub(crate) to: Vec<Mailbox>,
    /// Empty: every cluster.
    pub(crate) clusters: Vec<String>,
    /// false: a healthy day still sends a short "all well" digest, so that
    /// silence means something is broken.
    pub(crate) skip_quiet_days: bool,
    /// Charts drawn in one digest: the first clusters' (those needing
    /// attention first). A fleet's digest stays a mail a server takes.
    pub(crate) max_charts: usize,
}

/// A chart is some 35 KB of PNG: 25 keep a digest near 1 MB, far below the
/// 10-25 MB mail servers take.
pub(crate) const MAX_CHARTS: usize = 25;

impl Config {
    /// Who a mail of `kind` is addressed to: the digest to `[digest] to`
    /// when that is set; every other mail, and the digest otherwise, to
    /// `[mail] to`; nobody without `[mail]`. A renderer writes it in the To
    /// header and the outbox sends with it as the envelope, so the one
    /// setting that gives a kind recipients of its own is read here alone.
    pub(crate) fn mail_recipients(&self, kind: NoticeKind) -> Vec<Mailbox> {
        match (kind, &self.mail) {
            (NoticeKind::Digest, _) if !self.digest.to.is_empty() => self.digest.to.clone(),
            (_, Some(mail)) => mail.to.to_vec(),
            (_, None) => Vec::new(),
        }
    }
}

impl Default for DigestSection {
    /// Without `[mail]`: off.
    fn default() -> Self {
        DigestSection::default_for(false)
    }
}

impl DigestSection {
    /// The section when the file has none.
    pub(crate) fn default_for(mail_configured: bool) -> DigestSection {
        DigestSection {
            enabled: mail_configured,
            at: Time::constant(7, 0, 0, 0),
            timezone: None,
            to: Vec::new(),
            clusters: Vec::new(),
            skip_quiet_days: false,
            max_charts: MAX_CHARTS,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDigest {
    enabled: Option<Spanned<bool>>,
    at: Option<Spanned<String>>,
    timezone: Option<Spanned<String>>,
    to: Option<Vec<Spanned<String>>>,
    clusters: Option<Vec<Spanned<String>>>,
    skip_quiet_days: Option<bool>,
    max_charts: Option<Spanned<i64>>,
}

impl RawDigest {
    /// `cluster_names`: the `[[cluster]]` names, empty when the clusters
    /// are discovered (then any name is taken as it is).
    pub(super) fn validate(self, mail_configured: bool, cluster_names: &[&str]) -> Result<DigestSection, Problem> {
        let mut digest = DigestSection::default_for(mail_configured);
        if let Some(enabled) = &self.enabled {
            if *enabled.get_ref() && !mail_configured {
                let message = "enabled = true needs a [mail] section to send the digest with".to_string();
                return Err(Problem::at(enabled, message));
            }
            digest.enabled = *enabled.get_ref();
        }
        if let Some(at) = &self.at {
            digest.at = time_of_day(at)?;
        }
        if let Some(zone) = &self.timezone {
            digest.timezone = Some(time_zone(zone, "the zone whose day the digest covers")?);
        }
        for (i, address) in self.to.iter().flatten().enumerate() {
            digest.to.push(mailbox(address, &format!("to[{i}]"))?);
        }
        for name in self.clusters.iter().flatten() {
            if !cluster_names.is_empty() && !cluster_names.contains(&name.get_ref().as_str()) {
                let message =
                    format!("no [[cluster]] is named {:?} (known: {})", name.get_ref(), cluster_names.join(", "));
                return Err(Problem::at(name, message));
            }
            digest.clusters.push(name.get_ref().clone());
        }
        digest.skip_quiet_days = self.skip_quiet_days.unwrap_or(false);
        if let Some(n) = &self.max_charts {
            let message = format!("max_charts: {} is not a number of charts from 0 to 10000", n.get_ref());
            digest.max_charts =
                usize::try_from(*n.get_ref()).ok().filter(|n| *n <= 10_000).ok_or_else(|| Problem::at(n, message))?;
        }
        Ok(digest)
    }
}

/// `HH:MM`, 00:00 to 23:59.
fn time_of_day(text: &Spanned<String>) -> Result<Time, Problem> {
    let bad = || Problem::at(text, format!("at: {:?} is not a time of day as HH:MM (e.g. \"07:00\")", text.get_ref()));
    let (h, m) = text.get_ref().split_once(':').ok_or_else(bad)?;
    if h.len() != 2 || m.len() != 2 {
        return Err(bad());
    }
    let (h, m): (i8, i8) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    Time::new(h, m, 0, 0).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    const MAIL: &str = "[mail]\ntransport = \"file\"\nfrom = \"w@example.com\"\nto = [\"dba@example.com\"]\n\
                        [mail.file]\ndirectory = \"/tmp/mail\"\n";
    const CLUSTERS: &str = "[[cluster]]\nname = \"main\"\nlogs = [\"/var/log/pg/*.log\"]\n\
                            [[cluster]]\nname = \"etl\"\nlogs = [\"/var/log/etl/*.log\"]\n";

    fn parse(text: &str) -> Result<DigestSection, String> {
        crate::config::parse(text, Path::new("/etc/walwatch/walwatch.toml"))
            .map(|c| c.digest)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn on_at_seven_with_mail_and_off_without() {
        let with_mail = parse(MAIL).unwrap();
        assert_eq!(with_mail, DigestSection { enabled: true, ..DigestSection::default() });
        assert_eq!((with_mail.at, with_mail.skip_quiet_days), (Time::constant(7, 0, 0, 0), false));
        assert!(!parse("").unwrap().enabled);
        assert!(!parse(&format!("{MAIL}[digest]\nenabled = false\n")).unwrap().enabled);
    }

    #[test]
    fn every_key_is_read() {
        let text = format!(
            "{MAIL}{CLUSTERS}[digest]\nat = \"06:45\"\ntimezone = \"America/New_York\"\n\
             to = [\"Ops <ops@example.com>\", \"lead@example.com\"]\nclusters = [\"etl\"]\nskip_quiet_days = true\n\
             max_charts = 0\n"
        );
        let d = parse(&text).unwrap();
        assert_eq!(
            (d.enabled, d.at, d.timezone.as_deref()),
            (true, Time::constant(6, 45, 0, 0), Some("America/New_York"))
        );
        let to: Vec<String> = d.to.iter().map(|m| m.to_string()).collect();
        assert_eq!(to, ["Ops <ops@example.com>", "lead@example.com"]);
        assert_eq!((d.clusters, d.skip_quiet_days, d.max_charts), (vec!["etl".to_string()], true, 0));
        assert_eq!(parse(MAIL).unwrap().max_charts, 25);
        let config = crate::config::parse(&text, Path::new("/w.toml")).unwrap();
        assert_eq!(config.daemon.retired, Vec::<String>::new(), "the digest is sent: no note says otherwise");
    }

    /// Each mistake is reported at its value, with the file's line.
    #[test]
    fn mistakes_point_at_the_value() {
        let cases = [
            ("[digest]\nenabled = true\n", ":2:11: digest.enabled:", "needs a [mail] section"),
            ("[digest]\nat = \"7:00\"\n", ":2:6: digest.at:", "not a time of day as HH:MM"),
            ("[digest]\nat = \"24:00\"\n", ":2:6: digest.at:", "not a time of day as HH:MM"),
            (
                "[digest]\ntimezone = \"Mars/Olympus\"\n",
                ":2:12: digest.timezone:",
                "the zone whose day the digest covers",
            ),
            ("[digest]\nto = [\"nobody\"]\n", ":2:7: digest.to", "is not a mail address"),
            ("[digest]\nsent_at = \"07:00\"\n", ":2:1:", "unknown field"),
            (
                "[digest]\nmax_charts = -1\n",
                ":2:14: digest.max_charts:",
                "-1 is not a number of charts from 0 to 10000",
            ),
            ("[digest]\nmax_charts = 10001\n", ":2:14: digest.max_charts:", "10001 is not a number of charts"),
        ];
        for (section, line, says) in cases {
            let e = parse(section).unwrap_err();
            assert!(e.contains(line) && e.contains(says), "{section:?}: {e}");
        }
        let unknown = parse(&format!("{MAIL}{CLUSTERS}[digest]\nclusters = [\"main\", \"nope\"]\n")).unwrap_err();
        assert!(
            unknown.contains(":14:21: digest.clusters")
                && unknown.contains("no [[cluster]] is named \"nope\" (known: main, etl)"),
            "{unknown}"
        );
    }
}
