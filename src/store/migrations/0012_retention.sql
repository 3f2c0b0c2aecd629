-- Retention: `[store] keep` (default 400 days). The daemon
-- deletes older rows once a day (store/prune.rs) and records here what it
-- did, so that `walwatch status` shows it and `history`/`suggest` can say
-- that a range before `cutoff` is empty because it was pruned, not because
-- nothing happened. One row; absent until the first prune.
CREATE TABLE retention (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    keep_s       INTEGER,            -- the keep the last prune applied, in seconds
    cutoff       INTEGER,            -- rows older than this (µs, UTC) were deleted
    pruned_at    INTEGER,            -- when the last prune finished (wall clock)
    rows         INTEGER NOT NULL DEFAULT 0,  -- rows the last prune deleted
    pruned_total INTEGER NOT NULL DEFAULT 0,  -- rows every prune so far deleted
    failed_at    INTEGER,            -- the last prune that failed, NULL once one succeeds
    error        TEXT
);
