//! `walwatch suggest`: max_wal_size advice from the observed WAL distance.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::SuggestArgs;

pub fn run(_args: SuggestArgs) -> Result<ExitCode> {
    anyhow::bail!("walwatch suggest: not implemented yet")
}
