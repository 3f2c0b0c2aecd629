//! A store that cannot grow: the import runs under a real file-size limit
//! (util-linux's prlimit sets RLIMIT_FSIZE, as systemd's LimitFSIZE= would;
//! the kernel then refuses writes past it, as a full disk refuses them).
//! walwatch must say so and exit 1, not be killed by SIGXFSZ, and lose
//! nothing: once the limit is gone, the same import stores what an import
//! that never failed stores.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use super::import_behaviour::{fixture, ok};

const RUN: &str = "15-stderr-default-noise";

fn import_limited(db: &Path, log: &Path, fsize: u64) -> Output {
    Command::new("prlimit")
        .arg(format!("--fsize={fsize}:{fsize}"))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_walwatch"))
        .args(["import", "--db", db.to_str().unwrap(), "--cluster", "c", log.to_str().unwrap()])
        .output()
        .expect("prlimit (util-linux) runs")
}

fn stored(db: &Path) -> (Value, Value) {
    let db = db.to_str().unwrap();
    let summary: Value = serde_json::from_str(&ok(&["summary", "--db", db, "--format", "json"])).unwrap();
    let checkpoints: Value = serde_json::from_str(&ok(&["checkpoints", "--db", db, "--format", "json"])).unwrap();
    (summary, checkpoints)
}

#[test]
fn an_import_past_a_file_size_limit_fails_loudly_and_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let log = fixture(RUN);
    let reference = tmp.path().join("reference.db");
    ok(&["import", "--db", reference.to_str().unwrap(), "--cluster", "c", log.to_str().unwrap()]);
    let (want_summary, want_checkpoints) = stored(&reference);
    assert!(want_checkpoints.as_array().unwrap().len() > 10, "the run has checkpoints to lose");

    let db = tmp.path().join("w.db");
    let out = import_limited(&db, &log, 256 << 10);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "exit 1, not a signal: {:?} {stderr}", out.status);
    assert!(
        stderr.contains("a write to the store failed: its disk is full or failing, or a file-size limit was reached"),
        "{stderr}"
    );
    assert!(std::fs::metadata(&db).unwrap().len() <= 256 << 10);

    // The limit gone, the same import again: what a clean import stores.
    ok(&["import", "--db", db.to_str().unwrap(), "--cluster", "c", log.to_str().unwrap()]);
    let (summary, checkpoints) = stored(&db);
    assert_eq!(checkpoints, want_checkpoints);
    assert_eq!(summary, want_summary);
}
