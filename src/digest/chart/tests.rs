use super::*;
use crate::analyze::buckets::Bucket;
use crate::settings::{Value, ValueSource};
use crate::store::ByTrigger;

/// A real PostgreSQL 15 server's log: a forced-checkpoint storm, a SIGHUP
/// (max_wal_size = 64MB), an immediate shutdown and its crash recovery.
const CRASHIMM: [&str; 2] = [
    "tests/fixtures/15-stderr-default-crashimm/log/postgresql-2026-11-22_081334.log",
    "tests/fixtures/15-stderr-default-crashimm/log/postgresql-2026-11-22_081730.log",
];

fn store_of(files: &[&str]) -> (tempfile::TempDir, Store) {
    use crate::frame::time::TimeContext;
    use crate::ingest::{self, Options};
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("w.db")).unwrap();
    let id = store.clusters_mut().find_or_create("c").unwrap();
    let opts = Options { prefix: Some("%m [%p] %q%u@%d ".into()), ..Options::default() };
    let time = TimeContext::new(Some("UTC")).unwrap();
    for file in files {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
        ingest::import(&mut store, id, path.to_str().unwrap(), &opts, &time).unwrap();
    }
    (dir, store)
}

fn current(store: &Store) -> Settings {
    crate::settings::current(store, "c").unwrap()
}

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

/// history's row for `[from, to)` as one bucket.
fn history_row(store: &Store, from: Timestamp, to: Timestamp) -> history::Row {
    let bucket = Bucket { start: from.to_zoned(TimeZone::UTC), end: to.to_zoned(TimeZone::UTC) };
    history::rows(store, "c", &[bucket]).unwrap().remove(0)
}

#[test]
fn input_has_the_cycles_and_starts_history_and_suggest_count() {
    let (_dir, store) = store_of(&CRASHIMM);
    // The whole log, and a range cut inside the storm: its first cycle
    // begins at the start before it.
    for (from, to) in [
        ("2026-11-22T08:00:00Z", "2026-11-22T09:00:00Z"),
        ("2026-11-22T08:14:10Z", "2026-11-22T08:16:00Z"),
        ("2026-11-22T08:16:00Z", "2026-11-22T08:30:00Z"),
    ] {
        let (from, to) = (ts(from), ts(to));
        let input = input(&store, "c", &current(&store), (from, to), TimeZone::UTC).unwrap();
        let row = history_row(&store, from, to);

        let mut by_trigger = ByTrigger::default();
        input.starts.iter().for_each(|(_, t)| by_trigger.add(*t, 1));
        assert_eq!(by_trigger, row.checkpoints.plus(&row.restartpoints), "{from}");
        assert_eq!(input.forced() as i64, row.forced());
        assert_eq!(input.too_frequent.len() as i64, row.too_frequent);

        // suggest's cycles over the same window: the same ones.
        let sizing = store.checkpoints().sizing_history("c", from, to).unwrap();
        let usable = sizing::cycles(&sizing, from).usable;
        let theirs: Vec<(Timestamp, Timestamp, f64)> = usable.iter().map(|c| (c.from, c.at, c.rate_kb_s)).collect();
        let ours: Vec<(Timestamp, Timestamp, f64)> = input.cycles.iter().map(|c| (c.from, c.at, c.rate_kb_s)).collect();
        assert_eq!(ours, theirs, "{from}");
        assert_eq!(input.peak_kb_s().map(|p| (p * 10.0).round() / 10.0), row.wal_rate_kb_s.max);
    }
    let all =
        input(&store, "c", &current(&store), (ts("2026-11-22T08:00:00Z"), ts("2026-11-22T09:00:00Z")), TimeZone::UTC)
            .unwrap();
    // What the fixture is known for, so the comparison compared something.
    assert_eq!(all.forced(), 66);
    assert_eq!(all.too_frequent.len(), 66);
    assert!(all.cycles.len() >= 60, "{}", all.cycles.len());
    // max_wal_size = 64MB from the log's SIGHUP line, checkpoint_timeout
    // 30s inferred from its timed checkpoints, PG 15, cct 0.9 by default:
    // 64 / 16 / 1.9 = 2 segments, requested after 1 × 16 MB, over 30 s.
    let absorb = all.absorb.unwrap();
    assert!((absorb.kb_s - 16.0 * 1024.0 / 30.0).abs() < 1e-9, "{absorb:?}");
    assert_eq!(absorb.assumed, ["checkpoint_completion_target"]);
}

fn settings(version: u32, values: &[(&str, &str)]) -> Settings {
    let mut s = Settings::defaults(Some(version));
    for (name, value) in values {
        s.values.insert(name.to_string(), Value { value: value.to_string(), source: ValueSource::Config });
    }
    s
}

#[test]
fn absorb_is_the_forced_trigger_over_checkpoint_timeout() {
    // 1GB = 64 segments; PG 15, cct 0.9: 33 segments, requested after 32.
    let a = absorb(&settings(15, &[("max_wal_size", "1GB"), ("checkpoint_timeout", "5min")])).unwrap();
    assert!((a.kb_s - 512.0 * 1024.0 / 300.0).abs() < 1e-9);
    assert_eq!(a.assumed, ["checkpoint_completion_target"]);
    // PG 10 kept two cycles: 64 / 2.5 = 25 segments, requested after 24.
    let all = [("max_wal_size", "1GB"), ("checkpoint_timeout", "10min"), ("checkpoint_completion_target", "0.5")];
    let a = absorb(&settings(10, &all)).unwrap();
    assert!((a.kb_s - 384.0 * 1024.0 / 600.0).abs() < 1e-9);
    assert!(a.assumed.is_empty());
    // Only the defaults: a line, saying so.
    assert_eq!(absorb(&Settings::defaults(Some(16))).unwrap().assumed.len(), 3);
    // Unreadable values: no line.
    assert_eq!(absorb(&settings(15, &[("max_wal_size", "lots")])), None);
    let mut none = Settings::defaults(None);
    none.values.remove("checkpoint_timeout");
    assert_eq!(absorb(&none), None);
}

fn decode(png_bytes: &[u8]) -> (png::OutputInfo, Vec<u8>) {
    let mut reader = png::Decoder::new(png_bytes).read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    (info, buf)
}

/// The hand-filtered, one-call deflate gives back every pixel as it was
/// drawn: flat runs, a gradient and noise, through a standard decoder.
#[test]
fn the_png_holds_exactly_the_pixels_drawn() {
    let mut rgb = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
    let mut seed = 0x2545_f491_u32;
    for (i, b) in rgb.iter_mut().enumerate() {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        let (x, y) = ((i / 3) as u32 % WIDTH, (i / 3) as u32 / WIDTH);
        *b = match y % 3 {
            0 => 250,                 // a flat background
            1 => (x * 7 + y) as u8,   // a gradient, wrapping
            _ => (seed & 0xff) as u8, // noise
        };
    }
    let png_bytes = encode_png(&rgb).unwrap();
    let (info, decoded) = decode(&png_bytes);
    assert_eq!((info.width, info.height, info.color_type), (WIDTH, HEIGHT, png::ColorType::Rgb));
    assert!(decoded == rgb, "the decoded pixels differ from the drawn ones");
    // A row's first pixel has no left neighbour: kept as it is.
    assert_eq!(&sub_filtered(&[10, 20, 30, 11, 19, 35], 6), &[1, 10, 20, 30, 1, 255, 5]);
}

/// Whether the picture has a pixel of exactly `colour`.
fn has(rgb: &[u8], colour: RGBColor) -> bool {
    rgb.chunks(3).any(|p| p == [colour.0, colour.1, colour.2])
}

#[test]
fn the_png_of_a_storm_is_600_by_260_opaque_and_under_100_kb() {
    let (_dir, store) = store_of(&CRASHIMM);
    let tz = TimeZone::get("Europe/Berlin").unwrap();
    let input =
        input(&store, "c", &current(&store), (ts("2026-11-22T08:13:00Z"), ts("2026-11-22T08:18:30Z")), tz).unwrap();
    let png_bytes = render_png(&input).unwrap();
    assert_eq!(&png_bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert!(png_bytes.len() <= 100 * 1024, "{} bytes", png_bytes.len());
    let (info, rgb) = decode(&png_bytes);
    assert_eq!((info.width, info.height), (WIDTH, HEIGHT));
    assert_eq!((info.color_type, info.bit_depth), (png::ColorType::Rgb, png::BitDepth::Eight));
    // Drawn: the rate, the absorb line, forced and other starts, warnings.
    for colour in [RATE, ABSORB, FORCED, OTHER, WARNING, INK] {
        assert!(has(&rgb, colour), "{colour:?}");
    }
    assert_eq!(&rgb[..3], &[255, 255, 255], "an opaque white corner");
}

fn empty(from: &str, to: &str, tz: &str) -> ChartInput {
    ChartInput {
        cluster: "db1".into(),
        tz: TimeZone::get(tz).unwrap(),
        from: ts(from),
        to: ts(to),
        cycles: vec![],
        absorb: None,
        suggested: None,
        starts: vec![],
        too_frequent: vec![],
    }
}

#[test]
fn a_day_without_cycles_draws_an_empty_chart_and_says_so() {
    let input = empty("2026-11-22T23:00:00Z", "2026-11-23T23:00:00Z", "Europe/Berlin");
    let png_bytes = render_png(&input).unwrap();
    let (info, rgb) = decode(&png_bytes);
    assert_eq!((info.width, info.height), (WIDTH, HEIGHT));
    // No rate drawn above the legend's row.
    let plot = (WIDTH * (HEIGHT - 22) * 3) as usize;
    assert!(!has(&rgb[..plot], RATE));
    assert!(has(&rgb[plot..], RATE), "the legend still explains the colours");
    assert_eq!(
        alt_text(&input),
        "WAL rate per checkpoint cycle on db1, 2026-11-23 (Europe/Berlin): no checkpoint cycles, 0 forced \
         checkpoints; max_wal_size unknown, so no absorb line"
    );
}

#[test]
fn alt_text_names_the_peak_the_forced_and_the_absorb_rate() {
    let mut input = empty("2026-11-22T23:00:00Z", "2026-11-23T23:00:00Z", "Europe/Berlin");
    let at = |s: &str| ts(s);
    input.cycles = vec![
        CyclePoint { from: at("2026-11-23T01:00:00Z"), at: at("2026-11-23T01:05:00Z"), rate_kb_s: 300.0 },
        CyclePoint { from: at("2026-11-23T01:05:00Z"), at: at("2026-11-23T01:06:00Z"), rate_kb_s: 5939.2 },
    ];
    input.starts = vec![
        (at("2026-11-23T01:05:00Z"), Trigger::Time),
        (at("2026-11-23T01:06:00Z"), Trigger::Wal),
        (at("2026-11-23T01:07:00Z"), Trigger::Wal),
        (at("2026-11-23T01:08:00Z"), Trigger::Wal),
    ];
    input.too_frequent = vec![at("2026-11-23T01:07:00Z")];
    input.absorb = Some(Absorb { kb_s: 1228.8, assumed: vec![] });
    assert_eq!(
        alt_text(&input),
        "WAL rate per checkpoint cycle on db1, 2026-11-23 (Europe/Berlin): peak 5.8 MB/s, 3 forced checkpoints, \
         1 \"too frequent\" warning; max_wal_size absorbs 1.2 MB/s"
    );
    let png_bytes = render_png(&input).unwrap();
    assert!(png_bytes.len() <= 100 * 1024);
}

#[test]
fn nan_infinite_huge_and_odd_input_draws_without_a_panic() {
    let mut input = empty("2026-11-23T00:00:00Z", "2026-11-23T00:00:00Z", "UTC");
    input.cluster = format!("a\u{0}b\nc{}", "x".repeat(300));
    let at = ts("2026-11-23T00:00:00Z");
    let later = ts("2026-11-24T00:00:00Z");
    input.cycles = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -5.0, f64::MAX, 0.0, 1e300]
        .into_iter()
        .map(|r| CyclePoint { from: at, at: later, rate_kb_s: r })
        .collect();
    input.starts = vec![(ts("1999-01-01T00:00:00Z"), Trigger::Shutdown), (later, Trigger::EndOfRecovery)];
    input.too_frequent = vec![ts("2100-01-01T00:00:00Z")];
    input.absorb = Some(Absorb { kb_s: f64::NAN, assumed: vec![] });
    let (info, _) = decode(&render_png(&input).unwrap());
    assert_eq!((info.width, info.height), (WIDTH, HEIGHT));
    let alt = alt_text(&input);
    assert!(!alt.contains('\n') && !alt.contains('\u{0}'), "{alt}");
    // A range backwards, and one over years.
    let backwards = empty("2026-11-24T00:00:00Z", "2026-11-23T00:00:00Z", "UTC");
    render_png(&backwards).unwrap();
    let years = empty("2000-01-01T00:00:00Z", "2026-01-01T00:00:00Z", "America/New_York");
    render_png(&years).unwrap();
}

#[test]
fn names_are_cut_with_an_ellipsis_and_cleaned() {
    assert_eq!(short_name("db1", 32), "db1");
    assert_eq!(short_name("a\tb", 32), "a?b");
    assert_eq!(short_name(&"é".repeat(40), 32), format!("{}…", "é".repeat(31)));
    assert_eq!(short_name(&"é".repeat(40), 32).chars().count(), 32);
}

#[test]
fn a_dst_day_is_one_date_and_both_abbreviations() {
    // 2026-03-29 in Berlin: 23 hours, CET then CEST.
    let day = empty("2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z", "Europe/Berlin");
    assert_eq!(range_text(&day), "2026-03-29");
    assert_eq!(abbreviations(&day), "CET/CEST");
    let winter = empty("2026-11-22T23:00:00Z", "2026-11-23T23:00:00Z", "Europe/Berlin");
    assert_eq!(abbreviations(&winter), "CET");
    let part = empty("2026-11-23T08:00:00Z", "2026-11-23T09:30:00Z", "UTC");
    assert_eq!(range_text(&part), "2026-11-23 08:00 – 2026-11-23 09:30");
}

#[test]
fn rates_are_written_in_the_unit_a_person_reads() {
    assert_eq!(rate_text(5939.2), "5.8 MB/s");
    assert_eq!(rate_text(640.0), "640 kB/s");
    assert_eq!(rate_text(3.21), "3.2 kB/s");
    assert_eq!(rate_text(20480.0), "20 MB/s");
}

/// x labels every 3 hours on a day, the 23- and 25-hour DST days included;
/// every 10 minutes on an hour; whole days on a week; at most MAX_X_TICKS
/// steps on any range.
#[test]
fn x_labels_step_by_a_person_s_hours() {
    for (span_h, step) in
        [(24.0, 3.0), (23.0, 3.0), (25.0, 3.0), (1.0, 1.0 / 6.0), (2.0, 0.25), (6.0, 1.0), (12.0, 2.0), (48.0, 6.0)]
    {
        assert_eq!(label_step_h(span_h), step, "{span_h} h");
    }
    assert_eq!(label_step_h(7.0 * 24.0), 24.0);
    assert_eq!(label_step_h(30.0 * 24.0), 168.0);
    for span_h in [0.5, 9.5, 30.0, 100.0, 1000.0, 50_000.0] {
        assert!(span_h / label_step_h(span_h) <= MAX_X_TICKS as f64, "{span_h}");
    }
}

/// The suggested size's line: the same trigger rule as the absorb line
/// (1792MB, PG 15, cct 0.9: 58 segments, requested after 57 = 912 MB, over
/// 30 s), drawn in its own colour on the real crash run, and said in the
/// alt text; none without a suggestion.
#[test]
fn the_suggested_size_is_a_line_of_its_own() {
    let s = settings(15, &[("max_wal_size", "64MB"), ("checkpoint_timeout", "30s")]);
    let line = suggested_line(&s, 1792).unwrap();
    assert_eq!((line.max_wal_size_mb, line.kb_s), (1792, 912.0 * 1024.0 / 30.0));
    let (_dir, store) = store_of(&CRASHIMM);
    let tz = TimeZone::get("UTC").unwrap();
    let day = (ts("2026-11-22T08:13:00Z"), ts("2026-11-22T08:18:30Z"));
    let mut input = input(&store, "c", &current(&store), day, tz).unwrap();
    let (_, without) = decode(&render_png(&input).unwrap());
    assert!(!has(&without, SUGGESTED));
    input.suggested = Some(line);
    let (_, rgb) = decode(&render_png(&input).unwrap());
    assert!(has(&rgb, SUGGESTED));
    assert!(alt_text(&input).ends_with("; the suggested 1792MB would absorb 30 MB/s"), "{}", alt_text(&input));
}
