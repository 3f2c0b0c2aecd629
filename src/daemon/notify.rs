//! systemd notifications (Type=notify): READY, STATUS, STOPPING and watchdog
//! keep-alives. Without NOTIFY_SOCKET (not under systemd) they do nothing.

use sd_notify::NotifyState;

pub(crate) fn ready(status: &str) {
    send(&[NotifyState::Ready, NotifyState::Status(status)]);
}

pub(crate) fn status(status: &str) {
    send(&[NotifyState::Status(status)]);
}

pub(crate) fn reloading() {
    send(&[NotifyState::Reloading]);
}

pub(crate) fn stopping() {
    send(&[NotifyState::Stopping]);
}

/// A keep-alive; systemd restarts the service when they stop (WatchdogSec).
pub(crate) fn watchdog() {
    send(&[NotifyState::Watchdog]);
}

/// A keep-alive at most once a second: called for every chunk of a large
/// file read in one go, where a datagram per 2 MiB would be wasted.
pub(crate) fn watchdog_now_and_then() {
    static LAST: std::sync::Mutex<Option<std::time::Instant>> = std::sync::Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if last.is_none_or(|t| t.elapsed() >= std::time::Duration::from_secs(1)) {
        *last = Some(std::time::Instant::now());
        watchdog();
    }
}

fn send(states: &[NotifyState<'_>]) {
    if let Err(e) = sd_notify::notify(false, states) {
        tracing::debug!(error = %e, "Cannot notify systemd.");
    }
}
