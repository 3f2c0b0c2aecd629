-- The tally trigger of an insert (0009_scale.sql) as two statements that
-- cannot abort: the upsert's DO UPDATE always resolves conflicts with ABORT,
-- and a statement that may abort after a trigger has written must keep a
-- statement journal (a copy of every page it changes, to undo them): for an
-- import, about 10 % of its CPU, for the checkpoint insert alone. With this
-- trigger, an `INSERT OR FAIL INTO checkpoint` on a connection without
-- foreign-key checks (an import's batches, store/events.rs) needs none.
-- The counts are those of the upsert: a day's row first made with zeros,
-- then added to.
DROP TRIGGER point_tally_insert;

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
