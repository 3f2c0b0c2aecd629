//! The README's table of formats: every format `--format` takes has a row,
//! and the line each row shows is read by walwatch as the checkpoint it
//! is, with that `--format` and nothing else.

use std::path::Path;

use crate::support::walwatch;

/// (format, example line) of each row of the README's format table.
fn rows() -> Vec<(String, String)> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let table = &readme[readme.find("| `--format` |").expect("the format table")..];
    let cell = regex::Regex::new(r"^\| `([a-z-]+)` \| .*? \| `(.+)` \|$").unwrap();
    table
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let c = cell.captures(l).unwrap_or_else(|| panic!("a row the table's shape does not fit: {l}"));
            (c[1].to_string(), c[2].replace("\\|", "|"))
        })
        .collect()
}

#[test]
fn every_format_has_a_row_whose_line_reads_as_a_checkpoint() {
    let rows = rows();
    let names: Vec<&str> = rows.iter().map(|(f, _)| f.as_str()).collect();
    let help = String::from_utf8(walwatch().args(["import", "--help"]).output().unwrap().stdout).unwrap();
    let values = &help[help.find("Possible values:").unwrap()..];
    let listed: Vec<&str> = values
        .lines()
        .skip(1)
        .map_while(|l| l.trim().strip_prefix("- "))
        .map(|v| v.split(':').next().unwrap().trim())
        .filter(|v| *v != "auto")
        .collect();
    assert_eq!(listed.len(), 14, "{listed:?}");
    for format in &listed {
        assert!(names.contains(format), "the README's format table has no row for {format}");
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    for (format, line) in &rows {
        let file = dir.path().join(format!("{format}.log"));
        std::fs::write(&file, format!("{line}\n")).unwrap();
        let out = walwatch()
            .args(["import", "--db", db.to_str().unwrap(), "--cluster", format, "--format", format])
            .arg(&file)
            .output()
            .unwrap();
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{format}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(report.contains("events: checkpoint_start 1\n"), "{format}: {report}");
        assert!(report.contains("rejected 0, unmatched 0, unparsed 0, new in store 1"), "{format}: {report}");
    }
}
