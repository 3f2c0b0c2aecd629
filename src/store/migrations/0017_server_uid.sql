-- The uid the cluster's server runs as, as journald's `_UID` of the first
-- event walwatch accepted from a journal export of it (journald takes it from
-- the socket's credentials; the sender cannot choose it). An entry sent by
-- another uid is a local user's `logger -t postgres`, refused (ingest/batch.rs).
-- NULL until such a log is read; cleared when the cluster's last source is
-- forgotten (store/forget.rs).
ALTER TABLE cluster ADD COLUMN server_uid INTEGER;
