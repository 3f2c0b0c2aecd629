-- Lines a client wrote inside a failed login's log_line_prefix (a user or
-- database name with line breaks): they hold an event's message
-- head but no prefix of their own, so they have no time and are counted per
-- source. `summary`'s `rejected` adds them to the refused records.
ALTER TABLE source ADD COLUMN rejected_lines INTEGER NOT NULL DEFAULT 0;
