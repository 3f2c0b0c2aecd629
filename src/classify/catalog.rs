//! STUB — replaced by the real catalog.
use crate::event::{EventBody, PointKind};
use crate::frame::record::{LineLevel, Secondary, Severity};
pub struct Catalog {
    needles: Vec<String>,
    markers: Vec<(String, LineLevel)>,
}
pub enum Classification {
    Event(EventBody),
    Unparsed(&'static str),
    Other,
}
static CAT: std::sync::OnceLock<Catalog> = std::sync::OnceLock::new();
impl Catalog {
    pub fn global() -> &'static Catalog {
        CAT.get_or_init(|| Catalog {
            needles: vec!["checkpoint".into(), "restartpoint".into(), "parameter \"".into()],
            markers: vec![
                ("LOG:  ".into(), LineLevel::Primary(Severity::Log)),
                ("HINT:  ".into(), LineLevel::Secondary(Secondary::Hint)),
                ("ERROR:  ".into(), LineLevel::Primary(Severity::Error)),
                ("STATEMENT:  ".into(), LineLevel::Secondary(Secondary::Statement)),
                ("CONTEXT:  ".into(), LineLevel::Secondary(Secondary::Context)),
            ],
        })
    }
    pub fn needles(&self) -> &[String] {
        &self.needles
    }
    pub fn markers(&self) -> &[(String, LineLevel)] {
        &self.markers
    }
    pub fn severity(&self, word: &str) -> Option<Severity> {
        (word == "LOG").then_some(Severity::Log)
    }
    pub fn classify(&self, message: &str) -> Classification {
        if let Some(f) = message.strip_prefix("checkpoint starting:") {
            return Classification::Event(EventBody::PointStart {
                kind: PointKind::Checkpoint,
                flags: f.split_whitespace().map(String::from).collect(),
            });
        }
        Classification::Other
    }
    pub fn is_too_frequent_hint(&self, hint: &str) -> bool {
        hint.contains("max_wal_size")
    }
}
