//! `[alerts.clock_skew] tolerance` wherever walwatch reads it: the alert
//! rules' window and the clock_skew rule, the suggestion's window (in
//! `suggest`, in the alerts' advice, in the digest printed and the digest
//! mailed, in the metrics' advice), `status`' last event and warning,
//! `summary`'s last event and count, `history`'s range, the metrics'
//! newest event.
//!
//! A real PostgreSQL 15 log (fixture 15-stderr-default-std: 23 forced
//! checkpoints in four minutes) re-dated to end nine days before now, older
//! than the suggestion's 7-day look-back, then one of its own lines (a
//! checkpoint start, or a "too frequently" warning with its HINT) dated
//! ahead of the clock: 10 minutes, 300.000001 s (1 µs beyond the default
//! tolerance of 300 s) or exactly 300 s. The walwatch binary imports it
//! and answers under faketime with the clock frozen, so the line is
//! exactly that far ahead when read. Only at exactly the tolerance is the
//! line the log's newest event: the log is then current, every window ends
//! now, and the nine-day-old checkpoints are out of them all. A tolerance
//! of 10 minutes, configured, takes the line 10 minutes ahead.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use jiff::civil::Date;
use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

use crate::support;
use walwatch::alert::rules::{ClockSkew, RuleSet};
use walwatch::config::{self, Config};
use walwatch::digest::queue::{tick, Tick};
use walwatch::metrics::{AdviceBoard, Advisor, Params, Scraper};
use walwatch::store::Store;
use walwatch::timefmt::rfc3339;

const FIXTURE: &str = "15-stderr-default-std";
const FIRST_LINE_AT: &str = "2026-11-22T08:04:20.708Z";
const LAST_LINE_AT: &str = "2026-11-22T08:08:03.412Z";
/// How far ahead of the frozen clock the line is dated.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ahead {
    TenMinutes,
    JustBeyond,
    AtTolerance,
}

impl Ahead {
    /// The frozen clock and the line's time, from a whole second `base`.
    /// The log's times have milliseconds, so for 300.000001 s the clock
    /// stands 999 µs past the second.
    fn times(self, base: Timestamp) -> (Timestamp, Timestamp) {
        let ms = SignedDuration::from_millis;
        match self {
            Ahead::TenMinutes => (base, base + ms(600_000)),
            Ahead::JustBeyond => (base + SignedDuration::from_micros(999), base + ms(300_001)),
            Ahead::AtTolerance => (base, base + ms(300_000)),
        }
    }
}

/// Which of the log's lines is dated ahead.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Line {
    /// Line 8, `checkpoint starting: wal`: a point of `history`.
    Start,
    /// Lines 6 and 7, a "too frequently" warning and its HINT: an event
    /// `history` counts.
    TooFrequent,
}

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

/// A log line's time ("2026-11-22 08:04:20.708 UTC …").
fn time_of(line: &str) -> Timestamp {
    at(&format!("{}Z", line[..23].replacen(' ', "T", 1)))
}

/// `line` dated `to`, as `%m` prints it in UTC.
fn dated(line: &str, to: Timestamp) -> String {
    assert_eq!(&line[23..28], " UTC ", "{line}");
    format!("{}{}", to.strftime("%Y-%m-%d %H:%M:%S%.3f"), &line[23..])
}

/// walwatch under faketime, this machine's clock frozen at `clock` (whole
/// microseconds). libfaketime holds the time as a double, which reads
/// 17:20:01.000999 as 17:20:01.000998999: the clock is set half a
/// microsecond later, within the same microsecond either way.
fn walwatch_at(clock: Timestamp) -> Command {
    let mut cmd = Command::new("faketime");
    cmd.arg("-f").arg(format!("{}5", clock.strftime("%Y-%m-%d %H:%M:%S%.6f")));
    cmd.arg(env!("CARGO_BIN_EXE_walwatch")).env("TZ", "UTC");
    cmd
}

fn run(mut cmd: Command) -> Output {
    let out = cmd.output().expect("faketime runs walwatch (Debian package faketime)");
    assert!(out.status.success(), "{cmd:?}: {}", support::describe(&out));
    out
}

fn json(cmd: Command) -> Value {
    let out = run(cmd);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", support::describe(&out)))
}

struct Case {
    _dir: tempfile::TempDir,
    db: PathBuf,
    /// The config file every command reads, and what it says.
    config_file: PathBuf,
    config: Config,
    clock: Timestamp,
    line_at: Timestamp,
    /// The re-dated log's first and last line.
    first: Timestamp,
    last: Timestamp,
}

impl Case {
    /// The fixture's log ending nine days before now, then `line` dated
    /// `ahead`, imported at the frozen clock; `config` is the config file.
    fn import(line: Line, ahead: Ahead, config: &str) -> Case {
        let base = Timestamp::from_second(Timestamp::now().as_second()).unwrap();
        let (clock, line_at) = ahead.times(base);
        let logs = support::fixture_logs(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(FIXTURE));
        let text = std::fs::read_to_string(&logs[0]).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!((time_of(lines[0]), time_of(lines[lines.len() - 1])), (at(FIRST_LINE_AT), at(LAST_LINE_AT)));
        let last = base - SignedDuration::from_hours(9 * 24);
        let shift = last.duration_since(at(LAST_LINE_AT));
        let mut log: Vec<String> = lines.iter().map(|l| dated(l, time_of(l) + shift)).collect();
        let ahead_lines: &[&str] = match line {
            Line::Start => &lines[7..8],
            Line::TooFrequent => &lines[5..7],
        };
        match line {
            Line::Start => assert!(ahead_lines[0].ends_with("LOG:  checkpoint starting: wal")),
            Line::TooFrequent => {
                assert!(ahead_lines[0].ends_with("LOG:  checkpoints are occurring too frequently (3 seconds apart)"));
                assert!(ahead_lines[1].contains(" HINT:  "));
            }
        }
        log.extend(ahead_lines.iter().map(|l| dated(l, line_at)));
        let dir = tempfile::tempdir().unwrap();
        let (db, file) = (dir.path().join("w.db"), dir.path().join("postgresql.log"));
        std::fs::write(&file, log.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
        let config_file = dir.path().join("walwatch.toml");
        std::fs::write(&config_file, config).unwrap();
        let case = Case {
            config: config::parse(config, &config_file).unwrap(),
            _dir: dir,
            db,
            config_file,
            clock,
            line_at,
            first: at(FIRST_LINE_AT) + shift,
            last,
        };
        let mut import = case.walwatch(&["import", "--cluster", "main"]);
        import.arg(&file);
        run(import);
        case
    }

    /// `walwatch ARGS --db … --config …` at the frozen clock.
    fn walwatch(&self, args: &[&str]) -> Command {
        let mut cmd = walwatch_at(self.clock);
        cmd.args(args).arg("--db").arg(&self.db).arg("--config").arg(&self.config_file);
        cmd
    }

    fn rules(&self) -> RuleSet {
        RuleSet::configure(&self.config.alerts).unwrap()
    }

    /// The day before the clock's, whose digest reads the suggestion at its end.
    fn yesterday(&self) -> Date {
        self.clock.to_zoned(jiff::tz::TimeZone::UTC).date().yesterday().unwrap()
    }
}

/// The checkpoint cycles the suggestion measures in the nine-day-old log
/// when its window reaches back that far (its explanation: 25 usable, one
/// across a restart and one ending in a manual CHECKPOINT left out).
const CYCLES: u64 = 25;

/// Imports the case and checks every reader of the tolerance.
fn check(line: Line, ahead: Ahead, config: &str) {
    let case = Case::import(line, ahead, config);
    let tolerance = case.rules().get::<ClockSkew>().tolerance;
    // The line is the log's newest event.
    let counted = case.line_at.duration_since(case.clock) <= SignedDuration::try_from(tolerance).unwrap();
    assert_eq!(counted, ahead == Ahead::AtTolerance || tolerance == Duration::from_secs(600));
    let what = format!("{line:?} {ahead:?} {config:?}");
    let newest = if counted { case.line_at } else { case.last };

    // status: the last event, and the warning about a line dated ahead.
    let st = json(case.walwatch(&["status", "--format", "json"]));
    let cluster = &st["clusters"][0];
    assert_eq!(cluster["last_event_at"], rfc3339(newest), "{what}");
    let warnings: Vec<&str> = cluster["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
    // In milliseconds at most: 300.000001 s reads "5m".
    let ahead_text = if ahead == Ahead::TenMinutes { "10m" } else { "5m" };
    let warning = format!(
        "1 event read in the last 24h dated up to {ahead_text} ahead of this machine's clock, latest read at {}; check the server's clock / log_timezone (the alert rules ignore their times)",
        rfc3339(case.clock)
    );
    assert_eq!(warnings, if counted { vec![] } else { vec![warning.as_str()] }, "{what}");

    // summary: the first and last event, and the count of those dated ahead.
    let sum = json(case.walwatch(&["summary", "--format", "json"]));
    let got = (&sum["first_at"], &sum["last_at"], &sum["dated_ahead"]);
    let dated_ahead = if counted { 0 } else { 1 };
    assert_eq!(got, (&rfc3339(case.first).into(), &rfc3339(newest).into(), &dated_ahead.into()), "{what}");

    // history: by day, from the log's first day to the newest event's.
    let rows = json(case.walwatch(&["history", "--by", "day", "--tz", "UTC", "--format", "json"]));
    let days: Vec<&str> = rows.as_array().unwrap().iter().map(|r| r["bucket_start"].as_str().unwrap()).collect();
    let day = |t: Timestamp| format!("{}T00:00:00+00:00", t.to_zoned(jiff::tz::TimeZone::UTC).date());
    assert_eq!((days.first().copied(), days.last().copied()), (Some(&*day(case.first)), Some(&*day(newest))), "{what}");

    // suggest: its window ends now when the log is current, and holds
    // none of the log's cycles; else it ends at the log's last line.
    let s = json(case.walwatch(&["suggest", "--cluster", "main", "--format", "json"]));
    let cycles = if counted { 0 } else { CYCLES };
    assert_eq!(s["basis"]["samples"], cycles, "{what}: {s}");

    // The digest of yesterday, printed: the suggestion at the day's end.
    let date = case.yesterday().to_string();
    let out = run(case.walwatch(&["digest", "--date", &date, "--tz", "UTC"]));
    let text = String::from_utf8(out.stdout).unwrap();
    let advice = format!("from {CYCLES} cycles over 7d");
    assert_eq!(text.contains(&advice), !counted, "{what}: {text}");

    // The rules at the frozen clock, with the alerts' advice.
    let mut store = Store::open(&case.db).unwrap();
    let report = walwatch::alert::evaluate::all(&mut store, &case.config, &case.rules(), case.clock).unwrap();
    let findings = &report.clusters[0].findings;
    let rules: Vec<&str> = findings.iter().map(|f| f.rule).collect();
    if counted {
        // A current log, quiet for the last hour; with the warning as its
        // newest event, its last checkpoint line is nine days old.
        let want: &[&str] = if line == Line::Start { &[] } else { &["checkpoint_logging_missing"] };
        assert_eq!(rules, want, "{what}");
    } else {
        assert_eq!(rules, ["forced_checkpoints", "too_frequent", "clock_skew"], "{what}");
        let forced = &findings[0].figures;
        assert_eq!(forced["window"]["end"], rfc3339(case.last), "{what}");
        assert_eq!(forced["count"], 23, "{what}");
        assert!(forced["suggested_max_wal_size_mb"].is_u64(), "{what}: the advice from the log's cycles: {forced}");
        let skew = &findings[2].figures;
        assert_eq!(skew["count"], 1, "{what}");
        assert_eq!(skew["most_ahead_read_at"], rfc3339(case.clock), "{what}: read at the frozen clock");
        let seconds = case.line_at.duration_since(case.clock).as_secs_f64();
        assert_eq!(skew["max_ahead_s"], seconds, "{what}");
    }
    drop(store);

    // The metrics: the newest event, and the advice's suggestion.
    let params = Params { skew_tolerance: tolerance, advice: case.config.advice.clone().into(), followed: None };
    let board = AdviceBoard::default();
    let snapshot = Scraper::new(board.clone()).scrape(&case.db, &params).unwrap();
    assert_eq!(snapshot.last_event.get("main"), Some(&(newest.as_microsecond() as f64 / 1e6)), "{what}");
    Advisor::new(board.clone()).refresh(&case.db, &params, &|| false).unwrap();
    let suggested = board.lock().unwrap()["main"].suggested_max_wal_size;
    assert_eq!(suggested.is_some(), !counted, "{what}: {suggested:?}");

    // The digest the daemon mails for yesterday.
    let mail = mailed_digest(&case);
    assert_eq!(mail.contains(&advice), !counted, "{what}: {mail}");
}

/// The text part of the digest the daemon's schedule queues for the day
/// before the clock's: a first tick the day before records the baseline.
fn mailed_digest(case: &Case) -> String {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{}[mail]\ntransport = \"file\"\nfrom = \"walwatch <walwatch@db1.example.com>\"\nto = [\"dba@example.com\"]\n\
         [mail.file]\ndirectory = {:?}\n[digest]\ntimezone = \"UTC\"\n",
        std::fs::read_to_string(&case.config_file).unwrap(),
        dir.path().display().to_string()
    );
    let config = config::parse(&text, Path::new("walwatch.toml")).unwrap();
    let rules = RuleSet::configure(&config.alerts).unwrap();
    let mut store = Store::open(&case.db).unwrap();
    let due = walwatch::digest::schedule::Schedule::of(&config.digest).unwrap().due_at(case.yesterday());
    let baseline = tick(&mut store, &config, &rules, due - SignedDuration::from_hours(24)).unwrap();
    assert!(matches!(baseline, Tick::Baseline(_)), "{baseline:?}");
    let queued = tick(&mut store, &config, &rules, due).unwrap();
    assert!(matches!(queued, Tick::Queued { day, .. } if day == case.yesterday()), "{queued:?}");
    let payload = store.outbox().all().unwrap().pop().unwrap().payload;
    let mail = mailparse::parse_mail(payload.as_bytes()).unwrap();
    let plain = text_part(&mail).expect("a text/plain part");
    plain.get_body().unwrap()
}

fn text_part<'a>(part: &'a mailparse::ParsedMail<'a>) -> Option<&'a mailparse::ParsedMail<'a>> {
    if part.ctype.mimetype == "text/plain" {
        return Some(part);
    }
    part.subparts.iter().find_map(text_part)
}

#[test]
fn a_start_ten_minutes_ahead_is_left_out_everywhere() {
    check(Line::Start, Ahead::TenMinutes, "");
}

#[test]
fn a_start_one_microsecond_beyond_the_tolerance_is_left_out_everywhere() {
    check(Line::Start, Ahead::JustBeyond, "");
}

#[test]
fn a_start_exactly_at_the_tolerance_is_the_newest_event_everywhere() {
    check(Line::Start, Ahead::AtTolerance, "");
}

#[test]
fn a_warning_ten_minutes_ahead_is_left_out_everywhere() {
    check(Line::TooFrequent, Ahead::TenMinutes, "");
}

#[test]
fn a_warning_one_microsecond_beyond_the_tolerance_is_left_out_everywhere() {
    check(Line::TooFrequent, Ahead::JustBeyond, "");
}

#[test]
fn a_warning_exactly_at_the_tolerance_is_the_newest_event_everywhere() {
    check(Line::TooFrequent, Ahead::AtTolerance, "");
}

/// The configured tolerance, not the default, at every place.
#[test]
fn a_start_ten_minutes_ahead_is_the_newest_event_under_a_tolerance_of_ten_minutes() {
    check(Line::Start, Ahead::TenMinutes, "[alerts.clock_skew]\ntolerance = \"10m\"\n");
}
