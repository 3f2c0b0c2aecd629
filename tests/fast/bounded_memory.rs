//! Entries of 100 MB go through framing with bounded memory: a stderr line
//! of invalid UTF-8, a csvlog record whose quoted statement spans many
//! buffers (newlines, doubled quotes and fake records inside), and a
//! jsonlog line full of escapes. This file holds a single test so that no
//! other test shares its process: the peak resident size (VmHWM) is per
//! process, and a peak over all three cases bounds each of them.

use std::io::{self, Read};

use walwatch::frame::formats::csvlog::CsvScanner;
use walwatch::frame::formats::jsonlog::JsonScanner;
use walwatch::frame::formats::stderr::StderrScanner;
use walwatch::frame::prefix::Prefix;
use walwatch::frame::time::TimeContext;
use walwatch::frame::{drive, Pos, Scan, Tail};

/// Size of the huge entry in each case.
const HUGE: u64 = 100 << 20;
/// Normal entries before and after it.
const AROUND: usize = 1000;

/// A log generated without holding it: parts read one after the other.
struct Generator {
    parts: Vec<Part>,
}

enum Part {
    Bytes(io::Cursor<Vec<u8>>),
    /// `unit` repeated until `left` bytes have been produced.
    Repeat {
        unit: &'static [u8],
        at: usize,
        left: u64,
    },
}

impl Generator {
    /// `AROUND` × `line`, the huge entry (`head`, `unit` repeated `repeat`
    /// times, `tail`), `AROUND` × `line`.
    fn new(line: &str, head: &str, unit: &'static [u8], repeat: u64, tail: &str) -> Generator {
        let bytes = |s: String| Part::Bytes(io::Cursor::new(s.into_bytes()));
        Generator {
            parts: vec![
                bytes(line.repeat(AROUND)),
                bytes(head.to_string()),
                Part::Repeat { unit, at: 0, left: unit.len() as u64 * repeat },
                bytes(tail.to_string()),
                bytes(line.repeat(AROUND)),
            ],
        }
    }

    fn len(&self) -> u64 {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Bytes(c) => c.get_ref().len() as u64,
                Part::Repeat { left, .. } => *left,
            })
            .sum()
    }
}

impl Read for Generator {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        for part in &mut self.parts {
            let n = match part {
                Part::Bytes(c) => c.read(buf)?,
                Part::Repeat { unit, at, left } => {
                    let n = (unit.len() - *at).min(buf.len()).min(*left as usize);
                    buf[..n].copy_from_slice(&unit[*at..*at + n]);
                    *at = (*at + n) % unit.len();
                    *left -= n as u64;
                    n
                }
            };
            if n > 0 {
                return Ok(n);
            }
        }
        Ok(0)
    }
}

const STDERR_LINE: &str = "2026-11-22 08:04:23.497 UTC [21760] LOG:  checkpoint starting: wal\n";

const CSV_RECORD: &str = "2026-11-22 08:15:38.417 UTC,,,28304,,6b02a4a8.6e90,2,,2026-11-22 08:15:36 UTC,,0,LOG,00000,\"checkpoint starting: wal\",,,,,,,,,\"\",\"checkpointer\",,0\n";
const CSV_HEAD: &str = "2026-11-22 08:15:40.001 UTC,\"postgres\",\"postgres\",28400,\"[local]\",6b02a4a8.6ef0,3,\"SELECT\",2026-11-22 08:15:39 UTC,3/7,0,ERROR,22012,\"division by zero\",,,,,,\"SELECT 1/0 /*";
/// Inside the quoted statement: quotes doubled, a fake record on a line of its own.
const CSV_UNIT: &[u8] = b"x \"\"y\"\" \xff\n2026-11-22 08:15:38.417 UTC,,,28304,,6b02a4a8.6e90,2,,2026-11-22 08:15:36 UTC,,0,LOG,00000,\"\"checkpoint starting: wal\"\",,,,,,,,,\"\"\"\",\"\"checkpointer\"\",,0\n";
const CSV_TAIL: &str = "*/\",,,\"psql\",\"client backend\",,0\n";

const JSON_LINE: &str = "{\"timestamp\":\"2026-11-22 08:15:38.417 UTC\",\"pid\":28304,\"error_severity\":\"LOG\",\"message\":\"checkpoint starting: wal\",\"backend_type\":\"checkpointer\"}\n";
const JSON_HEAD: &str = "{\"timestamp\":\"2026-11-22 08:15:40.001 UTC\",\"user\":\"postgres\",\"pid\":28400,\"error_severity\":\"ERROR\",\"message\":\"division by zero\",\"statement\":\"SELECT 1/0 /*";
const JSON_UNIT: &[u8] = b"\\\\\\\"\\n{\\\"timestamp\\\":\\\"2026-11-22 08:15:38.417 UTC\\\",\\\"error_severity\\\":\\\"LOG\\\",\\\"message\\\":\\\"checkpoint starting: wal\\\",\\\"backend_type\\\":\\\"checkpointer\\\"}\\n";
const JSON_TAIL: &str = "*/\",\"backend_type\":\"client backend\"}\n";

/// How a case must come out.
struct Want {
    lines: u64,
    records: usize,
}

fn vm_hwm_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Frames `input` with `scanner`: every byte consumed, the lines counted,
/// only the records around the huge entry framed.
fn check(name: &str, scanner: &mut dyn Scan, input: Generator, want: Want) {
    let len = input.len();
    assert!(len > HUGE, "{name}: the huge entry is {HUGE} bytes at least");
    let mut records = 0usize;
    let end = drive(input, scanner, Pos::START, Tail::Take, |r, _| {
        records += r.len();
        Ok::<(), io::Error>(())
    })
    .unwrap();
    assert_eq!(end.offset, len, "{name}: every byte consumed");
    assert_eq!(end.line, want.lines + 1, "{name}: lines");
    assert_eq!(records, want.records, "{name}: the entries around the huge one are all framed, and only they");
}

#[test]
fn entries_of_100_mb_keep_memory_bounded() {
    let time = TimeContext::new(Some("UTC")).unwrap();
    let before = vm_hwm_kib();

    let markers = walwatch::catalog::Catalog::global().markers();
    let prefix = Prefix::compile("%m [%p] %q%u@%d ", markers).unwrap();
    // checkpoint-looking text and invalid UTF-8, no newline
    let fill: &'static [u8] = b"checkpoint starting: wal \xff\xfe ";
    let input = Generator::new(STDERR_LINE, "", fill, HUGE / fill.len() as u64 + 1, "\n");
    let want = Want { lines: 2 * AROUND as u64 + 1, records: 2 * AROUND };
    check("stderr line", &mut StderrScanner::new(prefix, &time, walwatch::ingest::lexicon()), input, want);

    let repeat = HUGE / CSV_UNIT.len() as u64 + 1;
    let input = Generator::new(CSV_RECORD, CSV_HEAD, CSV_UNIT, repeat, CSV_TAIL);
    let want = Want { lines: 2 * AROUND as u64 + 2 * repeat + 1, records: 2 * AROUND };
    let mut csv = CsvScanner::new(&time, walwatch::ingest::lexicon());
    check("csv record", &mut csv, input, want);
    assert_eq!((csv.stats().entries, csv.stats().oversized), (2 * AROUND as u64 + 1, 1), "csv: one huge record");

    let repeat = HUGE / JSON_UNIT.len() as u64 + 1;
    let input = Generator::new(JSON_LINE, JSON_HEAD, JSON_UNIT, repeat, JSON_TAIL);
    let want = Want { lines: 2 * AROUND as u64 + 1, records: 2 * AROUND };
    let mut json = JsonScanner::new(&time, walwatch::ingest::lexicon());
    check("json line", &mut json, input, want);
    assert_eq!((json.stats().entries, json.stats().oversized), (2 * AROUND as u64 + 1, 1), "json: one huge line");

    let grown_mib = (vm_hwm_kib() - before) / 1024;
    println!("peak memory grew by {grown_mib} MiB over three entries of 100 MiB");
    assert!(grown_mib < 32, "peak memory grew by {grown_mib} MiB for entries of 100 MiB");
}
