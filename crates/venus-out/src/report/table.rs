//! The one text-table renderer of the human outputs (`venusc sim`'s report, `venusc check
//! --memory`).
//!
//! Input: a header and rows of already formatted cells. Output: lines ending in `\n`, appended
//! to a string. Invariants: the first column is left-aligned and the others right-aligned,
//! two spaces apart; widths count chars, not bytes, so a non-ASCII cell keeps its column; no
//! line ends in a space.

use std::fmt::Write as _;

/// Appends `header` and `rows` to `out`, each line prefixed with `indent`. A row shorter than
/// the header leaves its last columns empty.
pub fn render(out: &mut String, indent: &str, header: &[&str], rows: &[Vec<String>]) {
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
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
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, &w))| {
                if i == 0 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
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
}
