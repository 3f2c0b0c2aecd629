//! The documentation a reader follows: every relative link of every
//! Markdown file in the repository points at a file that exists, and every
//! `#anchor` at a heading of that file (GitHub's anchors: the heading's text
//! lowercased, punctuation dropped, spaces as hyphens, repeats numbered).
//! And the README's quick start is the script this suite runs.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Markdown files git would see, fixtures and build outputs left out.
fn markdown(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap();
        if name.starts_with('.') || name == "target" || name == "fixtures" {
            continue;
        }
        if path.is_dir() {
            markdown(&path, out);
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

/// The lines outside fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    text.lines()
        .filter(|l| {
            if l.trim_start().starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect()
}

/// GitHub's anchor for a heading's text.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut out = BTreeSet::new();
    for line in prose(text) {
        let Some(heading) = line.strip_prefix('#').map(|h| h.trim_start_matches('#')) else { continue };
        if !heading.starts_with(' ') {
            continue;
        }
        let base = slug(heading);
        let mut anchor = base.clone();
        let mut n = 0;
        while !seen.insert(anchor.clone()) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        out.insert(anchor);
    }
    out
}

/// `](target)` links of a line, inline code left out.
fn links(line: &str) -> Vec<String> {
    let code = regex::Regex::new(r"`[^`]*`").unwrap();
    let line = code.replace_all(line, "");
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    link.captures_iter(&line).map(|c| c[1].to_string()).collect()
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut files = Vec::new();
    markdown(&root(), &mut files);
    assert!(files.len() > 15, "{files:?}");
    let mut broken = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).unwrap();
        for (i, line) in prose(&text).iter().enumerate() {
            for target in links(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
                let resolved = if path.is_empty() { file.clone() } else { file.parent().unwrap().join(path) };
                let shown = format!("{}: {target}", file.strip_prefix(root()).unwrap().display());
                if !resolved.exists() {
                    broken.push(format!("{shown} (line ~{}): no such file", i + 1));
                    continue;
                }
                if !anchor.is_empty() && !anchors(&fs::read_to_string(&resolved).unwrap()).contains(anchor) {
                    broken.push(format!("{shown}: no heading with that anchor"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn anchors_are_made_as_github_makes_them() {
    let text = "# walwatch\n## Install and run the service\n## `walwatch import [--db P] FILE...`\n## Install and run the service\n```\n## not a heading\n```\n";
    let got: Vec<String> = anchors(text).into_iter().collect();
    assert_eq!(
        got,
        ["install-and-run-the-service", "install-and-run-the-service-1", "walwatch", "walwatch-import---db-p-file"]
    );
}

/// The README's quick start is `examples/quickstart.sh`; run here on the
/// binary under test, it prints what the README shows: the daemon stopped
/// cleanly, both clusters read to the end, their checkpoints and alerts.
#[test]
fn the_readme_quick_start_is_the_script_and_it_runs() {
    let readme = fs::read_to_string(root().join("README.md")).unwrap();
    let start = readme.find("## Quick start").expect("a quick start");
    let block = readme[start..].split("```sh\n").nth(1).unwrap().split("```").next().unwrap();
    assert_eq!(block.trim(), "examples/quickstart.sh");
    let out = std::process::Command::new(root().join("examples/quickstart.sh"))
        .env("WALWATCH", env!("CARGO_BIN_EXE_walwatch"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.starts_with("daemon: stopped (cleanly, at "), "{text}");
    for line in
        ["cluster english: last event 2026-11-22 08:08:03.412", "cluster german: last event 2026-11-22 08:12:45.128"]
    {
        assert!(text.contains(line), "{line}: {text}");
    }
    let checkpoints = text.lines().find(|l| l.starts_with("checkpoints ")).unwrap();
    assert_eq!(
        checkpoints.split_whitespace().collect::<Vec<_>>(),
        ["checkpoints", "65", "65", "2", "0", "55", "6", "2"]
    );
    assert_eq!(text.matches("  firing  ").count(), 4, "{text}");
    // The README shows that same summary.
    assert!(readme.contains(checkpoints), "the README's quick start output is stale");
}

/// Each exit status walwatch defines has its row in the exit-code reference.
#[test]
fn every_exit_status_is_in_the_reference() {
    let source = fs::read_to_string(root().join("src/cmd/mod.rs")).unwrap();
    let defined = regex::Regex::new(r"pub(?:\(crate\))? const EXIT_\w+: u8 = (\d+);").unwrap();
    let codes: Vec<String> = defined.captures_iter(&source).map(|c| c[1].to_string()).collect();
    assert!(codes.len() >= 5, "{codes:?}");
    let reference = fs::read_to_string(root().join("docs/reference/exit-codes.md")).unwrap();
    for code in codes {
        assert!(
            reference.contains(&format!("\n| {code} | ")),
            "exit status {code} is not in docs/reference/exit-codes.md"
        );
    }
}
