-- The store's identity: a spool directory of shipped files records the
-- store it belongs to, so two stores never share (and overwrite) one.
CREATE TABLE store_identity (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    token TEXT    NOT NULL
);
INSERT INTO store_identity(id, token) VALUES (1, lower(hex(randomblob(16))));

-- Shipped files whose spool was found damaged (cut, replaced or unreadable
-- outside walwatch): the damaged files are moved aside for inspection and
-- the stream goes on in a new generation. Cleared by `walwatch forget
-- --quarantined`; until then `status` names it.
CREATE TABLE ingest_quarantine (
    id          INTEGER PRIMARY KEY,
    stream_id   INTEGER NOT NULL REFERENCES ingest_stream(id) ON DELETE CASCADE,
    generation  INTEGER NOT NULL,
    reason      TEXT    NOT NULL,
    -- Where the damaged spool and index were moved.
    kept        TEXT    NOT NULL,
    -- Committed bytes of the spool that were not yet read into the store.
    lost_bytes  INTEGER NOT NULL,
    at          INTEGER NOT NULL
);

-- The daemon's listeners ([metrics], [ingest]) as it last saw them: status
-- and the metrics say when one takes no connection.
CREATE TABLE listener (
    name       TEXT    PRIMARY KEY,
    address    TEXT    NOT NULL,
    up         INTEGER NOT NULL,
    -- Why it is down, or what a reload could not apply while it serves on.
    problem    TEXT,
    since      INTEGER NOT NULL,
    open       INTEGER NOT NULL DEFAULT 0,
    accepted   INTEGER NOT NULL DEFAULT 0,
    requests   INTEGER NOT NULL DEFAULT 0,
    -- Refused connections and requests by reason: {"timeout": 3, ...}.
    refused    TEXT    NOT NULL DEFAULT '{}',
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;
