//! `walwatch alerts`: list, ack, silence, test-mail.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::AlertsArgs;

pub fn run(_args: AlertsArgs) -> Result<ExitCode> {
    anyhow::bail!("walwatch alerts: not implemented yet")
}
