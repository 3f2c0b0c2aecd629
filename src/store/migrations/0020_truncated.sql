-- A checkpoint whose complete line was read cut short (a pager's `>` at the
-- width of a terminal, a file that ends inside the line): its figures before
-- the cut are stored, those after it are NULL, and truncated = 1 says that
-- a NULL there means "cut off", not "this version does not print it".
ALTER TABLE checkpoint ADD COLUMN truncated INTEGER NOT NULL DEFAULT 0;
