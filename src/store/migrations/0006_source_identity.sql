-- One row per log content, in the schema.
--
-- A process looked a source up by fingerprint and, finding none, inserted it
-- in a separate step. Two processes reading one file at once (`walwatch
-- import` of a file the daemon follows, or two daemons) each inserted a row;
-- every event was then stored once per row and every checkpoint counted
-- twice. Lookup and insert now run in one write transaction (write.rs); this
-- migration repairs what was stored before and makes a second row with the
-- same fingerprint impossible.

-- The fingerprinted bytes themselves (the first fp_len bytes, at most 4096).
-- A hash only tells whether the recorded bytes start the file being read.
-- With the bytes, a reader that opened the file while it was still shorter
-- than the recorded fingerprint (another process recorded it a moment later,
-- grown) recognises it as well. NULL for rows recorded before this version:
-- they are recognised by their hash, as before, until the file grows.
ALTER TABLE source ADD COLUMN head BLOB;

-- Repair. Rows of one cluster with the same fingerprint are one source; the
-- oldest row stays. Only exact duplicates can be found here: both racing
-- processes kept recording the fingerprint of what they had read, so once
-- they had read the same first 4 KiB (or the whole, shorter file) their rows
-- carried the same one.
CREATE TEMP TABLE source_twin (dup INTEGER PRIMARY KEY, keep INTEGER NOT NULL);
INSERT INTO source_twin
SELECT s.id, (SELECT min(k.id) FROM source k
              WHERE k.cluster_id = s.cluster_id AND k.fp_len = s.fp_len AND k.fp_hash = s.fp_hash)
FROM source s
WHERE s.fp_len > 0
  AND EXISTS (SELECT 1 FROM source k
              WHERE k.cluster_id = s.cluster_id AND k.fp_len = s.fp_len AND k.fp_hash = s.fp_hash AND k.id < s.id);

-- The same event stored under several rows of one source (same place, same
-- kind): the first stored one stays, the others map to it.
CREATE TEMP TABLE event_twin (dup INTEGER PRIMARY KEY, keep INTEGER NOT NULL);
INSERT INTO event_twin
SELECT id, first FROM (
    SELECT e.id, min(e.id) OVER (PARTITION BY g.keep, e.offset, e.kind, e.nth) AS first
    FROM event e
    JOIN (SELECT dup AS member, keep FROM source_twin
          UNION SELECT keep, keep FROM source_twin) g ON g.member = e.source_id
)
WHERE id <> first;

-- Child-key indexes: deleting the duplicate events below looks up the
-- checkpoint rows that point at them (foreign keys), and so does the repair
-- of those rows; write.rs pairs a complete line with the start before it in
-- the same file through start_event_id.
CREATE INDEX checkpoint_start_event ON checkpoint(start_event_id);
CREATE INDEX checkpoint_complete_event ON checkpoint(complete_event_id);

-- Checkpoint rows point at the events that stay. Each event had been paired
-- once per copy, so one checkpoint is now several rows sharing a start or a
-- complete event, e.g. (start, complete) twice, or (start, complete) beside
-- a lone (start) and a lone (complete).
UPDATE checkpoint SET start_event_id = (SELECT keep FROM event_twin WHERE dup = start_event_id)
WHERE start_event_id IN (SELECT dup FROM event_twin);
UPDATE checkpoint SET complete_event_id = (SELECT keep FROM event_twin WHERE dup = complete_event_id)
WHERE complete_event_id IN (SELECT dup FROM event_twin);

-- Of the rows sharing an event, the one with both halves stays (the oldest
-- such row if several); the others are copies. SQLite collects the rows to
-- delete before deleting any, so every row is judged against all others.
DELETE FROM checkpoint
WHERE cluster_id IN (SELECT s.cluster_id FROM source s JOIN source_twin t ON t.keep = s.id)
  AND (EXISTS (SELECT 1 FROM checkpoint o
               WHERE o.start_event_id = checkpoint.start_event_id AND o.id <> checkpoint.id
                 AND ((o.complete_event_id IS NOT NULL) > (checkpoint.complete_event_id IS NOT NULL)
                      OR ((o.complete_event_id IS NOT NULL) = (checkpoint.complete_event_id IS NOT NULL)
                          AND o.id < checkpoint.id)))
    OR EXISTS (SELECT 1 FROM checkpoint o
               WHERE o.complete_event_id = checkpoint.complete_event_id AND o.id <> checkpoint.id
                 AND ((o.start_event_id IS NOT NULL) > (checkpoint.start_event_id IS NOT NULL)
                      OR ((o.start_event_id IS NOT NULL) = (checkpoint.start_event_id IS NOT NULL)
                          AND o.id < checkpoint.id))));

DELETE FROM event WHERE id IN (SELECT dup FROM event_twin);

-- Events only a duplicate had read (it was ahead) move to the kept row,
-- which also takes the furthest position any of them had reached.
UPDATE event SET source_id = (SELECT keep FROM source_twin WHERE dup = source_id)
WHERE source_id IN (SELECT dup FROM source_twin);
UPDATE source SET (read_to, line, path, dev, ino, size, last_read) = (
    SELECT o.read_to, o.line, o.path, o.dev, o.ino, o.size, o.last_read FROM source o
    WHERE o.id = source.id OR o.id IN (SELECT dup FROM source_twin WHERE keep = source.id)
    ORDER BY o.read_to DESC, o.last_read DESC LIMIT 1)
WHERE id IN (SELECT keep FROM source_twin);
DELETE FROM source WHERE id IN (SELECT dup FROM source_twin);

DROP TABLE source_twin;
DROP TABLE event_twin;

-- The identity itself. An empty source (fp_len 0) has no content to be
-- recognised by and is never looked up; importing an empty file twice may
-- leave two such rows, as before.
CREATE UNIQUE INDEX source_identity ON source(cluster_id, fp_len, fp_hash) WHERE fp_len > 0;
