-- The settings timeline: every value walwatch read for a cluster from its
-- own config ([cluster.settings], source 'config') or from the server's conf
-- files (source 'conf_file'), one row per change, not per read. A NULL value
-- means the source stopped setting the name (line commented out, key removed).
-- The log's `parameter "X" changed to "Y"` lines are not copied here: they
-- are read from `event` (kind 'parameter_changed'), where import put them.

CREATE TABLE setting (
    id         INTEGER PRIMARY KEY,
    cluster_id INTEGER NOT NULL REFERENCES cluster(id),
    name       TEXT NOT NULL,
    value      TEXT,                  -- as PostgreSQL spells it ('1GB', '5min', 'on'); NULL: no longer set
    source     TEXT NOT NULL CHECK (source IN ('config', 'conf_file')),
    path       TEXT,                  -- conf_file: the file that set it (postgresql.conf, an include, auto.conf)
    line       INTEGER,               -- conf_file: its line
    since      INTEGER NOT NULL,      -- when walwatch first read this value (µs since the epoch, UTC)
    UNIQUE (cluster_id, name, source, since)
);
CREATE INDEX setting_cluster_name ON setting(cluster_id, name, since);

-- When each source was last read completely: a log change newer than the
-- last complete read of the conf files wins over them (see settings::current).
CREATE TABLE setting_read (
    cluster_id INTEGER NOT NULL REFERENCES cluster(id),
    source     TEXT NOT NULL CHECK (source IN ('config', 'conf_file')),
    at         INTEGER NOT NULL,
    PRIMARY KEY (cluster_id, source)
);
