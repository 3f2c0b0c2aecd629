//! `[alerts]`: which rules run and their thresholds. (To be filled with the
//! rules: one sub-table per rule id, each with `enabled` and its thresholds.)

use serde::Deserialize;

use super::raw::Problem;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct AlertsSection {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAlerts {}

impl RawAlerts {
    pub fn validate(self) -> Result<AlertsSection, Problem> {
        Ok(AlertsSection {})
    }
}
