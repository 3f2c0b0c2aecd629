//! A throwaway systemd-journald (`Journald`) in a journal namespace of its
//! own, with `/dev/log` linked to its syslog socket, as systemd links it on
//! a machine that runs journald: PostgreSQL's syslog(3) messages, and a
//! local user's `logger`, reach it as they would on such a machine, and
//! journald records each sender's `_PID` and `_UID` from the socket's
//! credentials. `journalctl --namespace=… -o json` gives the export walwatch
//! reads. The namespace keeps the machine's own journal (if any) apart.
//!
//! Needs root (journald's sockets and /dev/log) and the systemd-journald
//! and journalctl binaries; fails, never skips, without them. Takes the same
//! turn with /dev/log as the rsyslogd of `syslog.rs`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::syslog::{claim_dev_log, is_root, listening, DEV_LOG, DEV_LOG_TURN};

pub struct Journald {
    namespace: String,
    child: Child,
    stderr: PathBuf,
    _turn: std::sync::MutexGuard<'static, ()>,
}

impl Journald {
    /// Starts `systemd-journald <namespace>` and links /dev/log to its
    /// syslog socket once it listens.
    pub fn start(dir: &Path) -> Journald {
        assert!(
            is_root(),
            "this test runs its own systemd-journald and links {DEV_LOG} to it: run it as root (CI does)"
        );
        let exe = ["/lib/systemd/systemd-journald", "/usr/lib/systemd/systemd-journald"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
            .expect(
                "systemd-journald not found in /lib/systemd or /usr/lib/systemd: install the Debian `systemd` package",
            );
        let turn = DEV_LOG_TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        claim_dev_log();
        fs::create_dir_all(dir).expect("create journald dir");
        let namespace = format!("walwatch-test-{}", std::process::id());
        let stderr = dir.join("journald.stderr");
        let child = Command::new(exe)
            .arg(&namespace)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(&stderr).expect("create journald.stderr"))
            .spawn()
            .expect("spawn systemd-journald");
        let mut j = Journald { namespace, child, stderr, _turn: turn };
        let socket = j.run_dir().join("dev-log");
        let deadline = Instant::now() + Duration::from_secs(15);
        while !listening(&socket) {
            if let Some(status) = j.child.try_wait().expect("wait for journald") {
                panic!("systemd-journald exited at startup ({status}): {}", j.diagnostics());
            }
            assert!(
                Instant::now() < deadline,
                "journald did not open {} within 15 s: {}",
                socket.display(),
                j.diagnostics()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        std::os::unix::fs::symlink(&socket, DEV_LOG).expect("link /dev/log to journald's syslog socket");
        j
    }

    fn run_dir(&self) -> PathBuf {
        PathBuf::from(format!("/run/systemd/journal.{}", self.namespace))
    }

    /// `journalctl -o json` of the namespace: every entry so far.
    pub fn export(&self) -> Vec<u8> {
        let out = Command::new("journalctl")
            .args(["--namespace", &self.namespace, "-o", "json", "--no-pager"])
            .output()
            .expect("run journalctl");
        assert!(out.status.success(), "journalctl: {}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    }

    /// Polls the export until `pred` holds on its text or `timeout` passes.
    pub fn wait_for(&self, timeout: Duration, pred: impl Fn(&str) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if pred(&String::from_utf8_lossy(&self.export())) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    pub fn diagnostics(&self) -> String {
        format!("--- journald stderr ---\n{}", fs::read_to_string(&self.stderr).unwrap_or_default())
    }
}

impl Drop for Journald {
    /// Stops journald, removes the /dev/log link (ours: claim_dev_log made
    /// sure there was none) and the namespace's sockets and journal files.
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if fs::read_link(DEV_LOG).is_ok_and(|target| target.starts_with(self.run_dir())) {
            let _ = fs::remove_file(DEV_LOG);
        }
        let _ = fs::remove_dir_all(self.run_dir());
        let machine = fs::read_to_string("/etc/machine-id").unwrap_or_default();
        for root in ["/var/log/journal", "/run/log/journal"] {
            let _ = fs::remove_dir_all(Path::new(root).join(format!("{}.{}", machine.trim(), self.namespace)));
        }
    }
}
