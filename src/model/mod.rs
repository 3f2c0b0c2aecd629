//! The vocabulary shared by every layer: [`event`] is what a PostgreSQL log
//! can tell about checkpoints, [`alert`] the words of the alerts raised
//! from it. Nothing here depends on another module of walwatch.

pub mod alert;
pub mod event;
