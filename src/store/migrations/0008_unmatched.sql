-- Never silently empty.
--
-- Lines that look like events (they hold a checkpoint, restartpoint, … message
-- head) but that the source's format or log_line_prefix did not fit: nothing
-- can be said about who wrote them, so they are neither events nor
-- rejections (which the trust rule proved a client session wrote). Counted
-- per source, as such a line has no time that could be read.
ALTER TABLE source ADD COLUMN unmatched INTEGER NOT NULL DEFAULT 0;

-- The `format` and `prefix` of the cluster's [[cluster]] table the daemon
-- last followed it with: when they change, the files were read the wrong
-- way, and the daemon reads them again (it forgets what it read of them).
-- NULL until a daemon has followed the cluster.
ALTER TABLE cluster ADD COLUMN follow_format TEXT;
ALTER TABLE cluster ADD COLUMN follow_prefix TEXT;
