-- The store at scale: a million checkpoint rows (20 clusters
-- of half a year at one checkpoint every 5 minutes) must answer `suggest`,
-- `summary` and `checkpoints` in well under a second.

-- A cluster's checkpoint starts in time order: the sizing model's cycles
-- (store/history.rs) and the start before its window are a range and a
-- seek here, where they were a scan of all the cluster's rows and a sort.
CREATE INDEX checkpoint_cluster_started ON checkpoint(cluster_id, started_at) WHERE started_at IS NOT NULL;

-- Every cluster's checkpoints by time (`walwatch checkpoints --since 1d`
-- without --cluster): a range in time order instead of a scan and a sort.
CREATE INDEX checkpoint_time ON checkpoint(COALESCE(started_at, completed_at));

-- Complete lines waiting for their start (files read newest first): the
-- pairing of every start line looks for one (store/checkpoints.rs,
-- pair_start). Through checkpoint_pairing that read every row of the
-- checkpointer's pid (months of checkpoints of one long-lived process): an
-- import quadratic in the history. The waiting rows are few.
CREATE INDEX checkpoint_waiting ON checkpoint(cluster_id, kind, pid, completed_at) WHERE start_event_id IS NULL;

-- Checkpoint rows counted per cluster, UTC day (of the row's time, the
-- start's or else the complete's), kind and trigger ('' for none): what
-- `walwatch summary` adds up for the whole days of its window, instead of
-- reading every row. Kept in step by the triggers below, whichever code
-- inserts, pairs, forgets or deletes rows.
CREATE TABLE point_tally (
    cluster_id INTEGER NOT NULL,
    day        INTEGER NOT NULL,  -- floor(time in µs / 86 400 000 000)
    kind       TEXT NOT NULL,
    trigger    TEXT NOT NULL,
    started    INTEGER NOT NULL,  -- rows with a start line
    completed  INTEGER NOT NULL,  -- rows with a complete line
    PRIMARY KEY (cluster_id, day, kind, trigger)
) WITHOUT ROWID;

INSERT INTO point_tally(cluster_id, day, kind, trigger, started, completed)
SELECT cluster_id, d, kind, IFNULL(trigger, ''), count(start_event_id), count(complete_event_id)
FROM (SELECT cluster_id, kind, trigger, start_event_id, complete_event_id,
             (IFNULL(COALESCE(started_at, completed_at), 0)
              - (((IFNULL(COALESCE(started_at, completed_at), 0) % 86400000000) + 86400000000) % 86400000000))
             / 86400000000 AS d
      FROM checkpoint)
GROUP BY cluster_id, d, kind, IFNULL(trigger, '');

CREATE TRIGGER point_tally_insert AFTER INSERT ON checkpoint BEGIN
    INSERT INTO point_tally(cluster_id, day, kind, trigger, started, completed)
    VALUES (NEW.cluster_id,
            (IFNULL(COALESCE(NEW.started_at, NEW.completed_at), 0)
             - (((IFNULL(COALESCE(NEW.started_at, NEW.completed_at), 0) % 86400000000) + 86400000000) % 86400000000))
            / 86400000000,
            NEW.kind, IFNULL(NEW.trigger, ''),
            NEW.start_event_id IS NOT NULL, NEW.complete_event_id IS NOT NULL)
    ON CONFLICT DO UPDATE SET started = started + excluded.started, completed = completed + excluded.completed;
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

-- A start paired with a waiting complete, a complete filling a start's row,
-- a forgotten half: the old row's counts leave, the new row's come in.
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
