//! The module tree's layers, kept: every top-level module of `src/` has a
//! place in [`ORDER`] (bottom first), and its code imports only modules
//! below it. That rules out import cycles and arrows back up, and a new
//! module must be given its place here. Test code (`#[cfg(test)]` modules,
//! `tests.rs`) may reach up: a test of the framing may classify what it framed.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// Bottom first: the vocabulary and knowledge, the pipeline in the order
/// data flows, then what a user runs.
const ORDER: &[&str] = &[
    "model", "timefmt", "output", "guc", "catalog", "source", "config", "serve", // beneath the pipeline
    "frame", "classify", "store", "ingest", "receive", "settings", "analyze", // the pipeline
    "outbox",  // what leaves walwatch, for the alerts and the digest
    "alert", "digest",  // the pipeline's end
    "metrics", // the store as Prometheus series, for the daemon
    "cli", "daemon", "cmd", // on top
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The files declared as `#[cfg(test)] mod name;`: test code.
fn test_only_files(files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let declaration = regex::Regex::new(r"#\[cfg\(test\)\]\s*(?:pub(?:\(crate\))? )?mod (\w+);").unwrap();
    let mut out = BTreeSet::new();
    for file in files {
        let text = fs::read_to_string(file).unwrap();
        // `a/mod.rs` and `a.rs` both keep their children in `a/`.
        let dir = match file.file_name().unwrap().to_str().unwrap() {
            "mod.rs" | "lib.rs" | "main.rs" => file.parent().unwrap().to_path_buf(),
            _ => file.with_extension(""),
        };
        for name in declaration.captures_iter(&text) {
            out.insert(dir.join(format!("{}.rs", &name[1])));
            out.insert(dir.join(&name[1]).join("mod.rs"));
        }
    }
    out
}

/// The top-level modules `text` names as `crate::<module>`, leaving out
/// comments and an inline `#[cfg(test)] mod tests { … }` at the end.
fn imports(text: &str) -> BTreeSet<String> {
    let tests = regex::Regex::new(r"#\[cfg\(test\)\]\s*(?:pub(?:\(crate\))? )?mod \w+ \{").unwrap();
    let code = tests.find(text).map_or(text, |m| &text[..m.start()]);
    let path = regex::Regex::new(r"crate::([a-z_]+)").unwrap();
    code.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .flat_map(|l| path.captures_iter(l).map(|c| c[1].to_string()).collect::<Vec<_>>())
        .collect()
}

#[test]
fn every_module_imports_only_the_layers_below_it() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let test_only = test_only_files(&files);
    let rank = |m: &str| ORDER.iter().position(|o| *o == m);
    let mut wrong = Vec::new();
    let mut seen = BTreeSet::new();
    for file in &files {
        let relative = file.strip_prefix(src()).unwrap();
        let top = relative.iter().next().unwrap().to_str().unwrap().trim_end_matches(".rs").to_string();
        if top == "lib" || top == "main" || test_only.contains(file) {
            continue;
        }
        let name = file.file_name().unwrap().to_str().unwrap();
        if name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        seen.insert(top.clone());
        let Some(own) = rank(&top) else {
            wrong.push(format!("src/{top} has no place in ORDER: give it one"));
            continue;
        };
        for imported in imports(&fs::read_to_string(file).unwrap()) {
            match rank(&imported) {
                Some(r) if r < own || imported == top => {}
                _ => wrong.push(format!("{} imports crate::{imported}, not below {top}", relative.display())),
            }
        }
    }
    assert_eq!(wrong, Vec::<String>::new());
    // Every layer exists: a module renamed away must leave ORDER too.
    let listed: BTreeSet<String> = ORDER.iter().map(|s| s.to_string()).collect();
    assert_eq!(seen, listed);
}

#[test]
fn the_check_sees_an_arrow_back_up() {
    let text = "use crate::model::event::Event;\n// crate::cmd in a comment\nfn f() { crate::daemon::run(); }\n\
                #[cfg(test)]\nmod tests {\n    use crate::cmd;\n}\n";
    assert_eq!(imports(text), BTreeSet::from(["model".to_string(), "daemon".to_string()]));
}

/// docs/dev/architecture.md prints this list: its `* \`module\`` bullets
/// name every layer, in ORDER's order.
#[test]
fn the_architecture_page_lists_the_layers_in_order() {
    let page = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/dev/architecture.md")).unwrap();
    let bullet = regex::Regex::new(r"(?m)^\* `([a-z_]+)` — ").unwrap();
    let listed: Vec<&str> = bullet.captures_iter(&page).map(|c| c.get(1).unwrap().as_str()).collect();
    assert_eq!(listed, ORDER, "docs/dev/architecture.md must list the layers as tests/fast/layers.rs orders them");
}
