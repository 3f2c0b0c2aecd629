//! The import's hot path on real log slices: candidate search, framing and
//! classification, without the store. A regression in import
//! speed shows up here in a minute, without bench/import-bench.sh's 1 GB log.
//!
//! Each group also times a reference on the same bytes — counting
//! "checkpoint" with memchr's memmem, what `grep -c` does — so the figure to
//! compare between runs and machines is the ratio `frame+classify ÷ memmem`,
//! not the absolute time (these machines are noisy).
//!
//! Run: `cargo bench --bench hot_path` (criterion prints time and MiB/s per
//! benchmark; `-- --quick` for a short run).
//!
//! The slices are real PostgreSQL logs from tests/fixtures/: a PostgreSQL 15
//! server under pgbench with statement logging (stderr, Debian's prefix:
//! mostly lines that are *not* events, the common case), and the csvlog and
//! jsonlog of PostgreSQL 13 and 15 runs (dense in checkpoint events).

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use walwatch::catalog::Catalog;
use walwatch::classify::{self, Outcome};
use walwatch::frame::formats::csvlog::CsvScanner;
use walwatch::frame::formats::jsonlog::JsonScanner;
use walwatch::frame::formats::stderr::StderrScanner;
use walwatch::frame::prefix::Prefix;
use walwatch::frame::time::TimeContext;
use walwatch::frame::{self, Pos, Scan, Tail};

/// How often each slice is repeated: large enough that one iteration spans
/// several 2 MiB chunks, as a real import does.
const REPEAT: usize = 8;

/// The run's log files whose names end in `ext`, in name order, repeated.
fn fixture_log(run: &str, ext: &str) -> Vec<u8> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(run).join("log");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    let mut one = Vec::new();
    for f in files {
        one.extend(std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display())));
    }
    assert!(!one.is_empty(), "{}: no log bytes", dir.display());
    one.repeat(REPEAT)
}

/// Frames and classifies `data` as an import would; returns (records, events).
fn frame_and_classify(scanner: &mut dyn Scan, data: &[u8]) -> (usize, usize) {
    let catalog = Catalog::global();
    let (mut records, mut events) = (0, 0);
    frame::drive(data, scanner, Pos::START, Tail::Take, |chunk, _| {
        records += chunk.len();
        events += chunk.iter().filter(|r| matches!(classify::classify(catalog, r), Outcome::Event(_))).count();
        Ok::<(), std::io::Error>(())
    })
    .expect("reading from memory cannot fail");
    (records, events)
}

/// The reference: what `grep -c checkpoint` does with the same bytes.
fn memmem_count(data: &[u8]) -> usize {
    memchr::memmem::find_iter(data, b"checkpoint").count()
}

fn group<'t>(c: &mut Criterion, name: &str, data: &[u8], new_scanner: &dyn Fn() -> Box<dyn Scan + 't>) {
    // Each group must actually find events: a scanner that silently reads
    // nothing would be very fast.
    let (records, events) = frame_and_classify(new_scanner().as_mut(), data);
    assert!(records > 0 && events > 0, "{name}: {records} records, {events} events");
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Bytes(data.len() as u64));
    g.bench_function("frame+classify", |b| b.iter(|| frame_and_classify(new_scanner().as_mut(), black_box(data))));
    g.bench_function("memmem (grep -c)", |b| b.iter(|| memmem_count(black_box(data))));
    g.finish();
}

fn hot_path(c: &mut Criterion) {
    let time = TimeContext::new(None).expect("UTC");
    let markers = Catalog::global().markers();

    let stderr = fixture_log("15-stderr-default-noise", "log");
    let debian = Prefix::compile("%m [%p] %q%u@%d ", markers).expect("Debian's prefix");
    group(c, "stderr, statements logged (PG 15)", &stderr, &|| {
        Box::new(StderrScanner::new(debian.clone(), &time, walwatch::ingest::lexicon()))
    });

    let csv = fixture_log("13-csvlog-std", "csv");
    group(c, "csvlog (PG 13)", &csv, &|| Box::new(CsvScanner::new(&time, walwatch::ingest::lexicon())));

    let json = fixture_log("15-jsonlog-std", "json");
    group(c, "jsonlog (PG 15)", &json, &|| Box::new(JsonScanner::new(&time, walwatch::ingest::lexicon())));
}

criterion_group!(benches, hot_path);
criterion_main!(benches);
