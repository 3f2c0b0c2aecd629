//! Table, JSON and CSV writers for query output.
//!
//! What the tables and report lines show comes in part from others: file
//! and host names, cluster names, log text, settings read from conf files.
//! A terminal acts on some characters instead of showing them — an escape
//! sequence recolours or rewrites the screen, a line break starts a line
//! that looks like walwatch's own (`  problem: …`), a bidi override shows
//! a name reversed, a zero-width character hides — so every table cell
//! ([`table`], [`TableLayout`]) and every report line ([`line`]) goes
//! through [`shown`], which writes those characters escaped (`\n`,
//! `\u{1b}`, `\u{202e}`). JSON escapes them itself; CSV is data for
//! programs and keeps them, quoted.

use std::borrow::Cow;
use std::io::{self, Write};

/// `text` as a terminal line shows it: control characters (C0, DEL, C1),
/// Unicode's line and paragraph separators and format characters (bidi
/// marks, embeddings, overrides and isolates, zero-width characters, the
/// BOM, …) escaped as Rust writes them (`\n`, `\t`, `\u{1b}`, `\u{202e}`);
/// everything else as it is.
pub(crate) fn shown(text: &str) -> Cow<'_, str> {
    let hidden = |c: char| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') || is_format(c);
    if !text.chars().any(hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if hidden(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// One line of a report (status, doctor, summary, …): `text` [`shown`],
/// then a line break.
pub(crate) fn line(out: &mut impl Write, text: impl AsRef<str>) -> io::Result<()> {
    writeln!(out, "{}", shown(text.as_ref()))
}

/// Several lines of text walwatch composed (a rendered digest, a config
/// check): each line [`shown`], the line breaks between them kept.
pub fn lines(out: &mut impl Write, text: &str) -> io::Result<()> {
    for l in text.lines() {
        line(out, l)?;
    }
    Ok(())
}

/// Unicode's format characters (general category Cf): the bidi marks,
/// embeddings, overrides and isolates (U+061C, U+200E, U+200F,
/// U+202A–U+202E, U+2066–U+2069), zero-width space, joiners and word joiner
/// (U+200B–U+200D, U+2060), invisible operators, the BOM / zero-width
/// no-break space (U+FEFF), the soft hyphen, interlinear annotations and
/// tag characters.
pub(crate) fn is_format(c: char) -> bool {
    use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};
    c.general_category() == GeneralCategory::Format
}

/// A plain text table: a header, rows, columns padded to their widest cell;
/// columns whose header is in `right` are right-aligned (numbers).
pub(crate) fn table(out: &mut impl Write, header: &[&str], rows: &[Vec<String>], right: &[&str]) -> io::Result<()> {
    let mut layout = TableLayout::new(header, right);
    for row in rows {
        layout.widen(row);
    }
    layout.header(out)?;
    for row in rows {
        layout.line(out, row)?;
    }
    Ok(())
}

/// The widths of a [`table`]'s columns, learnt row by row: a table of rows
/// too many to hold is printed in two passes over them, the first to
/// [`widen`](TableLayout::widen), the second to print each
/// [`line`](TableLayout::line), the same text as [`table`] prints.
pub(crate) struct TableLayout<'a> {
    header: &'a [&'a str],
    right: &'a [&'a str],
    widths: Vec<usize>,
}

impl<'a> TableLayout<'a> {
    pub(crate) fn new(header: &'a [&'a str], right: &'a [&'a str]) -> Self {
        TableLayout { header, right, widths: header.iter().map(|h| h.chars().count()).collect() }
    }

    /// Makes room for `row`'s cells (as [`shown`]).
    pub(crate) fn widen(&mut self, row: &[String]) {
        for (w, cell) in self.widths.iter_mut().zip(row) {
            *w = (*w).max(shown(cell).chars().count());
        }
    }

    pub(crate) fn header(&self, out: &mut impl Write) -> io::Result<()> {
        self.write(out, self.header)
    }

    /// One row, padded to the widths learnt.
    pub(crate) fn line(&self, out: &mut impl Write, row: &[String]) -> io::Result<()> {
        self.write(out, row)
    }

    fn write<S: AsRef<str>>(&self, out: &mut impl Write, cells: &[S]) -> io::Result<()> {
        let mut text = String::new();
        for (i, (cell, w)) in cells.iter().zip(&self.widths).enumerate() {
            let cell = shown(cell.as_ref());
            let cell = cell.as_ref();
            if i > 0 {
                text.push_str("  ");
            }
            let pad = w.saturating_sub(cell.chars().count());
            if self.right.contains(&self.header[i]) {
                text.push_str(&" ".repeat(pad));
                text.push_str(cell);
            } else {
                text.push_str(cell);
                text.push_str(&" ".repeat(pad));
            }
        }
        writeln!(out, "{}", text.trim_end())
    }
}

/// Pretty JSON followed by a newline.
pub(crate) fn json(out: &mut impl Write, value: &impl serde::Serialize) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value)?;
    writeln!(out)
}

/// CSV with a header row.
pub(crate) fn csv(out: &mut impl Write, header: &[&str], rows: &[Vec<String>]) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(header)?;
    for row in rows {
        w.write_record(row)?;
    }
    w.flush()
}

/// CSV with a header row and the rows `each` hands over one at a time: the
/// same text as [`csv`] of the whole list, without ever holding it.
pub(crate) fn csv_rows<E: From<io::Error>>(
    out: &mut impl Write,
    header: &[&str],
    each: impl FnOnce(&mut dyn FnMut(&[String]) -> io::Result<()>) -> Result<(), E>,
) -> Result<(), E> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(header).map_err(io::Error::from)?;
    each(&mut |row: &[String]| w.write_record(row).map_err(io::Error::from))?;
    w.flush()?;
    Ok(())
}

/// A pretty JSON array of the values `each` hands over one at a time,
/// followed by a newline: the same text as [`json`] of the whole list,
/// without ever holding the list.
pub(crate) fn json_array<T: serde::Serialize, E: From<io::Error>>(
    out: &mut impl Write,
    each: impl FnOnce(&mut dyn FnMut(&T) -> io::Result<()>) -> Result<(), E>,
) -> Result<(), E> {
    use serde::ser::{SerializeSeq, Serializer};
    let mut ser = serde_json::Serializer::pretty(&mut *out);
    let mut seq = ser.serialize_seq(None).map_err(io::Error::from)?;
    each(&mut |value: &T| seq.serialize_element(value).map_err(io::Error::from))?;
    seq.end().map_err(io::Error::from)?;
    writeln!(out)?;
    Ok(())
}

/// An optional value for a table or CSV cell; absent values are empty.
pub(crate) fn cell<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map(ToString::to_string).unwrap_or_default()
}

/// ▁ to █ scaled to the largest value; a missing value is a blank.
pub(crate) fn spark(values: &[Option<f64>]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let max = values.iter().flatten().fold(0.0f64, |m, v| m.max(*v));
    values
        .iter()
        .map(|v| match v {
            None => ' ',
            Some(_) if max <= 0.0 => BARS[0],
            Some(v) => BARS[((v / max) * 7.0).round().clamp(0.0, 7.0) as usize],
        })
        .collect()
}

/// 1234567 -> "1,234,567".
pub(crate) fn grouped(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        out.insert(0, '-');
    }
    out
}

/// 12345.678 with 1 decimal -> "12,345.7".
pub(crate) fn grouped_f(v: f64, decimals: usize) -> String {
    let text = format!("{:.*}", decimals, v.abs());
    let (int, frac) = text.split_once('.').map_or((text.as_str(), None), |(i, f)| (i, Some(f)));
    let int = grouped(int.parse().unwrap_or(0));
    let sign = if v < 0.0 && text.chars().any(|c| c.is_ascii_digit() && c != '0') { "-" } else { "" };
    match frac {
        Some(f) => format!("{sign}{int}.{f}"),
        None => format!("{sign}{int}"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(-1234567), "-1,234,567");
        assert_eq!(grouped_f(12345.678, 1), "12,345.7");
        assert_eq!(grouped_f(0.6, 0), "1");
        assert_eq!(grouped_f(-0.04, 1), "0.0");
        assert_eq!(grouped_f(-1234.5, 1), "-1,234.5");
    }

    #[test]
    fn sparklines_scale_to_the_largest_and_leave_gaps_blank() {
        assert_eq!(spark(&[Some(0.0), Some(7.0), None, Some(3.5), Some(1.0)]), "▁█ ▅▂");
        assert_eq!(spark(&[Some(0.0), Some(0.0)]), "▁▁");
        assert_eq!(spark(&[]), "");
    }

    use super::*;

    #[test]
    fn what_a_terminal_acts_on_is_shown_escaped() {
        assert!(matches!(shown("plain Überlauf 検査 \\n"), Cow::Borrowed(_)));
        assert_eq!(
            shown("a\u{1b}[31m\nb\t\r\u{7f}\u{85}\u{2028}\u{202e}\u{2066}\u{200b}\u{feff}c"),
            r"a\u{1b}[31m\nb\t\r\u{7f}\u{85}\u{2028}\u{202e}\u{2066}\u{200b}\u{feff}c"
        );
        let mut out = Vec::new();
        line(&mut out, "x\n  problem: y").unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "x\\n  problem: y\n");
    }

    /// A cell is padded to the width of what is shown of it.
    #[test]
    fn cells_are_shown_escaped_and_padded_as_shown() {
        let mut out = Vec::new();
        let rows = [vec!["a\nb".to_string(), "1".into()], vec!["long-name".into(), "22".into()]];
        table(&mut out, &["file", "n"], &rows, &["n"]).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "file        n\na\\nb        1\nlong-name  22\n");
    }

    #[test]
    fn pads_and_aligns() {
        let mut out = Vec::new();
        table(&mut out, &["name", "n"], &[vec!["a".into(), "10".into()], vec!["bbb".into(), "2".into()]], &["n"])
            .unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "name   n\na     10\nbbb    2\n");
    }
}
