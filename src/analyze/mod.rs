//! From the stored history to conclusions: the max_wal_size suggestion
//! ([`sizing`]), the replay of the logged WAL under other settings
//! ([`whatif`]), the replay speed of crash recoveries ([`recovery`]), the write storm of each checkpoint ([`storm`]), the points
//! of `history` and the time a rule looks at ([`window`]); the alert rules
//! that read them are in `crate::alert`.

pub(crate) mod buckets;
pub(crate) mod history;
pub(crate) mod inputs;
pub(crate) mod recovery;
pub(crate) mod sizing;
pub(crate) mod storm;
pub(crate) mod whatif;
pub(crate) mod window;
