-- The daily digest. The outbox learns a fifth kind of
-- notice: SQLite cannot change a CHECK constraint in place, so the table is
-- rebuilt with the same columns and rows.
CREATE TABLE outbox_rebuilt (
    id              INTEGER PRIMARY KEY,
    alert_id        INTEGER REFERENCES alert(id),   -- NULL for test and digest messages
    notice          TEXT NOT NULL CHECK (notice IN ('firing', 'reminder', 'resolved', 'test', 'digest')),
    channel         TEXT NOT NULL CHECK (channel IN ('mail', 'webhook')),
    message_id      TEXT NOT NULL UNIQUE,
    payload         TEXT NOT NULL,                  -- the rendered message (RFC 5322 text or JSON)
    created_at      INTEGER NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    last_error      TEXT,
    sent_at         INTEGER
);
INSERT INTO outbox_rebuilt SELECT id, alert_id, notice, channel, message_id, payload, created_at, attempts,
    next_attempt_at, last_error, sent_at FROM outbox;
DROP TABLE outbox;
ALTER TABLE outbox_rebuilt RENAME TO outbox;
CREATE INDEX outbox_pending ON outbox(next_attempt_at) WHERE sent_at IS NULL;

-- One row per local day the daemon dealt with: the digest queued for it
-- (its outbox Message-ID), a quiet day not mailed (skip_quiet_days), or the baseline day of a first start (no mail:
-- a daemon started in the afternoon did not watch that day). The queueing
-- and this row commit together, so a day is queued exactly once; the
-- outbox then delivers it at least once with one Message-ID.
CREATE TABLE digest (
    day         TEXT PRIMARY KEY,                   -- YYYY-MM-DD in the digest's zone
    kind        TEXT NOT NULL CHECK (kind IN ('baseline', 'queued', 'skipped')),  -- skipped: a quiet day under skip_quiet_days
    message_id  TEXT,
    subject     TEXT,
    recorded_at INTEGER NOT NULL
);
