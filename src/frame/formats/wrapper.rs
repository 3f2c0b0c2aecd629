//! The logs of a server in a container or on a platform, as DBAs get them:
//! PostgreSQL's stderr lines inside what the container runtime or the
//! platform put around each one. Each wrapper is an envelope format (see
//! [`envelope`](super::envelope)): only unwrapped here, the line inside read
//! as stderr with its own `log_line_prefix` (inferred from the unwrapped
//! lines, never from the wrapper's varying text) and dated by its own time,
//! else by the wrapper's.
//!
//! * `docker-json` — Docker's json-file driver, the files under
//!   `/var/lib/docker/containers/`: `{"log":"<line>\n","stream":"stderr","time":"…"}`.
//!   A line over 16 KiB is cut into entries without the `\n`: the pieces
//!   are joined again, never read as lines.
//! * `cri` — the container runtime's files Kubernetes keeps under
//!   `/var/log/pods/`: `<time> stderr F <line>` (`P` for a piece).
//! * `docker` — what `docker logs`, `docker compose logs` and `kubectl logs`
//!   print: the line, after an optional `name  | ` column (compose's
//!   service) and an optional RFC 3339 time (`--timestamps`).
//! * `flyio` — `fly logs`: `<time> app[<machine>] <region> [info]<line>`,
//!   the line after an optional `<process> | ` (`postgres | `).
//! * `heroku` — Heroku's logplex: `<time> app[postgres.<pid>]: [<DB>] [N-k] <line>`:
//!   syslog's sequence numbers and Heroku's fixed prefix
//!   (`sql_error_code = %e `); the line goes to the syslog reader with the
//!   pid logplex gives.

use jiff::Timestamp;
use serde::Deserialize;

use super::envelope::Unwrapped;

/// An RFC 3339 time at the start of `line` and the rest after one space:
/// `2026-11-22T08:04:20.708912345Z rest`.
fn leading_time(line: &[u8]) -> Option<(Timestamp, &[u8])> {
    let space = memchr::memchr(b' ', line)?;
    let word = std::str::from_utf8(&line[..space]).ok()?;
    // A date, a `T`, a time: not a prefix's `2026-11-22 08:04:20` (a space).
    if word.len() < 20 || word.as_bytes().get(10) != Some(&b'T') {
        return None;
    }
    Some((word.parse().ok()?, &line[space + 1..]))
}

#[derive(Deserialize)]
struct DockerEntry {
    log: String,
    time: Option<String>,
}

/// Whether `line` is an entry of Docker's json-file driver.
pub(crate) fn looks_like_docker_json(line: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(line)
        .is_ok_and(|v| v.get("log").is_some_and(|l| l.is_string()) && v.get("stream").is_some())
}

/// One json-file entry: the line, or a piece of it when it has no `\n`.
pub(crate) fn open_docker_json(line: &[u8]) -> Unwrapped {
    let Ok(e) = serde_json::from_slice::<DockerEntry>(line) else { return Unwrapped::Broken };
    let time = e.time.as_deref().and_then(|t| t.parse().ok());
    match e.log.strip_suffix('\n') {
        Some(whole) => Unwrapped::Text { text: whole.trim_end_matches('\r').as_bytes().to_vec(), time, uid: None },
        None => Unwrapped::Piece { text: e.log.into_bytes(), time },
    }
}

/// `<time> <stream> <tag> <text>` of a CRI log file.
fn cri_fields(line: &[u8]) -> Option<(Timestamp, &[u8], &[u8])> {
    let (time, rest) = leading_time(line)?;
    let mut parts = rest.splitn(3, |&b| b == b' ');
    let stream = parts.next()?;
    let tag = parts.next()?;
    let text = parts.next().unwrap_or_default();
    (matches!(stream, b"stdout" | b"stderr") && !tag.is_empty()).then_some((time, tag, text))
}

/// Whether `line` is a line of a CRI container log (`… stderr F …`).
pub(crate) fn looks_like_cri(line: &[u8]) -> bool {
    cri_fields(line).is_some()
}

/// One CRI line: the line (`F`), or a piece of it (`P`).
pub(crate) fn open_cri(line: &[u8]) -> Unwrapped {
    let Some((time, tag, text)) = cri_fields(line) else { return Unwrapped::Broken };
    // The tag is the partial flag, then maybe more flags after ':'.
    match tag.split(|&b| b == b':').next() {
        Some(b"P") => Unwrapped::Piece { text: text.to_vec(), time: Some(time) },
        _ => Unwrapped::Text { text: text.to_vec(), time: Some(time), uid: None },
    }
}

/// `name  | ` of `docker compose logs` (the service or container name,
/// padded to the widest): its length, the separator included.
fn column(line: &[u8]) -> Option<usize> {
    let bar = memchr::memmem::find(line, b" | ").or_else(|| line.ends_with(b" |").then(|| line.len() - 2))?;
    let name = &line[..bar];
    let trimmed = name.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
    let ok = trimmed > 0 && name[..trimmed].iter().all(|&b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    ok.then(|| (bar + 3).min(line.len()))
}

/// Whether `line` is one of `docker logs` / `docker compose logs` /
/// `kubectl logs`: a compose column, a leading RFC 3339 time, or both.
pub(crate) fn looks_like_docker(line: &[u8]) -> bool {
    let after = column(line).map_or(line, |n| &line[n..]);
    column(line).is_some() || leading_time(after).is_some()
}

/// The line inside, dated by the time before it when there is one.
pub(crate) fn open_docker(line: &[u8]) -> Unwrapped {
    let after = column(line).map_or(line, |n| &line[n..]);
    match leading_time(after) {
        Some((time, text)) => Unwrapped::Text { text: text.to_vec(), time: Some(time), uid: None },
        None => Unwrapped::Text { text: after.to_vec(), time: None, uid: None },
    }
}

/// `<time> app[<machine>] <region> [<level>]` and what follows it.
fn flyio_fields(line: &[u8]) -> Option<(Timestamp, &[u8])> {
    let (time, rest) = leading_time(line)?;
    let rest = rest.strip_prefix(b"app[")?;
    let rest = &rest[memchr::memchr(b']', rest)? + 1..];
    let rest = rest.strip_prefix(b" ")?;
    let rest = &rest[memchr::memchr(b' ', rest)? + 1..];
    let rest = rest.strip_prefix(b"[")?;
    let rest = &rest[memchr::memchr(b']', rest)? + 1..];
    Some((time, rest))
}

/// Whether `line` is one of `fly logs`.
pub(crate) fn looks_like_flyio(line: &[u8]) -> bool {
    flyio_fields(line).is_some()
}

/// The line inside, after the process column (`postgres | `) when there is one.
pub(crate) fn open_flyio(line: &[u8]) -> Unwrapped {
    let Some((time, rest)) = flyio_fields(line) else { return Unwrapped::Broken };
    let text = match memchr::memmem::find(rest, b" | ") {
        Some(i) if rest[..i].iter().all(|&b| b.is_ascii_alphanumeric() || b"-_".contains(&b)) => &rest[i + 3..],
        _ => rest,
    };
    Unwrapped::Text { text: text.to_vec(), time: Some(time), uid: None }
}

/// `<time> app[postgres.<pid>]: ` (or `app[postgres]: `, no pid) of
/// Heroku Postgres and what follows it.
fn heroku_fields(line: &[u8]) -> Option<(Timestamp, u32, &[u8])> {
    let (time, rest) = leading_time(line)?;
    let rest = rest.strip_prefix(b"app[postgres")?;
    let close = memchr::memchr(b']', rest)?;
    let pid = match rest[..close].strip_prefix(b".") {
        Some(digits) => std::str::from_utf8(digits).ok()?.parse().ok()?,
        None if close == 0 => 0,
        None => return None,
    };
    let rest = rest[close + 1..].strip_prefix(b": ")?;
    Some((time, pid, rest))
}

/// Whether `line` is one of Heroku Postgres' in logplex.
pub(crate) fn looks_like_heroku(line: &[u8]) -> bool {
    heroku_fields(line).is_some()
}

/// Heroku's name of the database (`[DATABASE]`, `[HEROKU_POSTGRESQL_CHARCOAL]`)
/// taken out of `rest` with a space beside it, wherever logplex put it.
fn without_attachment(rest: &[u8]) -> Vec<u8> {
    let named = |at: usize| {
        let word = &rest[at + 1..];
        let end = memchr::memchr(b']', word)?;
        let name = &word[..end];
        let is_name = name.first().is_some_and(u8::is_ascii_uppercase)
            && name.iter().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_');
        is_name.then_some(at + 1 + end + 1)
    };
    let found = memchr::memchr_iter(b'[', rest).find_map(|at| named(at).map(|end| (at, end)));
    let Some((start, end)) = found else { return rest.to_vec() };
    let (start, end) = match (start.checked_sub(1).map(|i| rest[i]), rest.get(end)) {
        (_, Some(b' ')) => (start, end + 1),
        (Some(b' '), _) => (start - 1, end),
        _ => (start, end),
    };
    [&rest[..start], &rest[end..]].concat()
}

/// The syslog message inside (`[N-k] sql_error_code = … LOG:  …`), as
/// syslog's line from the pid logplex gives (0 when it gives none), the
/// database's name taken out.
pub(crate) fn open_heroku(line: &[u8]) -> Unwrapped {
    let Some((time, pid, rest)) = heroku_fields(line) else { return Unwrapped::Foreign };
    let mut text = format!("{time} heroku postgres[{pid}]: ").into_bytes();
    text.extend_from_slice(&without_attachment(rest));
    Unwrapped::Text { text, time: Some(time), uid: None }
}

#[cfg(test)]
mod tests;
