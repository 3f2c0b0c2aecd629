//! The replay speed of a cluster's crash recoveries, and what a crash at
//! the worst moment would cost at it.
//!
//! Every recovery the log shows (`redo starts at` … `redo done at`) is kept
//! in the store with the cluster's events, from every log and every run;
//! the speed is the WAL the newest crash recoveries replayed over the time
//! they took. A standby's replay is left out: it replays WAL as it arrives
//! and waits between, tens of times slower than a crash recovery reads
//! pg_wal, so it would make every recovery bound look broken.

use jiff::Timestamp;
use serde::Serialize;

use crate::store::events::Replay;

/// The replay speed of the crash recoveries the log shows.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct ReplaySpeed {
    pub(crate) mb_s: f64,
    /// The `redo done` of the newest crash recovery measured.
    #[serde(serialize_with = "crate::timefmt::serialize")]
    pub(crate) measured_at: Timestamp,
    /// How many crash recoveries the speed comes from.
    pub(crate) recoveries: usize,
}

/// Total WAL over total time of the crash recoveries; None without one that
/// replayed some WAL in some time.
pub(crate) fn crash_speed(replays: &[Replay]) -> Option<ReplaySpeed> {
    let crashes: Vec<&Replay> = replays.iter().filter(|r| r.crash && r.bytes > 0 && r.seconds > 0.0).collect();
    let bytes: u64 = crashes.iter().map(|r| r.bytes).sum();
    let seconds: f64 = crashes.iter().map(|r| r.seconds).sum();
    let measured_at = crashes.iter().map(|r| r.at).max()?;
    Some(ReplaySpeed { mb_s: bytes as f64 / 1_048_576.0 / seconds, measured_at, recoveries: crashes.len() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replay(mb: u64, seconds: f64, at_s: i64, crash: bool) -> Replay {
        Replay { bytes: mb * 1_048_576, seconds, at: Timestamp::from_second(at_s).unwrap(), crash }
    }

    /// Only crash recoveries count, each by its WAL and its time; the
    /// newest one dates the measure.
    #[test]
    fn the_speed_is_crash_recoveries_only() {
        assert_eq!(crash_speed(&[]), None);
        // A standby's 5 s replay of 36 MB alone: nothing measured.
        assert_eq!(crash_speed(&[replay(36, 5.3, 100, false)]), None);
        let all = [replay(96, 1.0, 100, true), replay(36, 5.3, 300, false), replay(32, 3.0, 200, true)];
        let s = crash_speed(&all).unwrap();
        assert_eq!((s.mb_s, s.recoveries), (32.0, 2));
        assert_eq!(s.measured_at, Timestamp::from_second(200).unwrap());
        // Nothing replayed, or no time logged: no measure.
        assert_eq!(crash_speed(&[replay(0, 2.0, 100, true)]), None);
        assert_eq!(crash_speed(&[replay(8, 0.0, 100, true)]), None);
    }
}
