//! A zstd stream read as its decompressed bytes: every frame of it, in order
//! (`zstd` writes one; `cat a.zst b.zst`, or a tool that flushes a frame at
//! a time, makes several), skippable frames skipped. Decoded by ruzstd, a
//! pure Rust decoder: the first build compiles no C library for it (the C
//! zstd library was an eighth of a release build's CPU time).

use std::io::{self, BufRead, Read};

use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};

pub(crate) struct ZstdFrames<R> {
    source: R,
    frame: FrameDecoder,
    /// A frame has been started and not yet read to its end.
    in_frame: bool,
}

impl<R: BufRead> ZstdFrames<R> {
    pub(crate) fn new(source: R) -> Self {
        ZstdFrames { source, frame: FrameDecoder::new(), in_frame: false }
    }

    /// Starts the next frame; false at the end of the stream.
    fn next_frame(&mut self) -> io::Result<bool> {
        loop {
            if self.source.fill_buf()?.is_empty() {
                return Ok(false);
            }
            match self.frame.reset(&mut self.source) {
                Ok(()) => return Ok(true),
                Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame { length, .. })) => {
                    let skipped = io::copy(&mut (&mut self.source).take(u64::from(length)), &mut io::sink())?;
                    if skipped < u64::from(length) {
                        return Err(corrupt("a skippable frame is cut short"));
                    }
                }
                Err(e) => return Err(corrupt(e)),
            }
        }
    }
}

impl<R: BufRead> Read for ZstdFrames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.in_frame {
                // Decode until some bytes can be handed out or the frame ends;
                // 0 bytes from a frame not yet finished would read as the end.
                while self.frame.can_collect() == 0 && !self.frame.is_finished() {
                    self.frame
                        .decode_blocks(&mut self.source, BlockDecodingStrategy::UptoBlocks(1))
                        .map_err(corrupt)?;
                }
                match self.frame.read(buf)? {
                    0 => self.in_frame = false,
                    n => return Ok(n),
                }
            }
            if !self.next_frame()? {
                return Ok(0);
            }
            self.in_frame = true;
        }
    }
}

/// A stream that is not (or no longer) valid zstd: said as such, never
/// taken for its end.
fn corrupt(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("not valid zstd: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ruzstd::encoding::{compress_to_vec, CompressionLevel};

    fn text(n: usize) -> Vec<u8> {
        (0..n)
            .map(|i| format!("2026-11-22 08:08:{:02}.{:03} UTC [42] LOG:  line {i}\n", i % 60, i % 1000))
            .collect::<String>()
            .into_bytes()
    }

    fn decoded(bytes: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        ZstdFrames::new(io::BufReader::with_capacity(7, bytes)).read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn every_frame_is_read_in_order_and_skippable_frames_skipped() {
        let (a, b) = (text(3_000), text(10));
        let mut stream = compress_to_vec(&a[..], CompressionLevel::Fastest);
        // A skippable frame (magic 0x184D2A50..5F, then a length) between the two.
        stream.extend_from_slice(&0x184D_2A53u32.to_le_bytes());
        stream.extend_from_slice(&5u32.to_le_bytes());
        stream.extend_from_slice(b"12345");
        stream.extend(compress_to_vec(&b[..], CompressionLevel::Fastest));
        assert_eq!(decoded(&stream).unwrap(), [a, b].concat());
        assert_eq!(decoded(&[]).unwrap(), b"");
    }

    #[test]
    fn a_cut_or_corrupt_stream_is_an_error_not_an_end() {
        let stream = compress_to_vec(&text(3_000)[..], CompressionLevel::Fastest);
        let cut = decoded(&stream[..stream.len() / 2]).unwrap_err();
        assert_eq!(cut.kind(), io::ErrorKind::InvalidData, "{cut}");
        let garbage = decoded(b"\x28\xb5\x2f\xfdnot zstd at all").unwrap_err();
        assert_eq!(garbage.kind(), io::ErrorKind::InvalidData, "{garbage}");
        assert!(garbage.to_string().starts_with("not valid zstd: "), "{garbage}");
    }
}
