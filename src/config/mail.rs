//! `[mail]` and `[webhook]`: where alert notices go. (To be filled with the
//! transports: smtp, sendmail, file.)

use serde::Deserialize;

use super::raw::Problem;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct MailSection {}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct WebhookSection {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMail {}

impl RawMail {
    pub fn validate(self) -> Result<MailSection, Problem> {
        Ok(MailSection {})
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWebhook {}

impl RawWebhook {
    pub fn validate(self) -> Result<WebhookSection, Problem> {
        Ok(WebhookSection {})
    }
}
