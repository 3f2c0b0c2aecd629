-- A checkpoint row holds the places of its two lines. Until now each
-- checkpoint and restartpoint line was also a row of `event` (its source,
-- offset, line number, time, pid, kind) with two index entries, and the
-- checkpoint row pointed at it by id through two more indexes: 241 of the
-- 455 bytes a checkpoint took at a million checkpoints, all to say where
-- two lines were, which the row's own time, pid and kind already half said.
--
-- Now the row keeps, for each line, its source, byte offset, line number
-- and how far its time was ahead of walwatch's clock when read
-- (start_ahead_us, complete_ahead_us: NULL when not ahead, as
-- event.ahead_us), and `event` keeps the other kinds only. A line is
-- stored once at its place: the indexes checkpoint_start_place and
-- checkpoint_complete_place (source, offset) answer "is this line stored?"
-- and "which lines came from this file from here on?" (a rewind, `forget`).
--
-- Also gone:
-- * checkpoint_pairing (cluster, kind, pid, start): the pairing's questions
--   are ranges of checkpoint_cluster_time, whose time is the start when
--   there is one;
-- * checkpoint_time (every cluster's rows by time): `checkpoints` without
--   --cluster reads each cluster's range of checkpoint_cluster_time and
--   merges them in time order; checkpoint_cluster_completed takes its place
--   for the questions asked of complete lines by time.
--
-- Row ids: a row whose complete line arrives after it was stored (the
-- daemon reads a start, then minutes later its complete) is stored again
-- under a new id, so that rows completed since id N are the rows above N
-- (the metrics read them incrementally; the complete line's event id did
-- that before).

CREATE TABLE checkpoint_lines (
    id                   INTEGER PRIMARY KEY,
    cluster_id           INTEGER NOT NULL REFERENCES cluster(id),
    kind                 TEXT NOT NULL CHECK (kind IN ('checkpoint', 'restartpoint')),
    pid                  INTEGER,
    pairable             INTEGER NOT NULL DEFAULT 1,
    started_at           INTEGER,
    completed_at         INTEGER,
    -- The start line's place (all NULL without one) and the complete's.
    start_source_id      INTEGER REFERENCES source(id),
    start_offset         INTEGER,
    start_line           INTEGER,
    start_ahead_us       INTEGER,
    complete_source_id   INTEGER REFERENCES source(id),
    complete_offset      INTEGER,
    complete_line        INTEGER,
    complete_ahead_us    INTEGER,
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
    redo_lsn             TEXT,
    truncated            INTEGER NOT NULL DEFAULT 0
);
INSERT INTO checkpoint_lines
SELECT k.id, k.cluster_id, k.kind, k.pid, k.pairable, k.started_at, k.completed_at,
       s.source_id, s.offset, s.line, s.ahead_us, c.source_id, c.offset, c.line, c.ahead_us,
       k.flags, k.trigger, k.buffers_written, k.buffers_pct, k.slru_buffers_written, k.wal_files_added,
       k.wal_files_removed, k.wal_files_recycled, k.write_s, k.sync_s, k.total_s, k.sync_files,
       k.sync_longest_s, k.sync_average_s, k.distance_kb, k.estimate_kb, k.lsn, k.redo_lsn, k.truncated
FROM checkpoint k
LEFT JOIN event s ON s.id = k.start_event_id
LEFT JOIN event c ON c.id = k.complete_event_id
ORDER BY k.id;

-- The tally counts rows with a start and with a complete line: the same
-- rows as before, so its counts stay; its triggers go with the old table.
DROP TABLE checkpoint;
ALTER TABLE checkpoint_lines RENAME TO checkpoint;

-- The other events, copied into a table of their own: deleted in place,
-- the checkpoint lines would leave most event pages part empty (a fleet's
-- central kept 59 % of its event table unused), which no incremental
-- vacuum gives back. Same ids, same columns; its indexes made whole after.
CREATE TABLE event_kept (
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
    ahead_us   INTEGER
);
INSERT INTO event_kept(id, cluster_id, source_id, offset, line, at, pid, kind, nth, data, ahead_us)
SELECT id, cluster_id, source_id, offset, line, at, pid, kind, nth, data, ahead_us FROM event
 WHERE kind NOT IN ('checkpoint_start', 'checkpoint_complete', 'restartpoint_start', 'restartpoint_complete')
 ORDER BY id;
DROP TABLE event;
ALTER TABLE event_kept RENAME TO event;
CREATE INDEX event_place ON event(source_id, offset, nth);
CREATE INDEX event_cluster_kind_at ON event(cluster_id, kind, at);
CREATE INDEX event_ahead ON event(cluster_id, ahead_us) WHERE ahead_us IS NOT NULL;

CREATE INDEX checkpoint_cluster_time ON checkpoint(cluster_id, COALESCE(started_at, completed_at));
CREATE INDEX checkpoint_cluster_completed ON checkpoint(cluster_id, completed_at) WHERE completed_at IS NOT NULL;
CREATE INDEX checkpoint_start_place ON checkpoint(start_source_id, start_offset) WHERE start_source_id IS NOT NULL;
CREATE INDEX checkpoint_complete_place ON checkpoint(complete_source_id, complete_offset)
    WHERE complete_source_id IS NOT NULL;
CREATE INDEX checkpoint_open ON checkpoint(cluster_id, kind, pid, completed_at) WHERE pairable = 1;
CREATE INDEX checkpoint_waiting ON checkpoint(cluster_id, kind, pid, completed_at) WHERE start_source_id IS NULL;
CREATE INDEX checkpoint_truncated ON checkpoint(cluster_id) WHERE truncated = 1;
-- The few rows with a line dated ahead of walwatch's clock (see event_ahead).
CREATE INDEX checkpoint_ahead ON checkpoint(cluster_id)
    WHERE start_ahead_us IS NOT NULL OR complete_ahead_us IS NOT NULL;

CREATE TRIGGER point_tally_insert AFTER INSERT ON checkpoint BEGIN
    INSERT INTO point_tally(cluster_id, day, kind, trigger, started, completed)
    VALUES (NEW.cluster_id,
            (IFNULL(COALESCE(NEW.started_at, NEW.completed_at), 0)
             - (((IFNULL(COALESCE(NEW.started_at, NEW.completed_at), 0) % 86400000000) + 86400000000) % 86400000000))
            / 86400000000,
            NEW.kind, IFNULL(NEW.trigger, ''), 0, 0)
    ON CONFLICT DO NOTHING;
    UPDATE point_tally
       SET started = started + (NEW.start_source_id IS NOT NULL),
           completed = completed + (NEW.complete_source_id IS NOT NULL)
     WHERE cluster_id = NEW.cluster_id AND kind = NEW.kind AND trigger = IFNULL(NEW.trigger, '')
       AND day = (IFNULL(COALESCE(NEW.started_at, NEW.completed_at), 0)
                  - (((IFNULL(COALESCE(NEW.started_at, NEW.completed_at), 0) % 86400000000) + 86400000000) % 86400000000))
                 / 86400000000;
END;

CREATE TRIGGER point_tally_delete AFTER DELETE ON checkpoint BEGIN
    UPDATE point_tally
       SET started = started - (OLD.start_source_id IS NOT NULL),
           completed = completed - (OLD.complete_source_id IS NOT NULL)
     WHERE cluster_id = OLD.cluster_id AND kind = OLD.kind AND trigger = IFNULL(OLD.trigger, '')
       AND day = (IFNULL(COALESCE(OLD.started_at, OLD.completed_at), 0)
                  - (((IFNULL(COALESCE(OLD.started_at, OLD.completed_at), 0) % 86400000000) + 86400000000) % 86400000000))
                 / 86400000000;
END;

CREATE TRIGGER point_tally_update
AFTER UPDATE OF cluster_id, kind, trigger, started_at, completed_at, start_source_id, complete_source_id ON checkpoint
BEGIN
    UPDATE point_tally
       SET started = started - (OLD.start_source_id IS NOT NULL),
           completed = completed - (OLD.complete_source_id IS NOT NULL)
     WHERE cluster_id = OLD.cluster_id AND kind = OLD.kind AND trigger = IFNULL(OLD.trigger, '')
       AND day = (IFNULL(COALESCE(OLD.started_at, OLD.completed_at), 0)
                  - (((IFNULL(COALESCE(OLD.started_at, OLD.completed_at), 0) % 86400000000) + 86400000000) % 86400000000))
                 / 86400000000;
    INSERT INTO point_tally(cluster_id, day, kind, trigger, started, completed)
    VALUES (NEW.cluster_id,
            (IFNULL(COALESCE(NEW.started_at, NEW.completed_at), 0)
             - (((IFNULL(COALESCE(NEW.started_at, NEW.completed_at), 0) % 86400000000) + 86400000000) % 86400000000))
            / 86400000000,
            NEW.kind, IFNULL(NEW.trigger, ''),
            NEW.start_source_id IS NOT NULL, NEW.complete_source_id IS NOT NULL)
    ON CONFLICT DO UPDATE SET started = started + excluded.started, completed = completed + excluded.completed;
END;

-- Every line stored, as `event` held them before: the events, and the
-- lines of each checkpoint row under the kind names events had. For reading
-- the store by hand (sqlite3); walwatch's queries read the tables.
CREATE VIEW line AS
SELECT id AS event_id, cluster_id, source_id, offset, line, at, pid, kind, nth, data, ahead_us FROM event
UNION ALL
SELECT NULL, cluster_id, start_source_id, start_offset, start_line, started_at, pid, kind || '_start', 0, '{}',
       start_ahead_us
FROM checkpoint WHERE start_source_id IS NOT NULL
UNION ALL
SELECT NULL, cluster_id, complete_source_id, complete_offset, complete_line, completed_at, pid, kind || '_complete', 0,
       '{}', complete_ahead_us
FROM checkpoint WHERE complete_source_id IS NOT NULL;

-- The old table's pages and the deleted events' are given back to the file
-- system at the end of the migration where the store allows it (store/mod.rs).
