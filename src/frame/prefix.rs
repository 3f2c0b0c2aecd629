//! STUB — replaced by the real prefix compiler.
use crate::frame::record::LineLevel;
use std::fmt;

pub struct Prefix { spec: String, re: regex::Regex }
pub struct PrefixMatch<'a> {
    pub timestamp: Option<&'a str>, pub epoch: Option<&'a str>, pub pid: Option<u32>,
    pub user: Option<&'a str>, pub database: Option<&'a str>, pub application: Option<&'a str>,
    pub remote_host: Option<&'a str>, pub backend_type: Option<&'a str>, pub session_id: Option<&'a str>,
    pub line_num: Option<u64>, pub q_tail: bool, pub level: LineLevel, pub message: &'a str,
}
#[derive(Debug)]
pub struct PrefixError(String);
impl fmt::Display for PrefixError { fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(&self.0) } }
impl std::error::Error for PrefixError {}
pub type DetectError = PrefixError;
static LEVELS: std::sync::OnceLock<Vec<(String, LineLevel)>> = std::sync::OnceLock::new();
impl Prefix {
    pub fn compile(spec: &str, markers: &[(String, LineLevel)]) -> Result<Prefix, PrefixError> {
        let _ = LEVELS.set(markers.to_vec());
        let alts: Vec<String> = markers.iter().map(|(m, _)| regex::escape(m)).collect();
        let re = regex::Regex::new(&format!(r"^(\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \S+) \[(\d+)\] (?:(\S*)@(\S*) )?({})(.*)$", alts.join("|"))).unwrap();
        Ok(Prefix { spec: spec.to_string(), re })
    }
    pub fn parse<'a>(&self, line: &'a str) -> Option<PrefixMatch<'a>> {
        let c = self.re.captures(line)?;
        let marker = c.get(5)?.as_str();
        let level = LEVELS.get()?.iter().find(|(m, _)| m == marker)?.1;
        Some(PrefixMatch { timestamp: c.get(1).map(|m| m.as_str()), epoch: None, pid: c.get(2)?.as_str().parse().ok(),
            user: c.get(3).map(|m| m.as_str()), database: c.get(4).map(|m| m.as_str()), application: None, remote_host: None,
            backend_type: None, session_id: None, line_num: None, q_tail: c.get(3).is_some(), level, message: c.get(6)?.as_str() })
    }
    pub fn spec(&self) -> &str { &self.spec }
    pub fn session_checkable(&self) -> bool { true }
}
pub fn detect(_sample: &[&str], markers: &[(String, LineLevel)]) -> Result<Prefix, DetectError> { Prefix::compile("%m [%p] %q%u@%d ", markers) }
