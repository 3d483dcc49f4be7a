//! Byte offsets ↔ LSP positions (zero-based line, UTF-16 code units within the line).
//!
//! Invariants: conversions never panic; a position past the end of a line clamps to the line's
//! end, a line past the end of the text clamps to the end of the text, and an offset inside a
//! multi-byte character moves back to the character's start.

/// Line starts of one text, for repeated conversions.
pub struct LineIndex<'t> {
    text: &'t str,
    /// Byte offset of the start of every line; the first is 0.
    starts: Vec<usize>,
}

impl<'t> LineIndex<'t> {
    pub fn new(text: &'t str) -> LineIndex<'t> {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .map(|(i, _)| i + 1),
        );
        LineIndex { text, starts }
    }

    /// The (line, UTF-16 column) of a byte offset.
    pub fn position(&self, offset: usize) -> (u32, u32) {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self
            .starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1);
        let start = self.starts.get(line).copied().unwrap_or(0);
        let column: usize = self.text[start..offset].chars().map(char::len_utf16).sum();
        (line as u32, column as u32)
    }

    /// The byte offset of a (line, UTF-16 column) position.
    pub fn offset(&self, line: u32, column: u32) -> usize {
        let Some(&start) = self.starts.get(line as usize) else {
            return self.text.len();
        };
        let end = self
            .starts
            .get(line as usize + 1)
            .map_or(self.text.len(), |&next| next - 1);
        let line_text = &self.text[start..end];
        let line_text = line_text.strip_suffix('\r').unwrap_or(line_text);
        let mut units = 0usize;
        for (i, c) in line_text.char_indices() {
            if units >= column as usize {
                return start + i;
            }
            units += c.len_utf16();
        }
        start + line_text.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_offsets_map_to_line_and_column() {
        let idx = LineIndex::new("ab\ncd\n");
        assert_eq!(idx.position(0), (0, 0));
        assert_eq!(idx.position(4), (1, 1));
        assert_eq!(idx.position(6), (2, 0));
        assert_eq!(idx.offset(1, 1), 4);
        assert_eq!(idx.offset(2, 0), 6);
    }

    #[test]
    fn columns_count_utf16_units_not_bytes() {
        // `é` is 2 bytes and 1 UTF-16 unit; `𝄞` is 4 bytes and 2 UTF-16 units.
        let text = "# é𝄞x\nhidden 1";
        let idx = LineIndex::new(text);
        let x = text.find('x').unwrap();
        assert_eq!(x, 8);
        assert_eq!(idx.position(x), (0, 5));
        assert_eq!(idx.offset(0, 5), 8);
        assert_eq!(idx.offset(0, 3), 4);
    }

    #[test]
    fn out_of_range_positions_clamp_instead_of_panicking() {
        let text = "ab\r\ncd";
        let idx = LineIndex::new(text);
        assert_eq!(idx.offset(0, 99), 2);
        assert_eq!(idx.offset(7, 0), text.len());
        assert_eq!(idx.position(999), (1, 2));
        // Inside the 4-byte character: back to its start.
        let idx = LineIndex::new("𝄞");
        assert_eq!(idx.position(2), (0, 0));
    }
}
