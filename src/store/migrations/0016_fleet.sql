-- The store's identity: a spool directory of shipped files records the
-- store it belongs to, so two stores never share (and overwrite) one.
CREATE TABLE store_identity (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    token TEXT    NOT NULL
);
INSERT INTO store_identity(id, token) VALUES (1, lower(hex(randomblob(16))));

-- What went wrong with a shipped file that walwatch could not prevent:
-- its spool cut, replaced or removed outside walwatch ('spool': the files
-- are moved aside for inspection and the stream goes on in a new
-- generation), or bytes of the log the agent never shipped ('gap': a line
-- longer than its max_line_bytes, a filter). `status` names each until
-- `walwatch forget --damaged` says it was looked at.
CREATE TABLE ingest_damage (
    id          INTEGER PRIMARY KEY,
    stream_id   INTEGER NOT NULL REFERENCES ingest_stream(id) ON DELETE CASCADE,
    generation  INTEGER NOT NULL,
    kind        TEXT    NOT NULL CHECK (kind IN ('spool', 'gap')),
    reason      TEXT    NOT NULL,
    -- 'spool': where the damaged spool and index were moved.
    kept        TEXT,
    -- 'spool': committed bytes not yet read into the store; 'gap': the
    -- bytes not shipped.
    lost_bytes  INTEGER NOT NULL,
    -- 'gap': where in the shipped file they start.
    at_offset   INTEGER,
    at          INTEGER NOT NULL
);

-- Where the line after the last one taken starts (its offset, length and
-- newline): a line shipped further on means bytes were not shipped.
ALTER TABLE ingest_stream ADD COLUMN next_offset INTEGER;

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
