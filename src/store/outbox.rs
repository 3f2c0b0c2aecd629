//! The delivery queue (table outbox).

use crate::alert::deliver::NewMessage;

/// Queues `messages` inside the caller's transaction (the one that changes
/// the alert), so an alert change and its notification commit together.
/// A message whose Message-ID is already queued is not queued again.
pub fn insert(_tx: &rusqlite::Transaction<'_>, _messages: &[NewMessage]) -> rusqlite::Result<()> {
    todo!("outbox: insert")
}
