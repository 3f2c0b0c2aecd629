//! From the stored history to conclusions: the max_wal_size suggestion
//! ([`sizing`]) and the alert rules ([`rules`]).

pub mod buckets;
pub mod history;
pub mod rules;
pub mod sizing;
pub mod storm;
pub mod window;
