//! A throwaway rsyslogd (`Rsyslog`) listening on the system socket
//! `/dev/log`, writing facility local0 to one file in the traditional format.
//!
//! Why `/dev/log` and not a private socket: PostgreSQL logs through libc's
//! `syslog(3)`, which always sends to `/dev/log`; there is no setting to
//! point it elsewhere. So the daemon must own the real socket, which needs
//! root, and must never take it from a daemon that already serves the
//! machine (journald, a packaged rsyslog).

use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The one socket libc's syslog(3) writes to.
pub const DEV_LOG: &str = "/dev/log";

pub struct Rsyslog {
    dir: PathBuf,
    child: Child,
    /// There is one /dev/log: tests of one binary take turns with it. Held
    /// until after `drop` has stopped this rsyslogd (fields drop last).
    _turn: std::sync::MutexGuard<'static, ()>,
}

/// Whose turn it is to run a syslog daemon (rsyslogd, or journald through
/// a link, see `journald.rs`) on /dev/log.
pub static DEV_LOG_TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl Rsyslog {
    /// Start `rsyslogd -n` with its config, pid file, stderr and output file
    /// in `dir` (created if missing), and wait until `/dev/log` accepts
    /// messages. Panics, never skips, when that cannot be done.
    pub fn start(dir: &Path) -> Rsyslog {
        Rsyslog::start_with_outputs(dir, &[])
    }

    /// [`Rsyslog::start`], local0 also written to each `(file name,
    /// rsyslog template)` in `dir` (e.g. `RSYSLOG_FileFormat` for RFC 3339
    /// times, `RSYSLOG_SyslogProtocol23Format` for RFC 5424 lines).
    pub fn start_with_outputs(dir: &Path, outputs: &[(&str, &str)]) -> Rsyslog {
        Rsyslog::start_inner(dir, outputs, false)
    }

    /// [`Rsyslog::start`], the sender's pid in each line's tag taken from
    /// the kernel (`SysSock.UsePIDFromSystem="on"`) when `kernel_pid`, else
    /// the one the sender wrote (rsyslog's default).
    pub fn start_kernel_pid(dir: &Path, kernel_pid: bool) -> Rsyslog {
        Rsyslog::start_inner(dir, &[], kernel_pid)
    }

    fn start_inner(dir: &Path, outputs: &[(&str, &str)], kernel_pid: bool) -> Rsyslog {
        assert!(
            is_root(),
            "this test runs its own rsyslogd on {DEV_LOG} (PostgreSQL's syslog(3) cannot write anywhere \
             else), and only root may create that socket: run it as root (CI does)"
        );
        let exe = find_rsyslogd();
        // A test that panicked with its rsyslogd still stopped it in drop.
        let turn = DEV_LOG_TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        claim_dev_log();
        fs::create_dir_all(dir).expect("create rsyslog dir");
        let dir = dir.canonicalize().expect("canonicalize rsyslog dir");
        let conf = dir.join("rsyslog.conf");
        fs::write(&conf, config(&dir, outputs, kernel_pid)).expect("write rsyslog.conf");
        let stderr = fs::File::create(dir.join("rsyslogd.stderr")).expect("create rsyslogd.stderr");
        let child = Command::new(exe)
            .arg("-n")
            .arg("-f")
            .arg(&conf)
            .arg("-i")
            .arg(dir.join("rsyslogd.pid"))
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("spawn rsyslogd");
        let mut r = Rsyslog { dir, child, _turn: turn };
        r.wait_for_socket(Duration::from_secs(15));
        r
    }

    /// Where local0 messages end up.
    pub fn log_file(&self) -> PathBuf {
        self.dir.join("postgresql.syslog")
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Its config file (for `walwatch doctor --rsyslog-conf`).
    pub fn conf(&self) -> PathBuf {
        self.dir.join("rsyslog.conf")
    }

    /// The output file so far (empty when rsyslogd has not created it yet).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&fs::read(self.log_file()).unwrap_or_default()).into_owned()
    }

    /// Poll the output file until `pred` holds or `timeout` passes: the
    /// daemon writes asynchronously to the senders.
    pub fn wait_for(&self, timeout: Duration, pred: impl Fn(&str) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if pred(&self.text()) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn wait_for_socket(&mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for rsyslogd") {
                panic!("rsyslogd exited at startup ({status}):\n{}", self.diagnostics());
            }
            if listening(Path::new(DEV_LOG)) {
                return;
            }
            if Instant::now() >= deadline {
                panic!("rsyslogd did not open {DEV_LOG} within {timeout:?}:\n{}", self.diagnostics());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Config and stderr of the daemon, for failure messages.
    pub fn diagnostics(&self) -> String {
        let read = |name: &str| fs::read_to_string(self.dir.join(name)).unwrap_or_default();
        format!("--- rsyslog.conf ---\n{}--- rsyslogd stderr ---\n{}", read("rsyslog.conf"), read("rsyslogd.stderr"))
    }
}

impl Drop for Rsyslog {
    /// SIGTERM first so the daemon flushes and unlinks its socket; SIGKILL if
    /// it lingers. /dev/log was ours (claim_dev_log made sure), so remove it
    /// either way: a dead socket left behind would swallow later messages.
    fn drop(&mut self) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if fs::symlink_metadata(DEV_LOG).is_ok_and(|m| m.file_type().is_socket()) {
            let _ = fs::remove_file(DEV_LOG);
        }
    }
}

/// Only what the test needs, nothing from /etc/rsyslog.conf: the one input
/// socket, and one file for local0. Rate limiting is off because imuxsock's
/// default (200 messages per 5 s per process) drops lines from a busy
/// checkpointer or a chunked message, and a dropped chunk would make the
/// syslog side differ from stderr for reasons that are not walwatch's.
/// Control-character escaping stays at rsyslog's default (TAB → `#011`):
/// that is what walwatch meets on real machines. `kernel_pid`: the tag's pid
/// is the one the kernel gives for the sender, not the one it wrote.
fn config(dir: &Path, outputs: &[(&str, &str)], kernel_pid: bool) -> String {
    let pid = if kernel_pid { " SysSock.UsePIDFromSystem=\"on\"" } else { "" };
    let more: String = outputs
        .iter()
        .map(|(file, template)| {
            format!("local0.* action(type=\"omfile\" file=\"{}\" template=\"{template}\")\n", dir.join(file).display())
        })
        .collect();
    more + &format!(
        r#"# Written by tests/support/syslog.rs
global(workDirectory="{dir}")
module(load="imuxsock" SysSock.Name="{DEV_LOG}" SysSock.RateLimit.Interval="0"{pid})
local0.* action(type="omfile" file="{file}" template="RSYSLOG_TraditionalFileFormat")
"#,
        dir = dir.display(),
        file = dir.join("postgresql.syslog").display(),
    )
}

/// Refuse to hijack a live /dev/log; clear a stale one (a socket or a
/// dangling link whose daemon is gone), which would make rsyslogd fail.
pub fn claim_dev_log() {
    let path = Path::new(DEV_LOG);
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => return,
        Err(e) => panic!("cannot inspect {DEV_LOG}: {e}"),
    };
    let ft = meta.file_type();
    assert!(
        ft.is_socket() || ft.is_symlink(),
        "{DEV_LOG} exists and is neither a socket nor a link ({ft:?}); refusing to replace it"
    );
    let probe = UnixDatagram::unbound().and_then(|s| s.connect(path));
    match probe {
        Ok(()) => panic!(
            "something already listens on {DEV_LOG} (journald? a syslog daemon? an rsyslogd left by an \
             earlier run of this test?). This test must run its own rsyslogd there and will not take the \
             machine's logging away from its owner: run it on a machine or container without a syslog daemon"
        ),
        Err(e) if matches!(e.kind(), ErrorKind::ConnectionRefused | ErrorKind::NotFound) => {
            fs::remove_file(path).unwrap_or_else(|e| panic!("remove stale {DEV_LOG}: {e}"));
        }
        Err(e) => panic!("{DEV_LOG} exists and its owner cannot be determined ({e}); refusing to replace it"),
    }
}

pub fn listening(path: &Path) -> bool {
    UnixDatagram::unbound().and_then(|s| s.connect(path)).is_ok()
}

pub fn is_root() -> bool {
    let out = Command::new("id").arg("-u").output().expect("run id -u");
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

/// rsyslogd lives in /usr/sbin, which a non-login root PATH may lack.
fn find_rsyslogd() -> PathBuf {
    let mut dirs: Vec<PathBuf> = vec!["/usr/sbin".into(), "/sbin".into()];
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs.into_iter().map(|d| d.join("rsyslogd")).find(|p| p.is_file()).unwrap_or_else(|| {
        panic!(
            "rsyslogd not found in /usr/sbin, /sbin or PATH: install the Debian `rsyslog` package; .ci/run does this"
        )
    })
}
