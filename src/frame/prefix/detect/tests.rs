//! Detection on lines of real logs: PostgreSQL 15 run with each prefix
//! (`tests/fixtures/prefixes/`, written by its `gen.sh`: checkpoints forced
//! by pgbench, a manual one, sessions with errors and a `RAISE LOG` look-alike).

use super::*;
use crate::frame::prefix::PrefixMatch;

macro_rules! case {
    ($name:literal) => {
        (
            $name,
            include_str!(concat!("../../../../tests/fixtures/prefixes/", $name, ".prefix")),
            include_str!(concat!("../../../../tests/fixtures/prefixes/", $name, ".log")),
        )
    };
}

/// Each run: its name, the server's `log_line_prefix`, the lines.
const CASES: &[(&str, &str, &str)] = &[
    case!("t1"),
    case!("t2"),
    case!("t3"),
    case!("t4"),
    case!("t5"),
    case!("t6"),
    case!("t7"),
    case!("t8"),
    case!("t9"),
    case!("t10"),
    case!("t11"),
    case!("t12"),
    case!("t13"),
    case!("t14"),
    case!("t15"),
    case!("t16"),
    case!("t17"),
    case!("t18"),
];

/// What detection infers where the log cannot tell escapes apart (`%x` and
/// `%l` both print a number; `%r` without a port is `%h`; a bare name is
/// labelled by position when no connection line names it first).
const SAME_READING: &[(&str, &str)] =
    &[("t10", "%m %c %v %l %e %Q [%p] "), ("t12", "%m|%u|%d|%a|%h|%p|"), ("t18", "%m {%p} %h %i ")];

fn detect_lines(text: &str) -> Result<Prefix, DetectError> {
    let lines: Vec<&str> = text.lines().collect();
    detect(&lines, Catalog::global().markers(), Catalog::global())
}

/// What the trust check and the event reader take from a line.
fn reading<'a>(m: &PrefixMatch<'a>) -> (Option<&'a str>, Option<&'a str>, Option<u32>, bool, LineLevel, &'a str) {
    (m.timestamp, m.epoch, m.pid, m.is_session(), m.level, m.message)
}

#[test]
fn real_prefixes_are_detected_exactly() {
    for (name, spec, log) in CASES {
        let want = SAME_READING.iter().find(|(n, _)| n == name).map_or(*spec, |(_, s)| s);
        let got = detect_lines(log).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got.spec(), want, "{name}: the server's prefix is {spec:?}");
    }
}

#[test]
fn detected_prefixes_read_every_line_like_the_servers() {
    for (name, spec, log) in CASES {
        let real = Prefix::compile(spec, Catalog::global().markers()).unwrap();
        let got = detect_lines(log).unwrap();
        for line in log.lines() {
            let (r, g) = (real.parse(line), got.parse(line));
            assert!(r.is_some(), "{name}: the server's own prefix reads {line:?}");
            assert_eq!(r.as_ref().map(reading), g.as_ref().map(reading), "{name} ({}): {line:?}", got.spec());
        }
    }
}

/// The wrong guesses, each on the lines that misled it.
#[test]
fn the_checkpointers_empty_session_fields_decide() {
    let lines = |name: &str| CASES.iter().find(|(n, ..)| *n == name).unwrap().2;
    // `,client=` is literal text, not the end of a database name.
    assert_eq!(detect_lines(lines("t1")).unwrap().spec(), "%t [%p]: [%l-1] user=%u,db=%d,client=%h ");
    // `(@)` is two empty names, not a session's `%q` part.
    assert_eq!(detect_lines(lines("t2")).unwrap().spec(), "%m [%p](%u@%d) ");
    // Sessions' errors and statements without `user@db`: the upstream default.
    let upstream = detect_lines(lines("t3")).unwrap();
    assert_eq!(upstream.spec(), "%m [%p] ");
    assert!(!upstream.session_checkable());
    // No space before the level.
    assert_eq!(detect_lines(lines("t9")).unwrap().spec(), "%m [%p]:");
}

#[test]
fn the_servers_lines_alone_keep_the_session_part_assumed() {
    // Only the server's lines: nothing tells `%m [%p] ` from Debian's
    // `%m [%p] %q%u@%d `; the latter reads them the same and refuses a
    // session's look-alikes.
    let log = CASES.iter().find(|(n, ..)| *n == "t3").unwrap().2;
    let server: Vec<&str> = log.lines().filter(|l| l.contains("checkpoint") || l.contains("ready")).collect();
    assert!(server.len() >= 4);
    let p = detect(&server, Catalog::global().markers(), Catalog::global()).unwrap();
    assert_eq!(p.spec(), "%m [%p] %q%u@%d ");
}

#[test]
fn one_look_alike_does_not_choose_the_prefix() {
    // The RAISE LOG look-alike is refused under the right prefix; one such
    // line must not make detection prefer a prefix that accepts it.
    let log = CASES.iter().find(|(n, ..)| *n == "t8").unwrap().2;
    let forged = log.lines().filter(|l| l.contains("checkpoint starting: time")).count();
    assert_eq!(forged, 1);
    assert_eq!(detect_lines(log).unwrap().spec(), "%m [%p] %-10u %-10d ");
}

#[test]
fn names_from_connection_lines_label_bare_fields() {
    let mut names = Names::default();
    names.learn("connection authorized: user=alice database=shop application_name=psql");
    names.learn("connection received: host=[local]");
    assert_eq!(
        (names.escape_of("alice"), names.escape_of("shop"), names.escape_of("psql"), names.escape_of("bob")),
        (Some('u'), Some('d'), Some('a'), None)
    );
    let tokens = Tokens::new(&names);
    assert_eq!(tokens.infer("2026-11-24 10:09:54.671 UTC [8736] psql shop alice ", true), "%m [%p] %a %d %u ");
    assert_eq!(tokens.infer("2026-11-24 10:09:54.671 UTC [8736] bob   x   ", true), "%m [%p] %-5u %-3d ");
    assert_eq!(tokens.infer("2026-11-24 10:09:54.671 UTC [8736] bob   x   ", false), "%m [%p] bob   x   ");
}

#[test]
fn who_wrote_a_line_by_its_level_and_message() {
    use LogSeverity::{Error, Fatal, Log, Warning};
    use LineLevel::{Primary, Secondary as S};
    let c = Catalog::global();
    let cases = [
        (Primary(Log), "checkpoint starting: time", Writer::Server),
        (Primary(Log), "database system is ready to accept connections", Writer::Server),
        (Primary(Log), "some extension's message", Writer::Unknown),
        (Primary(Warning), "checkpoint starting: time", Writer::Unknown),
        (Primary(Error), "relation \"x\" does not exist", Writer::Session),
        (Primary(Fatal), "password authentication failed for user \"bob\"", Writer::Session),
        (S(Secondary::Statement), "select 1", Writer::Session),
        (S(Secondary::Hint), "select 1", Writer::Unknown),
        (Primary(Log), "connection authorized: user=alice database=shop", Writer::Session),
        (Primary(Log), "duration: 1.204 ms", Writer::Session),
        (Primary(Log), "statement: select 1", Writer::Session),
        (Primary(Warning), "execute S_1: select 1", Writer::Session),
        (Primary(Log), "a statement: select 1", Writer::Unknown),
    ];
    for (level, message, want) in cases {
        assert_eq!(writer_of(level, message, c), want, "{level:?} {message:?}");
    }
}

#[test]
fn names_are_learned_once_each_and_at_most_64() {
    let mut names = Names::default();
    names.learn("connection authorized: user= database=shop application_name=");
    names.learn("connection authorized: user=alice database=shop");
    names.learn("connection received: host=[local] user=carol");
    names.learn("user=dave database=x");
    assert_eq!((names.users.as_slice(), names.databases.as_slice()), (&["alice".to_string()][..], &["shop".to_string()][..]));
    assert!(names.applications.is_empty());
    for i in 0..70 {
        names.learn(&format!("connection authorized: user=u{i} database=shop"));
    }
    assert_eq!(names.users.len(), 64);
    assert_eq!(names.users[63], "u62");
    assert_eq!(names.databases.len(), 1);
}
