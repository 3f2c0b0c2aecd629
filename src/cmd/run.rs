//! `walwatch run`: the daemon.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::RunArgs;

pub(crate) fn run(args: RunArgs) -> Result<ExitCode> {
    crate::daemon::run(args.config.as_deref(), args.db.as_deref())?;
    Ok(ExitCode::SUCCESS)
}
