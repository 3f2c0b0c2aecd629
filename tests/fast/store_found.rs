//! One store, found without flags. The same resolution order
//! in every command (`--db`, WALWATCH_DB, the config's `[store] path`, the
//! per-user default); query commands never create a store or a directory;
//! `import` creates one and says so; `-q` leaves only errors.

use crate::support;

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use support::walwatch;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// walwatch with a clean environment for the store's resolution: no
/// WALWATCH_* and a HOME and XDG_STATE_HOME of the test's own.
fn cmd(home: &Path) -> Command {
    let mut c = walwatch();
    c.env_remove("WALWATCH_DB").env_remove("WALWATCH_CONFIG").env_remove("STATE_DIRECTORY").env_remove("USER");
    c.env("HOME", home).env("XDG_STATE_HOME", home.join("state"));
    c
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Every command that reads or changes an existing store, with the words
/// it needs besides the store.
const QUERIES: &[&[&str]] = &[
    &["status"],
    &["summary"],
    &["checkpoints"],
    &["history"],
    &["alerts"],
    &["alerts", "ack", "1"],
    &["alerts", "silence", "slow_sync", "--for", "1h"],
    &["alerts", "test-mail"],
    &["suggest"],
    &["whatif"],
    &["settings"],
    &["analyze"],
    &["digest"],
    &["forget", "--cluster", "c"],
];

/// A query on a store that does not exist says so, exits 1, and creates
/// neither the store nor any directory on the way.
#[test]
fn a_query_on_a_missing_store_says_so_and_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("nonexistent/dir/x.db");
    for args in QUERIES {
        let out = cmd(tmp.path()).args(*args).args(["--db", s(&db)]).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(&format!("no store at {} yet", s(&db))), "{args:?}: {err}");
        assert!(!tmp.path().join("nonexistent").exists(), "{args:?} created a directory");
    }
    assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 0, "nothing at all was created");
}

/// `import` creates the store and its directory, and says so once (on
/// stderr: stdout is the report); `-q` prints neither the note nor the report.
#[test]
fn import_creates_the_store_and_says_so_quiet_says_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let log = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/14-stderr-default-std/log");
    let log = fs::read_dir(log).unwrap().next().unwrap().unwrap().path();
    let db = tmp.path().join("new/dir/x.db");
    let out = cmd(tmp.path()).args(["import", "--db", s(&db), "--cluster", "c", s(&log)]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let want = format!("walwatch: created the store {} (and its directory {})\n", s(&db), s(db.parent().unwrap()));
    assert_eq!(stderr(&out), want);
    assert!(String::from_utf8_lossy(&out.stdout).contains("events:"), "the report");
    let again = cmd(tmp.path()).args(["import", "--db", s(&db), "--cluster", "c", s(&log)]).output().unwrap();
    assert!(again.status.success());
    assert_eq!(stderr(&again), "", "an existing store is not announced");

    let other = tmp.path().join("q.db");
    let quiet = cmd(tmp.path()).args(["-q", "import", "--db", s(&other), "--cluster", "c", s(&log)]).output().unwrap();
    assert!(quiet.status.success(), "{}", stderr(&quiet));
    assert_eq!((quiet.stdout.len(), quiet.stderr.len()), (0, 0), "{}", stderr(&quiet));
    assert!(other.exists());
}

/// `--db`, then WALWATCH_DB, then the `[store] path` of `--config` (or
/// WALWATCH_CONFIG), then the per-user default: the same in every command,
/// seen through the store each one names when it finds none.
#[test]
fn every_command_finds_the_store_in_the_same_order() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let config = home.join("walwatch.toml");
    let from_config = home.join("from-config.db");
    fs::write(&config, format!("[store]\npath = {:?}\n", s(&from_config))).unwrap();
    let (flag, env) = (home.join("flag.db"), home.join("env.db"));
    let per_user = home.join("state/walwatch/walwatch.db");
    // The last step needs the default config file absent (a machine with the package installed has it).
    assert!(!Path::new("/etc/walwatch/walwatch.toml").exists(), "run this test where walwatch is not installed");
    for args in QUERIES {
        // The command's words, then `flags`, with `env` set.
        let names = |flags: &[&str], env: &[(&str, &Path)], want: &Path, how: &str| {
            let mut c = cmd(home);
            c.args(*args).args(flags).envs(env.iter().copied());
            let err = stderr(&c.output().unwrap());
            assert!(err.contains(&format!("no store at {} yet", s(want))), "{args:?} {how}: {err}");
        };
        let conf = ["--config", s(&config)];
        names(&[&conf[..], &["--db", s(&flag)]].concat(), &[("WALWATCH_DB", &env)], &flag, "--db");
        names(&conf, &[("WALWATCH_DB", &env)], &env, "WALWATCH_DB");
        names(&conf, &[], &from_config, "--config");
        names(&[], &[("WALWATCH_CONFIG", &config)], &from_config, "WALWATCH_CONFIG");
        names(&[], &[], &per_user, "no config file");
    }
    assert!(!home.join("state").exists(), "the per-user directory was not created");
}
