//! docs/reference/config.md is made from config/walwatch.toml, the file the
//! packages install: its `##` comments are the prose, its keys (set or
//! `# `-commented) the entries, so the reference cannot drift from the file.
//! After editing the file: `WALWATCH_BLESS=1 cargo test --test fast config_reference`.

use std::fs;
use std::path::Path;

/// The Markdown reference of a walwatch.toml written as config/walwatch.toml is.
fn reference(toml: &str) -> String {
    let mut out = String::from(
        "# Configuration reference\n\n\
         Made from [config/walwatch.toml](../../config/walwatch.toml) — the file the packages install as\n\
         `/etc/walwatch/walwatch.toml` — by a test that keeps the two equal. Keys shown\n\
         `like = this` are set in that file, at their default; keys shown as an\n\
         *example* are commented out there (unset by default).\n",
    );
    let mut prose: Vec<String> = Vec::new();
    let flush = |prose: &mut Vec<String>, out: &mut String, lead: &str| {
        if prose.is_empty() {
            return;
        }
        out.push_str(lead);
        out.push_str(&paragraphs(prose));
        out.push('\n');
        prose.clear();
    };
    for line in toml.lines() {
        if let Some(text) = line.strip_prefix("##") {
            prose.push(text.strip_prefix(' ').unwrap_or(text).to_string());
            continue;
        }
        let example = line.strip_prefix("# ");
        let body = example.unwrap_or(line).trim();
        if body.is_empty() {
            flush(&mut prose, &mut out, "\n");
            continue;
        }
        if body.starts_with('[') {
            flush(&mut prose, &mut out, "\n");
            out.push_str(&format!("\n## `{body}`\n"));
            continue;
        }
        if let Some((key, value)) = body.split_once(" = ") {
            let entry = match example {
                Some(_) => format!("`{key}` (*example*: `{key} = {value}`)"),
                None => format!("`{key} = {value}`"),
            };
            out.push_str(&format!("\n- {entry}"));
            if !prose.is_empty() {
                // Continuation lines indented: they belong to the list item.
                let text = paragraphs(&prose);
                let indented: Vec<String> =
                    text.lines().map(|l| if l.is_empty() { String::new() } else { format!("  {l}") }).collect();
                out.push_str(" — ");
                out.push_str(indented.join("\n").trim_start());
                prose.clear();
            }
            out.push('\n');
        }
    }
    flush(&mut prose, &mut out, "\n");
    out
}

/// Comment lines as Markdown: lines joined into paragraphs (an empty line
/// ends one), lines indented by two spaces or more kept as a code block.
fn paragraphs(lines: &[String]) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for line in lines {
        let indented = line.starts_with("  ");
        if indented != in_code {
            out.push_str(if indented { "\n\n```\n" } else { "```\n\n" });
            in_code = indented;
        }
        if indented {
            out.push_str(line.trim_start());
            out.push('\n');
        } else if line.is_empty() {
            out.push_str("\n\n");
        } else {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push(' ');
            }
            out.push_str(line);
        }
    }
    if in_code {
        out.push_str("```");
    }
    out.trim().to_string()
}

#[test]
fn the_config_reference_is_made_from_the_config_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let want = reference(&fs::read_to_string(root.join("config/walwatch.toml")).unwrap());
    let path = root.join("docs/reference/config.md");
    if std::env::var_os("WALWATCH_BLESS").is_some() {
        fs::write(&path, &want).unwrap();
    }
    let got = fs::read_to_string(&path).unwrap_or_default();
    assert!(got == want, "docs/reference/config.md is stale: WALWATCH_BLESS=1 cargo test --test fast config_reference");
}

#[test]
fn keys_comments_and_examples_become_entries() {
    let toml = "## The intro.\n\n[store]\n## Where it is,\n## on disk.\npath = \"/x.db\"\n\n# [mail]\n## How:\n##   smtp or file\n# transport = \"smtp\"\n";
    assert_eq!(
        reference(toml).split_once("unset by default).\n").unwrap().1,
        "\nThe intro.\n\n## `[store]`\n\n- `path = \"/x.db\"` — Where it is, on disk.\n\n## `[mail]`\n\n- `transport` (*example*: `transport = \"smtp\"`) — How:\n\n  ```\n  smtp or file\n  ```\n"
    );
}
