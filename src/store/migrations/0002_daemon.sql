-- The daemon's heartbeat and what it could not read, so that
-- `walwatch status` (another process) can tell whether the daemon runs
-- and what is wrong without talking to it.

CREATE TABLE daemon (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    pid          INTEGER NOT NULL,
    started_at   INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL,
    interval_ms  INTEGER NOT NULL   -- heartbeats come at least this often
);

-- Problems with a followed path (unreadable, vanished glob, …), per cluster.
CREATE TABLE file_problem (
    cluster_id INTEGER NOT NULL REFERENCES cluster(id),
    path       TEXT NOT NULL,
    problem    TEXT NOT NULL,
    seen_at    INTEGER NOT NULL,
    PRIMARY KEY (cluster_id, path)
);
