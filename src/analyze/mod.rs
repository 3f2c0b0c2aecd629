//! From the stored history to conclusions: the max_wal_size suggestion
//! ([`sizing`]), the replay of the logged WAL under other settings
//! ([`whatif`]), the replay speed of crash recoveries ([`recovery`]), the write storm of each checkpoint ([`storm`]), the points
//! of `history` and the time a rule looks at ([`window`]); the alert rules
//! that read them are in `crate::alert`.

pub mod buckets;
pub mod history;
pub mod inputs;
pub mod recovery;
pub mod sizing;
pub mod storm;
pub mod whatif;
pub mod window;
