//! The delivery queue (table outbox).
