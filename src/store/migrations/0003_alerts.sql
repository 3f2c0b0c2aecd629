-- Alerts and their lifecycle: firing -> notified -> resolved. At most one
-- open (not resolved) alert per (cluster, rule, key), so re-evaluating the
-- rules after a restart finds the open alert instead of firing it again.

CREATE TABLE alert (
    id          INTEGER PRIMARY KEY,
    cluster_id  INTEGER NOT NULL REFERENCES cluster(id),
    rule        TEXT NOT NULL,               -- stable rule id, e.g. forced_checkpoints
    key         TEXT NOT NULL DEFAULT '',    -- separates several alerts of one rule (e.g. the setting name)
    severity    TEXT NOT NULL CHECK (severity IN ('critical', 'warning', 'info')),
    state       TEXT NOT NULL CHECK (state IN ('firing', 'notified', 'resolved')),
    summary     TEXT NOT NULL,
    details     TEXT NOT NULL DEFAULT '{}',  -- JSON: the rule's figures, the suggestion and its SQL
    evidence_at INTEGER,                     -- log time of the latest evidence
    fired_at    INTEGER NOT NULL,            -- wall-clock times from here on
    updated_at  INTEGER NOT NULL,
    notified_at INTEGER,
    reminded_at INTEGER,
    resolved_at INTEGER,
    acked_at    INTEGER,
    queued_at   INTEGER,                     -- when the firing notice was queued; NULL while silenced
    reminders   INTEGER NOT NULL DEFAULT 0   -- reminder notices queued so far (the next one's sequence - 1)
);
CREATE UNIQUE INDEX alert_open ON alert(cluster_id, rule, key) WHERE state <> 'resolved';
CREATE INDEX alert_cluster_fired ON alert(cluster_id, fired_at);

-- `walwatch alerts silence RULE [--cluster C] --for 2h`: no notification
-- for that rule (on that cluster, or all when cluster_id is NULL) until `until`.
CREATE TABLE silence (
    id         INTEGER PRIMARY KEY,
    cluster_id INTEGER REFERENCES cluster(id),
    rule       TEXT NOT NULL,
    until      INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
