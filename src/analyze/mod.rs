//! From the stored history to conclusions: the max_wal_size suggestion
//! ([`sizing`]), the points of `history` and the time a rule looks at
//! ([`window`]); the alert rules that read them are in `crate::alert`.

pub mod buckets;
pub mod history;
pub mod sizing;
pub mod storm;
pub mod window;
