//! Lines the format did not fit: a needle hit on a line that the
//! log_line_prefix (or the csv/json shape) does not read. Such a line is
//! *unmatched* when it holds an event's message head — a checkpoint line of
//! a log read with the wrong `--format` or `--prefix`, most likely — and
//! merely *unparsed* otherwise (a word like "checkpoint" in some other text).
//! Nothing can be said about who wrote an unmatched line: it is neither an
//! event nor a rejection, and the importer refuses to call a log with many
//! of them read (`ingest::ImportReport::misfit`).

use super::FrameStats;
use crate::catalog::{Catalog, Classification};

/// How much of a line is searched for a message head, and kept to quote:
/// checkpoint lines are a few hundred bytes.
const MAX_LINE: usize = 1024;

/// How much of the first unmatched line is kept to quote.
const QUOTED: usize = 300;

impl FrameStats {
    /// Counts a candidate line (`line` is its number) that the format did
    /// not fit: unmatched when it holds an event's message head, the first
    /// one kept to quote; unparsed otherwise.
    pub(crate) fn misfit(&mut self, catalog: &Catalog, line: u64, text: &str) {
        if event_head(catalog, text).is_none() {
            self.unparsed += 1;
            return;
        }
        self.unmatched += 1;
        if self.first_unmatched.is_none() {
            let shown: String = text.trim_end_matches(['\n', '\r']).chars().take(QUOTED).collect();
            self.first_unmatched = Some((line, shown));
        }
    }
}

/// The kind of the event whose message head `text` holds somewhere, if any.
///
/// Where the message starts is what the format would have said; without it,
/// every start of a word is tried (after a space, a quote, a colon, a comma
/// or a bracket), with the rest of the line and with the rest up to the next
/// quote (a csv or json field). Only lines that failed framing get here, so
/// the cost does not touch a log that is read right.
pub(crate) fn event_head(catalog: &Catalog, text: &str) -> Option<&'static str> {
    let text = cut(text.trim_end_matches(['\n', '\r']), MAX_LINE);
    let word_starts = text
        .char_indices()
        .filter(|(_, c)| matches!(c, ' ' | '\t' | '"' | ':' | ',' | ']' | '}'))
        .map(|(i, c)| i + c.len_utf8());
    for start in std::iter::once(0).chain(word_starts) {
        let rest = &text[start..];
        let field = rest.split('"').next().unwrap_or(rest);
        for candidate in [rest, field] {
            match catalog.classify(candidate) {
                Classification::Event(body) => return Some(body.kind_name()),
                Classification::Unparsed(kind) => return Some(kind),
                Classification::Other => {}
            }
        }
    }
    None
}

/// `text` cut to at most `max` bytes, at a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_head_is_found_wherever_the_message_starts() {
        let c = Catalog::global();
        let stderr = "2026-11-22 08:04:23.497 UTC [21760] LOG:  checkpoint starting: wal";
        assert_eq!(event_head(c, stderr), Some("checkpoint_start"));
        let csv = r#"2026-11-22 08:15:36.065 UTC,,,28301,,6b02a4a8.6e8d,1,,2026-11-22 08:15:36 UTC,,0,LOG,00000,"checkpoint complete: wrote 3 buffers (0.0%); 0 WAL file(s) added, 0 removed, 0 recycled; write=0.001 s, sync=0.001 s, total=0.004 s; sync files=2, longest=0.001 s, average=0.001 s; distance=0 kB, estimate=0 kB",,,,,,,,,"","checkpointer""#;
        assert_eq!(event_head(c, csv), Some("checkpoint_complete"));
        let json = r#"{"timestamp":"2026-11-22 08:08:08.916 UTC","pid":24685,"error_severity":"LOG","message":"checkpoints are occurring too frequently (3 seconds apart)","backend_type":"checkpointer"}"#;
        assert_eq!(event_head(c, json), Some("too_frequent"));
        let german = "2026-11-22 09:09:05.123 CET [1] LOG:  Checkpoint beginnt: wal";
        assert_eq!(event_head(c, german), Some("checkpoint_start"));
        // A word of the vocabulary in some other text is no message head.
        assert_eq!(event_head(c, "cp: cannot stat '/mnt/server/archivedir/00000002.history': No such file"), None);
        assert_eq!(event_head(c, "we talked about the checkpoint yesterday"), None);
    }

    #[test]
    fn the_first_unmatched_line_is_kept_and_counted_apart_from_unparsed_ones() {
        let c = Catalog::global();
        let mut stats = FrameStats::default();
        stats.misfit(c, 3, "garbage about a checkpoint\n");
        stats.misfit(c, 7, "Nov 22 db1: LOG:  checkpoint starting: time\n");
        stats.misfit(c, 9, "x LOG:  checkpoint starting: wal\n");
        assert_eq!((stats.unparsed, stats.unmatched), (1, 2));
        assert_eq!(stats.first_unmatched, Some((7, "Nov 22 db1: LOG:  checkpoint starting: time".to_string())));
    }
}
