-- Notifications waiting for delivery. A message is rendered once, when it is
-- queued, and keeps its Message-ID, so a crash between the server accepting
-- it and sent_at being written can only re-send the identical message.

CREATE TABLE outbox (
    id              INTEGER PRIMARY KEY,
    alert_id        INTEGER REFERENCES alert(id),   -- NULL for test messages
    notice          TEXT NOT NULL CHECK (notice IN ('firing', 'reminder', 'resolved', 'test')),
    channel         TEXT NOT NULL CHECK (channel IN ('mail', 'webhook')),
    message_id      TEXT NOT NULL UNIQUE,
    payload         TEXT NOT NULL,                  -- the rendered message (RFC 5322 text or JSON)
    created_at      INTEGER NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    last_error      TEXT,
    sent_at         INTEGER
);
CREATE INDEX outbox_pending ON outbox(next_attempt_at) WHERE sent_at IS NULL;
