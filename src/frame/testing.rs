//! Helpers for the formats' framing tests.

use std::io;

use super::*;

/// Frames `data`, which starts at `start` in its source, in buffers of
/// `chunk` bytes; the position returned must be the last one reported.
pub(crate) fn frame_all(
    scanner: &mut dyn Scan,
    data: &[u8],
    chunk: usize,
    tail: Tail,
    start: Pos,
) -> (Vec<Record>, Pos) {
    let mut records = Vec::new();
    let mut reached = Vec::new();
    let end = drive_sized(chunk, data, scanner, start, tail, |r, at| {
        records.extend(r);
        reached.push(at);
        Ok::<(), io::Error>(())
    })
    .unwrap();
    assert_eq!(reached.last(), Some(&end), "the position returned is the last one reported");
    (records, end)
}

/// Entry starts of a log made of `entries` (and its end).
pub(crate) fn boundaries(entries: &[String]) -> Vec<Pos> {
    let mut at = vec![Pos::START];
    for e in entries {
        let prev = at[at.len() - 1];
        at.push(Pos { offset: prev.offset + e.len() as u64, line: prev.line + lines::count(e.as_bytes()) });
    }
    at
}

/// Reads `entries` as a file PostgreSQL is still writing, stopped at
/// every byte and read on from the position reached: the records must
/// be those of the whole file, and the position never inside an entry.
pub(crate) fn check_growing_file<'t>(new_scanner: impl Fn() -> Box<dyn Scan + 't>, entries: &[String], chunk: usize) {
    let len = entries.iter().map(String::len).sum();
    check_growing_file_at(new_scanner, entries, chunk, 0..=len);
}

/// [`check_growing_file`] stopped at the given bytes only (each costs
/// two framings of the file: every byte of a long log takes minutes).
pub(crate) fn check_growing_file_at<'t>(
    new_scanner: impl Fn() -> Box<dyn Scan + 't>,
    entries: &[String],
    chunk: usize,
    cuts: impl IntoIterator<Item = usize>,
) {
    let data = entries.concat().into_bytes();
    let starts = boundaries(entries);
    let (whole, end) = frame_all(new_scanner().as_mut(), &data, chunk, Tail::Take, Pos::START);
    assert_eq!(end, starts[entries.len()]);
    for cut in cuts {
        let (mut got, reached) = frame_all(new_scanner().as_mut(), &data[..cut], chunk, Tail::Wait, Pos::START);
        let entry_start = starts.iter().rev().find(|p| p.offset <= cut as u64);
        assert_eq!(Some(&reached), entry_start, "chunk {chunk}, cut {cut}: not the start of the entry cut");
        let rest = &data[reached.offset as usize..];
        let (more, end) = frame_all(new_scanner().as_mut(), rest, chunk, Tail::Wait, reached);
        got.extend(more);
        assert_eq!(got, whole, "chunk {chunk}, cut {cut}");
        assert_eq!(end, starts[entries.len()], "chunk {chunk}, cut {cut}");
    }
}
