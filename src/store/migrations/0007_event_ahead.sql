-- Events dated after the moment walwatch read them. A log line is written
-- before it is read, so with one correct clock no event is ever ahead; one
-- that is (a server clock far ahead, a wrong log_timezone, an injected line
-- dated 2099) is kept, but its time must not end an alert window or count
-- as the log's newest event (alert/rules: [alerts.clock_skew] tolerance).
--
-- ahead_us: how far the event's log time was ahead of walwatch's clock when
-- the event was stored (µs); NULL when it was not ahead. The tolerance is
-- applied when reading, so changing it in the config applies to the history.
ALTER TABLE event ADD COLUMN ahead_us INTEGER;

-- Events stored before this column: each was read at or before its source's
-- last_read, so at - last_read is a lower bound of how far ahead it was
-- (never flags one that was not ahead).
UPDATE event SET ahead_us = at - (SELECT s.last_read FROM source s WHERE s.id = event.source_id)
 WHERE at > (SELECT s.last_read FROM source s WHERE s.id = event.source_id);

-- The queries only ever look for the few events ahead by more than the tolerance.
CREATE INDEX event_ahead ON event(cluster_id, ahead_us) WHERE ahead_us IS NOT NULL;
