-- How many times `walwatch forget` (or a changed format or prefix setting)
-- forgot sources of the cluster. A running daemon keeps, in memory, which
-- files it has read to their end and does not open them again until they
-- change: it compares this count at every round, and when it moved, reads
-- every file again from the position the store now has for it (the start,
-- for a forgotten one).
ALTER TABLE cluster ADD COLUMN forgets INTEGER NOT NULL DEFAULT 0;
