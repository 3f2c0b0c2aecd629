//! A shipped file's spool: its lines as the server wrote them, in order,
//! in a file the ingest pipeline reads like a local log; and beside it an
//! index of (offset in the shipped file, hash of the line) for every line,
//! in offset order, so that a line sent again is known for what it is.
//!
//! Bytes count only once the store records the spool's and the index's
//! lengths (`Store::commit_stream`): opening a spool cuts off whatever a
//! request wrote before it failed or the process died, and an answer of
//! 2xx is sent only after that record.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::store::StreamRow;

/// One index entry: the line's offset and its hash, little-endian.
const RECORD: u64 = 16;

/// What a stream's current generation holds. Its files are opened when
/// needed and may be closed between batches ([`Spool::close`]): a central
/// with thousands of shipped files keeps a bounded number of descriptors.
pub(crate) struct Spool {
    files: Option<Files>,
    pub(crate) log_path: PathBuf,
    /// What is committed: lengths and offsets as the store has them.
    pub(crate) row: StreamRow,
    /// Where the blocks given back to the filesystem end ([`Spool::release_read`]);
    /// `None` where the filesystem cannot punch holes.
    released_to: Option<u64>,
}

struct Files {
    log: File,
    index: File,
    /// The index of the generation before (its lines read and its spool
    /// removed): a batch sent again that still holds the old content's
    /// last lines is known by it.
    previous: Option<(File, u64)>,
}

/// The start of a spool that stays whole: what every read looks at (the
/// source's head: its identity in the store and its prefix).
const KEEP_HEAD: u64 = crate::source::HEAD_BYTES as u64;
/// What stays whole before the read position: a reader resuming there looks
/// back at most a prefix's span (under 4 KiB but for absurd paddings).
const KEEP_BEHIND: u64 = 64 << 10;
/// Blocks are given back in steps of at least this, not at every batch:
/// small enough that a day's log of a quiet server (a few hundred KiB)
/// gives most of itself back.
const RELEASE_STEP: u64 = 64 << 10;
const BLOCK: u64 = 4096;

/// Whether an error means the spool was damaged outside walwatch (cut,
/// replaced, removed), rather than that it cannot be written now.
pub(crate) fn damaged(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::InvalidData
}

/// Lines taken from a batch, not yet written.
#[derive(Default)]
pub(crate) struct Pending {
    bytes: Vec<u8>,
    index: Vec<u8>,
    /// (offset, hash) of the lines above, for a line sent twice in one batch.
    lines: Vec<(u64, u64)>,
    /// Where the line after the last one pushed starts.
    pub(crate) next_offset: Option<u64>,
    /// (offset, bytes) of the stretches of the file not shipped between the
    /// lines pushed (and before the first, from the stream's last line).
    pub(crate) gaps: Vec<(u64, u64)>,
}

impl Pending {
    /// Adds a line at `offset`; `expected` is where the stream's next line
    /// should start when nothing was pushed yet (what the store recorded).
    pub(crate) fn push(&mut self, offset: u64, hash: u64, message: &[u8], expected: Option<u64>) {
        if let Some(expected) = self.next_offset.or(expected).filter(|&e| offset > e) {
            self.gaps.push((expected, offset - expected));
        }
        self.next_offset = Some(offset + message.len() as u64 + 1);
        self.bytes.extend_from_slice(message);
        self.bytes.push(b'\n');
        self.index.extend_from_slice(&offset.to_le_bytes());
        self.index.extend_from_slice(&hash.to_le_bytes());
        self.lines.push((offset, hash));
    }

    fn recorded(&self, offset: u64) -> Option<u64> {
        self.lines.binary_search_by_key(&offset, |l| l.0).ok().map(|i| self.lines[i].1)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

impl Spool {
    /// The spool of `row`'s generation in `dir`, cut back to what is
    /// committed; an error that [`damaged`] tells apart when committed
    /// bytes are missing.
    pub(crate) fn open(dir: &Path, row: StreamRow) -> io::Result<Spool> {
        std::fs::create_dir_all(dir)?;
        let log_path = dir.join(file_name(&row, row.generation, "log"));
        let mut spool = Spool { files: None, log_path, row, released_to: Some(0) };
        spool.files()?;
        Ok(spool)
    }

    /// The open files, opened (and checked) again after [`Spool::close`].
    fn files(&mut self) -> io::Result<&mut Files> {
        if self.files.is_none() {
            let log = cut_to(&self.log_path, self.row.spool_len)?;
            let index = cut_to(&self.log_path.with_extension("idx"), self.row.index_len)?;
            let previous = match self.row.generation {
                0 => None,
                g => match File::open(self.log_path.with_file_name(file_name(&self.row, g - 1, "idx"))) {
                    Ok(file) => {
                        let len = file.metadata()?.len();
                        Some((file, len))
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                    Err(e) => return Err(e),
                },
            };
            self.files = Some(Files { log, index, previous });
        }
        Ok(self.files.as_mut().expect("opened above"))
    }

    /// Closes the files (reopened when needed).
    pub(crate) fn close(&mut self) {
        self.files = None;
    }

    pub(crate) fn is_open(&self) -> bool {
        self.files.is_some()
    }

    /// The hash of the line the generation before took at `offset`.
    pub(crate) fn recorded_before(&mut self, offset: u64) -> io::Result<Option<u64>> {
        match &self.files()?.previous {
            Some((file, len)) => search(file, *len, offset),
            None => Ok(None),
        }
    }

    /// The hash of the line taken at `offset` in this generation, if one was.
    pub(crate) fn recorded(&mut self, offset: u64, pending: &Pending) -> io::Result<Option<u64>> {
        if let Some(hash) = pending.recorded(offset) {
            return Ok(Some(hash));
        }
        let len = self.row.index_len;
        search(&self.files()?.index, len, offset)
    }

    /// Appends `pending` to the spool and the index and makes them durable;
    /// the returned row has the new lengths, for the store to commit.
    pub(crate) fn write(&mut self, pending: &Pending) -> io::Result<StreamRow> {
        let mut row = self.row.clone();
        let files = self.files()?;
        // Cut or replaced while open: appending would leave a hole of zeros.
        for (file, committed) in [(&files.log, row.spool_len), (&files.index, row.index_len)] {
            check_holds(file, committed)?;
        }
        write_at_end(&mut files.log, row.spool_len, &pending.bytes)?;
        write_at_end(&mut files.index, row.index_len, &pending.index)?;
        row.spool_len += pending.bytes.len() as u64;
        row.index_len += pending.index.len() as u64;
        Ok(row)
    }

    /// Gives the disk blocks of what the store has read (up to `read_to`)
    /// back to the filesystem: a central keeps no second copy of every
    /// host's log. The file keeps its length and every offset (the hole
    /// reads as zeros, and nothing reads it: a read resumes at its
    /// position, looking at the head and a prefix's span before it only);
    /// the index stays whole, so a line sent again is still known. A
    /// filesystem that cannot punch holes keeps the bytes, as before.
    pub(crate) fn release_read(&mut self, read_to: u64) -> io::Result<()> {
        let Some(released) = self.released_to else { return Ok(()) };
        let start = released.max(KEEP_HEAD.next_multiple_of(BLOCK));
        let end = read_to.min(self.row.spool_len).saturating_sub(KEEP_BEHIND) / BLOCK * BLOCK;
        if end < start + RELEASE_STEP {
            return Ok(());
        }
        let flags = rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE;
        match rustix::fs::fallocate(&self.files()?.log, flags, start, end - start) {
            Ok(()) => self.released_to = Some(end),
            Err(rustix::io::Errno::OPNOTSUPP) => self.released_to = None,
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }

    /// Takes back a write the store did not commit.
    pub(crate) fn cut_back(&mut self) -> io::Result<()> {
        let (spool_len, index_len) = (self.row.spool_len, self.row.index_len);
        let files = self.files()?;
        files.log.set_len(spool_len)?;
        files.index.set_len(index_len)
    }

    /// Removes this generation's spool (read to the end and replaced by a
    /// new one) and the index of the one before it; its own index stays for
    /// the next generation's [`Spool::recorded_before`].
    pub(crate) fn remove(self) -> io::Result<()> {
        if self.row.generation > 0 {
            let older = self.log_path.with_file_name(file_name(&self.row, self.row.generation - 1, "idx"));
            match std::fs::remove_file(older) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        std::fs::remove_file(&self.log_path)
    }
}

/// `<stream id>-<generation>.<extension>`.
pub(crate) fn file_name(row: &StreamRow, generation: i64, extension: &str) -> String {
    format!("{}-{generation}.{extension}", row.id)
}

/// The hash recorded for `offset` in the first `len` bytes of `index`, by
/// binary search (offsets ascend within a generation).
fn search(index: &File, len: u64, offset: u64) -> io::Result<Option<u64>> {
    let (mut lo, mut hi) = (0, len / RECORD);
    let mut record = [0u8; RECORD as usize];
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        index.read_exact_at(&mut record, mid * RECORD)?;
        let at = u64::from_le_bytes(record[..8].try_into().expect("8 bytes"));
        match at.cmp(&offset) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return Ok(Some(u64::from_le_bytes(record[8..].try_into().expect("8")))),
        }
    }
    Ok(None)
}

/// Opens `path` for reading and writing, cut to `len`: longer means a write
/// that was never committed; shorter means committed lines are gone, which
/// is never silently accepted.
fn cut_to(path: &Path, len: u64) -> io::Result<File> {
    let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
    let size = check_holds(&file, len)?;
    if size > len {
        file.set_len(len)?;
    }
    Ok(file)
}

/// The file's size, when it holds at least the `committed` bytes.
fn check_holds(file: &File, committed: u64) -> io::Result<u64> {
    let size = file.metadata()?.len();
    if size < committed {
        let message = format!(
            "it holds {size} bytes but {committed} were committed: it was cut, replaced or removed outside walwatch"
        );
        return Err(io::Error::new(io::ErrorKind::InvalidData, message));
    }
    Ok(size)
}

fn write_at_end(file: &mut File, at: u64, bytes: &[u8]) -> io::Result<()> {
    if bytes.is_empty() {
        return Ok(());
    }
    file.write_all_at(bytes, at)?;
    file.flush()?;
    file.sync_data()
}

#[cfg(test)]
mod tests;
