use super::*;

const LINE: &str = "2026-11-22 08:04:20.708 UTC [21760] LOG:  checkpoint starting: wal";

fn text(u: Unwrapped) -> (String, Option<String>) {
    match u {
        Unwrapped::Text { text, time, .. } => (String::from_utf8(text).unwrap(), time.map(|t| t.to_string())),
        other => panic!("{other:?}"),
    }
}

#[test]
fn docker_json_entries_give_the_line_and_cut_ones_their_pieces() {
    let entry = format!(r#"{{"log":"{LINE}\n","stream":"stderr","time":"2026-11-22T08:04:20.708912345Z"}}"#);
    assert!(looks_like_docker_json(entry.as_bytes()));
    assert_eq!(text(open_docker_json(entry.as_bytes())), (LINE.into(), Some("2026-11-22T08:04:20.708912345Z".into())));
    let piece = r#"{"log":"2026-11-22 08:04:20.708 UTC [99] LOG:  statement: SELECT 'a","stream":"stderr","time":"2026-11-22T08:04:20.7Z"}"#;
    assert!(matches!(open_docker_json(piece.as_bytes()), Unwrapped::Piece { .. }));
    assert!(matches!(open_docker_json(b"{\"log\": 3}"), Unwrapped::Broken));
    assert!(!looks_like_docker_json(br#"{"timestamp":"2026-11-22 08:04:20.708 UTC","message":"x"}"#));
}

#[test]
fn cri_lines_are_full_or_partial() {
    let full = format!("2026-11-22T08:04:20.708912345Z stderr F {LINE}");
    assert!(looks_like_cri(full.as_bytes()));
    assert_eq!(text(open_cri(full.as_bytes())).0, LINE);
    let part = "2026-11-22T08:04:20.708912345Z stderr P 2026-11-22 08:04:20.708 UTC [99] LOG:  statement: SELECT 'a";
    assert!(matches!(open_cri(part.as_bytes()), Unwrapped::Piece { .. }));
    assert!(!looks_like_cri(LINE.as_bytes()));
}

#[test]
fn docker_and_kubectl_columns_and_times_are_taken_off() {
    let cases = [
        (format!("db-1  | {LINE}"), None),
        (format!("postgres-1  | 2026-11-22T08:04:20.708912345Z {LINE}"), Some("2026-11-22T08:04:20.708912345Z")),
        (format!("2026-11-22T08:04:20.708912345Z {LINE}"), Some("2026-11-22T08:04:20.708912345Z")),
    ];
    for (line, time) in cases {
        assert!(looks_like_docker(line.as_bytes()), "{line}");
        assert_eq!(text(open_docker(line.as_bytes())), (LINE.to_string(), time.map(String::from)), "{line}");
    }
    // A log line is none of these: its time has a space, its prefix no column.
    assert!(!looks_like_docker(LINE.as_bytes()));
    assert!(!looks_like_docker(b"2026-11-22 08:04:20 UTC [1] LOG:  a | b"));
}

#[test]
fn flyio_lines_give_the_line_after_the_process_column() {
    let line = format!("2024-01-16T16:39:52Z app[148ed193b95e89] lax [info]postgres | {LINE}");
    assert!(looks_like_flyio(line.as_bytes()));
    assert_eq!(text(open_flyio(line.as_bytes())), (LINE.to_string(), Some("2024-01-16T16:39:52Z".into())));
    let bare = format!("2024-01-16T16:39:52Z app[148ed193b95e89] lax [info]{LINE}");
    assert_eq!(text(open_flyio(bare.as_bytes())).0, LINE);
    assert!(!looks_like_flyio(format!("2024-01-16T16:39:52Z {LINE}").as_bytes()));
}

#[test]
fn heroku_lines_become_syslog_lines_of_the_pid_logplex_gives() {
    let line = "2024-01-16T16:39:52.123456+00:00 app[postgres.1234]: [DATABASE] [9-1] sql_error_code = 00000 LOG:  checkpoint starting: time";
    assert!(looks_like_heroku(line.as_bytes()));
    let (inner, time) = text(open_heroku(line.as_bytes()));
    assert_eq!(
        inner,
        "2024-01-16T16:39:52.123456Z heroku postgres[1234]: [9-1] sql_error_code = 00000 LOG:  checkpoint starting: time"
    );
    assert_eq!(time.as_deref(), Some("2024-01-16T16:39:52.123456Z"));
    assert!(super::super::syslog::split(inner.as_bytes()).is_some_and(|(_, _, seq)| seq));
    // The shapes Heroku's documentation shows: no pid, the name elsewhere.
    let old = "2012-11-01T17:41:42+00:00 app[postgres]: [15521-1]  [CHARCOAL] LOG:  checkpoint starting: time";
    assert_eq!(
        text(open_heroku(old.as_bytes())).0,
        "2012-11-01T17:41:42Z heroku postgres[0]: [15521-1]  LOG:  checkpoint starting: time"
    );
    let user = "2012-11-01T17:41:42+00:00 app[postgres]: [12-1] u8akd9ajka [BRONZE] LOG:  duration: 64.847 ms";
    assert_eq!(
        text(open_heroku(user.as_bytes())).0,
        "2012-11-01T17:41:42Z heroku postgres[0]: [12-1] u8akd9ajka LOG:  duration: 64.847 ms"
    );
    // Another app's line in the same drain is another program's.
    assert!(matches!(open_heroku(b"2024-01-16T16:39:52Z app[web.1]: GET /"), Unwrapped::Foreign));
}
