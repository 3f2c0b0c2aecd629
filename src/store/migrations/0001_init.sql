-- The first schema: what was read (source), what it said (event), and the
-- checkpoint history that pairs start and complete lines (checkpoint).
-- All times are UTC, stored as microseconds since the Unix epoch so range
-- queries are integer comparisons.

CREATE TABLE cluster (
    id   INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);

-- One row per distinct log content. A source is recognised again by the
-- fingerprint of its first fp_len bytes, whatever its name is now.
CREATE TABLE source (
    id         INTEGER PRIMARY KEY,
    cluster_id INTEGER NOT NULL REFERENCES cluster(id),
    path       TEXT NOT NULL,
    dev        INTEGER,
    ino        INTEGER,
    fp_len     INTEGER NOT NULL,
    fp_hash    INTEGER NOT NULL,
    format     TEXT NOT NULL,
    prefix     TEXT,
    size       INTEGER,
    read_to    INTEGER NOT NULL DEFAULT 0,  -- byte offset reached (decompressed)
    line       INTEGER NOT NULL DEFAULT 1,  -- number of the line starting at read_to
    first_read INTEGER NOT NULL,
    last_read  INTEGER NOT NULL
);
CREATE INDEX source_cluster ON source(cluster_id);

-- Every recognised (or rejected) record, with where it was found.
CREATE TABLE event (
    id         INTEGER PRIMARY KEY,
    cluster_id INTEGER NOT NULL REFERENCES cluster(id),
    source_id  INTEGER NOT NULL REFERENCES source(id),
    offset     INTEGER NOT NULL,
    line       INTEGER NOT NULL,
    at         INTEGER NOT NULL,
    pid        INTEGER,
    kind       TEXT NOT NULL,
    nth        INTEGER NOT NULL DEFAULT 0,  -- several rejections can share one record
    data       TEXT NOT NULL DEFAULT '{}',  -- kind-specific fields as JSON
    UNIQUE (source_id, offset, kind, nth)
);
CREATE INDEX event_cluster_kind_at ON event(cluster_id, kind, at);

-- One row per checkpoint or restartpoint: a start line, a complete line,
-- or both (same pid, in order). pairable = 1 only while a row still waits
-- for its other half; it drops to 0 once paired, and for every open row
-- when the server restarts, so a reused pid can never complete a checkpoint
-- of an earlier server run.
CREATE TABLE checkpoint (
    id                   INTEGER PRIMARY KEY,
    cluster_id           INTEGER NOT NULL REFERENCES cluster(id),
    kind                 TEXT NOT NULL CHECK (kind IN ('checkpoint', 'restartpoint')),
    pid                  INTEGER,
    pairable             INTEGER NOT NULL DEFAULT 1,
    start_event_id       INTEGER REFERENCES event(id),
    complete_event_id    INTEGER REFERENCES event(id),
    started_at           INTEGER,
    completed_at         INTEGER,
    flags                TEXT,
    trigger              TEXT,
    buffers_written      INTEGER,
    buffers_pct          REAL,
    slru_buffers_written INTEGER,
    wal_files_added      INTEGER,
    wal_files_removed    INTEGER,
    wal_files_recycled   INTEGER,
    write_s              REAL,
    sync_s               REAL,
    total_s              REAL,
    sync_files           INTEGER,
    sync_longest_s       REAL,
    sync_average_s       REAL,
    distance_kb          INTEGER,
    estimate_kb          INTEGER,
    lsn                  TEXT,
    redo_lsn             TEXT
);
CREATE INDEX checkpoint_cluster_time ON checkpoint(cluster_id, COALESCE(started_at, completed_at));
CREATE INDEX checkpoint_pairing ON checkpoint(cluster_id, kind, pid, started_at);
CREATE INDEX checkpoint_open ON checkpoint(cluster_id, kind, pid, completed_at) WHERE pairable = 1;
