"""Shared by the bench scripts: their messages and PostgreSQL's binaries."""

import glob
import os
import sys


def say(*a):
    print("==", *a, file=sys.stderr, flush=True)


def bindir():
    """PG_BINDIR, else the newest /usr/lib/postgresql/*/bin."""
    if os.environ.get("PG_BINDIR"):
        return os.environ["PG_BINDIR"]
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(d.split("/")[-2]), reverse=True)
    if not dirs:
        raise SystemExit("no /usr/lib/postgresql/*/bin: install the postgresql package or set PG_BINDIR")
    return dirs[0]


def trigger(flags):
    """A checkpoint's trigger from its start line's flags, as walwatch names it."""
    words = flags.split()
    for t in ("shutdown", "end-of-recovery", "wal", "time"):
        if t in words:
            return t
    return "manual"
