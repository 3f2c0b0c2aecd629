//! When a read's candidate lines make it a misfit ([`ImportReport::verdict`]).

use super::ImportReport;

fn report(events: u64, rejected: u64, unmatched: u64) -> ImportReport {
    let mut r =
        ImportReport { format: "stderr", prefix: Some("%m [%p] ".into()), rejected, unmatched, ..Default::default() };
    if events > 0 {
        r.events.insert("checkpoint_start", events);
    }
    r
}

#[test]
fn no_event_among_candidates_or_too_many_unmatched_is_a_misfit_and_forgeries_alone_never_are() {
    assert_eq!(report(0, 0, 0).verdict(), None, "nothing that looks like an event: log_checkpoints' warning");
    assert_eq!(
        report(0, 5, 0).verdict().as_deref(),
        Some("5 line(s) look like PostgreSQL events but none could be read as one (0 did not fit the stderr format with log_line_prefix '%m [%p] ', 5 were refused as forged, 0 could not be read)")
    );
    // A client may flood the log with look-alikes: it must not make walwatch refuse the log.
    assert_eq!(report(100, 400, 0).verdict(), None);
    // New lines of a file read before (its prefix proven): a lone look-alike is only rejected.
    assert_eq!(ImportReport { resumed_at: 4096, ..report(0, 1, 0) }.verdict(), None);
    assert!(ImportReport { resumed_at: 4096, ..report(0, 0, 1) }.verdict().is_some(), "a new prefix mid-file");
    // 5 % unmatched is still believable; more is not.
    assert_eq!(report(95, 0, 5).verdict(), None);
    assert_eq!(
        report(95, 0, 6).verdict().as_deref(),
        Some("6 of 101 lines that look like PostgreSQL events did not fit the stderr format with log_line_prefix '%m [%p] '")
    );
    let csv = ImportReport { format: "csvlog", unmatched: 3, ..Default::default() };
    assert!(csv.verdict().unwrap().contains("(3 did not fit the csvlog format, "), "{:?}", csv.verdict());
}
