//! The schedule with a clock the tests set: days before and after `at`,
//! restarts, DST changes in Europe/Berlin and America/New_York, a week of
//! downtime.

use super::*;

fn schedule(at: &str, zone: &str) -> Schedule {
    let (h, m) = at.split_once(':').unwrap();
    let digest = DigestSection {
        at: Time::new(h.parse().unwrap(), m.parse().unwrap(), 0, 0).unwrap(),
        timezone: Some(zone.to_string()),
        ..DigestSection::default()
    };
    Schedule::of(&digest).unwrap()
}

fn date(text: &str) -> Date {
    text.parse().unwrap()
}

fn instant(text: &str) -> Timestamp {
    text.parse().unwrap()
}

#[test]
fn a_day_is_due_from_at_on_the_next_day_and_only_until_it_is_sent() {
    let s = schedule("07:00", "Europe/Berlin");
    let sent = Some(date("2026-11-21"));
    // 06:59:59 CET: the 22nd's digest is not due yet.
    assert_eq!(s.due(instant("2026-11-23T05:59:59Z"), sent), Due::Nothing);
    let due = Due::Send { day: date("2026-11-22"), missed: vec![], missed_total: 0 };
    assert_eq!(s.due(instant("2026-11-23T06:00:00Z"), sent), due);
    // A restart asks again with what the store says: the same answer,
    // before the mail is recorded as sent, and nothing after.
    assert_eq!(s.due(instant("2026-11-23T06:00:01Z"), sent), due);
    assert_eq!(s.due(instant("2026-11-23T06:00:01Z"), Some(date("2026-11-22"))), Due::Nothing);
    assert_eq!(s.due(instant("2026-11-24T05:59:59Z"), Some(date("2026-11-22"))), Due::Nothing);
    assert_eq!(s.next_after(date("2026-11-22")), instant("2026-11-24T06:00:00Z"));
}

#[test]
fn the_first_run_sends_nothing_and_sets_the_baseline() {
    let s = schedule("07:00", "Europe/Berlin");
    assert_eq!(s.due(instant("2026-11-23T14:00:00Z"), None), Due::Baseline(date("2026-11-22")));
    assert_eq!(s.due(instant("2026-11-23T05:00:00Z"), None), Due::Baseline(date("2026-11-21")));
}

/// A week down: the latest day is sent once; the six before it are named
/// in it, not sent.
#[test]
fn after_downtime_only_the_latest_day_is_sent_and_the_others_named() {
    let s = schedule("07:00", "America/New_York");
    let got = s.due(instant("2026-11-18T13:00:00Z"), Some(date("2026-11-10")));
    let missed = ["2026-11-11", "2026-11-12", "2026-11-13", "2026-11-14", "2026-11-15", "2026-11-16"];
    let want = Due::Send { day: date("2026-11-17"), missed: missed.map(date).to_vec(), missed_total: 6 };
    assert_eq!(got, want);
    // A year down: 31 named, all counted.
    let Due::Send { day, missed, missed_total } = s.due(instant("2027-11-18T13:00:00Z"), Some(date("2026-11-10")))
    else {
        panic!("due")
    };
    assert_eq!((day, missed.len(), missed_total), (date("2027-11-17"), 31, 371));
    assert_eq!((missed[0], missed[30]), (date("2026-11-11"), date("2026-12-11")));
}

/// `at` in the spring gap moves forward by the gap (02:30 → 03:30 local);
/// in the autumn fold it is the first 02:30 (Berlin) or 01:30 (New York).
#[test]
fn dst_changes_move_at_by_the_gap_and_take_the_first_of_a_fold() {
    let berlin = schedule("02:30", "Europe/Berlin");
    assert_eq!(berlin.due_at(date("2026-03-28")), instant("2026-03-29T01:30:00Z"));
    assert_eq!(berlin.due_at(date("2026-03-29")), instant("2026-03-30T00:30:00Z"));
    assert_eq!(berlin.due_at(date("2026-10-24")), instant("2026-10-25T00:30:00Z"));
    assert_eq!(berlin.due_at(date("2026-10-25")), instant("2026-10-26T01:30:00Z"));
    let new_york = schedule("02:30", "America/New_York");
    assert_eq!(new_york.due_at(date("2026-03-07")), instant("2026-03-08T07:30:00Z"));
    let fold = schedule("01:30", "America/New_York");
    assert_eq!(fold.due_at(date("2026-10-31")), instant("2026-11-01T05:30:00Z"));
    // Just before and at the moved time on the gap day.
    let sent = Some(date("2026-03-27"));
    assert_eq!(berlin.due(instant("2026-03-29T01:29:59Z"), sent), Due::Nothing);
    let due = Due::Send { day: date("2026-03-28"), missed: vec![], missed_total: 0 };
    assert_eq!(berlin.due(instant("2026-03-29T01:30:00Z"), sent), due);
    assert_eq!(berlin.latest_due(instant("2026-03-29T01:29:59Z")), date("2026-03-27"));
    assert_eq!(berlin.latest_due(instant("2026-03-29T01:30:00Z")), date("2026-03-28"));
}
