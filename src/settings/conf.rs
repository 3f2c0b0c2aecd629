//! postgresql.conf as PostgreSQL reads it (src/backend/utils/misc/guc-file.l):
//! one `name [=] value` per line, `#` comments, values as identifiers,
//! numbers with units, unquoted strings or '…' strings ('' and backslash
//! escapes), and the `include`, `include_if_exists` and `include_dir`
//! directives, relative to the including file. Later entries win.
//!
//! A bad line is reported with its file:line and the rest is still read (as
//! PostgreSQL does, which then refuses the whole file: see `super::refresh`).
//! Nesting is limited to PostgreSQL's depth of 10, and a file that includes
//! itself (directly or not) is reported as a cycle instead of recursing.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// CONF_FILE_MAX_DEPTH: the main file is depth 0.
pub(crate) const MAX_DEPTH: usize = 10;

/// PostgreSQL gives up on a file after this many syntax errors.
const MAX_SYNTAX_ERRORS: usize = 100;

/// One `name = value` line, name lower-cased (setting names are case-insensitive).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub(crate) name: String,
    pub(crate) value: String,
    pub(crate) path: PathBuf,
    pub(crate) line: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ConfProblemKind {
    Syntax,
    /// A file or directory that exists but cannot be read (permissions).
    Unreadable,
    /// An `include`/`include_dir` target that does not exist.
    Missing,
    TooDeep,
    Cycle,
}

/// What went wrong where; `line` is None for a whole file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ConfProblem {
    pub(crate) kind: ConfProblemKind,
    pub(crate) path: PathBuf,
    pub(crate) line: Option<usize>,
    pub(crate) message: String,
}

impl fmt::Display for ConfProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

/// Everything read from a file and what it includes, in reading order.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Parsed {
    pub(crate) entries: Vec<Entry>,
    pub(crate) problems: Vec<ConfProblem>,
}

impl Parsed {
    /// The entry in effect for `name`: the last one read.
    pub(crate) fn get(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().rev().find(|e| e.name == name)
    }
}

/// Reads `path` and what it includes. `strict`: a missing file is a problem
/// (postgresql.conf, `include`); otherwise it is skipped (postgresql.auto.conf,
/// `include_if_exists`).
pub(crate) fn read(path: &Path, strict: bool, into: &mut Parsed) {
    let mut chain = Vec::new();
    read_file(path, strict, 0, &mut chain, into);
}

fn read_file(path: &Path, strict: bool, depth: usize, chain: &mut Vec<PathBuf>, out: &mut Parsed) {
    let problem = |kind, message: String| ConfProblem { kind, path: path.to_path_buf(), line: None, message };
    if depth > MAX_DEPTH {
        let message = format!("maximum nesting depth of {MAX_DEPTH} includes exceeded");
        out.problems.push(problem(ConfProblemKind::TooDeep, message));
        return;
    }
    // The canonical name recognises a cycle through symlinks or "../x/";
    // a file that cannot be resolved is reported by the read below.
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if chain.contains(&key) {
        let names: Vec<String> = chain.iter().chain([&key]).map(|p| p.display().to_string()).collect();
        out.problems.push(problem(ConfProblemKind::Cycle, format!("include cycle: {}", names.join(" -> "))));
        return;
    }
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound && !strict => return,
        Err(e) => {
            let kind = if e.kind() == io::ErrorKind::NotFound {
                ConfProblemKind::Missing
            } else {
                ConfProblemKind::Unreadable
            };
            out.problems.push(problem(kind, format!("cannot read configuration file: {e}")));
            return;
        }
    };
    chain.push(key);
    parse_text(&bytes, path, depth, chain, out);
    chain.pop();
}

/// Parses the text of `path`, following its includes.
fn parse_text(text: &[u8], path: &Path, depth: usize, chain: &mut Vec<PathBuf>, out: &mut Parsed) {
    let mut errors = 0;
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        let line_no = i + 1;
        match parse_line(line) {
            Ok(None) => {}
            Ok(Some((name, value))) => directive(name, value, path, line_no, depth, chain, out),
            Err(message) => {
                out.problems.push(ConfProblem {
                    kind: ConfProblemKind::Syntax,
                    path: path.to_path_buf(),
                    line: Some(line_no),
                    message,
                });
                errors += 1;
                if errors >= MAX_SYNTAX_ERRORS {
                    out.problems.push(ConfProblem {
                        kind: ConfProblemKind::Syntax,
                        path: path.to_path_buf(),
                        line: None,
                        message: "too many syntax errors found, abandoning file".into(),
                    });
                    return;
                }
            }
        }
    }
}

/// An entry, or an include directive followed.
fn directive(
    name: String,
    value: String,
    path: &Path,
    line: usize,
    depth: usize,
    chain: &mut Vec<PathBuf>,
    out: &mut Parsed,
) {
    match name.as_str() {
        "include" => read_file(&relative_to(path, &value), true, depth + 1, chain, out),
        "include_if_exists" => read_file(&relative_to(path, &value), false, depth + 1, chain, out),
        "include_dir" => read_dir(&relative_to(path, &value), path, line, depth + 1, chain, out),
        _ => out.entries.push(Entry { name, value, path: path.to_path_buf(), line }),
    }
}

/// AbsoluteConfigLocation: a relative name is relative to the including file's directory.
fn relative_to(including: &Path, name: &str) -> PathBuf {
    let target = Path::new(name);
    if target.is_absolute() {
        return target.to_path_buf();
    }
    including.parent().unwrap_or(Path::new(".")).join(target)
}

/// ParseConfigDirectory: the `*.conf` files of `dir` not starting with '.',
/// sorted by name (byte order), subdirectories skipped; a missing directory is an error.
fn read_dir(dir: &Path, from: &Path, line: usize, depth: usize, chain: &mut Vec<PathBuf>, out: &mut Parsed) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            let kind = if e.kind() == io::ErrorKind::NotFound {
                ConfProblemKind::Missing
            } else {
                ConfProblemKind::Unreadable
            };
            let message = format!("cannot open configuration directory {} (include_dir): {e}", dir.display());
            out.problems.push(ConfProblem { kind, path: from.to_path_buf(), line: Some(line), message });
            return;
        }
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.as_encoded_bytes();
            name.len() >= 6 && name[0] != b'.' && name.ends_with(b".conf")
        })
        .map(|e| e.path())
        .filter(|p| !p.is_dir())
        .collect();
    files.sort_by(|a, b| a.as_os_str().as_encoded_bytes().cmp(b.as_os_str().as_encoded_bytes()));
    for file in files {
        read_file(&file, true, depth, chain, out);
    }
}

/// The tokens of guc-file.l.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Id(String),
    QualifiedId(String),
    Str(String),
    Unquoted(String),
    Integer(String),
    Real(String),
    Equals,
    Error(String),
}

/// `name [=] value`, nothing (blank or comment), or a syntax error.
fn parse_line(line: &[u8]) -> Result<Option<(String, String)>, String> {
    let tokens = tokens(line);
    let mut it = tokens.into_iter();
    let name = match it.next() {
        None => return Ok(None),
        Some(Token::Id(n) | Token::QualifiedId(n)) => n.to_ascii_lowercase(),
        Some(other) => return Err(near(Some(&other))),
    };
    let mut next = it.next();
    if next == Some(Token::Equals) {
        next = it.next();
    }
    let value = match next {
        Some(Token::Id(v) | Token::Unquoted(v) | Token::Integer(v) | Token::Real(v)) => v,
        Some(Token::Str(raw)) => unescape(&raw),
        other => return Err(near(other.as_ref())),
    };
    match it.next() {
        None => Ok(Some((name, value))),
        Some(extra) => Err(near(Some(&extra))),
    }
}

fn near(token: Option<&Token>) -> String {
    let text = match token {
        None => return "syntax error near end of line".into(),
        Some(Token::Equals) => "=".to_string(),
        Some(
            Token::Id(t)
            | Token::QualifiedId(t)
            | Token::Str(t)
            | Token::Unquoted(t)
            | Token::Integer(t)
            | Token::Real(t)
            | Token::Error(t),
        ) => t.clone(),
    };
    format!("syntax error near token {text:?}")
}

/// The flex rules, longest match first, earlier rule on a tie.
fn tokens(line: &[u8]) -> Vec<Token> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < line.len() {
        let c = line[i];
        if matches!(c, b' ' | b'\t' | b'\r') {
            i += 1;
            continue;
        }
        if c == b'#' {
            break;
        }
        if c == b'=' {
            out.push(Token::Equals);
            i += 1;
            continue;
        }
        let rest = &line[i..];
        let candidates = [
            (id_len(rest), 0),
            (qualified_len(rest), 1),
            (string_len(rest), 2),
            (unquoted_len(rest), 3),
            (integer_len(rest), 4),
            (real_len(rest), 5),
        ];
        let (len, rule) = candidates.iter().fold((0, usize::MAX), |best, &(len, rule)| match len {
            Some(len) if len > best.0 => (len, rule),
            _ => best,
        });
        if len == 0 {
            // `.` in flex: one character (a whole UTF-8 sequence here, for the message).
            let n = std::str::from_utf8(rest).ok().and_then(|s| s.chars().next()).map_or(1, char::len_utf8);
            out.push(Token::Error(String::from_utf8_lossy(&rest[..n]).into_owned()));
            i += n;
            continue;
        }
        let text = String::from_utf8_lossy(&rest[..len]).into_owned();
        out.push(match rule {
            0 => Token::Id(text),
            1 => Token::QualifiedId(text),
            2 => Token::Str(text),
            3 => Token::Unquoted(text),
            4 => Token::Integer(text),
            _ => Token::Real(text),
        });
        i += len;
    }
    out
}

/// LETTER: [A-Za-z_\200-\377]
fn letter(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80
}

fn letter_or_digit(c: u8) -> bool {
    letter(c) || c.is_ascii_digit()
}

fn id_len(s: &[u8]) -> Option<usize> {
    (!s.is_empty() && letter(s[0])).then(|| 1 + s[1..].iter().take_while(|&&c| letter_or_digit(c)).count())
}

/// ID "." ID
fn qualified_len(s: &[u8]) -> Option<usize> {
    let first = id_len(s)?;
    (s.get(first) == Some(&b'.')).then_some(())?;
    id_len(&s[first + 1..]).map(|second| first + 1 + second)
}

/// LETTER (LETTER_OR_DIGIT | [-._:/])*
fn unquoted_len(s: &[u8]) -> Option<usize> {
    let more = |c: &&u8| letter_or_digit(**c) || matches!(**c, b'-' | b'.' | b'_' | b':' | b'/');
    (!s.is_empty() && letter(s[0])).then(|| 1 + s[1..].iter().take_while(more).count())
}

/// \'([^'\\\n]|\\.|\'\')*\'
fn string_len(s: &[u8]) -> Option<usize> {
    if s.first() != Some(&b'\'') {
        return None;
    }
    let mut i = 1;
    while i < s.len() {
        match s[i] {
            b'\\' if i + 1 < s.len() => i += 2,
            b'\\' => return None,
            b'\'' if s.get(i + 1) == Some(&b'\'') => i += 2,
            b'\'' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// {SIGN}?({DIGIT}+|0x{HEXDIGIT}+){UNIT_LETTER}*
fn integer_len(s: &[u8]) -> Option<usize> {
    let sign = usize::from(matches!(s.first(), Some(b'-' | b'+')));
    let body = &s[sign..];
    let with_units = |n: usize| n + body[n..].iter().take_while(|c| c.is_ascii_alphabetic()).count();
    let decimal = body.iter().take_while(|c| c.is_ascii_digit()).count();
    let hex = match body {
        [b'0', b'x', rest @ ..] => rest.iter().take_while(|c| c.is_ascii_hexdigit()).count(),
        _ => 0,
    };
    let decimal = (decimal > 0).then(|| with_units(decimal));
    let hex = (hex > 0).then(|| with_units(2 + hex));
    decimal.max(hex).map(|len| sign + len)
}

/// {SIGN}?{DIGIT}*"."{DIGIT}*{EXPONENT}?
fn real_len(s: &[u8]) -> Option<usize> {
    let sign = usize::from(matches!(s.first(), Some(b'-' | b'+')));
    let digits = |from: usize| s[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut i = sign + digits(sign);
    if s.get(i) != Some(&b'.') {
        return None;
    }
    i += 1;
    i += digits(i);
    if matches!(s.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(s.get(j), Some(b'-' | b'+')) {
            j += 1;
        }
        let d = digits(j);
        if d > 0 {
            i = j + d;
        }
    }
    Some(i)
}

/// DeescapeQuotedString: strips the quotes; '' is a quote; \b \f \n \r \t,
/// up to three octal digits, and \x for any other x.
fn unescape(raw: &str) -> String {
    let inner = raw.as_bytes();
    let inner = &inner[1..inner.len().saturating_sub(1).max(1)];
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        match inner[i] {
            b'\\' if i + 1 < inner.len() => {
                i += 1;
                match inner[i] {
                    b'b' => out.push(b'\x08'),
                    b'f' => out.push(b'\x0c'),
                    b'n' => out.push(b'\n'),
                    b'r' => out.push(b'\r'),
                    b't' => out.push(b'\t'),
                    b'0'..=b'7' => {
                        let digits = inner[i..].iter().take(3).take_while(|&&c| (b'0'..=b'7').contains(&c)).count();
                        let n = inner[i..i + digits].iter().fold(0u32, |n, c| n * 8 + u32::from(c - b'0'));
                        out.push(n as u8);
                        i += digits - 1;
                    }
                    other => out.push(other),
                }
            }
            b'\'' if inner.get(i + 1) == Some(&b'\'') => {
                out.push(b'\'');
                i += 1;
            }
            other => out.push(other),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn line(text: &str) -> Result<Option<(String, String)>, String> {
        parse_line(text.as_bytes())
    }
    fn ok(text: &str) -> (String, String) {
        line(text).unwrap().unwrap_or_else(|| panic!("{text:?} gave nothing"))
    }
    fn pair(name: &str, value: &str) -> (String, String) {
        (name.to_string(), value.to_string())
    }

    #[test]
    fn values_of_every_token_kind() {
        assert_eq!(ok("max_wal_size = 1GB"), pair("max_wal_size", "1GB"));
        assert_eq!(ok("max_wal_size=1GB"), pair("max_wal_size", "1GB"));
        assert_eq!(ok("  Max_WAL_Size\t=\t'2GB'  # comment"), pair("max_wal_size", "2GB"));
        assert_eq!(ok("commit_delay 1000"), pair("commit_delay", "1000"), "the = is optional");
        assert_eq!(ok("checkpoint_completion_target = 0.9"), pair("checkpoint_completion_target", "0.9"));
        assert_eq!(ok("checkpoint_completion_target = .9e0"), pair("checkpoint_completion_target", ".9e0"));
        assert_eq!(ok("fsync = off"), pair("fsync", "off"));
        assert_eq!(ok("max_wal_size = -1"), pair("max_wal_size", "-1"));
        assert_eq!(ok("x = 0x1F"), pair("x", "0x1F"));
        assert_eq!(ok("log_directory = pg_log/sub-dir:x.y"), pair("log_directory", "pg_log/sub-dir:x.y"));
        assert_eq!(ok("my.option = on"), pair("my.option", "on"));
        assert_eq!(ok("timezone = 'Europe/Berlin'\r"), pair("timezone", "Europe/Berlin"));
    }

    #[test]
    fn quoting_and_escapes() {
        assert_eq!(ok(r"a = 'it''s'"), pair("a", "it's"));
        assert_eq!(ok(r"a = 'it\'s'"), pair("a", "it's"));
        assert_eq!(ok(r"a = 'back\\slash'"), pair("a", r"back\slash"));
        assert_eq!(ok(r"a = 'tab\there\n'"), pair("a", "tab\there\n"));
        assert_eq!(ok(r"a = '\101\x'"), pair("a", "Ax"));
        assert_eq!(ok("a = '# not a comment' # but this is"), pair("a", "# not a comment"));
        assert_eq!(ok("a = ''"), pair("a", ""));
        assert_eq!(ok("a = '%m [%p] '"), pair("a", "%m [%p] "));
    }

    #[test]
    fn blank_and_comment_lines() {
        assert_eq!(line(""), Ok(None));
        assert_eq!(line("   \t\r"), Ok(None));
        assert_eq!(line("# max_wal_size = 1GB"), Ok(None));
        assert_eq!(line("   #x"), Ok(None));
    }

    #[test]
    fn syntax_errors_name_the_token() {
        assert_eq!(line("max_wal_size = 1 GB"), Err("syntax error near token \"GB\"".into()));
        assert_eq!(line("max_wal_size ="), Err("syntax error near end of line".into()));
        assert_eq!(line("max_wal_size"), Err("syntax error near end of line".into()));
        assert_eq!(line("= 1"), Err("syntax error near token \"=\"".into()));
        assert_eq!(line("a = 'unterminated"), Err("syntax error near token \"'\"".into()));
        assert_eq!(line("a = /abs/path"), Err("syntax error near token \"/\"".into()));
        assert_eq!(line("a = 1.5GB"), Err("syntax error near token \"GB\"".into()));
        assert_eq!(line("a = x.y"), Err("syntax error near token \"x.y\"".into()), "a qualified id is no value");
        assert_eq!(line("1a = 2"), Err("syntax error near token \"1a\"".into()));
        assert_eq!(line("a = b = c"), Err("syntax error near token \"=\"".into()));
        assert!(line("a = 'ü' ü").is_err());
    }

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, text).unwrap();
        path
    }

    fn read_all(path: &Path) -> Parsed {
        let mut parsed = Parsed::default();
        read(path, true, &mut parsed);
        parsed
    }

    fn values(p: &Parsed) -> Vec<(String, String, usize)> {
        p.entries.iter().map(|e| (e.name.clone(), e.value.clone(), e.line)).collect()
    }

    #[test]
    fn includes_are_relative_to_the_including_file_and_later_wins() {
        let dir = tempfile::tempdir().unwrap();
        let main = write(
            dir.path(),
            "etc/postgresql.conf",
            "max_wal_size = 1GB\ninclude 'sub/a.conf'\ninclude_if_exists = 'missing.conf'\n\
             include_dir 'conf.d'\nmin_wal_size = 100MB\n",
        );
        write(dir.path(), "etc/sub/a.conf", "max_wal_size = 2GB\ninclude 'b.conf'\n");
        write(dir.path(), "etc/sub/b.conf", "\n\ncheckpoint_timeout = 10min\n");
        write(dir.path(), "etc/conf.d/20-b.conf", "max_wal_size = 4GB\n");
        write(dir.path(), "etc/conf.d/10-a.conf", "max_wal_size = 3GB\nmin_wal_size = 90MB\n");
        write(dir.path(), "etc/conf.d/.hidden.conf", "max_wal_size = 9GB\n");
        write(dir.path(), "etc/conf.d/notes.txt", "max_wal_size = 8GB\n");
        write(dir.path(), "etc/conf.d/x.conf.bak", "max_wal_size = 7GB\n");
        write(dir.path(), "etc/conf.d/.conf", "max_wal_size = 6GB\n");
        fs::create_dir_all(dir.path().join("etc/conf.d/dir.conf")).unwrap();
        let parsed = read_all(&main);
        assert_eq!(parsed.problems, []);
        let v = values(&parsed);
        let names: Vec<(&str, &str, usize)> = v.iter().map(|(n, v, l)| (n.as_str(), v.as_str(), *l)).collect();
        assert_eq!(
            names,
            [
                ("max_wal_size", "1GB", 1),
                ("max_wal_size", "2GB", 1),
                ("checkpoint_timeout", "10min", 3),
                ("max_wal_size", "3GB", 1),
                ("min_wal_size", "90MB", 2),
                ("max_wal_size", "4GB", 1),
                ("min_wal_size", "100MB", 5),
            ]
        );
        let winner = parsed.get("max_wal_size").unwrap();
        assert_eq!((winner.value.as_str(), winner.path.clone()), ("4GB", dir.path().join("etc/conf.d/20-b.conf")));
        assert_eq!(parsed.get("checkpoint_timeout").unwrap().path, dir.path().join("etc/sub/b.conf"));
    }

    #[test]
    fn missing_files() {
        let dir = tempfile::tempdir().unwrap();
        let main = write(dir.path(), "p.conf", "include_if_exists 'nope.conf'\nfsync = off\ninclude 'gone.conf'\n");
        let parsed = read_all(&main);
        assert_eq!(values(&parsed), [("fsync".to_string(), "off".to_string(), 2)]);
        assert_eq!(parsed.problems.len(), 1, "{:?}", parsed.problems);
        assert_eq!(parsed.problems[0].kind, ConfProblemKind::Missing);
        assert_eq!(parsed.problems[0].path, dir.path().join("gone.conf"));

        let parsed = read_all(&dir.path().join("absent.conf"));
        assert_eq!(parsed.problems[0].kind, ConfProblemKind::Missing);
        let mut lenient = Parsed::default();
        read(&dir.path().join("absent.conf"), false, &mut lenient);
        assert_eq!(lenient, Parsed::default(), "postgresql.auto.conf may be absent");

        let main = write(dir.path(), "d.conf", "include_dir 'no-such-dir'\n");
        let parsed = read_all(&main);
        assert_eq!(parsed.problems.len(), 1);
        assert_eq!((parsed.problems[0].kind.clone(), parsed.problems[0].line), (ConfProblemKind::Missing, Some(1)));
    }

    #[test]
    fn cycles_are_reported_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(dir.path(), "a.conf", "fsync = on\ninclude 'b.conf'\nfull_page_writes = on\n");
        write(dir.path(), "b.conf", "include 'a.conf'\ncommit_delay = 10\n");
        let parsed = read_all(&a);
        assert_eq!(parsed.problems.len(), 1, "{:?}", parsed.problems);
        let p = &parsed.problems[0];
        assert_eq!(p.kind, ConfProblemKind::Cycle);
        assert!(p.message.contains("a.conf -> ") && p.message.contains("b.conf -> "), "{}", p.message);
        let names: Vec<String> = parsed.entries.iter().map(|e| e.name.clone()).collect();
        assert_eq!(names, ["fsync", "commit_delay", "full_page_writes"]);

        let other = tempfile::tempdir().unwrap();
        let selfish = write(other.path(), "self.conf", "include_dir '.'\n");
        let parsed = read_all(&selfish);
        assert_eq!(parsed.problems.len(), 1, "{parsed:?}");
        assert_eq!(parsed.problems[0].kind, ConfProblemKind::Cycle);
    }

    #[test]
    fn depth_is_limited_to_ten() {
        let dir = tempfile::tempdir().unwrap();
        // f0 includes f1 … f11: f10 is at depth 10 (allowed), f11 too deep.
        for i in 0..=11 {
            write(dir.path(), &format!("f{i}.conf"), &format!("commit_delay = {i}\ninclude 'f{}.conf'\n", i + 1));
        }
        let parsed = read_all(&dir.path().join("f0.conf"));
        assert_eq!(parsed.entries.len(), 11);
        assert_eq!(parsed.get("commit_delay").unwrap().value, "10");
        assert_eq!(parsed.problems.len(), 1, "{:?}", parsed.problems);
        assert_eq!(parsed.problems[0].kind, ConfProblemKind::TooDeep);
        assert_eq!(parsed.problems[0].path, dir.path().join("f11.conf"));
    }

    #[test]
    fn garbage_lines_are_reported_and_the_rest_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let text =
            "max_wal_size = 2GB\nthis is garbage\n\u{0}\u{1}binary\nmin_wal_size = 'open\ncheckpoint_timeout = 10min\n";
        let main = write(dir.path(), "g.conf", text);
        let parsed = read_all(&main);
        let lines: Vec<Option<usize>> = parsed.problems.iter().map(|p| p.line).collect();
        assert_eq!(lines, [Some(2), Some(3), Some(4)]);
        assert_eq!(
            parsed.problems[0].to_string(),
            format!("{}:2: syntax error near token \"garbage\"", main.display())
        );
        let names: Vec<String> = parsed.entries.iter().map(|e| e.name.clone()).collect();
        assert_eq!(names, ["max_wal_size", "checkpoint_timeout"]);

        let many = "x y z\n".repeat(150);
        let parsed = read_all(&write(dir.path(), "many.conf", &(many + "fsync = on\n")));
        assert_eq!(parsed.problems.len(), MAX_SYNTAX_ERRORS + 1);
        assert_eq!(parsed.entries, [], "PostgreSQL abandons the file after 100 errors");
    }

    #[test]
    fn invalid_utf8_does_not_panic() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bin.conf");
        fs::write(&path, b"a = '\xff\xfe'\n\xff = 1\nfsync = on\n").unwrap();
        let parsed = read_all(&path);
        assert_eq!(parsed.entries.len(), 3, "{parsed:?}");
        assert_eq!(parsed.get("fsync").unwrap().line, 3);
    }
}
