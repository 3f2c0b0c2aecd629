//! `walwatch config check`: validate the configuration file.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::ConfigCommand;

pub fn run(cmd: ConfigCommand) -> Result<ExitCode> {
    match cmd {
        ConfigCommand::Check(args) => {
            print!("{}", crate::config::check(args.config.as_deref())?);
            Ok(ExitCode::SUCCESS)
        }
    }
}
