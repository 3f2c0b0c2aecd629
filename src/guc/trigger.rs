//! When PostgreSQL requests a WAL-triggered checkpoint, from max_wal_size
//! (`xlog.c` `CalculateCheckpointSegments`, `XLogCheckpointNeeded`):
//!
//! ```text
//! CheckPointSegments = max(1, (int) (max_wal_size in segments / divisor))
//! divisor = 2 + checkpoint_completion_target   (9.6, 10: two cycles of WAL kept)
//!           1 + checkpoint_completion_target   (11+)
//! ```
//!
//! A checkpoint is requested when a backend finishes the segment
//! `CheckPointSegments - 1` segments after the one holding the last
//! checkpoint's REDO. Both directions live here: the sizing model goes from
//! max_wal_size to the trigger, the settings inference from the distance of
//! WAL-triggered checkpoints back to the max_wal_size values that give it.

/// The divisor of max_wal_size in `CalculateCheckpointSegments`; an unknown
/// version is read as the newest.
pub(crate) fn divisor(version: Option<u32>, completion_target: f64) -> f64 {
    match version {
        Some(v) if v < 11 => 2.0 + completion_target,
        _ => 1.0 + completion_target,
    }
}

/// CheckPointSegments for a max_wal_size of `segments` WAL segments: the
/// quotient truncated as C's `(int)` does, at least 1.
pub(crate) fn checkpoint_segments(segments: u64, divisor: f64) -> u64 {
    ((segments as f64 / divisor) as u64).max(1)
}

/// Every max_wal_size, in whole segments, whose CheckPointSegments is
/// `wanted`: an inclusive range, None when no size gives it. PostgreSQL's
/// smallest max_wal_size is 2 segments.
pub(crate) fn sizes_for(wanted: u64, divisor: f64) -> Option<(u64, u64)> {
    // The quotient grows with the size: start just below the first candidate.
    let mut low = ((wanted as f64 * divisor) as u64).saturating_sub(2).max(2);
    while checkpoint_segments(low, divisor) < wanted {
        low += 1;
    }
    if checkpoint_segments(low, divisor) != wanted {
        return None;
    }
    let mut high = low;
    while checkpoint_segments(high + 1, divisor) == wanted {
        high += 1;
    }
    Some((low, high))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_give_postgresqls_checkpoint_segments() {
        // PostgreSQL's CheckPointSegments at its defaults, 1GB = 64 segments of
        // 16 MB: 25 (9.6/10, cct 0.5), 42 (11-13, 0.5), 33 (14+, 0.9).
        assert_eq!(checkpoint_segments(64, divisor(Some(10), 0.5)), 25);
        assert_eq!(checkpoint_segments(64, divisor(Some(13), 0.5)), 42);
        assert_eq!(checkpoint_segments(64, divisor(Some(15), 0.9)), 33);
        assert_eq!(checkpoint_segments(64, divisor(None, 0.9)), 33);
        // 32MB: 2 / 1.9 truncates to 1; the minimum keeps it there.
        assert_eq!(checkpoint_segments(2, divisor(Some(15), 0.9)), 1);
        assert_eq!(checkpoint_segments(2, divisor(Some(10), 0.9)), 1);
    }

    #[test]
    fn sizes_for_a_trigger_are_every_size_that_truncates_to_it() {
        let d = divisor(Some(15), 0.9);
        // 33 segments: 62.7 .. 64.6 -> 63 and 64 segments (1008MB, 1GB).
        assert_eq!(sizes_for(33, d), Some((63, 64)));
        // 1: the smallest max_wal_size (2 segments) up to 3 (3 / 1.9 = 1.58).
        assert_eq!(sizes_for(1, d), Some((2, 3)));
        // 1280MB = 80 segments: 80 / 1.9 = 42.1, 81 / 1.9 = 42.6, 82 / 1.9 = 43.2.
        assert_eq!(sizes_for(42, d), Some((80, 81)));
        // 9.6/10 with cct 0.5: 25 from 63 (62.5 .. 65).
        assert_eq!(sizes_for(25, divisor(Some(10), 0.5)), Some((63, 64)));
        // A divisor of 1 (cct 0): every count is exactly one size.
        assert_eq!(sizes_for(7, 1.0), Some((7, 7)));
        // The count is at least 1: no size gives 0.
        assert_eq!(sizes_for(0, divisor(Some(15), 0.5)), None);
        for wanted in 1..200 {
            let (low, high) = sizes_for(wanted, d).unwrap();
            assert!((low..=high).all(|s| checkpoint_segments(s, d) == wanted), "{wanted}");
            assert!(low == 2 || checkpoint_segments(low - 1, d) < wanted, "{wanted}");
            assert!(checkpoint_segments(high + 1, d) > wanted, "{wanted}");
        }
    }
}
