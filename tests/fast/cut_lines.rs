//! Complete lines cut short, on a real PostgreSQL 15 log
//! (tests/fixtures/cut/README.md): as `systemctl status` shows them on a
//! terminal (the pager's `>` at the cut) and as a file or a stream that ends
//! inside one. What a cut line says before the cut is stored, nothing after
//! it; the checkpoint is marked truncated, counted by `summary` and
//! `status`, and the import exits 4. A line that only fails to read is not
//! taken for a cut one.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::support::truth::COMPLETE_FIELDS;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cut").join(name)
}

fn walwatch(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_walwatch")).args(args).output().unwrap()
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// `walwatch import` of `file` into `db` (cluster `c`): its exit code and output.
fn import(db: &Path, file: &Path) -> (i32, String) {
    let out = walwatch(&["import", "--db", db.to_str().unwrap(), "--cluster", "c", file.to_str().unwrap()]);
    (out.status.code().unwrap(), text(&out))
}

fn json(args: &[&str]) -> Value {
    let out = walwatch(args);
    assert!(out.status.success(), "walwatch {args:?}: {}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn checkpoints(db: &Path) -> Vec<Value> {
    json(&["checkpoints", "--db", db.to_str().unwrap(), "--format", "json"]).as_array().unwrap().clone()
}

/// The figures `walwatch checkpoints --format csv` prints, from
/// `buffers_written` to `truncated`, one line per row.
fn figures(db: &Path) -> String {
    let out = walwatch(&["checkpoints", "--db", db.to_str().unwrap(), "--format", "csv"]);
    assert!(out.status.success(), "{}", text(&out));
    let csv = String::from_utf8(out.stdout).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let upto = header.iter().position(|h| *h == "truncated").unwrap() + 1;
    let row = |l: &str| l.split(',').take(upto).skip(6).collect::<Vec<_>>().join(",") + "\n";
    csv.lines().skip(1).map(row).collect()
}

/// What each paste keeps of the log's nine complete lines (CSV: the
/// figures, then truncated), read off the lines of the paste by hand.
const PASTES: [(u32, &str); 3] = [
    // Right after the buffers: `(0.0%); 0 >`, `(0.4%); 1>`, `(12.7%)>`…
    (
        128,
        "3,0,,0,,,,,,,,,,,,,true\n\
         66,0.4,,,,,,,,,,,,,,,true\n\
         2076,12.7,,,,,,,,,,,,,,,true\n\
         1372,8.4,,,,,,,,,,,,,,,true\n\
         3000,18.3,,,,,,,,,,,,,,,true\n\
         4463,27.2,,,,,,,,,,,,,,,true\n\
         30,0.2,,,,,,,,,,,,,,,true\n\
         8879,54.2,,,,,,,,,,,,,,,true\n\
         0,0,,0,,,,,,,,,,,,,true\n",
    ),
    // Inside `write=`: `write=0.>`, `write=0>`, `writ>`.
    (
        178,
        "3,0,,0,0,0,,,,,,,,,,,true\n\
         66,0.4,,1,1,0,,,,,,,,,,,true\n\
         2076,12.7,,0,1,0,,,,,,,,,,,true\n\
         1372,8.4,,0,2,0,,,,,,,,,,,true\n\
         3000,18.3,,0,1,0,,,,,,,,,,,true\n\
         4463,27.2,,0,2,0,,,,,,,,,,,true\n\
         30,0.2,,0,0,1,,,,,,,,,,,true\n\
         8879,54.2,,0,0,0,,,,,,,,,,,true\n\
         0,0,,0,0,0,,,,,,,,,,,true\n",
    ),
    // Inside `distance=`: `distance=0 k>` (0 is whole), `distance=1>`
    // (15358 in the log: unknown), `distanc>`, `dis>`.
    (
        274,
        "3,0,,0,0,0,0.017,0.007,0.044,2,0.005,0.004,0,,,,true\n\
         66,0.4,,1,1,0,0.403,0.172,0.725,29,0.033,0.006,,,,,true\n\
         2076,12.7,,0,1,0,0.793,0.052,1.05,24,0.011,0.003,,,,,true\n\
         1372,8.4,,0,2,0,0.342,0.058,0.474,29,0.02,0.002,,,,,true\n\
         3000,18.3,,0,1,0,0.558,0.118,0.901,2,0.116,0.059,,,,,true\n\
         4463,27.2,,0,2,0,0.274,0.007,0.388,3,0.004,0.003,,,,,true\n\
         30,0.2,,0,0,1,0.009,0.01,0.036,2,0.007,0.005,,,,,true\n\
         8879,54.2,,0,0,0,269.776,0.076,269.905,19,0.008,0.004,,,,,true\n\
         0,0,,0,0,0,0.017,0.001,0.044,0,0,0,0,,,,true\n",
    ),
];

#[test]
fn a_systemctl_status_paste_keeps_each_cut_line_up_to_its_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = tmp.path().join("whole.db");
    let (code, out) = import(&whole, &fixture("postgresql-15.log"));
    assert_eq!(code, 0, "{out}");
    let reference = checkpoints(&whole);
    assert_eq!(reference.len(), 9);
    // The other lines a pager cut: unparsed, never read as whole (at 128
    // the six too-frequent warnings and the server's start, at 178 its start).
    for ((width, want), unparsed) in PASTES.into_iter().zip([7, 1, 0]) {
        let db = tmp.path().join(format!("w{width}.db"));
        let (code, out) = import(&db, &fixture(&format!("systemctl-status-{width}.txt")));
        assert_eq!(code, 4, "width {width}: read with problems\n{out}");
        assert!(out.contains("(cluster c, journald, prefix "), "width {width}: {out}");
        let counts = format!("rejected 0, unmatched 0, unparsed {unparsed}, new in store ");
        assert!(out.contains(&counts), "width {width}: {out}");
        assert!(out.contains("\n  truncated 9 (complete lines cut short: figures after the cut unknown)\n"), "{out}");
        assert!(out.contains("line 16: a checkpoint_complete line cut by a pager (`>`)"), "{out}");
        assert!(out.contains(": 9 complete line(s) were cut short; what they say before the cut is stored"), "{out}");
        assert_eq!(figures(&db), want, "width {width}");
        // Each row is the whole log's checkpoint, its times and trigger
        // included; each figure the paste kept is the log's, the others null.
        let rows = checkpoints(&db);
        assert_eq!(rows.len(), reference.len(), "width {width}");
        for (cut, whole) in rows.iter().zip(&reference) {
            for key in ["kind", "trigger", "flags", "started_at", "completed_at"] {
                assert_eq!(cut[key], whole[key], "width {width}: {key}");
            }
            for key in COMPLETE_FIELDS {
                assert!(cut[key].is_null() || cut[key] == whole[key], "width {width}: {key} {cut} {whole}");
            }
            assert_eq!((cut["truncated"].clone(), whole["truncated"].clone()), (Value::Bool(true), Value::Bool(false)));
        }
        let summary = json(&["summary", "--db", db.to_str().unwrap(), "--format", "json"]);
        assert_eq!(summary["truncated"], 9, "width {width}");
        assert_eq!(summary["checkpoints"]["completed"], 9, "width {width}");
        let table = walwatch(&["summary", "--db", db.to_str().unwrap(), "--utc"]);
        assert!(
            text(&table).contains("\ntruncated (cut lines)  9 (figures after the cut unknown)\n"),
            "{}",
            text(&table)
        );
        let status = walwatch(&["status", "--db", db.to_str().unwrap(), "--format", "json"]);
        assert_eq!(status.status.code(), Some(0), "a warning, not a problem: {}", text(&status));
        let status: Value = serde_json::from_slice(&status.stdout).unwrap();
        let cluster = &status["clusters"][0];
        assert_eq!(cluster["truncated"], 9, "{status}");
        assert!(
            cluster["warnings"].as_array().unwrap().iter().any(|w| w
                .as_str()
                .unwrap()
                .starts_with("9 checkpoint(s) stored from a complete line cut short (truncated)")),
            "{status}"
        );
        let table = text(&walwatch(&["checkpoints", "--db", db.to_str().unwrap(), "--utc"]));
        assert_eq!(table.matches(" (cut) ").count(), 9, "{table}");
        assert!(table.ends_with("the figures after the cut are unknown\n"), "{table}");
    }
    // The whole log shows no mark and counts none.
    let summary = json(&["summary", "--db", whole.to_str().unwrap(), "--format", "json"]);
    assert_eq!(summary["truncated"], 0);
    let table = text(&walwatch(&["checkpoints", "--db", whole.to_str().unwrap(), "--utc"]));
    assert!(!table.contains("(cut)"), "{table}");
}

/// The log cut inside its last complete line (the shutdown checkpoint's,
/// `… 0 recycled; write=0.01`): a file nobody writes any more and the same
/// bytes on standard input keep the line up to the cut; a file written a
/// moment ago keeps the unterminated line for later.
#[test]
fn a_log_ending_inside_a_complete_line_keeps_it_up_to_the_cut() {
    let log = std::fs::read_to_string(fixture("postgresql-15.log")).unwrap();
    let last = log.rfind("LOG:  checkpoint complete:").unwrap();
    let cut = last + log[last..].find("write=0.01").unwrap() + "write=0.01".len();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("postgresql.log");
    std::fs::write(&file, &log[..cut]).unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(10);
    std::fs::File::options().write(true).open(&file).unwrap().set_modified(old).unwrap();
    let db = tmp.path().join("file.db");
    let (code, out) = import(&db, &file);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("line 38: a checkpoint_complete line cut by the end of the input"), "{out}");
    let rows = figures(&db);
    let rows: Vec<&str> = rows.lines().collect();
    assert_eq!(rows.len(), 9);
    assert_eq!(rows[8], "0,0,,0,0,0,,,,,,,,,,,true", "the shutdown checkpoint, up to `write=`");
    assert!(rows[..8].iter().all(|r| r.ends_with(",false")), "{rows:?}");
    let last_row = &checkpoints(&db)[8];
    assert_eq!(
        (&last_row["trigger"], &last_row["completed_at"]),
        (&Value::from("shutdown"), &last_row["completed_at"])
    );
    assert!(!last_row["completed_at"].is_null());

    // The same bytes through standard input: a stream that has ended.
    let stdin_db = tmp.path().join("stdin.db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_walwatch"))
        .args(["import", "--db", stdin_db.to_str().unwrap(), "--cluster", "c", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&log.as_bytes()[..cut]).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    assert_eq!(figures(&stdin_db), figures(&db));

    // Written a moment ago: the line may still be being written.
    let fresh = tmp.path().join("fresh.log");
    std::fs::write(&fresh, &log[..cut]).unwrap();
    // Dated a little ahead, so that it is still "a moment ago" when a loaded
    // machine takes seconds to start the import.
    let ahead = std::time::SystemTime::now() + std::time::Duration::from_secs(30);
    std::fs::File::options().write(true).open(&fresh).unwrap().set_modified(ahead).unwrap();
    let fresh_db = tmp.path().join("fresh.db");
    let (code, out) = import(&fresh_db, &fresh);
    assert_eq!(code, 0, "{out}");
    assert_eq!(figures(&fresh_db).lines().filter(|r| r.ends_with(",true")).count(), 0);
    assert_eq!(json(&["summary", "--db", fresh_db.to_str().unwrap(), "--format", "json"])["truncated"], 0);
}

/// A line that ends where a 15 line ends (`estimate=0 kB`) but without its
/// line break is whole but for it: PostgreSQL writes nothing after one.
/// And a line that fails to read but is not certainly cut (a `>` in a plain
/// log, where no pager put it) is unparsed, never read as cut.
#[test]
fn only_a_certain_cut_makes_a_line_truncated() {
    let log = std::fs::read_to_string(fixture("postgresql-15.log")).unwrap();
    let last = log.rfind("LOG:  checkpoint complete:").unwrap();
    let end = last + log[last..].find('\n').unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("postgresql.log");
    std::fs::write(&file, &log[..end]).unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(10);
    std::fs::File::options().write(true).open(&file).unwrap().set_modified(old).unwrap();
    let db = tmp.path().join("nl.db");
    let (code, out) = import(&db, &file);
    assert_eq!(code, 0, "{out}");
    assert_eq!(figures(&db).lines().last(), Some("0,0,,0,0,0,0.017,0.001,0.044,0,0,0,0,24185,,,false"));

    let write = log.find("; write=0.403 s").unwrap();
    let line_end = write + log[write..].find('\n').unwrap();
    let forged = format!("{}; write=0.4>{}", &log[..write], &log[line_end..]);
    let plain = tmp.path().join("plain.log");
    std::fs::write(&plain, forged).unwrap();
    let db = tmp.path().join("plain.db");
    let (code, out) = import(&db, &plain);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("unparsed 1,"), "{out}");
    assert!(out.contains("a checkpoint_complete line in a shape walwatch does not know"), "{out}");
    assert!(!out.contains("truncated"), "{out}");
    assert_eq!(json(&["summary", "--db", db.to_str().unwrap(), "--format", "json"])["truncated"], 0);
}

/// csvlog and jsonlog of a real PostgreSQL 15 server
/// (tests/fixtures/cst/reload-asia-shanghai.*) ending inside the last
/// complete line (the shutdown checkpoint's, after `write=0.00`): kept up to
/// the cut, marked truncated, exit 4, like a stderr log. Cut before its
/// message, the row says nothing of a checkpoint and is a plain line; cut
/// inside the next key (`"backend_ty`, csv's `"","checkpointer`) the
/// message is whole and so is the row.
#[test]
fn csvlog_and_jsonlog_ending_inside_a_complete_line_keep_it_up_to_the_cut() {
    let tmp = tempfile::tempdir().unwrap();
    for (ext, after_message) in [("csv", "\",,,,,,,,,\"\",\"checkp"), ("json", "\",\"backend_ty")] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/cst/reload-asia-shanghai.{ext}"));
        let log = std::fs::read_to_string(path).unwrap();
        let last = log.rfind("checkpoint complete:").unwrap();
        let write = last + log[last..].find("write=0.00").unwrap() + "write=0.00".len();
        let message_end = last + log[last..].find("estimate=").unwrap();
        let message_end = message_end + log[message_end..].find(" kB").unwrap() + 3;
        assert_eq!(&log[message_end..message_end + after_message.len()], after_message, "{ext}");
        for (name, cut, truncated) in [
            ("inside", write, true),
            ("after", message_end + after_message.len(), false),
            ("before", log[..last].rfind('\n').unwrap() + 10, false),
        ] {
            let file = tmp.path().join(format!("{name}.{ext}"));
            std::fs::write(&file, &log[..cut]).unwrap();
            let old = std::time::SystemTime::now() - std::time::Duration::from_secs(10);
            std::fs::File::options().write(true).open(&file).unwrap().set_modified(old).unwrap();
            let db = tmp.path().join(format!("{name}-{ext}.db"));
            let (code, out) = import(&db, &file);
            let rows = checkpoints(&db);
            let shutdown = rows.iter().find(|r| r["trigger"] == "shutdown").unwrap();
            if truncated {
                assert_eq!(code, 4, "{ext} {name}: {out}");
                assert!(out.contains("a checkpoint_complete line cut by the end of the input"), "{out}");
                assert_eq!(
                    (&shutdown["truncated"], &shutdown["buffers_written"]),
                    (&Value::from(true), &Value::from(0))
                );
                assert_eq!((&shutdown["wal_files_recycled"], &shutdown["write_s"]), (&Value::from(0), &Value::Null));
                assert!(!shutdown["completed_at"].is_null());
            } else if name == "after" {
                assert_eq!(code, 0, "{ext} {name}: {out}");
                assert_eq!(shutdown["truncated"], false);
                assert_eq!(shutdown["distance_kb"], 0);
            } else {
                assert_eq!(code, 0, "{ext} {name}: {out}");
                assert!(shutdown["completed_at"].is_null(), "{ext} {name}: the start only");
            }
            assert_eq!(rows.len(), 6, "{ext} {name}");
            let summary = json(&["summary", "--db", db.to_str().unwrap(), "--format", "json"]);
            assert_eq!(summary["truncated"], i64::from(truncated), "{ext} {name}");
        }
    }
}
