//! A request body, read within its bounds: no more than the limit (checked
//! on Content-Length before a byte is read, and while reading), and no
//! slower than the minimum rate once the grace period is over.

use std::time::Duration;

use http_body_util::BodyExt;
use hyper::body::Incoming;
use tokio::time::Instant;

use super::Limits;

/// Why a body was not read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum BodyFault {
    TooLarge,
    /// Slower than the minimum rate, or longer than the longest time.
    TooSlow,
    /// The connection broke, or the chunked framing was wrong.
    Broken(String),
}

/// The body, whole, of at most `limit` bytes.
pub(crate) async fn read(
    mut body: Incoming,
    announced: Option<u64>,
    limit: u64,
    limits: &Limits,
) -> Result<Vec<u8>, BodyFault> {
    if announced.is_some_and(|n| n > limit) {
        return Err(BodyFault::TooLarge);
    }
    let start = Instant::now();
    let hard = start + limits.max_body_time;
    // What was announced, but never more than a first chunk's worth up front.
    let mut out = Vec::with_capacity(announced.unwrap_or(0).min(1 << 20) as usize);
    loop {
        let due = start + limits.body_grace + rate_time(out.len() as u64 + 1, limits.min_body_rate);
        let frame = match tokio::time::timeout_at(due.min(hard), body.frame()).await {
            Err(_) => return Err(BodyFault::TooSlow),
            Ok(None) => return Ok(out),
            Ok(Some(Err(e))) => return Err(BodyFault::Broken(e.to_string())),
            Ok(Some(Ok(frame))) => frame,
        };
        if let Ok(data) = frame.into_data() {
            if out.len() as u64 + data.len() as u64 > limit {
                return Err(BodyFault::TooLarge);
            }
            out.extend_from_slice(&data);
        }
    }
}

/// How long `bytes` take at `rate` bytes per second.
fn rate_time(bytes: u64, rate: u64) -> Duration {
    Duration::from_secs_f64(bytes as f64 / rate.max(1) as f64)
}
