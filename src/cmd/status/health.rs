//! What `walwatch status` concludes for a monitor: whether the daemon runs
//! (its heartbeat and its process together), and the exit status that sums
//! up the daemon, the clusters' problems and how far behind walwatch is.

use jiff::Timestamp;
use serde::Serialize;

use crate::cmd::{EXIT_BEHIND, EXIT_DAEMON_DOWN, EXIT_PROBLEMS};
use crate::store::daemon::Heartbeat;

/// Unread log behind the daemon's read position that makes walwatch
/// "behind": a moment's lag (a commit in flight) is not. The digest says
/// the same from the same size.
pub(super) const BEHIND_BYTES: u64 = 1 << 20;

/// The daemon as seen from its heartbeat row and its process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum DaemonState {
    /// A recent heartbeat, and its process exists.
    Running,
    /// It did not stop cleanly: killed, crashed or hung (the heartbeat is
    /// too old, or its process is gone).
    NotRunning,
    /// It stopped cleanly (SIGTERM, `systemctl stop`).
    Stopped,
    /// No daemon ever ran on this store (a store only imported into).
    Never,
}

/// What the process with a heartbeat's pid looks like from here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Process {
    Alive,
    Gone,
}

impl DaemonState {
    /// A daemon is expected on this store: it ran here before.
    pub(crate) fn expected(self) -> bool {
        self != DaemonState::Never
    }
}

/// The heartbeat says "alive" for up to three intervals after the last
/// beat; a daemon killed with `kill -9` stays "alive" that long unless its
/// process is checked too, so a recent beat counts only while the process is there.
pub(super) fn daemon_state(h: Option<&Heartbeat>, now: Timestamp, process: impl Fn(u32) -> Process) -> DaemonState {
    match h {
        None => DaemonState::Never,
        Some(h) if h.stopped() => DaemonState::Stopped,
        Some(h) if h.alive(now) && process(h.pid) == Process::Alive => DaemonState::Running,
        Some(_) => DaemonState::NotRunning,
    }
}

/// Whether `pid` is a walwatch process on this machine. A pid that exists
/// but may not be signalled (another user's: EPERM) exists. A pid reused by
/// another program is gone, told by its name where /proc shows it; where it
/// does not (hidepid), the existence of the pid decides.
pub(super) fn process(pid: u32) -> Process {
    let Some(p) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else {
        return Process::Gone;
    };
    // EPERM: another user's process, which exists.
    if let Err(rustix::io::Errno::SRCH) = rustix::process::test_kill_process(p) {
        return Process::Gone;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/comm")) {
        Ok(name) if !name.trim_end().starts_with("walwatch") => Process::Gone,
        _ => Process::Alive,
    }
}

/// The exit status and the reasons for it, worst first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(super) struct Verdict {
    pub(crate) exit_status: u8,
    pub(crate) reasons: Vec<String>,
}

/// Exit status: the daemon not running (stopped or dead) outranks a
/// cluster's problem, which outranks lag: each later one often follows
/// from the earlier (a dead daemon falls behind).
pub(super) fn verdict(daemon: DaemonState, problems: &[String], behind: &[String]) -> Verdict {
    let mut reasons = Vec::new();
    let mut exit_status = 0;
    let mut worse = |code: u8, reason: String, reasons: &mut Vec<String>| {
        if exit_status == 0 {
            exit_status = code;
        }
        reasons.push(reason);
    };
    match daemon {
        DaemonState::NotRunning => {
            let why = "the daemon is not running (it did not stop cleanly)";
            worse(EXIT_DAEMON_DOWN, why.into(), &mut reasons)
        }
        DaemonState::Stopped => worse(EXIT_DAEMON_DOWN, "the daemon was stopped".into(), &mut reasons),
        DaemonState::Running | DaemonState::Never => {}
    }
    for p in problems {
        worse(EXIT_PROBLEMS, format!("problem: {p}"), &mut reasons);
    }
    for b in behind {
        worse(EXIT_BEHIND, format!("behind: {b}"), &mut reasons);
    }
    Verdict { exit_status, reasons }
}

/// "FILE: 3.0 MB not read yet" for a followed file `lag` bytes ahead of
/// the daemon's position, when that is [`BEHIND_BYTES`] or more.
pub(super) fn behind(path: &str, lag: Option<u64>) -> Option<String> {
    let lag = lag.filter(|&l| l >= BEHIND_BYTES)?;
    Some(format!("{path}: {:.1} MB not read yet", lag as f64 / 1e6))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn beat(pid: u32, age_ms: i64, now: Timestamp) -> Heartbeat {
        let at = now.checked_sub(jiff::SignedDuration::from_millis(age_ms)).unwrap();
        Heartbeat { pid, started_at: at, at, interval_ms: 5000 }
    }

    #[test]
    fn a_recent_heartbeat_counts_only_while_its_process_is_there() {
        let now = Timestamp::now();
        let alive = |_| Process::Alive;
        let gone = |_| Process::Gone;
        assert_eq!(daemon_state(None, now, alive), DaemonState::Never);
        assert_eq!(daemon_state(Some(&beat(42, 1000, now)), now, alive), DaemonState::Running);
        assert_eq!(daemon_state(Some(&beat(42, 1000, now)), now, gone), DaemonState::NotRunning, "kill -9");
        assert_eq!(daemon_state(Some(&beat(42, 60_000, now)), now, alive), DaemonState::NotRunning, "hung");
        assert_eq!(daemon_state(Some(&beat(0, 1000, now)), now, alive), DaemonState::Stopped);
    }

    #[test]
    fn this_process_is_alive_and_an_unused_pid_is_gone() {
        // The unit tests' binary is walwatch-<hash>.
        assert_eq!(process(std::process::id()), Process::Alive);
        // pid 1 is init, whatever its name, never walwatch: a reused pid.
        assert_eq!(process(1), Process::Gone);
        assert_eq!(process(0), Process::Gone);
        assert_eq!(process(u32::MAX), Process::Gone);
        // pid_max is at most 2^22: this one is never in use.
        assert_eq!(process((1 << 22) + 1), Process::Gone);
    }

    #[test]
    fn the_worst_state_decides_the_exit_status_and_every_reason_is_listed() {
        let none: &[String] = &[];
        assert_eq!(verdict(DaemonState::Running, none, none), Verdict { exit_status: 0, reasons: vec![] });
        assert_eq!(verdict(DaemonState::Never, none, none).exit_status, 0);
        let problems = vec!["/var/log/p.log: Permission denied".to_string()];
        let behind = vec!["/var/log/p.log: 3.0 MB not read yet".to_string()];
        assert_eq!(verdict(DaemonState::Running, none, &behind).exit_status, 6);
        assert_eq!(verdict(DaemonState::Running, &problems, &behind).exit_status, 4);
        let v = verdict(DaemonState::NotRunning, &problems, &behind);
        assert_eq!(v.exit_status, 5);
        assert_eq!(
            v.reasons,
            [
                "the daemon is not running (it did not stop cleanly)",
                "problem: /var/log/p.log: Permission denied",
                "behind: /var/log/p.log: 3.0 MB not read yet"
            ]
        );
        assert_eq!(verdict(DaemonState::Stopped, none, none).exit_status, 5);
    }

    #[test]
    fn a_megabyte_unread_is_behind_a_moment_s_lag_is_not() {
        assert_eq!(behind("/l", Some(3_000_000)), Some("/l: 3.0 MB not read yet".into()));
        assert_eq!(behind("/l", Some(BEHIND_BYTES)), Some("/l: 1.0 MB not read yet".into()));
        assert_eq!(behind("/l", Some(BEHIND_BYTES - 1)), None);
        assert_eq!(behind("/l", None), None, "a rotated-away file is not lag");
    }
}
