//! `walwatch alerts`: list, ack, silence, test-mail.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{AlertsArgs, AlertsCommand, ConfigDbArgs};

pub fn run(args: AlertsArgs) -> Result<ExitCode> {
    if let Some(AlertsCommand::TestMail { common }) = &args.command {
        return test_mail(common);
    }
    anyhow::bail!("walwatch alerts: not implemented yet")
}

/// Queues a test notice and sends it at once; the outcome per channel on stdout.
fn test_mail(common: &ConfigDbArgs) -> Result<ExitCode> {
    let (config, _) = crate::config::load_or_default(common.config.as_deref())?;
    let mut store = crate::store::Store::open(&super::db_path(&common.db))?;
    println!("{}", crate::alert::deliver::test_mail(&mut store, &config, jiff::Timestamp::now())?);
    Ok(ExitCode::SUCCESS)
}
