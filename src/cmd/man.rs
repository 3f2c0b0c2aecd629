//! `walwatch man [--dir DIR]`: the manual pages, made by clap_mangen from
//! the same clap command tree as `--help`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::CommandFactory;

use crate::cli::{Cli, ManArgs};

pub(crate) fn run(args: ManArgs) -> Result<ExitCode> {
    match args.dir {
        None => {
            let mut page = Vec::new();
            man(command()).render(&mut page)?;
            std::io::stdout().lock().write_all(&page)?;
        }
        Some(dir) => {
            for path in write_pages(&dir)? {
                super::note(format!("wrote {}", path.display()));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The command tree the pages describe: without clap's `help` subcommands,
/// which would each get a page (and a SUBCOMMANDS entry) saying only what
/// `--help` does.
fn command() -> clap::Command {
    fn without_help(cmd: clap::Command) -> clap::Command {
        let subs: Vec<String> = cmd.get_subcommands().map(|s| s.get_name().to_string()).collect();
        subs.into_iter().fold(cmd.disable_help_subcommand(true), |cmd, sub| cmd.mut_subcommand(sub, without_help))
    }
    let mut cmd = without_help(Cli::command());
    // Sets each subcommand's display name to its full path
    // (walwatch-alerts-silence), which clap_mangen uses as title and file name.
    cmd.build();
    cmd
}

/// The page of `cmd`; its footer says the version for a subcommand's page
/// too (clap_mangen's default is the subcommand's name and its own, unset,
/// version).
fn man(cmd: clap::Command) -> clap_mangen::Man {
    clap_mangen::Man::new(cmd).source(format!("walwatch {}", env!("CARGO_PKG_VERSION")))
}

/// Writes walwatch.1 and walwatch-<command>[-<subcommand>].1 for every
/// command into `dir` (created when missing); returns the paths written,
/// in the order of the command tree.
pub(crate) fn write_pages(dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    fn write(cmd: &clap::Command, dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
        let man = man(cmd.clone());
        let path = dir.join(man.get_filename());
        let mut page = Vec::new();
        man.render(&mut page)?;
        std::fs::write(&path, page).with_context(|| format!("writing {}", path.display()))?;
        out.push(path);
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            write(sub, dir, out)?;
        }
        Ok(())
    }
    let mut written = Vec::new();
    write(&command(), dir, &mut written)?;
    Ok(written)
}

/// Every command and subcommand as the words one types after `walwatch`
/// (`["alerts", "silence"]`), in the order of the tree, from clap's own
/// command tree (clap's `help` subcommands left out). For the tests of the
/// pages and the completions.
#[cfg(test)]
pub(crate) fn command_paths() -> Vec<Vec<String>> {
    fn walk(cmd: &clap::Command, prefix: &[String], out: &mut Vec<Vec<String>>) {
        for sub in cmd.get_subcommands() {
            let mut path = prefix.to_vec();
            path.push(sub.get_name().to_string());
            out.push(path.clone());
            walk(sub, &path, out);
        }
    }
    let mut out = Vec::new();
    walk(&Cli::command(), &[], &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One page per command of clap's tree, named by its path, and nothing
    /// else; each page's title (.TH) is its own name.
    #[test]
    fn dir_gets_one_page_per_command_and_subcommand() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("man1");
        let written = write_pages(&out).unwrap();

        let mut expected = vec!["walwatch.1".to_string()];
        expected.extend(command_paths().iter().map(|p| format!("walwatch-{}.1", p.join("-"))));
        let names: Vec<String> = written.iter().map(|p| p.file_name().unwrap().to_str().unwrap().to_string()).collect();
        assert_eq!(names, expected);
        let mut on_disk: Vec<String> =
            std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        on_disk.sort();
        expected.sort();
        assert_eq!(on_disk, expected);

        // The nested ones and this command's own are among them.
        for name in ["walwatch-alerts-silence.1", "walwatch-config-check.1", "walwatch-completions.1", "walwatch-man.1"]
        {
            assert!(expected.contains(&name.to_string()), "{name} in {expected:?}");
        }
        assert!(!expected.iter().any(|n| n.contains("-help")), "no page for clap's help subcommand: {expected:?}");

        for path in &written {
            let text = std::fs::read_to_string(path).unwrap();
            let title = path.file_stem().unwrap().to_str().unwrap();
            let version = env!("CARGO_PKG_VERSION");
            let th = text.lines().find(|l| l.starts_with(".TH ")).map(str::trim_end);
            assert_eq!(th, Some(format!(".TH {title} 1  \"walwatch {version}\"").as_str()), "{}", path.display());
        }
    }

    /// The page printed without --dir is the directory's walwatch.1, and it
    /// lists every command, with a reference to its own page.
    #[test]
    fn printed_page_is_the_main_one() {
        let dir = tempfile::tempdir().unwrap();
        write_pages(dir.path()).unwrap();
        let mut printed = Vec::new();
        man(command()).render(&mut printed).unwrap();
        let printed = String::from_utf8(printed).unwrap();
        assert_eq!(printed, std::fs::read_to_string(dir.path().join("walwatch.1")).unwrap());
        for path in command_paths().iter().filter(|p| p.len() == 1) {
            // roff escapes every hyphen of the name (walwatch\-vector\-config).
            let name = path[0].replace('-', "\\-");
            assert!(printed.contains(&format!("walwatch\\-{name}(1)")), "walwatch.1 refers to {path:?}");
        }
    }
}
