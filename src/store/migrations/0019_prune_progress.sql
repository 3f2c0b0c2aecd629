-- Rows deleted by prunes whose result is not recorded yet: each batch of a
-- prune adds its rows here in its own transaction, and recording the prune
-- moves them to `rows` and `pruned_total`. A prune killed between batches
-- (kill -9, a crash) or stopped early leaves its committed deletions here,
-- so the next prune reports them instead of 0.
ALTER TABLE retention ADD COLUMN unrecorded INTEGER NOT NULL DEFAULT 0;
