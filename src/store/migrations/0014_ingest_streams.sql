-- The files Vector agents ship to a central walwatch ([ingest]):
-- one row per (host, file) as the agent names them. Each is kept in a spool
-- file of its own (the lines in their order, read by the same pipeline as a
-- local log) with an index of (offset, hash) per line, so that a batch sent
-- again is recognised line by line. A file written anew under the same path
-- (copytruncate) starts a new generation: a new spool, offsets from zero.
CREATE TABLE ingest_stream (
    id           INTEGER PRIMARY KEY,
    host         TEXT    NOT NULL,
    file         TEXT    NOT NULL,
    cluster_id   INTEGER NOT NULL REFERENCES cluster(id),
    generation   INTEGER NOT NULL DEFAULT 0,
    -- One past the largest offset taken in this generation: a line below it
    -- was either taken (its index entry says so) or belongs to new content.
    accepted_end INTEGER NOT NULL DEFAULT 0,
    -- What of the spool and its index is committed: bytes past these were
    -- written by a request that never committed and are cut off.
    spool_len    INTEGER NOT NULL DEFAULT 0,
    index_len    INTEGER NOT NULL DEFAULT 0,
    lines        INTEGER NOT NULL DEFAULT 0,
    duplicates   INTEGER NOT NULL DEFAULT 0,
    last_batch_at INTEGER,
    UNIQUE (host, file)
);
