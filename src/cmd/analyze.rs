//! `walwatch analyze`: the alert rules, once, on the stored history.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::AnalyzeArgs;

pub fn run(_args: AnalyzeArgs) -> Result<ExitCode> {
    anyhow::bail!("walwatch analyze: not implemented yet")
}
