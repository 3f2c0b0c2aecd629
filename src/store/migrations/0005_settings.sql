-- The settings timeline: every value learnt for a cluster, from which source
-- and since when. Log-derived changes (`parameter "X" changed to "Y"`) also
-- stay in `event`; this table is what `walwatch settings` and the advice read.

CREATE TABLE setting (
    id         INTEGER PRIMARY KEY,
    cluster_id INTEGER NOT NULL REFERENCES cluster(id),
    name       TEXT NOT NULL,
    value      TEXT NOT NULL,         -- as PostgreSQL spells it ('1GB', '5min', 'on')
    source     TEXT NOT NULL,         -- config | conf_file | log
    origin     TEXT,                  -- file:line, or the event id
    since      INTEGER NOT NULL,      -- log time of the change, or when the file was read
    UNIQUE (cluster_id, name, source, since)
);
CREATE INDEX setting_cluster_name ON setting(cluster_id, name, since);
