//! A 100 MB line and invalid UTF-8 go through framing with bounded memory.
//! This file holds a single test so that no other test shares its process
//! (the peak resident size, VmHWM, is per process).

use std::io::{self, Read};

use walwatch::frame::prefix::Prefix;
use walwatch::frame::stderr::StderrScanner;
use walwatch::frame::time::TimeContext;
use walwatch::frame::{drive, Pos, Tail};

/// Generates a log without holding it: normal lines, then one line of
/// `huge` bytes (with invalid UTF-8 sprinkled in), then normal lines.
struct Generator {
    head: io::Cursor<Vec<u8>>,
    huge_left: u64,
    tail: io::Cursor<Vec<u8>>,
}

const LINE: &str = "2026-11-22 08:04:23.497 UTC [21760] LOG:  checkpoint starting: wal\n";

impl Read for Generator {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.head.read(buf)?;
        if n > 0 {
            return Ok(n);
        }
        if self.huge_left > 0 {
            let n = (buf.len() as u64).min(self.huge_left) as usize;
            // checkpoint-looking text and invalid UTF-8, no newline
            const FILL: &[u8] = b"checkpoint starting: wal \xff\xfe ";
            for (i, b) in buf[..n].iter_mut().enumerate() {
                *b = FILL[i % FILL.len()];
            }
            self.huge_left -= n as u64;
            if self.huge_left == 0 {
                buf[n - 1] = b'\n';
            }
            return Ok(n);
        }
        self.tail.read(buf)
    }
}

fn vm_hwm_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn a_100_mb_line_of_invalid_utf8_keeps_memory_bounded() {
    let time = TimeContext::new(Some("UTC")).unwrap();
    let markers = walwatch::classify::catalog::Catalog::global().markers();
    let prefix = Prefix::compile("%m [%p] %q%u@%d ", markers).unwrap();
    let mut scanner = StderrScanner::new(prefix, &time);
    let huge: u64 = 100 << 20;
    let input = Generator {
        head: io::Cursor::new(LINE.repeat(1000).into_bytes()),
        huge_left: huge,
        tail: io::Cursor::new(LINE.repeat(1000).into_bytes()),
    };
    let before = vm_hwm_kib();
    let mut records = 0usize;
    let end = drive(input, &mut scanner, Pos::START, Tail::Take, |r, _| {
        records += r.len();
        Ok::<(), io::Error>(())
    })
    .unwrap();
    let grown_mib = (vm_hwm_kib() - before) / 1024;
    assert_eq!(end.offset, 2 * 1000 * LINE.len() as u64 + huge, "every byte consumed");
    assert_eq!(end.line, 2002, "the huge line counts as one line");
    assert_eq!(records, 2000, "the lines around the huge one are all framed");
    assert!(grown_mib < 32, "peak memory grew by {grown_mib} MiB for a 100 MiB line");
}
