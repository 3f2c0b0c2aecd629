//! The agents' bearer tokens (`[ingest] token_file`), each bound to the
//! hosts it may write: one a line, the token then the host names or globs
//! it is issued for, `#` comments.
//!
//! ```text
//! 3f9c1e…  db-1
//! 8a02d4…  db-2 db-3
//! 51bb7e…  db-eu-*
//! ```
//!
//! A token with no host may write any host: one stolen agent could then
//! write every host's clusters; a short one may be guessed. Both are taken
//! (a token file that worked keeps working) but warned about at each read
//! and by `doctor`.

use std::path::{Path, PathBuf};

use subtle::ConstantTimeEq;
use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub(crate) enum TokenError {
    #[error("[ingest] token_file {path}: {reason}")]
    Unreadable { path: PathBuf, reason: String },
    #[error("[ingest] token_file {path}:{line}: {reason}")]
    Line { path: PathBuf, line: usize, reason: String },
}

/// One token and what it may write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    secret: String,
    /// The host globs; empty: any host.
    hosts: Vec<glob::Pattern>,
    /// Where it is in the file (named in refusals instead of the secret).
    pub(crate) line: usize,
}

impl Token {
    /// Whether this token may write `host`.
    pub(crate) fn allows(&self, host: &str) -> bool {
        self.hosts.is_empty() || self.hosts.iter().any(|p| p.matches(host))
    }

    pub(crate) fn any_host(&self) -> bool {
        self.hosts.is_empty()
    }

    /// Shorter than [`STRONG`] characters.
    pub(crate) fn weak(&self) -> bool {
        self.secret.len() < STRONG
    }

    /// The hosts it is issued for, as written.
    pub(crate) fn hosts(&self) -> String {
        match self.hosts.is_empty() {
            true => "any host".into(),
            false => self.hosts.iter().map(glob::Pattern::as_str).collect::<Vec<_>>().join(", "),
        }
    }
}

/// The shortest token not warned about (`openssl rand -hex 24` gives 48).
pub(crate) const STRONG: usize = 16;

/// The tokens of `path`; an error names the file, and the line when one is wrong.
pub(crate) fn read_tokens(path: &Path) -> Result<Vec<Token>, TokenError> {
    let unreadable = |reason: String| TokenError::Unreadable { path: path.to_path_buf(), reason };
    let bytes = std::fs::read(path).map_err(|e| unreadable(e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|e| unreadable(format!("not UTF-8 text ({e})")))?;
    let tokens = parse(&text).map_err(|(line, reason)| TokenError::Line { path: path.to_path_buf(), line, reason })?;
    if tokens.is_empty() {
        return Err(unreadable("holds no token (one a line): no agent could send".into()));
    }
    Ok(tokens)
}

fn parse(text: &str) -> Result<Vec<Token>, (usize, String)> {
    let mut tokens = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split_once('#').map_or(raw, |(before, _)| before).trim();
        let mut words = line.split_whitespace();
        let Some(secret) = words.next() else { continue };
        let hosts = words
            .map(|h| glob::Pattern::new(h).map_err(|e| (i + 1, format!("host {h:?} is not a glob: {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        tokens.push(Token { secret: secret.to_string(), hosts, line: i + 1 });
    }
    Ok(tokens)
}

/// The token `header` (an `Authorization` value) carries, among `tokens`.
/// Every token is compared, each in constant time: the answer's timing
/// tells nothing about how much of a guess was right.
pub(crate) fn find<'a>(tokens: &'a [Token], header: Option<&str>) -> Option<&'a Token> {
    let given = header?.strip_prefix("Bearer ")?.trim().as_bytes();
    let mut found = None;
    for token in tokens {
        if bool::from(token.secret.as_bytes().ct_eq(given)) {
            found = Some(token);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "0123456789abcdef0123";
    const B: &str = "fedcba9876543210fedc";

    #[test]
    fn each_token_writes_only_its_hosts() {
        let text = format!("# agents\n{A}  db-1 db-eu-*   # two\n\n{B}\n");
        let tokens = parse(&text).unwrap();
        assert_eq!(tokens.len(), 2);
        let a = find(&tokens, Some(&format!("Bearer {A}"))).unwrap();
        assert_eq!((a.line, a.hosts()), (2, "db-1, db-eu-*".to_string()));
        assert!(a.allows("db-1") && a.allows("db-eu-7") && !a.allows("db-2") && !a.allows("db-10"));
        let b = find(&tokens, Some(&format!("Bearer {B} "))).unwrap();
        assert!(b.any_host() && b.allows("anything") && !b.weak());
        assert_eq!(b.hosts(), "any host");
        assert!(find(&tokens, Some(&format!("Bearer {}", &A[..19]))).is_none());
        assert!(find(&tokens, Some(A)).is_none(), "the scheme is needed");
        assert!(find(&tokens, None).is_none());
    }

    #[test]
    fn a_wrong_line_is_named() {
        assert!(parse("short db-1\n").unwrap()[0].weak());
        let e = parse(&format!("# x\n{A} db-[\n")).unwrap_err();
        assert_eq!(e.0, 2);
        assert!(e.1.contains("db-["), "{}", e.1);
    }

    #[test]
    fn files_that_hold_no_token_or_no_text_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens");
        std::fs::write(&path, "# none yet\n").unwrap();
        assert!(read_tokens(&path).unwrap_err().to_string().contains("holds no token"));
        std::fs::write(&path, b"\xff\xfe token\n").unwrap();
        assert!(read_tokens(&path).unwrap_err().to_string().contains("not UTF-8"));
        let missing = dir.path().join("missing");
        assert!(matches!(read_tokens(&missing), Err(TokenError::Unreadable { .. })));
    }
}
