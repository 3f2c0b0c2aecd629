-- A smaller store. At a million checkpoints (two events each) the store
-- held 613 bytes per checkpoint, 455 after this step; what went:
--
-- * every checkpoint and restartpoint event kept its line's fields as JSON
--   (flags; distance and estimate; truncated), which its `checkpoint` row
--   holds too and no query read from the event: now '{}', like the events
--   that have no fields;
-- * checkpoint_cluster_started (cluster, start time) duplicated the order
--   of checkpoint_cluster_time (cluster, start time or else complete time),
--   which the sizing model's queries now read instead;
-- * the events' unique constraint (source, offset, kind, nth) kept every
--   kind's name in its index: now an index of (source, offset, nth), the
--   insert comparing the kind in the row it finds (store/batch.rs);
-- * rows and indexes grown one insert at a time, in pages left part empty
--   by splits: the two tables are rebuilt and their indexes made after the
--   copy, full.
--
-- One index comes: checkpoint_truncated, of the rows cut short only.
--
-- The rows' meaning is unchanged: same ids (checkpoint rows point at their
-- events by id), same values but for the JSON said above.

-- The tables are rebuilt under new names and renamed back; the events'
-- table is renamed last, so that the rebuilt checkpoint table's foreign
-- keys, written against event_compact, follow it to `event`.
CREATE TABLE event_compact (
    id         INTEGER PRIMARY KEY,
    cluster_id INTEGER NOT NULL REFERENCES cluster(id),
    source_id  INTEGER NOT NULL REFERENCES source(id),
    offset     INTEGER NOT NULL,
    line       INTEGER NOT NULL,
    at         INTEGER NOT NULL,
    pid        INTEGER,
    kind       TEXT NOT NULL,
    nth        INTEGER NOT NULL DEFAULT 0,  -- several rejections can share one record
    data       TEXT NOT NULL DEFAULT '{}',  -- kind-specific fields as JSON; '{}' for checkpoint lines
    ahead_us   INTEGER
);
INSERT INTO event_compact(id, cluster_id, source_id, offset, line, at, pid, kind, nth, data, ahead_us)
SELECT id, cluster_id, source_id, offset, line, at, pid, kind, nth,
       CASE WHEN kind IN ('checkpoint_start', 'checkpoint_complete', 'restartpoint_start', 'restartpoint_complete')
            THEN '{}' ELSE data END,
       ahead_us
FROM event ORDER BY id;

CREATE TABLE checkpoint_compact (
    id                   INTEGER PRIMARY KEY,
    cluster_id           INTEGER NOT NULL REFERENCES cluster(id),
    kind                 TEXT NOT NULL CHECK (kind IN ('checkpoint', 'restartpoint')),
    pid                  INTEGER,
    pairable             INTEGER NOT NULL DEFAULT 1,
    start_event_id       INTEGER REFERENCES event_compact(id),
    complete_event_id    INTEGER REFERENCES event_compact(id),
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
    redo_lsn             TEXT,
    truncated            INTEGER NOT NULL DEFAULT 0
);
INSERT INTO checkpoint_compact
SELECT id, cluster_id, kind, pid, pairable, start_event_id, complete_event_id, started_at, completed_at, flags,
       trigger, buffers_written, buffers_pct, slru_buffers_written, wal_files_added, wal_files_removed,
       wal_files_recycled, write_s, sync_s, total_s, sync_files, sync_longest_s, sync_average_s, distance_kb,
       estimate_kb, lsn, redo_lsn, truncated
FROM checkpoint ORDER BY id;

-- Dropping a table drops its indexes and triggers; the tally
-- (point_tally) stays as it is, its rows already counting these.
DROP TABLE checkpoint;
DROP TABLE event;
ALTER TABLE event_compact RENAME TO event;
ALTER TABLE checkpoint_compact RENAME TO checkpoint;

-- An event's place: the unique constraint (source_id, offset, kind, nth)
-- repeated each event's kind (up to 21 bytes) in the index. A record has at
-- most one event per nth, so the kind is left out of the index; the insert
-- (store/batch.rs) compares it in the row, keeping the rule.
CREATE INDEX event_place ON event(source_id, offset, nth);
CREATE INDEX event_cluster_kind_at ON event(cluster_id, kind, at);
CREATE INDEX event_ahead ON event(cluster_id, ahead_us) WHERE ahead_us IS NOT NULL;

CREATE INDEX checkpoint_cluster_time ON checkpoint(cluster_id, COALESCE(started_at, completed_at));
CREATE INDEX checkpoint_time ON checkpoint(COALESCE(started_at, completed_at));
CREATE INDEX checkpoint_pairing ON checkpoint(cluster_id, kind, pid, started_at);
CREATE INDEX checkpoint_open ON checkpoint(cluster_id, kind, pid, completed_at) WHERE pairable = 1;
CREATE INDEX checkpoint_waiting ON checkpoint(cluster_id, kind, pid, completed_at) WHERE start_event_id IS NULL;
CREATE INDEX checkpoint_start_event ON checkpoint(start_event_id);
CREATE INDEX checkpoint_complete_event ON checkpoint(complete_event_id);
-- The few rows read from a cut complete line: `summary` counts them, which
-- without this read every checkpoint row (34 000 pages at a million rows,
-- most of its time).
CREATE INDEX checkpoint_truncated ON checkpoint(cluster_id) WHERE truncated = 1;

-- The tally's triggers, as migrations 0009 and 0015 left them.
CREATE TRIGGER point_tally_insert AFTER INSERT ON checkpoint BEGIN
    INSERT INTO point_tally(cluster_id, day, kind, trigger, started, completed)
    VALUES (NEW.cluster_id,
            (IFNULL(COALESCE(NEW.started_at, NEW.completed_at), 0)
             - (((IFNULL(COALESCE(NEW.started_at, NEW.completed_at), 0) % 86400000000) + 86400000000) % 86400000000))
            / 86400000000,
            NEW.kind, IFNULL(NEW.trigger, ''), 0, 0)
    ON CONFLICT DO NOTHING;
    UPDATE point_tally
       SET started = started + (NEW.start_event_id IS NOT NULL),
           completed = completed + (NEW.complete_event_id IS NOT NULL)
     WHERE cluster_id = NEW.cluster_id AND kind = NEW.kind AND trigger = IFNULL(NEW.trigger, '')
       AND day = (IFNULL(COALESCE(NEW.started_at, NEW.completed_at), 0)
                  - (((IFNULL(COALESCE(NEW.started_at, NEW.completed_at), 0) % 86400000000) + 86400000000) % 86400000000))
                 / 86400000000;
END;

CREATE TRIGGER point_tally_delete AFTER DELETE ON checkpoint BEGIN
    UPDATE point_tally
       SET started = started - (OLD.start_event_id IS NOT NULL),
           completed = completed - (OLD.complete_event_id IS NOT NULL)
     WHERE cluster_id = OLD.cluster_id AND kind = OLD.kind AND trigger = IFNULL(OLD.trigger, '')
       AND day = (IFNULL(COALESCE(OLD.started_at, OLD.completed_at), 0)
                  - (((IFNULL(COALESCE(OLD.started_at, OLD.completed_at), 0) % 86400000000) + 86400000000) % 86400000000))
                 / 86400000000;
END;

CREATE TRIGGER point_tally_update
AFTER UPDATE OF cluster_id, kind, trigger, started_at, completed_at, start_event_id, complete_event_id ON checkpoint
BEGIN
    UPDATE point_tally
       SET started = started - (OLD.start_event_id IS NOT NULL),
           completed = completed - (OLD.complete_event_id IS NOT NULL)
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
            NEW.start_event_id IS NOT NULL, NEW.complete_event_id IS NOT NULL)
    ON CONFLICT DO UPDATE SET started = started + excluded.started, completed = completed + excluded.completed;
END;


-- The old tables' pages are free now (about half the file at a million
-- checkpoints): a store made with auto_vacuum = INCREMENTAL (every store
-- walwatch created since retention came) gives them back to the file system
-- at the end of the migration (store/mod.rs, give_back_free_pages); an older
-- one keeps its size and fills them with new rows.
