#!/usr/bin/env python3
"""Rebuild parsers/messages-i18n.tsv from a full table of PostgreSQL's
translations: a TSV with the columns lang, branch, msgid, msgstr,
plural_form, status, group, one row per msgid and language, extracted from
src/backend/po/*.po of the releases parsers/README.md names.

Keeps the header and every row with status=translated whose msgid (after C
unescaping) is referenced by a parsers/*.toml file (msgid, msgid_plural,
[[hint]] msgid), plus all translated rows of the groups level and prefix.

usage: python3 parsers/refresh-i18n.py FULL-TRANSLATIONS.tsv
"""
import glob, os, sys, tomllib

here = os.path.dirname(os.path.abspath(__file__))

def unescape(s):
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            out.append({"n": "\n", "t": "\t", '"': '"', "\\": "\\"}.get(s[i + 1], s[i + 1]))
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)

wanted = set()
for path in sorted(glob.glob(os.path.join(here, "*.toml"))):
    with open(path, "rb") as f:
        doc = tomllib.load(f)
    for m in doc.get("message", []) + doc.get("hint", []):
        if m.get("event") == "none":
            continue
        for key in ("msgid", "msgid_plural"):
            if key in m:
                wanted.add(m[key])

if len(sys.argv) != 2:
    sys.exit("usage: python3 parsers/refresh-i18n.py FULL-TRANSLATIONS.tsv")
# Translations left out: their text holds no substring the prefilter can
# take as a needle without slowing every import (parsers/needles.txt: each
# more ASCII needle makes the scan of a mostly-ASCII log up to twice as
# slow). "archive recovery complete" only tells an archive recovery from a
# crash recovery; in these languages such a replay counts as a crash's.
LEFT_OUT = {("archive recovery complete", lang) for lang in ("de", "id", "pl")}

src = sys.argv[1]
with open(src, encoding="utf-8") as f, open(os.path.join(here, "messages-i18n.tsv"), "w", encoding="utf-8") as out:
    header = f.readline()
    out.write(header)
    for line in f:
        cols = line.rstrip("\n").split("\t")
        if len(cols) != 7 or cols[5] != "translated":
            continue
        if (unescape(cols[2]), cols[0]) in LEFT_OUT:
            continue
        if cols[6] in ("level", "prefix") or unescape(cols[2]) in wanted:
            out.write(line if line.endswith("\n") else line + "\n")
