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
    case!("t19"),
    case!("t20"),
    case!("t21"),
    case!("t22"),
    case!("t23"),
    case!("t24"),
    case!("t25"),
];

/// What detection infers where the log cannot tell escapes apart (`%x` and
/// `%l` both print a number; `%r` without a port is `%h`; a bare name is
/// labelled by position when no connection line names it first).
const SAME_READING: &[(&str, &str)] = &[
    ("t10", "%m %c %v %l %e %Q [%p] "),
    ("t12", "%m|%a|%u|%d|%h|%p|"),
    ("t18", "%m {%p} %h %i "),
    // Server lines stop at either %q; sessions print the name and the space.
    ("t19", "%n [%p] %u%q "),
];

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

/// The message parts of syslog lines under pgBadger's syslog prefix (no
/// time, no pid: the envelope gives both), from the t6 run's lines: found
/// when the envelope dates the lines, never taken for a stderr prefix.
#[test]
fn a_prefix_without_a_time_is_found_where_the_envelope_dates_lines() {
    let lines = [
        "db=,user=,app=,client= LOG:  checkpoint starting: wal",
        "db=,user=,app=,client= LOG:  checkpoint starting: wal",
        "db=,user=,app=,client= LOG:  checkpoint complete: wrote 1004 buffers (6.1%); 0 WAL file(s) added, 1 removed, 0 recycled;",
        "db=,user=,app=,client= HINT:  Consider increasing the configuration parameter \"max_wal_size\".",
        "db=,user=,app=,client= LOG:  database system is ready to accept connections",
        "db=[unknown],user=[unknown],app=[unknown],client=[local] LOG:  connection received: host=[local]",
        "db=postgres,user=postgres,app=[unknown],client=[local] LOG:  connection authorized: user=postgres database=postgres appl",
        "db=postgres,user=postgres,app=[unknown],client=[local] LOG:  connection authorized: user=postgres database=postgres appl",
        "db=appdb,user=alice,app=psql,client=[local] ERROR:  division by zero",
        "db=appdb,user=alice,app=psql,client=[local] STATEMENT:  select 1/0",
        "db=postgres,user=postgres,app=myapp,client=[local] LOG:  checkpoint starting: time",
        "db=postgres,user=postgres,app=psql,client=[local] LOG:  disconnection: session time: 0:00:00.116 user=postgres database=",
    ];
    let (markers, catalog) = (Catalog::global().markers(), Catalog::global());
    let got = detect_dated_by(&lines, markers, catalog, Dates::Envelope).unwrap();
    assert_eq!(got.spec(), "db=%d,user=%u,app=%a,client=%h ");
    let real = got.parse(lines[0]).unwrap();
    assert_eq!((real.is_session(), real.message), (false, "checkpoint starting: wal"));
    let forged = got.parse(lines[10]).unwrap();
    assert_eq!((forged.is_session(), forged.user, forged.application), (true, Some("postgres"), Some("myapp")));
    assert!(detect(&lines, markers, catalog).is_err(), "a stderr log needs a time in its prefix");
}

/// Wrong guesses seen on real logs, each on the lines that misled it.
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
    use LineLevel::{Primary, Secondary as S};
    use LogSeverity::{Error, Fatal, Log, Warning};
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
    assert_eq!(
        (names.users.as_slice(), names.databases.as_slice()),
        (&["alice".to_string()][..], &["shop".to_string()][..])
    );
    assert!(names.applications.is_empty());
    for i in 0..70 {
        names.learn(&format!("connection authorized: user=u{i} database=shop"));
    }
    assert_eq!(names.users.len(), 64);
    assert_eq!(names.users[63], "u62");
    assert_eq!(names.databases.len(), 1);
}

fn sample_of<'a>(lines: &[&'a str]) -> Sample<'a> {
    Sample::new(lines, Catalog::global().markers(), Catalog::global()).unwrap()
}

fn compiled(spec: &str) -> Prefix {
    Prefix::compile(spec, Catalog::global().markers()).unwrap()
}

const CHECKPOINT: &str = "2026-11-24 10:00:00.000 UTC [10] LOG:  checkpoint starting: time";
const SESSION_ERROR: &str = "2026-11-24 10:00:01.000 UTC [11] alice@shop ERROR:  boom";
const OTHER_LOG: &str = "2026-11-24 10:00:02.000 UTC [12] LOG:  hello there";
const FORGED: &str = "2026-11-24 10:00:03.000 UTC [13] bob@shop LOG:  checkpoint starting: time";

#[test]
fn a_candidates_score_counts_each_kind_of_line() {
    let debian = compiled("%m [%p] %q%u@%d ");
    // Read: all but the garbage. The server's lines: the checkpoint and the
    // forged one (refused: a session's fields; one of two is not most).
    // Literal bytes: ` [`, `] ` on each line, `@` and ` ` on the sessions'.
    let mixed = sample_of(&[CHECKPOINT, SESSION_ERROR, OTHER_LOG, "garbage line", FORGED]);
    assert_eq!(
        score(&debian, &mixed, 3),
        Score {
            matched: 4,
            refuses_server: Reverse(false),
            names_misread: Reverse(0),
            pids_mixed: Reverse(0),
            literal: 20,
            sessions_seen: 1,
            tail_assumed: false,
            fields: Reverse(4),
            index: Reverse(3),
        }
    );
    // One server line, refused: most of them.
    let forged = sample_of(&[FORGED]);
    assert_eq!(
        score(&debian, &forged, 0),
        Score {
            matched: 1,
            refuses_server: Reverse(true),
            names_misread: Reverse(0),
            pids_mixed: Reverse(0),
            literal: 6,
            sessions_seen: 0,
            tail_assumed: true,
            fields: Reverse(4),
            index: Reverse(0),
        }
    );
    // One of three server lines refused: not most of them.
    let once = sample_of(&[FORGED, CHECKPOINT, CHECKPOINT]);
    assert_eq!(score(&debian, &once, 0).refuses_server, Reverse(false));
    // No session line: the session part is assumed, when it has fields.
    let server = sample_of(&[CHECKPOINT, OTHER_LOG]);
    assert!(score(&debian, &server, 0).tail_assumed);
    let literal_tail = compiled("%m [%p] %q[x] ");
    assert_eq!(
        score(&literal_tail, &server, 1),
        Score {
            matched: 2,
            refuses_server: Reverse(false),
            names_misread: Reverse(0),
            pids_mixed: Reverse(0),
            literal: 8,
            sessions_seen: 0,
            tail_assumed: false,
            fields: Reverse(2),
            index: Reverse(1),
        }
    );
}

#[test]
fn a_client_backend_is_a_session_to_the_score() {
    let lines = [
        "2026-11-24 10:00:00.000 UTC [10] checkpointer LOG:  checkpoint starting: time",
        "2026-11-24 10:00:01.000 UTC [11] client backend LOG:  checkpoint starting: wal",
        "2026-11-24 10:00:02.000 UTC [12] client backend ERROR:  boom",
        "2026-11-24 10:00:03.000 UTC [13] psql LOG:  hello",
    ];
    assert_eq!(
        score(&compiled("%m [%p] %b "), &sample_of(&lines), 0),
        Score {
            matched: 4,
            refuses_server: Reverse(false),
            names_misread: Reverse(0),
            pids_mixed: Reverse(0),
            literal: 20,
            sessions_seen: 1,
            tail_assumed: false,
            fields: Reverse(3),
            index: Reverse(0),
        }
    );
    let two_refused = sample_of(&[lines[1], lines[1], lines[0]]);
    assert_eq!(score(&compiled("%m [%p] %b "), &two_refused, 0).refuses_server, Reverse(true));
}

#[test]
fn the_servers_backend_types() {
    assert!(server_backend(None));
    assert!(server_backend(Some("  ")));
    assert!(server_backend(Some("checkpointer ")));
    assert!(server_backend(Some("autovacuum worker")));
    assert!(!server_backend(Some("client backend")));
    assert!(!server_backend(Some("psql")));
}

#[test]
fn a_fit_reads_nine_lines_in_ten() {
    let ms = |i: u32| format!("2026-11-24 10:00:{i:02}.000 UTC [{i}] LOG:  hello");
    let s = |i: u32| format!("2026-11-24 10:00:{i:02} UTC [{i}] LOG:  hello");
    let (t, m) = (compiled("%t [%p] "), compiled("%m [%p] "));
    let nine: Vec<String> = (0..9).map(ms).chain([s(9)]).collect();
    let nine: Vec<&str> = nine.iter().map(String::as_str).collect();
    assert_eq!(
        best_fit(&[t.clone(), m.clone()], &sample_of(&nine)).map(|p| p.spec().to_string()).as_deref(),
        Some("%m [%p] ")
    );
    let eight: Vec<String> = (0..8).map(ms).chain([s(8), s(9)]).collect();
    let eight: Vec<&str> = eight.iter().map(String::as_str).collect();
    assert!(best_fit(&[t.clone(), m.clone()], &sample_of(&eight)).is_none());
    // Nothing read at all: no fit.
    assert!(best_fit(&[t, m.clone()], &sample_of(&["LOG:  hello", "foo"])).is_none());
    // A prefix that refuses the server's lines never fits.
    let literal = compiled("%m [%p] bob@shop ");
    let fit = best_fit(&[compiled("%m [%p] %q%u@%d "), literal, m], &sample_of(&[FORGED]));
    assert_eq!(fit.map(|p| p.spec().to_string()).as_deref(), Some("%m [%p] bob@shop "));
}

#[test]
fn the_session_tail_starts_where_the_servers_lines_end() {
    let head = "2026-11-24 10:00:00.000 UTC [10] ";
    // (An empty name is read too: the cut comes after `%u`.)
    assert_eq!(with_session_tail("%m [%p] %u %d ", head).as_deref(), Some("%m [%p] %u%q %d "));
    assert_eq!(with_session_tail("%m [%p] (%u) ", head).as_deref(), Some("%m [%p] %q(%u) "));
    // Never after the whole spec: the last field reads the space.
    assert_eq!(
        with_session_tail("%m [%p] %u ", "2026-11-24 10:00:00.000 UTC [10]  ").as_deref(),
        Some("%m [%p] %u%q ")
    );
    assert_eq!(with_session_tail("%t [%p] %u ", head), None);
}

#[test]
fn cuts_fall_between_escapes_and_characters() {
    assert_eq!(cuts("%m [%p] %-10u%%x"), [2, 3, 4, 6, 7, 8, 13, 15, 16]);
    assert_eq!(cuts(""), Vec::<usize>::new());
}

#[test]
fn candidates_are_cached_per_list_of_markers() {
    let log = [("LOG:  ".to_string(), LineLevel::Primary(LogSeverity::Log))];
    let niveau = [("NIVEAU:  ".to_string(), LineLevel::Primary(LogSeverity::Log))];
    for _ in 0..2 {
        let (a, b) = (candidates(&log).unwrap(), candidates(&niveau).unwrap());
        assert_eq!(a.len(), CANDIDATES.len());
        assert!(a[0].parse("2026-11-24 10:00:00.000 UTC [1] LOG:  x").is_some());
        assert!(a[0].parse("2026-11-24 10:00:00.000 UTC [1] NIVEAU:  x").is_none());
        assert!(b[0].parse("2026-11-24 10:00:00.000 UTC [1] NIVEAU:  x").is_some());
        assert!(b[0].parse("2026-11-24 10:00:00.000 UTC [1] LOG:  x").is_none());
    }
}

#[test]
fn an_inferred_prefix_reads_every_marker_not_only_the_samples() {
    let lines = [CHECKPOINT.replace("[10]", "{10}"), OTHER_LOG.replace("[12]", "{12}")];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let p = detect(&lines, Catalog::global().markers(), Catalog::global()).unwrap();
    assert_eq!(p.spec(), "%m {%p} ");
    let m = p.parse("2026-11-24 10:00:09.000 UTC {14} ERROR:  boom").unwrap();
    assert_eq!((m.pid, m.level, m.message), (Some(14), LineLevel::Primary(LogSeverity::Error), "boom"));
}

#[test]
fn the_session_part_is_placed_where_the_servers_lines_end() {
    // `%m [%p] %q%u %d `: no `@` to tell the names; the server's lines end
    // after `[%p] `, the sessions' lines go on with two names.
    let lines = [
        "2026-11-24 10:00:00.000 UTC [10] LOG:  checkpoint starting: time",
        "2026-11-24 10:00:01.000 UTC [11] alice shop ERROR:  boom",
        "2026-11-24 10:00:02.000 UTC [10] LOG:  checkpoint complete: wrote 1 buffers (0.0%); 0 WAL file(s) added, 0 removed, 0 recycled; write=0.001 s, sync=0.001 s, total=0.002 s; sync files=1, longest=0.001 s, average=0.001 s; distance=1 kB, estimate=1 kB",
        "2026-11-24 10:00:03.000 UTC [12] bob shop ERROR:  boom",
        "2026-11-24 10:00:04.000 UTC [1] LOG:  database system is ready to accept connections",
    ];
    let p = detect(&lines, Catalog::global().markers(), Catalog::global()).unwrap();
    assert_eq!(p.spec(), "%m [%p] %u%q %d ");
    let m = p.parse(lines[3]).unwrap();
    assert_eq!((m.user, m.database, m.is_session(), m.message), (Some("bob"), Some("shop"), true, "boom"));
    assert!(!p.parse(lines[0]).unwrap().is_session());
    // One user only, in a line of unknown origin too: the names are still
    // fields, not literal text after `%q` (which would read more literal
    // bytes, and nobody else's lines).
    let alice = [lines[0], lines[1], lines[2], "2026-11-24 10:00:05.000 UTC [11] alice shop LOG:  hello", lines[4]];
    let p = detect(&alice, Catalog::global().markers(), Catalog::global()).unwrap();
    assert_eq!(p.spec(), "%m [%p] %u%q %d ");
}

/// The checkpointer's and a session's heads under t10's fields with
/// labels (`'%m [%p] xid=%x vxid=%v state=%e qid=%Q tag=%i '`; the values
/// are what t10's server printed: an empty `%v`, `0` and `00000` on the
/// server's lines).
const LABELLED_SERVER: &str = "2026-11-24 10:11:27.283 UTC [10281] xid=0 vxid= state=00000 qid=0 tag= ";
const LABELLED_SESSION: &str =
    "2026-11-24 10:11:28.384 UTC [10301] xid=748 vxid=3/31 state=22012 qid=-8441324848661855122 tag=SELECT ";

/// A `key=` label names its field wherever it stands among the numbers
/// (bare numbers are read by place: pid, line, then `%e` or `%x`).
#[test]
fn a_label_names_its_field() {
    let names = Names::default();
    let t = Tokens::new(&names);
    let spec = "%m [%p] xid=%x vxid=%v state=%e qid=%Q tag=%i ";
    assert_eq!(t.infer(LABELLED_SERVER, false), spec);
    assert_eq!(t.infer(LABELLED_SESSION, true), spec);
    // A label's value must look like what its field prints: `pid=[…]` is
    // literal text before a bracketed pid.
    assert_eq!(t.infer("2026-11-24 10:11:27.283 UTC pid=[10281] ", false), "%m pid=[%p] ");
    // A labelled pid, line or session tells what the bare numbers after it
    // are not.
    assert_eq!(t.infer("2026-11-24 10:11:27.283 UTC pid=10281 [3] ", false), "%m pid=%p [%l] ");
    assert_eq!(t.infer("2026-11-24 10:11:27.283 UTC line=3 [10281] 00000 ", false), "%m line=%l [%p] %e ");
    assert_eq!(t.infer("2026-11-24 10:11:28.384 UTC sess=6b0562d0.283d 3 pid=10301 ", false), "%m sess=%c %l pid=%p ");
    assert_eq!(t.infer("2026-11-24 10:11:28.384 UTC line=3 pid=10301 ", false), "%m line=%l pid=%p ");
    // The number a session id holds (0x283d) is that session's pid.
    assert_eq!(t.infer("2026-11-24 10:11:28.384 UTC sess=6b0562d0.283d 10301 ", false), "%m sess=%c %p ");
    assert_eq!(t.infer("2026-11-24 10:11:28.384 UTC 6b0562d0.283d 10301 ", false), "%m %c %p ");
    // An unknown label is literal text, and so is its value on the
    // server's lines.
    assert_eq!(t.infer("2026-11-24 10:11:27.283 UTC [10281] cluster=main ", false), "%m [%p] cluster=main ");
    // A session field's value on a server's line is literal text (the
    // server prints them empty); on a session's line it is the field.
    let head = "2026-11-24 10:11:28.384 UTC [10301] user=alice,db=shop ";
    assert_eq!(t.infer(head, false), "%m [%p] user=alice,db=shop ");
    assert_eq!(t.infer(head, true), "%m [%p] user=%u,db=%d ");
}

/// The same prefix detected from its lines: the server's and a session's.
#[test]
fn a_labelled_prefix_is_detected() {
    let lines = [
        format!("{LABELLED_SERVER}LOG:  checkpoint starting: wal"),
        format!("{LABELLED_SERVER}HINT:  Consider increasing the configuration parameter \"max_wal_size\"."),
        "2026-11-24 10:11:26.591 UTC [10279] xid=0 vxid= state=00000 qid=0 tag= LOG:  database system is ready to accept connections".to_string(),
        format!("{LABELLED_SESSION}ERROR:  division by zero"),
        format!("{LABELLED_SESSION}STATEMENT:  select 1/0"),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let p = detect(&lines, Catalog::global().markers(), Catalog::global()).unwrap();
    assert_eq!(p.spec(), "%m [%p] xid=%x vxid=%v state=%e qid=%Q tag=%i ");
    let m = p.parse(lines[3]).unwrap();
    assert_eq!((m.pid, m.level, m.message), (Some(10301), LineLevel::Primary(LogSeverity::Error), "division by zero"));
}

/// A bare name is cut before a backend type, or after a name the
/// connection lines give; otherwise a `-` is part of it.
#[test]
fn a_name_ends_before_a_backend_type_or_after_a_known_name() {
    let names = Names::default();
    let t = Tokens::new(&names);
    assert_eq!(t.infer("2026-11-24 10:11:28.384 UTC [10301] psql-client backend ", true), "%m [%p] %u-%b ");
    assert_eq!(t.infer("2026-11-24 10:11:28.384 UTC [10301] my-app ", true), "%m [%p] %u ");
    let mut names = Names::default();
    names.learn("connection authorized: user=alice database=shop application_name=psql");
    let t = Tokens::new(&names);
    assert_eq!(t.infer("2026-11-24 10:11:28.384 UTC [10301] psql-alice ", true), "%m [%p] %a-%u ");
}

/// Bare numbers by place: `[pid]`, `[line]`, then a five-character
/// SQLSTATE, then any other number (`%x`).
#[test]
fn bare_numbers_by_place() {
    let names = Names::default();
    let t = Tokens::new(&names);
    assert_eq!(t.infer("2026-11-24 10:11:27.283 UTC [10281] [3] 00000 0 ", false), "%m [%p] [%l] %e %x ");
    assert_eq!(t.infer("2026-11-24 10:11:28.384 UTC [10301] [7] 22012 748 ", true), "%m [%p] [%l] %e %x ");
    // A bare number before a bracketed pid is not the pid.
    assert_eq!(t.infer("2026-11-24 10:11:28.384 UTC 7 [10301] ", false), "%m %l [%p] ");
    assert_eq!(t.infer("2026-11-24 10:11:28.384 UTC 7 [10301-7] ", false), "%m %l [%p-%l] ");
}

/// The readings with the pid and a line number exchanged: one per `%l`
/// (t25 prints it twice), none where the order is fixed or no `%p` is.
#[test]
fn pid_and_line_exchanged_once_per_line_number() {
    assert_eq!(pid_and_line_swapped("%m %l [%p] "), ["%m %p [%l] "]);
    assert_eq!(pid_and_line_swapped("%m %l line=%l [%p]: "), ["%m %p line=%l [%l]: ", "%m %l line=%p [%l]: "]);
    for fixed in ["%m [%p-%l] ", "%t [%p]: [%l-1] ", "%m %l ", "%m [%p] %p %l "] {
        assert!(pid_and_line_swapped(fixed).is_empty(), "{fixed}");
    }
}
