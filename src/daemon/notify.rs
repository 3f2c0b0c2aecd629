//! systemd notifications (Type=notify): READY, STATUS, STOPPING and watchdog
//! keep-alives. Without NOTIFY_SOCKET (not under systemd) they do nothing.

use sd_notify::NotifyState;

pub fn ready(status: &str) {
    send(&[NotifyState::Ready, NotifyState::Status(status)]);
}

pub fn status(status: &str) {
    send(&[NotifyState::Status(status)]);
}

pub fn reloading() {
    send(&[NotifyState::Reloading]);
}

pub fn stopping() {
    send(&[NotifyState::Stopping]);
}

/// A keep-alive; systemd restarts the service when they stop (WatchdogSec).
pub fn watchdog() {
    send(&[NotifyState::Watchdog]);
}

fn send(states: &[NotifyState<'_>]) {
    if let Err(e) = sd_notify::notify(false, states) {
        tracing::debug!(error = %e, "Cannot notify systemd.");
    }
}
