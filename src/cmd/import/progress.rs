//! `import`'s progress bar: bytes read, the rate and the events found, on
//! stderr when it is a terminal, for imports that take more than a second.

use std::cell::RefCell;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{BinaryBytes, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::ingest::Progress;

/// A short import says nothing until its report: a bar that flashes for a
/// fraction of a second is noise.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// The bar of one file's import, created only once it is worth showing.
pub(crate) struct Bar {
    enabled: bool,
    started: Instant,
    bar: RefCell<Option<ProgressBar>>,
}

impl Bar {
    /// A bar drawn only on a terminal's stderr and without `-q`: piped or
    /// captured output (scripts, tests, logs) never gets its escape codes.
    pub(crate) fn new(quiet: bool) -> Bar {
        Bar::with(!quiet && std::io::stderr().is_terminal())
    }

    fn with(enabled: bool) -> Bar {
        Bar { enabled, started: Instant::now(), bar: RefCell::new(None) }
    }

    /// Called after every chunk the import reads (not every line), and
    /// indicatif limits the redraws: the bar costs the import nothing.
    pub(crate) fn update(&self, p: Progress) {
        if !self.enabled || self.started.elapsed() < SHOW_AFTER {
            return;
        }
        let mut slot = self.bar.borrow_mut();
        let bar = slot.get_or_insert_with(|| shown(p.total));
        bar.set_position(p.read_to);
        bar.set_message(message(p, self.started.elapsed()));
    }

    /// Clears the bar from the terminal, before the import's report or error.
    pub(crate) fn clear(&self) {
        if let Some(bar) = self.bar.borrow_mut().take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Bar {
    /// Never leaves a half-drawn bar behind, even on an early return.
    fn drop(&mut self) {
        self.clear();
    }
}

/// A bar against the file's size, or a spinner with the bytes read for a
/// stream (stdin, a compressed file) whose size is not known before its end.
fn shown(total: Option<u64>) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr());
    bar.set_style(style(total.is_some()));
    // The spinner turns even while one large chunk is being read.
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// The rate since the import began (indicatif's own would count from the
/// bar's creation, a second late) and the events found.
fn message(p: Progress, elapsed: Duration) -> String {
    let rate = p.read as f64 / elapsed.as_secs_f64().max(1e-3);
    format!("{}/s, {} events", BinaryBytes(rate as u64), p.events)
}

const SIZED: &str = "{spinner} [{bar:30}] {bytes}/{total_bytes} {msg}";
const STREAM: &str = "{spinner} {bytes} {msg}";

fn style(sized: bool) -> ProgressStyle {
    let template = if sized { SIZED } else { STREAM };
    // The templates are constants, checked by the tests below; should one
    // ever be refused, the default style still shows the progress.
    ProgressStyle::with_template(template)
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_are_valid() {
        for template in [SIZED, STREAM] {
            assert!(ProgressStyle::with_template(template).is_ok(), "{template}");
        }
    }

    #[test]
    fn the_message_tells_the_rate_since_the_start_and_the_events() {
        let p = Progress { read_to: 6 << 20, read: 4 << 20, total: None, events: 86 };
        assert_eq!(message(p, Duration::from_secs(2)), "2.00 MiB/s, 86 events");
    }

    #[test]
    fn a_disabled_bar_never_creates_one() {
        let bar = Bar { enabled: false, started: Instant::now() - SHOW_AFTER * 2, bar: RefCell::new(None) };
        bar.update(Progress { read_to: 10, read: 10, total: Some(20), events: 1 });
        assert!(bar.bar.borrow().is_none());
    }

    #[test]
    fn an_import_shorter_than_a_second_shows_nothing() {
        let bar = Bar::with(true);
        bar.update(Progress { read_to: 10, read: 10, total: None, events: 1 });
        assert!(bar.bar.borrow().is_none());
    }
}
