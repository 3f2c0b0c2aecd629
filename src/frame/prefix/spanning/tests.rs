//! The spanning regexes against the longest and the oddest prefixes
//! PostgreSQL prints, and a prefix whose head cannot tell a real first line
//! from other text.

use crate::catalog::Catalog;
use crate::classify::{self, Outcome};
use crate::frame::formats::stderr::StderrScanner;
use crate::frame::prefix::Prefix;
use crate::frame::time::TimeContext;
use crate::frame::{drive, Pos, Record, Tail};

fn prefix(spec: &str) -> Prefix {
    Prefix::compile(spec, Catalog::global().markers()).unwrap()
}

/// The longest marker of any language, with its trailing spaces.
fn longest_marker() -> &'static str {
    Catalog::global().markers().iter().map(|(m, _)| m.as_str()).max_by_key(|m| m.len()).unwrap()
}

/// A failed login's prefix at the most PostgreSQL prints (PostgreSQL 16+
/// escapes each non-ASCII byte of a 63-byte application name as `\xNN`;
/// the user and database names hold line breaks) must still read as one
/// prefix within the span, or the splice checks would not look that far.
#[test]
fn the_longest_prefix_postgresql_prints_fits_in_the_span() {
    let p = prefix("%m [%p] %a %u@%d ");
    let spanning = p.spanning().unwrap();
    let app = "\\xe2".repeat(63);
    let user = format!("\n{}", "u".repeat(62));
    let db = format!("{}\n", "d".repeat(62));
    let text = format!("2026-11-23 23:22:01.825 CEST [4194304] {app} {user}@{db} {}", longest_marker());
    assert!(spanning.is_exactly(text.as_bytes()), "{text}");
    assert_eq!(spanning.marker_after(text.as_bytes()), Some(text.len() - longest_marker().len()));
    assert!(text.len() <= spanning.span(), "{} bytes, span {}", text.len(), spanning.span());
}

/// Whether two consecutive lines of a server process, at their shortest,
/// read as one prefix holding the first line in its names: then the
/// fake-head splice check would refuse real lines and is not made.
#[test]
fn short_heads_and_padded_names_let_server_lines_join() {
    let cases = [
        // Exactly 63 bytes with a one-digit pid and German's short line.
        ("%m [%p] %d ", true),
        // One more byte, or an `@` that server lines do not print.
        ("%m [%p] %d: ", false),
        ("%m [%p] %q%u@%d ", false),
        // Server lines print no `@`: a failed login must follow (README).
        ("%t [%p] %q%u@%d ", false),
        ("%t [%p]: [%l-1] user=%u,db=%d,client=%h ", false),
        // 19 bytes of head, 30 of line: 51 ≤ 63.
        ("%n [%p] %d ", true),
        ("%n [%p] %q%u ", true),
        ("%t [%p] %d ", true),
        ("%m [%p] %-10u %-10d ", true),
        ("%m [%p] %u ", true),
    ];
    for (spec, join) in cases {
        assert_eq!(prefix(spec).spanning().unwrap().server_lines_join(), join, "{spec}");
    }
}

/// `%10p` pads the pid on the left, `%-10p` on the right.
#[test]
fn padded_fields_read_across_lines_with_their_padding() {
    for (spec, pid) in [("%m [%10p] %u@%d ", "      7440"), ("%m [%-10p] %u@%d ", "7440      ")] {
        let p = prefix(spec);
        let spanning = p.spanning().unwrap();
        let text = format!("2026-11-23 23:22:01.825 UTC [{pid}] a\nb@postgres FATAL:  ");
        assert!(spanning.starts_like(text.as_bytes()), "{spec}");
        assert!(spanning.is_exactly(text.as_bytes()), "{spec}: {text}");
        assert!(!spanning.is_exactly(text.trim_end().as_bytes()), "{spec}");
    }
    // Without padding, a padded pid is no pid.
    let spanning = prefix("%m [%p] %u@%d ").spanning().unwrap().clone();
    for pid in ["      7440", "7440      "] {
        assert!(!spanning.is_exactly(format!("2026-11-23 23:22:01.825 UTC [{pid}] a\nb@postgres FATAL:  ").as_bytes()));
    }
}

/// Records of `log` under `spec`, and whether each became an event.
fn read(spec: &str, log: &str) -> Vec<(u64, bool)> {
    let time = TimeContext::new(Some("UTC")).unwrap();
    let mut scanner = StderrScanner::new(prefix(spec), &time, crate::frame::test_lexicon());
    let mut records: Vec<Record> = Vec::new();
    drive(log.as_bytes(), &mut scanner, Pos::START, Tail::Take, |r, _| {
        records.extend(r);
        Ok::<(), std::io::Error>(())
    })
    .unwrap();
    let event = |r: &Record| matches!(classify::classify(Catalog::global(), r), Outcome::Event(_));
    records.iter().map(|r| (r.line, event(r))).collect()
}

/// With the user name first, any text starts like the (empty) head: a
/// continuation line just before a real checkpoint line must not be taken
/// for the cut-short start of a prefix that runs on into it.
#[test]
fn with_no_distinctive_head_a_real_line_after_a_continuation_stays_an_event() {
    let spec = "%u@%d %m [%p] ";
    let log = "app@db 2026-11-23 23:22:01.700 UTC [9000] LOG:  statement: select 1\n\
               \tfrom t\n\
               @ 2026-11-23 23:22:01.825 UTC [7431] LOG:  checkpoint starting: time\n";
    assert!(!prefix(spec).spanning().unwrap().head_is_distinctive());
    assert_eq!(read(spec, log), [(3, true)]);
}
