//! Table, JSON and CSV writers for query output.

use std::io::{self, Write};

/// A plain text table: a header, rows, columns padded to their widest cell;
/// columns whose header is in `right` are right-aligned (numbers).
pub fn table(out: &mut impl Write, header: &[&str], rows: &[Vec<String>], right: &[&str]) -> io::Result<()> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |out: &mut dyn Write, cells: Vec<&str>| -> io::Result<()> {
        let mut text = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                text.push_str("  ");
            }
            let pad = w - cell.chars().count();
            if right.contains(&header[i]) {
                text.push_str(&" ".repeat(pad));
                text.push_str(cell);
            } else {
                text.push_str(cell);
                text.push_str(&" ".repeat(pad));
            }
        }
        writeln!(out, "{}", text.trim_end())
    };
    line(out, header.to_vec())?;
    for row in rows {
        line(out, row.iter().map(String::as_str).collect())?;
    }
    Ok(())
}

/// Pretty JSON followed by a newline.
pub fn json(out: &mut impl Write, value: &impl serde::Serialize) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value)?;
    writeln!(out)
}

/// CSV with a header row.
pub fn csv(out: &mut impl Write, header: &[&str], rows: &[Vec<String>]) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(header)?;
    for row in rows {
        w.write_record(row)?;
    }
    w.flush()
}

/// An optional value for a table or CSV cell; absent values are empty.
pub(crate) fn cell<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map(ToString::to_string).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_and_aligns() {
        let mut out = Vec::new();
        table(&mut out, &["name", "n"], &[vec!["a".into(), "10".into()], vec!["bbb".into(), "2".into()]], &["n"])
            .unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "name   n\na     10\nbbb    2\n");
    }
}
