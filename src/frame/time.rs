//! STUB — replaced by the real timestamp parser.
use std::fmt;
pub struct TimeContext;
#[derive(Debug)]
pub struct TimeError(String);
impl fmt::Display for TimeError { fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(&self.0) } }
impl std::error::Error for TimeError {}
impl TimeContext {
    pub fn new(_tz: Option<&str>) -> Result<Self, TimeError> { Ok(TimeContext) }
    pub fn parse(&self, text: &str) -> Result<jiff::Timestamp, TimeError> {
        let (dt, _z) = text.rsplit_once(' ').ok_or_else(|| TimeError(text.into()))?;
        let dt: jiff::civil::DateTime = dt.parse().map_err(|e: jiff::Error| TimeError(e.to_string()))?;
        dt.to_zoned(jiff::tz::TimeZone::UTC).map(|z| z.timestamp()).map_err(|e| TimeError(e.to_string()))
    }
    pub fn parse_epoch(text: &str) -> Result<jiff::Timestamp, TimeError> { let f: f64 = text.parse().map_err(|_| TimeError(text.into()))?; jiff::Timestamp::from_millisecond((f * 1000.0) as i64).map_err(|e| TimeError(e.to_string())) }
    pub fn take_warnings(&self) -> Vec<String> { Vec::new() }
}
