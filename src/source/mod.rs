//! Where log bytes come from: plain files, `.gz`, `.zst` and standard input,
//! and how a source is recognised again on a later import.
//!
//! A source is identified by a fingerprint of its first bytes (after
//! decompression), not by its name or inode alone: a rotated file keeps its
//! content but changes its name, and `log_truncate_on_rotation` keeps the
//! inode but replaces the content.

use std::fs::File;
use std::io::{self, Chain, Cursor, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use thiserror::Error;

mod json_array;
pub(crate) mod readahead;
pub(crate) mod zstd;
use xxhash_rust::xxh3::xxh3_64;

/// How many leading bytes make up a fingerprint (fewer when the source is shorter).
pub(crate) const FINGERPRINT_BYTES: usize = 4096;

/// How many leading bytes are read up front: enough lines to detect the
/// format and log_line_prefix from.
pub(crate) const HEAD_BYTES: usize = 64 * 1024;

#[derive(Debug, Error)]
pub(crate) enum SourceError {
    #[error("cannot open {path}: {source}")]
    Open { path: String, source: io::Error },
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: io::Error },
    #[error("{path} is a directory; pass the log files inside it (e.g. {path}/*.log)")]
    Directory { path: String },
}

/// Compression detected from the magic bytes (not the file name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compression {
    None,
    Gzip,
    Zstd,
}

/// The identity of a source's content: a hash of its first `len` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    pub(crate) len: usize,
    pub(crate) hash: u64,
}

impl Fingerprint {
    /// Fingerprint of `head` truncated to `FINGERPRINT_BYTES`.
    pub(crate) fn of(head: &[u8]) -> Fingerprint {
        let head = &head[..head.len().min(FINGERPRINT_BYTES)];
        Fingerprint { len: head.len(), hash: xxh3_64(head) }
    }

    /// Whether `head` starts with the bytes this fingerprint was taken from.
    #[cfg(test)]
    pub(crate) fn matches(&self, head: &[u8]) -> bool {
        head.len() >= self.len && xxh3_64(&head[..self.len]) == self.hash
    }
}

/// File metadata kept with a source for the operator's benefit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileMeta {
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) size: u64,
}

/// An opened log source whose first bytes have already been read.
pub(crate) struct Source {
    pub(crate) name: String,
    pub(crate) meta: Option<FileMeta>,
    /// When a plain file was last written: one quiet for a while is
    /// finished, and syslog times without a year fall in the year before it.
    pub(crate) modified: Option<std::time::SystemTime>,
    pub(crate) compression: Compression,
    head: Vec<u8>,
    inner: Inner,
}

enum Inner {
    Plain(File),
    Stream(Box<dyn Read + Send>),
}

impl Source {
    /// Opens `path` ("-" is standard input) and reads its first bytes.
    pub(crate) fn open(path: &str) -> Result<Source, SourceError> {
        if path == "-" {
            return Self::from_stream("-".into(), None, Box::new(io::stdin()))?.json_array_as_lines();
        }
        let file = File::open(Path::new(path)).map_err(|source| SourceError::Open { path: path.into(), source })?;
        Self::from_file(file, path)
    }

    /// A source over an already open file (the daemon keeps files open so
    /// it can finish reading them after a rename or a delete).
    pub(crate) fn from_file(file: File, path: &str) -> Result<Source, SourceError> {
        Self::from_file_as_is(file, path)?.json_array_as_lines()
    }

    /// A log exported as one JSON array (Cloud Logging's download), read as
    /// one entry per line, oldest first (see [`json_array`]).
    fn json_array_as_lines(self) -> Result<Source, SourceError> {
        if !json_array::looks_like(&self.head) {
            return Ok(self);
        }
        let (name, meta, modified, compression) = (self.name.clone(), self.meta, self.modified, self.compression);
        let read_err = |source| SourceError::Read { path: name.clone(), source };
        let lines = json_array::to_lines(self.into_reader(0).map_err(read_err)?).map_err(read_err)?;
        let source = Self::from_stream(name.clone(), meta, Box::new(Cursor::new(lines)))?;
        Ok(source.modified_at(modified).with_compression(compression))
    }

    fn from_file_as_is(mut file: File, path: &str) -> Result<Source, SourceError> {
        let open_err = |source| SourceError::Open { path: path.into(), source };
        let md = file.metadata().map_err(open_err)?;
        if md.is_dir() {
            return Err(SourceError::Directory { path: path.into() });
        }
        let meta = Some(FileMeta { dev: md.dev(), ino: md.ino(), size: md.size() });
        let mut magic = [0u8; 4];
        file.seek(SeekFrom::Start(0)).map_err(|source| SourceError::Read { path: path.into(), source })?;
        let n = read_full(&mut file, &mut magic).map_err(|source| SourceError::Read { path: path.into(), source })?;
        file.seek(SeekFrom::Start(0)).map_err(|source| SourceError::Read { path: path.into(), source })?;
        match compression_of(&magic[..n]) {
            Compression::None => Self::plain(path.into(), meta, file).map(|s| s.modified_at(md.modified().ok())),
            Compression::Gzip => {
                Self::from_stream(path.into(), meta, Box::new(flate2::read::MultiGzDecoder::new(file)))
                    .map(|s| s.with_compression(Compression::Gzip))
            }
            Compression::Zstd => {
                let dec = zstd::ZstdFrames::new(io::BufReader::new(file));
                Self::from_stream(path.into(), meta, Box::new(dec)).map(|s| s.with_compression(Compression::Zstd))
            }
        }
    }

    fn modified_at(mut self, t: Option<std::time::SystemTime>) -> Self {
        self.modified = t;
        self
    }

    fn with_compression(mut self, c: Compression) -> Self {
        self.compression = c;
        self
    }

    fn plain(name: String, meta: Option<FileMeta>, mut file: File) -> Result<Source, SourceError> {
        let head = read_head(&mut file).map_err(|source| SourceError::Read { path: name.clone(), source })?;
        Ok(Source { name, meta, modified: None, compression: Compression::None, head, inner: Inner::Plain(file) })
    }

    fn from_stream(
        name: String,
        meta: Option<FileMeta>,
        mut reader: Box<dyn Read + Send>,
    ) -> Result<Source, SourceError> {
        let head = read_head(&mut reader).map_err(|source| SourceError::Read { path: name.clone(), source })?;
        Ok(Source { name, meta, modified: None, compression: Compression::None, head, inner: Inner::Stream(reader) })
    }

    /// The first [`HEAD_BYTES`] bytes of the (decompressed) content.
    pub(crate) fn head(&self) -> &[u8] {
        &self.head
    }

    #[cfg(test)]
    fn fingerprint(&self) -> Fingerprint {
        Fingerprint::of(&self.head)
    }

    /// The whole content from byte `skip` on. Plain files seek; streams
    /// (compressed, stdin) are read and discarded up to `skip`.
    pub(crate) fn into_reader(self, skip: u64) -> io::Result<Box<dyn Read + Send>> {
        let head_len = self.head.len() as u64;
        match self.inner {
            Inner::Plain(mut file) if skip >= head_len => {
                file.seek(SeekFrom::Start(skip))?;
                Ok(Box::new(file))
            }
            Inner::Plain(file) => Ok(Box::new(chain_from(self.head, file, skip))),
            Inner::Stream(reader) if skip >= head_len => {
                let mut reader = reader;
                io::copy(&mut (&mut reader).take(skip - head_len), &mut io::sink())?;
                Ok(reader)
            }
            Inner::Stream(reader) => Ok(Box::new(chain_from(self.head, reader, skip))),
        }
    }
}

fn chain_from<R: Read + Send>(head: Vec<u8>, rest: R, skip: u64) -> Chain<Cursor<Vec<u8>>, R> {
    let mut cursor = Cursor::new(head);
    cursor.set_position(skip);
    cursor.chain(rest)
}

fn compression_of(magic: &[u8]) -> Compression {
    match magic {
        [0x1f, 0x8b, ..] => Compression::Gzip,
        [0x28, 0xb5, 0x2f, 0xfd, ..] => Compression::Zstd,
        _ => Compression::None,
    }
}

fn read_head(reader: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut head = vec![0u8; HEAD_BYTES];
    let n = read_full(reader, &mut head)?;
    head.truncate(n);
    Ok(head)
}

/// Like `read_exact`, but a short read at end of input is not an error.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn content(n: usize) -> Vec<u8> {
        (0..n).map(|i| b"abcdefghij\n"[i % 11]).collect()
    }

    fn read_all(src: Source, skip: u64) -> Vec<u8> {
        let mut out = Vec::new();
        src.into_reader(skip).unwrap().read_to_end(&mut out).unwrap();
        out
    }

    #[test]
    fn plain_gzip_and_zstd_read_the_same_bytes_from_any_offset() {
        let dir = tempfile::tempdir().unwrap();
        let data = content(90_000);
        let plain = dir.path().join("a.log");
        std::fs::write(&plain, &data).unwrap();
        let gz = dir.path().join("a.log.gz");
        let mut enc = flate2::write::GzEncoder::new(File::create(&gz).unwrap(), flate2::Compression::fast());
        enc.write_all(&data).unwrap();
        enc.finish().unwrap();
        let zst = dir.path().join("a.log.zst");
        std::fs::write(&zst, ruzstd::encoding::compress_to_vec(&data[..], ruzstd::encoding::CompressionLevel::Fastest))
            .unwrap();
        for path in [&plain, &gz, &zst] {
            for skip in [0u64, 10, 4096, 5000, 10_000, 20_000, 70_000, 100_000] {
                let src = Source::open(path.to_str().unwrap()).unwrap();
                assert_eq!(src.fingerprint(), Fingerprint::of(&data));
                let want = &data[(skip as usize).min(data.len())..];
                assert_eq!(read_all(src, skip), want, "{path:?} skip {skip}");
            }
        }
    }

    #[test]
    fn fingerprint_of_a_grown_file_matches_its_old_prefix() {
        let old = Fingerprint::of(b"short file\n");
        assert!(old.matches(b"short file\nand more lines\n"));
        assert!(!old.matches(b"short fil"));
        assert!(!old.matches(b"other file\n and more"));
    }

    #[test]
    fn errors_name_the_path() {
        let err = Source::open("/nonexistent/walwatch.log").err().unwrap();
        assert!(err.to_string().contains("/nonexistent/walwatch.log"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let err = Source::open(dir.path().to_str().unwrap()).err().unwrap();
        assert!(err.to_string().contains("is a directory"), "{err}");
    }

    #[test]
    fn corrupt_gzip_is_a_read_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.gz");
        std::fs::write(&p, [0x1f, 0x8b, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]).unwrap();
        match Source::open(p.to_str().unwrap()) {
            Err(e) => assert!(e.to_string().contains("bad.gz")),
            Ok(src) => assert!(src.into_reader(0).and_then(|mut r| r.read_to_end(&mut Vec::new())).is_err()),
        }
    }
}
