//! How `walwatch import` treats its inputs: the same file twice adds
//! nothing, a grown file adds only its new part, compressed files and stdin
//! read like plain ones, and bad input gets a clear error without losing
//! what was read before it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// The first log file of a fixture run (shared by the fast tests of import).
pub(crate) fn fixture(run: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(run).join("log");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files.remove(0)
}

pub(crate) fn walwatch(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_walwatch")).args(args).output().unwrap()
}

/// stdout of a walwatch run that must succeed.
pub(crate) fn ok(args: &[&str]) -> String {
    let out = walwatch(args);
    assert!(
        out.status.success(),
        "walwatch {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn checkpoints(db: &Path) -> Value {
    serde_json::from_str(&ok(&["checkpoints", "--db", db.to_str().unwrap(), "--format", "json"])).unwrap()
}

fn summary(db: &Path) -> Value {
    serde_json::from_str(&ok(&["summary", "--db", db.to_str().unwrap(), "--format", "json"])).unwrap()
}

fn import(db: &Path, file: &Path) -> String {
    ok(&["import", "--db", db.to_str().unwrap(), "--cluster", "c", file.to_str().unwrap()])
}

#[test]
fn importing_the_same_file_twice_adds_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("w.db");
    let log = fixture("15-stderr-default-std");
    import(&db, &log);
    let first = (checkpoints(&db), summary(&db));
    let again = import(&db, &log);
    assert!(again.contains("new in store 0"), "{again}");
    assert_eq!((checkpoints(&db), summary(&db)), first);
    // Under another name (a rotated copy), it is still the same content.
    let copy = tmp.path().join("postgresql.log.1");
    std::fs::copy(&log, &copy).unwrap();
    import(&db, &copy);
    assert_eq!((checkpoints(&db), summary(&db)), first);
}

#[test]
fn a_grown_file_adds_only_its_new_part_whatever_the_cut() {
    let log = fixture("15-stderr-default-std");
    let full = std::fs::read(&log).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let reference = tmp.path().join("ref.db");
    import(&reference, &log);
    let want = checkpoints(&reference);
    assert_eq!(want.as_array().unwrap().len(), 28);
    // Cut inside a line, at a line end, and inside a start/complete pair.
    for cut in [700usize, 855, 1118, full.len() / 2, full.len() - 1] {
        let db = tmp.path().join(format!("cut{cut}.db"));
        let growing = tmp.path().join(format!("growing{cut}.log"));
        std::fs::write(&growing, &full[..cut]).unwrap();
        import(&db, &growing);
        std::fs::write(&growing, &full).unwrap();
        import(&db, &growing);
        assert_eq!(
            checkpoints(&db).to_string().replace(&format!("growing{cut}"), ""),
            want.to_string(),
            "cut at byte {cut}"
        );
        assert_eq!(summary(&db), summary(&reference), "cut at byte {cut}");
    }
}

#[test]
fn gzip_zstd_and_stdin_read_like_the_plain_file() {
    let log = fixture("15-stderr-default-i18n-de");
    let data = std::fs::read(&log).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let plain_db = tmp.path().join("plain.db");
    import(&plain_db, &log);
    let want = summary(&plain_db);
    assert_eq!(want["checkpoints"]["started"], 37);

    let gz = tmp.path().join("postgresql.log.gz");
    let mut enc = flate2::write::GzEncoder::new(std::fs::File::create(&gz).unwrap(), flate2::Compression::default());
    enc.write_all(&data).unwrap();
    enc.finish().unwrap();
    // The real zstd tool, as logrotate's compresscmd runs it: one frame at
    // -19, and two frames (the halves compressed apart, then concatenated).
    let plain = tmp.path().join("postgresql.log");
    std::fs::write(&plain, &data).unwrap();
    let zst = tmp.path().join("postgresql.log.zst");
    zstd_tool(&["-19", "-o"], &zst, &plain);
    let half = data.len() / 2;
    let (first, second) = (tmp.path().join("first"), tmp.path().join("second"));
    std::fs::write(&first, &data[..half]).unwrap();
    std::fs::write(&second, &data[half..]).unwrap();
    let (first_zst, second_zst) = (tmp.path().join("first.zst"), tmp.path().join("second.zst"));
    zstd_tool(&["-o"], &first_zst, &first);
    zstd_tool(&["-o"], &second_zst, &second);
    let frames = tmp.path().join("two-frames.log.zst");
    std::fs::write(&frames, [std::fs::read(&first_zst).unwrap(), std::fs::read(&second_zst).unwrap()].concat())
        .unwrap();
    for file in [&gz, &zst, &frames] {
        let db = tmp.path().join(format!("{}.db", file.file_name().unwrap().to_str().unwrap()));
        import(&db, file);
        assert_eq!(summary(&db), want, "{file:?}");
    }

    let db = tmp.path().join("stdin.db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_walwatch"))
        .args(["import", "--db", db.to_str().unwrap(), "--cluster", "c", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&data).unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(summary(&db), want);
}

#[test]
fn unreadable_and_missing_files_fail_clearly_and_keep_the_others() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("w.db");
    let log = fixture("15-stderr-default-std");
    let missing = tmp.path().join("nope.log");
    let out = walwatch(&[
        "import",
        "--db",
        db.to_str().unwrap(),
        "--cluster",
        "c",
        missing.to_str().unwrap(),
        log.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nope.log") && err.contains("No such file"), "{err}");
    assert_eq!(summary(&db)["checkpoints"]["started"], 28);
}

#[test]
fn a_corrupt_gzip_keeps_what_was_read_before_the_damage() {
    let log = fixture("15-stderr-default-noise");
    let data = std::fs::read(&log).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let gz = tmp.path().join("noise.log.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&data).unwrap();
    let mut bytes = enc.finish().unwrap();
    let cut = bytes.len() * 3 / 4;
    bytes.truncate(cut);
    std::fs::write(&gz, &bytes).unwrap();
    let db = tmp.path().join("w.db");
    let out = walwatch(&["import", "--db", db.to_str().unwrap(), "--cluster", "c", gz.to_str().unwrap()]);
    assert!(!out.status.success(), "a truncated gzip must not look like success");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("noise.log.gz"), "{err}");
    let started = summary(&db)["checkpoints"]["started"].as_i64().unwrap();
    assert!(started > 0 && started <= 19, "kept {started} of 19 checkpoints");
}

#[test]
fn binary_garbage_and_a_huge_line_are_survived() {
    let log = fixture("15-stderr-default-std");
    let data = std::fs::read(&log).unwrap();
    let mid = data.iter().enumerate().filter(|(_, &b)| b == b'\n').nth(40).unwrap().0 + 1;
    let mut mixed = data[..mid].to_vec();
    mixed.extend((0..200_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    mixed.push(b'\n');
    mixed.extend(std::iter::repeat_n(b'x', 5 << 20));
    mixed.push(b'\n');
    mixed.extend_from_slice(&data[mid..]);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("mixed.log");
    std::fs::write(&file, &mixed).unwrap();
    let db = tmp.path().join("w.db");
    import(&db, &file);
    let reference = tmp.path().join("ref.db");
    import(&reference, &log);
    assert_eq!(summary(&db), summary(&reference));
}

#[test]
fn an_unknown_prefix_fails_loudly_showing_the_first_line() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("odd.log");
    std::fs::write(&file, "<<odd>> something happened\n<<odd>> something else\n").unwrap();
    let db = tmp.path().join("w.db");
    let out = walwatch(&["import", "--db", db.to_str().unwrap(), file.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("<<odd>> something happened") && err.contains("--prefix"), "{err}");
}

/// A log cut between a checkpoint's start and its complete, the newer part
/// (with the complete and, later, the server's shutdown) read first — an
/// import of files in the wrong order, or a daemon that reads a
/// copytruncate'd live file before the tail of its copy — pairs exactly as
/// the log read in order: the later shutdown does not separate a complete
/// from its start before it.
#[test]
fn the_newer_part_read_first_pairs_like_the_log_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let log = std::fs::read(fixture("15-stderr-default-std")).unwrap();
    let text = String::from_utf8(log.clone()).unwrap();
    assert!(text.contains("database system is shut down"), "the run ends with a shutdown");
    // Cut right after the third "checkpoint starting" line.
    let mut cut = 0;
    for _ in 0..3 {
        cut += text[cut..].find("LOG:  checkpoint starting:").unwrap() + 1;
    }
    cut += text[cut..].find('\n').unwrap() + 1;
    let (older, newer) = (tmp.path().join("postgresql.log.1"), tmp.path().join("postgresql.log"));
    std::fs::write(&older, &log[..cut]).unwrap();
    std::fs::write(&newer, &log[cut..]).unwrap();

    let in_order = tmp.path().join("in-order.db");
    import(&in_order, &older);
    import(&in_order, &newer);
    let reversed = tmp.path().join("reversed.db");
    import(&reversed, &newer);
    import(&reversed, &older);

    let want = checkpoints(&in_order);
    let rows = want.as_array().unwrap();
    let whole = rows.iter().filter(|r| !r["started_at"].is_null() && !r["completed_at"].is_null()).count();
    assert_eq!(whole, rows.len(), "read in order, every checkpoint of the run is whole");
    assert_eq!(checkpoints(&reversed), want);
    assert_eq!(summary(&reversed), summary(&in_order));
}

/// A file nobody writes any more is complete — PostgreSQL ends
/// every entry with a line break, so a file cut short and left alone (a
/// crash, a copy) was cut for good, and its last entry counts. A file
/// written a moment ago keeps its unterminated line for later. Either way,
/// the file grown afterwards adds nothing twice.
#[test]
fn a_finished_file_is_read_to_its_end() {
    let log = fixture("15-stderr-default-std");
    let full = std::fs::read(&log).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let reference = tmp.path().join("ref.db");
    import(&reference, &log);
    let want = summary(&reference);
    assert_eq!(want["checkpoints"]["completed"], 28);
    // The last checkpoint's complete line, without its line break.
    let text = String::from_utf8(full.clone()).unwrap();
    let last = text.rfind("LOG:  checkpoint complete:").unwrap();
    let cut = last + text[last..].find('\n').unwrap();
    let completed = |db: &Path| summary(db)["checkpoints"]["completed"].as_u64().unwrap();
    for (age, read_to_end) in [(0u64, false), (10, true)] {
        let db = tmp.path().join(format!("age{age}.db"));
        let file = tmp.path().join(format!("cut{age}.log"));
        std::fs::write(&file, &full[..cut]).unwrap();
        let modified = std::time::SystemTime::now() - std::time::Duration::from_secs(age);
        std::fs::File::options().write(true).open(&file).unwrap().set_modified(modified).unwrap();
        import(&db, &file);
        assert_eq!(completed(&db), if read_to_end { 28 } else { 27 }, "written {age} s ago");
        std::fs::write(&file, &full).unwrap();
        import(&db, &file);
        assert_eq!(summary(&db), want, "written {age} s ago, then grown");
        let rows = checkpoints(&db).to_string().replace(&format!("cut{age}.log"), "");
        assert_eq!(rows, checkpoints(&reference).to_string().replace(log.file_name().unwrap().to_str().unwrap(), ""));
    }
}

/// A log file the server has only just created is empty: importing it reads
/// nothing, says so, fails nothing and records nothing, so the same file
/// once written is read in full.
#[test]
fn an_empty_file_is_read_once_it_has_content() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("w.db");
    let file = tmp.path().join("postgresql.log");
    std::fs::write(&file, b"").unwrap();
    let out = walwatch(&["import", "--db", db.to_str().unwrap(), "--cluster", "c", file.to_str().unwrap()]);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(text.contains("empty: nothing to read yet"), "{text}");
    assert_eq!(summary(&db)["checkpoints"]["completed"], 0);
    std::fs::copy(fixture("15-stderr-default-std"), &file).unwrap();
    import(&db, &file);
    let reference = tmp.path().join("ref.db");
    import(&reference, &fixture("15-stderr-default-std"));
    assert_eq!(summary(&db), summary(&reference));
}

/// `zstd -q -f ARGS OUT IN`: the real tool (tests/run.sh installs it).
fn zstd_tool(args: &[&str], out: &Path, input: &Path) {
    let st = Command::new("zstd")
        .args(["-q", "-f"])
        .args(args)
        .arg(out)
        .arg(input)
        .status()
        .expect("the zstd tool (apt-get install zstd; tests/run.sh installs it)");
    assert!(st.success(), "zstd {args:?} {out:?} {input:?}");
}

/// `--report json`: each file's report as one object, in order, the counts
/// those of the text report (a real PostgreSQL 15 log with a cut line's
/// neighbours whole: 9 checkpoints, 6 warnings), a second import of the
/// same file resumed at its end with nothing new, and a missing file as
/// its error; exit 1 for the missing one, the array printed whole.
#[test]
fn the_report_as_json_has_each_file_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("w.db");
    let log = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cut/postgresql-15.log");
    let missing = tmp.path().join("missing.log");
    let (db_s, log_s) = (db.to_str().unwrap(), log.to_str().unwrap());
    let out = walwatch(&[
        "import",
        "--db",
        db_s,
        "--cluster",
        "c",
        "--report",
        "json",
        log_s,
        log_s,
        missing.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let files: Value = serde_json::from_slice(&out.stdout).unwrap();
    let files = files.as_array().unwrap();
    assert_eq!(files.len(), 3);
    let first = &files[0];
    let size = std::fs::metadata(&log).unwrap().len();
    assert_eq!(first["file"], log_s);
    assert_eq!((first["cluster"].as_str(), first["format"].as_str()), (Some("c"), Some("stderr")));
    assert_eq!(first["prefix"], "%m [%p] %q%u@%d ");
    assert_eq!((first["resumed_at"].as_u64(), first["bytes"].as_u64()), (Some(0), Some(size)));
    assert_eq!((first["lines"].as_u64(), first["entries"].as_u64()), (Some(39), Some(39)));
    let events: Value = serde_json::json!({
        "checkpoint_complete": 9, "checkpoint_start": 9, "server_ready": 1, "server_shutdown": 1,
        "server_start": 1, "shutdown_request": 1, "too_frequent": 6
    });
    assert_eq!(first["events"], events);
    for key in ["rejected", "unmatched", "unparsed", "unreadable", "truncated"] {
        assert_eq!(first[key], 0, "{key}");
    }
    assert_eq!((first["stored"].as_u64(), first["misfit"].is_null()), (Some(28), true));
    assert_eq!(first["warnings"], serde_json::json!([]));
    assert_eq!((files[1]["resumed_at"].as_u64(), files[1]["stored"].as_u64()), (Some(size), Some(0)));
    assert_eq!(files[1]["bytes"], 0);
    let error = files[2]["error"].as_str().unwrap();
    assert!(error.starts_with("cannot open ") && error.contains("missing.log"), "{error}");
    assert_eq!(files[2].as_object().unwrap().len(), 3, "file, cluster, error: {}", files[2]);
}
