//! From the stored history to conclusions: the max_wal_size suggestion
//! ([`sizing`]), the replay of the logged WAL under other settings
//! ([`whatif`]) and the alert rules ([`rules`]).

pub mod buckets;
pub mod history;
pub mod rules;
pub mod sizing;
pub mod whatif;
pub mod window;
