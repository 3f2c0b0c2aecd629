//! Line navigation inside a buffer of complete lines.

/// Start of the line containing byte `at`.
pub(crate) fn start_of(buf: &[u8], at: usize) -> usize {
    memchr::memrchr(b'\n', &buf[..at]).map_or(0, |i| i + 1)
}

/// End of the line starting at `start`, excluding the newline.
pub(crate) fn end_of(buf: &[u8], start: usize) -> usize {
    memchr::memchr(b'\n', &buf[start..]).map_or(buf.len(), |i| start + i)
}

/// Start of the line after the one starting at `start` (or `buf.len()`).
pub(crate) fn next_start(buf: &[u8], start: usize) -> usize {
    let end = end_of(buf, start);
    (end + 1).min(buf.len())
}

/// Start of the line before the one starting at `start`, if any.
pub(crate) fn prev_start(buf: &[u8], start: usize) -> Option<usize> {
    (start > 0).then(|| start_of(buf, start - 1))
}

/// The text of the line starting at `start`, without newline or carriage return.
pub(crate) fn text(buf: &[u8], start: usize) -> &[u8] {
    let end = end_of(buf, start);
    let line = &buf[start..end];
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Number of newlines in `buf`.
pub(crate) fn count(buf: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', buf).count() as u64
}

/// Number of lines in `buf` (complete ones, plus a final unterminated one).
pub(crate) fn count_lines(buf: &[u8]) -> u64 {
    count(buf) + u64::from(!buf.is_empty() && buf.last() != Some(&b'\n'))
}

/// Number of lines in `buf` that start with a TAB (continuation lines).
pub(crate) fn count_tab_lines(buf: &[u8]) -> u64 {
    let inner = memchr::memmem::find_iter(buf, b"\n\t").count() as u64;
    inner + u64::from(buf.first() == Some(&b'\t'))
}

/// Lossy UTF-8: log lines may hold anything; invalid bytes become U+FFFD.
pub(crate) fn lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn navigates_lines() {
        let b = b"one\n\ttwo\nthree";
        assert_eq!(start_of(b, 6), 4);
        assert_eq!(end_of(b, 4), 8);
        assert_eq!(next_start(b, 4), 9);
        assert_eq!(prev_start(b, 9), Some(4));
        assert_eq!(prev_start(b, 0), None);
        assert_eq!(text(b, 9), b"three");
        assert_eq!(count_lines(b), 3);
        assert_eq!(count_tab_lines(b), 1);
        assert_eq!(count_tab_lines(b"\tx\n"), 1);
    }
}
