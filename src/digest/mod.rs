//! The daily digest (issue 12 §2): one mail a day covering the previous
//! local day for every cluster. [`schedule`] decides which day is due.

pub mod chart;
pub mod schedule;
