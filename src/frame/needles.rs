//! Finding candidate lines: every language's needles searched at once,
//! handed to scanners in a [`Lexicon`].

use aho_corasick::AhoCorasick;

use crate::catalog::Catalog;
use crate::frame::lines;

/// What framing knows of PostgreSQL's messages, handed to every scanner by
/// its caller (the catalog sits below framing and is passed in): the
/// catalog (level words in every language) and the candidate finder built
/// from its needles — built once, as a Teddy searcher takes milliseconds
/// and the daemon makes scanners many times a second.
pub struct Lexicon {
    pub(crate) catalog: &'static Catalog,
    pub(crate) needles: Needles,
}

impl Lexicon {
    pub(crate) fn new(catalog: &'static Catalog) -> Lexicon {
        Lexicon { catalog, needles: Needles::new(catalog.needles()) }
    }
}

/// One lexicon for the tests of framing.
#[cfg(test)]
pub(crate) fn test_lexicon() -> &'static Lexicon {
    static LEXICON: std::sync::OnceLock<Lexicon> = std::sync::OnceLock::new();
    LEXICON.get_or_init(|| Lexicon::new(Catalog::global()))
}

/// The candidate finder: all needles of all languages, searched at once with
/// the SIMD "Teddy" algorithm (several GB/s); a plain Aho-Corasick automaton
/// is the fallback on CPUs without SSSE3/AVX2 or for too many needles.
///
/// A busy log is mostly ASCII, and a line of ASCII bytes only can hold none
/// of the needles with other bytes (every translation's): there, a second
/// finder with the ASCII needles alone (few enough for Teddy's fastest,
/// "slim" form: about three times the speed) picks the lines that may hold
/// a needle, and only those are searched with every needle. The positions
/// are exactly those of the one search over everything: no needle spans a
/// line break, so the search starts afresh on every line.
pub(crate) struct Needles {
    finder: Finder,
    ascii: Option<Finder>,
}

enum Finder {
    Teddy(aho_corasick::packed::Searcher),
    Automaton(AhoCorasick),
}

impl Finder {
    fn new(pieces: &[&str]) -> Finder {
        let teddy = aho_corasick::packed::Config::new().builder().extend(pieces).build();
        match teddy {
            Some(searcher) => Finder::Teddy(searcher),
            None => Finder::Automaton(AhoCorasick::new(pieces).expect("needles form a valid automaton")),
        }
    }

    /// Start offsets of occurrences in `hay`, non-overlapping, in order.
    fn find_iter<'a>(&'a self, hay: &'a [u8]) -> Box<dyn Iterator<Item = usize> + 'a> {
        match self {
            Finder::Teddy(s) => Box::new(s.find_iter(hay).map(|m| m.start())),
            Finder::Automaton(ac) => Box::new(ac.find_iter(hay).map(|m| m.start())),
        }
    }
}

/// Bytes of whole lines checked for ASCII at a time: small enough that a
/// line with other bytes (a statement's data) sends little to the full
/// search, large enough that the check runs at memory speed.
const SEGMENT: usize = 64 << 10;

impl Needles {
    /// Builds the finders. Needles are cut at characters that csvlog and
    /// jsonlog escape (quotes, backslashes, newlines), keeping the longest
    /// piece: a piece of a needle still occurs wherever the needle does.
    pub(crate) fn new(needles: &[String]) -> Needles {
        let mut pieces: Vec<&str> = needles
            .iter()
            .filter_map(|n| n.split(['"', '\\', '\n', '\t']).max_by_key(|p| p.len()))
            .filter(|p| !p.is_empty())
            .collect();
        pieces.sort_unstable();
        pieces.dedup();
        let finder = Finder::new(&pieces);
        let ascii: Vec<&str> = pieces.iter().copied().filter(|p| p.is_ascii()).collect();
        // Without SIMD both finders would be automata: nothing to gain.
        let ascii = match (&finder, ascii.is_empty()) {
            (Finder::Teddy(_), false) => Some(Finder::new(&ascii)).filter(|f| matches!(f, Finder::Teddy(_))),
            _ => None,
        };
        Needles { finder, ascii }
    }

    /// Start offsets of needle occurrences in `hay`, in order: those of
    /// one non-overlapping search with every needle over all of `hay`.
    pub(crate) fn hits(&self, hay: &[u8]) -> Vec<usize> {
        self.hits_by(hay, SEGMENT)
    }

    fn hits_by(&self, hay: &[u8], segment: usize) -> Vec<usize> {
        let mut hits = Vec::new();
        let Some(ascii) = &self.ascii else {
            hits.extend(self.finder.find_iter(hay));
            return hits;
        };
        let mut at = 0;
        while at < hay.len() {
            let end = segment_end(hay, at, segment);
            let part = &hay[at..end];
            if part.is_ascii() {
                self.in_lines_with(ascii, part, at, &mut hits);
            } else {
                hits.extend(self.finder.find_iter(part).map(|i| at + i));
            }
            at = end;
        }
        hits
    }

    /// Every needle's hits in the lines of `part` (at `offset` in the
    /// haystack) where the ASCII needles occur.
    fn in_lines_with(&self, ascii: &Finder, part: &[u8], offset: usize, hits: &mut Vec<usize>) {
        let mut done = 0;
        for hit in ascii.find_iter(part) {
            if hit < done {
                continue;
            }
            let start = lines::start_of(part, hit);
            done = lines::end_of(part, start);
            hits.extend(self.finder.find_iter(&part[start..done]).map(|i| offset + start + i));
        }
    }

    #[cfg(test)]
    pub(super) fn is_match(&self, hay: &[u8]) -> bool {
        !self.hits(hay).is_empty()
    }
}

/// The end of the segment starting at `at`: just after the first line
/// break at least `segment` bytes on, or the end of `hay`.
fn segment_end(hay: &[u8], at: usize, segment: usize) -> usize {
    match hay.get(at + segment..).and_then(|rest| memchr::memchr(b'\n', rest)) {
        Some(i) => at + segment + i + 1,
        None => hay.len(),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// One search with every needle over the whole haystack: what
    /// [`Needles::hits`] must return.
    fn one_search(n: &Needles, hay: &[u8]) -> Vec<usize> {
        n.finder.find_iter(hay).collect()
    }

    const LINES: &[&str] = &[
        "2026-11-22 08:04:23.497 UTC [21760] LOG:  checkpoint starting: wal",
        "2026-11-22 08:04:23.497 UTC [21760] LOG:  Checkpoint beginnt: Zeit",
        "2026-11-22 08:04:23.497 UTC [21760] LOG:  起動時に 重新 据库系统 크포인트 시작",
        "2026-11-22 08:04:23.497 UTC [21760] LOG:  statement: SELECT 'données' FROM t",
        "2026-11-22 08:04:23.497 UTC [21760] LOG:  statement: UPDATE pgbench_accounts SET abalance = 1",
        "\tcontinuation with heckpointheckpoint and restrest",
        "parameter \"max_wal_size\" changed to \"64MB\"",
        "Parameter »max_wal_size« geändert",
        "",
        "\r",
        "ПараметрыСервер ен то ის ტრ ポイント",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn hits_are_those_of_one_search_over_everything(
            picks in proptest::collection::vec((0..LINES.len(), 0usize..4), 0..60),
            segment in 1usize..300,
        ) {
            let n = Needles::new(crate::catalog::Catalog::global().needles());
            let mut hay = Vec::new();
            for (line, cut) in picks {
                // Lines cut short too, so that needles are split across lines.
                let text = LINES[line].as_bytes();
                hay.extend_from_slice(&text[..text.len() - text.len() * cut / 8]);
                hay.push(b'\n');
            }
            prop_assert_eq!(n.hits_by(&hay, segment), one_search(&n, &hay));
        }
    }

    /// Every language's needles stay few enough for Teddy where the CPU
    /// runs it (more, and the search falls back to an automaton several
    /// times slower), and the ASCII ones get their own Teddy.
    #[test]
    fn the_ascii_finder_is_built_where_teddy_runs() {
        let n = Needles::new(crate::catalog::Catalog::global().needles());
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("ssse3") {
            assert!(matches!(n.finder, Finder::Teddy(_)), "every needle in one Teddy");
        }
        if matches!(n.finder, Finder::Teddy(_)) {
            assert!(matches!(n.ascii, Some(Finder::Teddy(_))));
        }
    }
}
