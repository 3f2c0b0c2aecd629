//! `walwatch settings`: the values walwatch knows, their source, the timeline.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::SettingsArgs;

pub fn run(_args: SettingsArgs) -> Result<ExitCode> {
    anyhow::bail!("walwatch settings: not implemented yet")
}
