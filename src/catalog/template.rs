//! printf format string → anchored regex (one capture per argument).
//!
//! `%ld.%03d` / `%ld,%03d` / `%d.%02d` (seconds) and `%X/%X` (LSN) are ONE
//! argument each; a run of adjacent `%s` (the checkpoint flag words) is one
//! argument too. `%%` is a literal `%`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Mutex, OnceLock};

use regex::Regex;

/// One printf conversion, after merging.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Conv {
    Int,
    UInt,
    Float,
    /// `%ld.%03d`: whole seconds, separator, fraction.
    Seconds,
    /// `%X/%X`.
    Lsn,
    /// One `%s` or a run of adjacent ones.
    Str,
    /// `%X` alone, `%c`, …: kept so argument counting stays right.
    Other,
    /// `%X` before merging (becomes part of `Lsn`, or `Other`).
    Hex,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Piece {
    Lit(String),
    Conv(Conv),
}

/// Split a C format string into literal text and (merged) conversions.
pub(super) fn parse_format(fmt: &str) -> Vec<Piece> {
    let mut raw: Vec<Piece> = Vec::new();
    let mut lit = String::new();
    let mut it = fmt.chars().peekable();
    while let Some(c) = it.next() {
        if c != '%' {
            lit.push(c);
            continue;
        }
        if it.peek() == Some(&'%') {
            it.next();
            lit.push('%');
            continue;
        }
        // %<PRIu64>
        if it.peek() == Some(&'<') {
            let mut name = String::new();
            for c in it.by_ref() {
                if c == '>' {
                    break;
                }
                name.push(c);
            }
            push_conv(&mut raw, &mut lit, if name.contains('u') { Conv::UInt } else { Conv::Int });
            continue;
        }
        // positional "%n$", flags, width, precision, length modifier.
        let mut spec = String::new();
        let mut conv = None;
        for c in it.by_ref() {
            if c.is_ascii_alphabetic() && !matches!(c, 'l' | 'h' | 'z' | 'j' | 't' | 'L' | 'q') {
                conv = Some(c);
                break;
            }
            spec.push(c);
            if spec.len() > 12 {
                break;
            }
        }
        let kind = match conv {
            Some('d' | 'i') => Conv::Int,
            Some('u') => Conv::UInt,
            Some('f' | 'F' | 'g' | 'G' | 'e' | 'E') => Conv::Float,
            Some('s') => Conv::Str,
            Some(_) => Conv::Other,
            None => {
                // A lone '%' at the end: treat as text.
                lit.push('%');
                lit.push_str(&spec);
                continue;
            }
        };
        let kind = if conv == Some('X') { Conv::Hex } else { kind };
        push_conv(&mut raw, &mut lit, kind);
    }
    if !lit.is_empty() {
        raw.push(Piece::Lit(lit));
    }
    merge(raw)
}

fn push_conv(raw: &mut Vec<Piece>, lit: &mut String, kind: Conv) {
    if !lit.is_empty() {
        raw.push(Piece::Lit(std::mem::take(lit)));
    }
    raw.push(Piece::Conv(kind));
}

fn is_hex(raw: &[Piece], i: usize) -> bool {
    matches!(raw.get(i), Some(Piece::Conv(Conv::Hex)))
}

fn merge(raw: Vec<Piece>) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        // %X/%X
        if is_hex(&raw, i) && matches!(raw.get(i + 1), Some(Piece::Lit(s)) if s == "/") && is_hex(&raw, i + 2) {
            out.push(Piece::Conv(Conv::Lsn));
            i += 3;
            continue;
        }
        if is_hex(&raw, i) {
            out.push(Piece::Conv(Conv::Other));
            i += 1;
            continue;
        }
        // %ld.%03d / %ld,%03d / %d.%02d
        if matches!(raw[i], Piece::Conv(Conv::Int | Conv::UInt))
            && matches!(raw.get(i + 1), Some(Piece::Lit(s)) if s == "." || s == ",")
            && matches!(raw.get(i + 2), Some(Piece::Conv(Conv::Int | Conv::UInt)))
        {
            out.push(Piece::Conv(Conv::Seconds));
            i += 3;
            continue;
        }
        // run of %s
        if matches!(raw[i], Piece::Conv(Conv::Str)) && matches!(out.last(), Some(Piece::Conv(Conv::Str))) {
            i += 1;
            continue;
        }
        match &raw[i] {
            Piece::Lit(s) => {
                if let Some(Piece::Lit(prev)) = out.last_mut() {
                    prev.push_str(s);
                } else {
                    out.push(Piece::Lit(s.clone()));
                }
            }
            p => out.push(p.clone()),
        }
        i += 1;
    }
    out
}

/// Number of (merged) arguments of a parsed format.
pub(super) fn arg_count(pieces: &[Piece]) -> usize {
    pieces.iter().filter(|p| matches!(p, Piece::Conv(_))).count()
}

/// Literal prefix of a template's Unparsed detection: the text before the
/// first conversion, cut before its first ':' (trailing spaces dropped);
/// `None` when that is shorter than 8 bytes.
pub(super) fn unparsed_prefix(pieces: &[Piece]) -> Option<String> {
    let Some(Piece::Lit(lead)) = pieces.first() else {
        return None;
    };
    // A ':' ends a label only when followed by a space or the end of the
    // literal (sv "checkpoint:s sker för ofta" is not a label).
    let colon = lead
        .char_indices()
        .find(|&(i, c)| c == ':' && lead[i + 1..].chars().next().is_none_or(char::is_whitespace))
        .map(|(i, _)| i);
    let cut = match colon {
        Some(i) => lead[..i].trim_end(),
        None => lead.as_str(),
    };
    (cut.len() >= 8).then(|| cut.to_string())
}

/// The regex capture for a conversion, given the argument's name.
fn capture(conv: Conv, name: &str) -> &'static str {
    match conv {
        Conv::Int => r"(-?[0-9]+)",
        Conv::UInt => r"([0-9]+)",
        Conv::Float => r"(-?[0-9]+(?:[.,][0-9]+)?)",
        Conv::Seconds => r"(-?[0-9]+[.,][0-9]+)",
        Conv::Lsn => r"([0-9A-F]{1,8}/[0-9A-F]{1,8})",
        Conv::Other | Conv::Hex => r"(\S+?)",
        Conv::Str => match name {
            "point" => r"(checkpoint|restartpoint)",
            "flags" => r"((?:\s+[a-z-]+)*)",
            "version" => r"(PostgreSQL [0-9][^\n]*?)",
            "usage" => r"([^\n]*)",
            _ => r"([^\n]*?)",
        },
    }
}

/// Tolerated extra tokens after the `extra_after` word (English only):
/// a space or '(' then up to 80 chars without ':' ';' or newline.
const EXTRA: &str = r"(?:[ (][A-Za-z0-9_=,()/ -]{0,80})?";

/// The regex source (anchored) and the literal segments that any matching
/// message contains verbatim (for needle coverage).
pub(super) fn build_pattern(pieces: &[Piece], args: &[String], extra_after: Option<&str>) -> (String, Vec<String>) {
    let mut re = String::from(r"\A(?:");
    let mut segs = Vec::new();
    let mut arg = 0;
    let mut extra_done = extra_after.is_none();
    for (i, p) in pieces.iter().enumerate() {
        match p {
            Piece::Lit(s) => {
                let mut s = s.as_str();
                let next_is_flags = matches!(pieces.get(i + 1), Some(Piece::Conv(Conv::Str)))
                    && args.get(arg).map(String::as_str) == Some("flags");
                let mut tail_ws = false;
                if next_is_flags && s.ends_with(char::is_whitespace) {
                    s = s.trim_end();
                    tail_ws = true;
                }
                match extra_after.filter(|_| !extra_done).and_then(|w| s.find(w).map(|at| at + w.len())) {
                    Some(at) => {
                        re.push_str(&regex::escape(&s[..at]));
                        re.push_str(EXTRA);
                        re.push_str(&regex::escape(&s[at..]));
                        segs.push(s[..at].to_string());
                        segs.push(s[at..].to_string());
                        extra_done = true;
                    }
                    None => {
                        re.push_str(&regex::escape(s));
                        segs.push(s.to_string());
                    }
                }
                if tail_ws {
                    re.push_str(r"\s*");
                }
            }
            Piece::Conv(c) => {
                let name = args.get(arg).map(String::as_str).unwrap_or("");
                if name == "version" {
                    segs.push("PostgreSQL ".to_string());
                }
                let _ = write!(re, "{}", capture(*c, name));
                arg += 1;
            }
        }
    }
    re.push_str(r")\z");
    segs.retain(|s| !s.is_empty());
    (re, segs)
}

/// The regex of a conversion's capture, anchored at the text's start.
fn anchored(capture: &'static str) -> Option<Regex> {
    static CACHE: OnceLock<Mutex<HashMap<&'static str, Option<Regex>>>> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Mutex::default).lock().unwrap_or_else(|e| e.into_inner());
    cache.entry(capture).or_insert_with(|| Regex::new(&format!(r"\A{capture}")).ok()).clone()
}

/// Whether `text` could be the start of a printed value (digits, a
/// decimal separator, a sign, an LSN's hex digits and slash).
fn value_start(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit() || b"-.,/ABCDEF".contains(&b))
}

/// Reads `message`, a line cut short somewhere, against a format's
/// `pieces`: how many bytes of it follow the format, and each argument's
/// text (in `args`' order) where the line prints it whole, None for one at
/// or after the cut. A value that runs to the cut is not known (`write=0.0`
/// may have been `write=0.031`). None when the message leaves the format
/// before its end, or ends before the first argument other than `point`
/// (it must name the event whole).
pub(super) fn read_cut<'m>(
    pieces: &[Piece],
    args: &[String],
    message: &'m str,
) -> Option<(usize, Vec<Option<&'m str>>)> {
    let mut values = vec![None; args.len()];
    let (mut at, mut arg, mut named) = (0, 0, false);
    for (i, piece) in pieces.iter().enumerate() {
        let rest = &message[at..];
        match piece {
            Piece::Lit(lit) => {
                if let Some(after) = rest.strip_prefix(lit.as_str()) {
                    at = message.len() - after.len();
                    continue;
                }
                // Cut inside the literal (or at its start), else another text.
                return (lit.starts_with(rest) && named).then_some((message.len(), values));
            }
            Piece::Conv(conv) => {
                let name = args.get(arg).map(String::as_str).unwrap_or("");
                named |= name != "point";
                if rest.is_empty() {
                    return named.then_some((at, values));
                }
                let found = anchored(capture(*conv, name)).and_then(|re| re.find(rest).map(|m| m.end()));
                let follows = |end: usize| match pieces.get(i + 1) {
                    Some(Piece::Lit(next)) => {
                        let after = &rest[end..];
                        after.starts_with(next.as_str()) || next.starts_with(after)
                    }
                    _ => true,
                };
                match found {
                    // A value that ends where the message does may go on after the cut.
                    Some(end) if end < rest.len() && follows(end) => {
                        values[arg] = Some(&rest[..end]);
                        at += end;
                    }
                    _ if value_start(rest) => return named.then_some((message.len(), values)),
                    Some(end) if end == rest.len() => return named.then_some((message.len(), values)),
                    _ => return None,
                }
                arg += 1;
            }
        }
    }
    // The whole format, and nothing after it.
    (at == message.len()).then_some((at, values))
}

/// Substitute literal values for the conversions of a format (hints).
pub(super) fn substitute(pieces: &[Piece], values: &[String]) -> String {
    let mut out = String::new();
    let mut v = values.iter();
    for p in pieces {
        match p {
            Piece::Lit(s) => out.push_str(s),
            Piece::Conv(_) => out.push_str(v.next().map(String::as_str).unwrap_or("")),
        }
    }
    out
}

/// Undo the C escapes of the TSV (`\"`, `\n`, `\t`, `\\`, …).
pub(super) fn c_unescape(s: &str) -> String {
    if !s.contains('\\') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(o) => out.push(o),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_seconds_lsn_and_flag_runs() {
        let p = parse_format("a %d (%.1f%%) t=%ld.%03d s, u=%ld,%03d; lsn=%X/%X x:%s%s%s");
        assert_eq!(
            p,
            vec![
                Piece::Lit("a ".into()),
                Piece::Conv(Conv::Int),
                Piece::Lit(" (".into()),
                Piece::Conv(Conv::Float),
                Piece::Lit("%) t=".into()),
                Piece::Conv(Conv::Seconds),
                Piece::Lit(" s, u=".into()),
                Piece::Conv(Conv::Seconds),
                Piece::Lit("; lsn=".into()),
                Piece::Conv(Conv::Lsn),
                Piece::Lit(" x:".into()),
                Piece::Conv(Conv::Str),
            ]
        );
        assert_eq!(arg_count(&parse_format("%X/%08X")), 1);
        assert_eq!(arg_count(&parse_format("by %<PRIu64> byte")), 1);
        assert_eq!(parse_format("100%"), vec![Piece::Lit("100%".into())]);
    }

    #[test]
    fn unescapes() {
        assert_eq!(c_unescape(r#"a \"b\"\nc\\d"#), "a \"b\"\nc\\d");
    }
}
