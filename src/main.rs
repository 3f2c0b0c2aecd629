use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = walwatch::cli::Cli::parse();
    walwatch::cmd::init_logging(&cli);
    match walwatch::cmd::run(cli) {
        Ok(code) => code,
        Err(err) => {
            if walwatch::cmd::is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            // Errors name files and hosts others chose: shown as report lines are.
            let text = format!("walwatch: {}", walwatch::cmd::error_text(&err));
            let _ = walwatch::output::lines(&mut std::io::stderr().lock(), &text);
            ExitCode::from(walwatch::cmd::EXIT_FAILURE)
        }
    }
}
