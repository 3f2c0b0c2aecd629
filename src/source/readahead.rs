//! Read-ahead: a thread reads the next chunks while the caller scans the
//! current one, so the kernel's copy from the page cache (or decompression)
//! overlaps with framing on a second core.

use std::io::{self, Read};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread;

/// Size of each read-ahead block.
const BLOCK: usize = 1 << 20;
/// Blocks in flight: bounds memory to a few MiB whatever the input. Two
/// keep framing busy: reading a block from the page cache takes a fraction
/// of the time framing it does, even with the ASCII prefilter.
const DEPTH: usize = 2;

pub(crate) struct ReadAhead {
    full: Receiver<io::Result<Vec<u8>>>,
    empty: SyncSender<Vec<u8>>,
    current: Vec<u8>,
    at: usize,
    done: bool,
}

impl ReadAhead {
    pub(crate) fn new(mut inner: Box<dyn Read + Send>) -> ReadAhead {
        let (full_tx, full) = mpsc::sync_channel::<io::Result<Vec<u8>>>(DEPTH);
        let (empty, empty_rx) = mpsc::sync_channel::<Vec<u8>>(DEPTH + 1);
        thread::Builder::new()
            .name("walwatch-read".into())
            .spawn(move || {
                let mut fresh = DEPTH + 1;
                loop {
                    // Reuse returned blocks; allocate only the first few.
                    let mut block = match empty_rx.try_recv() {
                        Ok(b) => b,
                        Err(_) if fresh > 0 => {
                            fresh -= 1;
                            vec![0u8; BLOCK]
                        }
                        Err(_) => match empty_rx.recv() {
                            Ok(b) => b,
                            Err(_) => return,
                        },
                    };
                    block.resize(BLOCK, 0);
                    match read_some(&mut inner, &mut block) {
                        Ok(0) => {
                            let _ = full_tx.send(Ok(Vec::new()));
                            return;
                        }
                        Ok(n) => {
                            block.truncate(n);
                            if full_tx.send(Ok(block)).is_err() {
                                return;
                            }
                        }
                        Err(e) => {
                            let _ = full_tx.send(Err(e));
                            return;
                        }
                    }
                }
            })
            .expect("spawning the read-ahead thread");
        ReadAhead { full, empty, current: Vec::new(), at: 0, done: false }
    }
}

fn read_some(inner: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match inner.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

impl Read for ReadAhead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.current.len() {
            if self.done {
                return Ok(0);
            }
            let used = std::mem::take(&mut self.current);
            self.at = 0;
            if used.capacity() > 0 {
                let _ = self.empty.try_send(used);
            }
            match self.full.recv() {
                Ok(Ok(block)) if block.is_empty() => self.done = true,
                Ok(Ok(block)) => {
                    self.current = block;
                    self.at = 0;
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Err(_) => self.done = true,
            }
        }
        let n = buf.len().min(self.current.len() - self.at);
        buf[..n].copy_from_slice(&self.current[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Failing(usize);
    impl Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0 == 0 {
                return Err(io::Error::other("disk on fire"));
            }
            let n = buf.len().min(self.0).min(1000);
            buf[..n].fill(b'a');
            self.0 -= n;
            Ok(n)
        }
    }

    #[test]
    fn passes_bytes_through_in_order() {
        let data: Vec<u8> = (0..5_000_000u32).map(|i| (i % 251) as u8).collect();
        let mut r = ReadAhead::new(Box::new(io::Cursor::new(data.clone())));
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn delivers_the_bytes_before_an_error_then_the_error() {
        let mut r = ReadAhead::new(Box::new(Failing(2500)));
        let mut out = Vec::new();
        let err = r.read_to_end(&mut out).unwrap_err();
        assert_eq!(out.len(), 2500);
        assert_eq!(err.to_string(), "disk on fire");
    }
}
