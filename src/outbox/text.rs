//! Mail-safe text. Every string a message carries may come from a log
//! (cluster names, parameter values, alert summaries): in a header it is
//! stripped of control characters and capped ([`header_text`]: CR/LF would
//! start a new header), in a body it loses every control character but the
//! line breaks and tabs ([`body_text`]), in HTML it is escaped
//! ([`escape_html`]); lettre encodes what is not ASCII.
//!
//! Unicode format characters (bidi overrides and isolates, zero-width
//! characters, the BOM, …) are invisible, and they reorder or hide the text
//! around them: a cluster shown as "prod" may be named otherwise. In every
//! channel (Subject, text part, HTML part, webhook JSON) each one becomes a
//! visible `[U+202E]` marker instead of being dropped, so a reader sees that
//! the log held one and what the text really is.

use crate::output::is_format;

/// Text for a header: no control characters at all (CR/LF would start a new
/// header), no Unicode line separators, format characters as markers, at
/// most `max` characters.
pub(crate) fn header_text(text: &str, max: usize) -> String {
    let clean: String = mark_format_chars(text)
        .chars()
        .map(|c| if c.is_control() || is_separator(c) { ' ' } else { c })
        .collect::<String>();
    let clean = clean.split_whitespace().collect::<Vec<_>>().join(" ");
    if clean.chars().count() <= max {
        clean
    } else {
        let mut cut: String = clean.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }
}

/// Text for a body: newlines normalised to LF (lettre writes CRLF), tabs
/// kept, every other control character dropped (a terminal escape in a log
/// line has no business in a mail), format characters as markers.
pub(crate) fn body_text(text: &str) -> String {
    let unified = mark_format_chars(text).replace("\r\n", "\n").replace('\r', "\n");
    unified.chars().filter(|&c| c == '\n' || c == '\t' || !(c.is_control() || is_separator(c))).collect()
}

fn is_separator(c: char) -> bool {
    matches!(c, '\u{2028}' | '\u{2029}')
}

/// Each Unicode format character as a visible ASCII `[U+XXXX]` (see the
/// module documentation); everything else unchanged.
pub(crate) fn mark_format_chars(text: &str) -> String {
    if !text.chars().any(is_format) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_format(c) {
            out.push_str(&format!("[U+{:04X}]", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

pub(crate) fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The machine's name for Message-IDs and the signature — the one lettre
/// greets SMTP servers with — reduced to what a Message-ID's right-hand side
/// may hold.
pub(crate) fn host_name() -> String {
    use lettre::transport::smtp::extension::ClientId;
    let raw = match ClientId::default() {
        ClientId::Domain(name) => name,
        _ => String::new(),
    };
    let clean: String = raw.trim().chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-')).collect();
    if clean.is_empty() {
        "localhost".into()
    } else {
        clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_name_is_the_kernels() {
        let kernel = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("Linux");
        let allowed = |c: &char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-');
        let expected: String = kernel.trim().chars().filter(allowed).collect();
        assert!(!expected.is_empty(), "kernel host name {kernel:?}");
        assert_eq!(host_name(), expected);
    }

    #[test]
    fn body_text_drops_controls_but_keeps_lines() {
        assert_eq!(body_text("a\r\nb\rc\x1b[31m\td\u{2028}"), "a\nb\nc[31m\td");
    }
}
