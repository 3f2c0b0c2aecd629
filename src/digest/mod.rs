//! The daily digest: one mail a day covering the previous
//! local day for every cluster.
//!
//! [`schedule`] decides which day is due; [`report`] reads that day from
//! the store (the numbers are `walwatch history --by day`'s), [`bursts`]
//! finds forced checkpoints that recur at the same hours; [`render`] makes
//! the mail; [`queue`] records the day and queues the mail in the outbox in
//! one transaction, so each day is queued once and delivered by the alert
//! mails' sender (retries, stable Message-ID).

pub mod bursts;
pub mod chart;
pub mod queue;
pub mod render;
pub mod report;
pub mod schedule;
