//! The one text-table renderer of the human outputs (`venusc sim`'s report, `venusc check
//! --memory`).
//!
//! Input: a header and rows of already formatted cells. Output: lines ending in `\n`, appended
//! to a string. Invariants: columns are two spaces apart; by default the first column is
//! left-aligned and the others right-aligned (words such as a schedule name may be left-aligned
//! with [`render_aligned`]); widths count chars, not bytes, so a non-ASCII cell keeps its
//! column; no line ends in a space.

use std::fmt::Write as _;

/// How a column's cells sit in its width: names left, numbers right.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// Appends `header` and `rows` to `out`, each line prefixed with `indent`; the first column
/// is left-aligned, the others right-aligned. A row shorter than the header leaves its last
/// columns empty.
pub fn render(out: &mut String, indent: &str, header: &[&str], rows: &[Vec<String>]) {
    let columns: Vec<(&str, Align)> = header
        .iter()
        .enumerate()
        .map(|(i, h)| (*h, if i == 0 { Align::Left } else { Align::Right }))
        .collect();
    render_aligned(out, indent, &columns, rows);
}

/// [`render`] with each column's alignment stated: `columns` is (header, alignment).
pub fn render_aligned(
    out: &mut String,
    indent: &str,
    columns: &[(&str, Align)],
    rows: &[Vec<String>],
) {
    let header: Vec<String> = columns.iter().map(|(h, _)| h.to_string()).collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .chain(std::iter::once(&header))
                .map(|r| r.get(i).map_or(0, |c| c.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in std::iter::once(&header).chain(rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths.iter().zip(columns))
            .map(|(c, (&w, (_, align)))| match align {
                Align::Left => format!("{c:<w$}"),
                Align::Right => format!("{c:>w$}"),
            })
            .collect();
        let _ = writeln!(out, "{indent}{}", cells.join("  ").trim_end());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_column_left_others_right_two_spaces_apart() {
        let mut out = String::new();
        let rows = vec![
            vec!["forward".to_string(), "1.500".into(), "12.250".into()],
            vec!["dp".to_string(), "0.125".into(), "0.125".into()],
        ];
        render(&mut out, "  ", &["phase", "min", "max"], &rows);
        assert_eq!(
            out,
            "  phase      min     max\n  forward  1.500  12.250\n  dp       0.125   0.125\n"
        );
    }

    #[test]
    fn widths_count_chars_and_lines_have_no_trailing_space() {
        let mut out = String::new();
        let rows = vec![vec!["µs".to_string()], vec!["x".to_string(), "1".into()]];
        render(&mut out, "", &["unit", ""], &rows);
        assert_eq!(out, "unit\nµs\nx     1\n");
    }

    #[test]
    fn a_left_aligned_word_column_pads_on_the_right() {
        let mut out = String::new();
        let rows = vec![
            vec!["1".to_string(), "1f1b".into(), "2.500".into()],
            vec!["12".to_string(), "interleaved".into(), "10.000".into()],
        ];
        let columns = [
            ("rank", Align::Right),
            ("schedule", Align::Left),
            ("ms", Align::Right),
        ];
        render_aligned(&mut out, "  ", &columns, &rows);
        assert_eq!(
            out,
            "  rank  schedule         ms\n     1  1f1b          2.500\n    12  interleaved  10.000\n"
        );
    }
}
