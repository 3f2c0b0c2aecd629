//! Finding candidate lines: every language's needles searched at once,
//! handed to scanners in a [`Lexicon`].

use aho_corasick::AhoCorasick;

use crate::catalog::Catalog;

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
    pub fn new(catalog: &'static Catalog) -> Lexicon {
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
pub(crate) struct Needles {
    finder: Finder,
}

enum Finder {
    Teddy(aho_corasick::packed::Searcher),
    Automaton(AhoCorasick),
}

impl Needles {
    /// Builds the finder. Needles are cut at characters that csvlog and
    /// jsonlog escape (quotes, backslashes, newlines), keeping the longest
    /// piece: a piece of a needle still occurs wherever the needle does.
    pub fn new(needles: &[String]) -> Needles {
        let mut pieces: Vec<&str> = needles
            .iter()
            .filter_map(|n| n.split(['"', '\\', '\n', '\t']).max_by_key(|p| p.len()))
            .filter(|p| !p.is_empty())
            .collect();
        pieces.sort_unstable();
        pieces.dedup();
        let teddy = aho_corasick::packed::Config::new().builder().extend(&pieces).build();
        let finder = match teddy {
            Some(searcher) => Finder::Teddy(searcher),
            None => Finder::Automaton(AhoCorasick::new(&pieces).expect("needles form a valid automaton")),
        };
        Needles { finder }
    }

    /// Start offsets of needle occurrences in `hay`, in order.
    pub fn find_iter<'a>(&'a self, hay: &'a [u8]) -> Box<dyn Iterator<Item = usize> + 'a> {
        match &self.finder {
            Finder::Teddy(s) => Box::new(s.find_iter(hay).map(|m| m.start())),
            Finder::Automaton(ac) => Box::new(ac.find_iter(hay).map(|m| m.start())),
        }
    }

    #[cfg(test)]
    pub(super) fn is_match(&self, hay: &[u8]) -> bool {
        self.find_iter(hay).next().is_some()
    }
}
