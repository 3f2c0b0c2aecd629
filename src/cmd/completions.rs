//! `walwatch completions SHELL`: the shell completion script, on stdout.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs};

pub(crate) fn run(args: CompletionsArgs) -> Result<ExitCode> {
    // Written whole at the end: clap_complete panics on a write error, and a
    // closed stdout (`| head`) is an error to return, not a panic.
    std::io::stdout().lock().write_all(&script(args.shell))?;
    Ok(ExitCode::SUCCESS)
}

/// The completion script for `shell`, completing the command `walwatch`.
pub(crate) fn script(shell: clap_complete::Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "walwatch", &mut out);
    out
}

#[cfg(test)]
mod tests {
    use clap::ValueEnum;
    use clap_complete::Shell;

    use super::script;
    use crate::cmd::man::command_paths;

    /// Every shell clap_complete knows gets a script, and each names every
    /// command and subcommand of clap's tree (`alerts silence` too), so a
    /// command added later is completed without anything else to change.
    #[test]
    fn every_script_names_every_subcommand() {
        let paths = command_paths();
        assert!(paths.contains(&vec!["alerts".to_string(), "silence".to_string()]), "{paths:?}");
        for shell in Shell::value_variants() {
            let text = String::from_utf8(script(*shell)).unwrap();
            for path in &paths {
                let name = path.last().unwrap();
                assert!(text.contains(name.as_str()), "{shell} completion lacks {}", path.join(" "));
            }
        }
    }

    /// The form each shell's script gives a (nested) subcommand, so the
    /// check above is not met by the words of some description alone.
    #[test]
    fn scripts_complete_nested_subcommands_in_each_shells_form() {
        let text = |shell| String::from_utf8(script(shell)).unwrap();
        let (bash, fish, zsh) = (text(Shell::Bash), text(Shell::Fish), text(Shell::Zsh));
        for path in command_paths() {
            // clap_complete spells `-` in a name like a level (test__subcmd__mail).
            let case = format!("walwatch__subcmd__{})", path.join("__subcmd__").replace('-', "__subcmd__"));
            assert!(bash.contains(&case), "bash: no `{case}` for {}", path.join(" "));
            let name = path.last().unwrap();
            assert!(
                fish.lines().any(|l| l.starts_with("complete -c walwatch") && l.contains(&format!("-a \"{name}\""))),
                "fish: {name} is not offered"
            );
            assert!(zsh.contains(&format!("'{name}:")), "zsh: {name} is not offered");
        }
    }
}
