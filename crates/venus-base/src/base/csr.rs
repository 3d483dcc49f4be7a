//! Compressed sparse rows: a table of variable-length rows stored in two flat `Vec`s.
//!
//! Input: `(row, item)` pairs in any order, every row below the row count. Output: a [`Csr`]
//! whose row `r` holds the items of the pairs naming `r`, in the pairs' order (a stable
//! counting sort: one pass to count, one to place, no comparison sort).
//! Invariants: `start` has `rows + 1` entries, is non-decreasing, starts at 0 and ends at
//! `items.len()`; the total number of items fits in a `u32` (callers check their sizes
//! against `u32::MAX` before building, as the trace and the engine do for their ids).

/// Rows of `T`: row `r` is `items[start[r]..start[r + 1]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Csr<T> {
    start: Vec<u32>,
    items: Vec<T>,
}

/// No rows (no bound on `T`, unlike a derived `Default`).
impl<T> Default for Csr<T> {
    fn default() -> Self {
        Csr {
            start: vec![0],
            items: Vec::new(),
        }
    }
}

impl<T: Copy> Csr<T> {
    /// Groups `pairs` into `rows` rows, keeping the pairs' order within each row. The
    /// iterator is walked twice (count, then place), so it must be cheap to clone.
    ///
    /// Panics if a pair names a row `>= rows` (the callers validate their rows first).
    pub fn from_pairs<I>(rows: usize, pairs: I) -> Csr<T>
    where
        I: IntoIterator<Item = (u32, T)>,
        I::IntoIter: Clone,
    {
        let pairs = pairs.into_iter();
        let mut start = vec![0u32; rows + 1];
        for (r, _) in pairs.clone() {
            start[r as usize + 1] += 1;
        }
        for r in 0..rows {
            start[r + 1] += start[r];
        }
        let mut fill = start.clone();
        let mut items = Vec::with_capacity(start[rows] as usize);
        // Placing into uninitialised slots would need `unsafe`; instead fill with the first
        // item (any value: every slot is overwritten below).
        if let Some((_, first)) = pairs.clone().next() {
            items.resize(start[rows] as usize, first);
        }
        for (r, item) in pairs {
            let slot = &mut fill[r as usize];
            items[*slot as usize] = item;
            *slot += 1;
        }
        Csr { start, items }
    }
}

impl<T> Csr<T> {
    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    /// Total items over all rows.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The items of row `r` (empty for a row out of range).
    #[inline]
    pub fn row(&self, r: usize) -> &[T] {
        match (self.start.get(r), self.start.get(r + 1)) {
            (Some(&a), Some(&b)) => &self.items[a as usize..b as usize],
            _ => &[],
        }
    }

    /// Row `r` as a range of positions into [`Csr::items`] (empty for a row out of range).
    #[inline]
    pub fn bounds(&self, r: usize) -> (u32, u32) {
        match (self.start.get(r), self.start.get(r + 1)) {
            (Some(&a), Some(&b)) => (a, b),
            _ => (0, 0),
        }
    }

    /// Every item, row after row.
    #[inline]
    pub fn items(&self) -> &[T] {
        &self.items
    }
}

#[cfg(test)]
mod tests {
    use super::Csr;

    #[test]
    fn rows_keep_the_pairs_order() {
        let c = Csr::from_pairs(3, [(2, 'a'), (0, 'b'), (2, 'c'), (0, 'd')]);
        assert_eq!(c.rows(), 3);
        assert_eq!(c.len(), 4);
        assert_eq!(c.row(0), ['b', 'd']);
        assert_eq!(c.row(1), [] as [char; 0]);
        assert_eq!(c.row(2), ['a', 'c']);
        assert_eq!(c.items(), ['b', 'd', 'a', 'c']);
        assert_eq!(c.bounds(2), (2, 4));
    }

    #[test]
    fn rows_out_of_range_are_empty() {
        let c = Csr::from_pairs(1, [(0, 7u32)]);
        assert_eq!(c.row(1), [] as [u32; 0]);
        assert_eq!(c.bounds(5), (0, 0));
    }

    #[test]
    fn no_pairs_give_empty_rows() {
        let c: Csr<u32> = Csr::from_pairs(2, std::iter::empty());
        assert_eq!((c.rows(), c.len(), c.is_empty()), (2, 0, true));
        assert_eq!(c.row(0), [] as [u32; 0]);
        let none: Csr<u32> = Csr::from_pairs(0, std::iter::empty());
        assert_eq!(none.rows(), 0);
    }

    #[test]
    fn equals_a_stable_sort_by_row() {
        // A fixed pseudo-random sequence: the CSR is the stable sort of the pairs by row.
        let pairs: Vec<(u32, u32)> = (0..200u32).map(|i| ((i * 7919) % 13, i)).collect();
        let c = Csr::from_pairs(13, pairs.iter().copied());
        let mut sorted = pairs.clone();
        sorted.sort_by_key(|&(r, _)| r);
        let want: Vec<u32> = sorted.iter().map(|&(_, i)| i).collect();
        assert_eq!(c.items(), want.as_slice());
        for r in 0..13 {
            let row: Vec<u32> = pairs.iter().filter(|p| p.0 == r).map(|p| p.1).collect();
            assert_eq!(c.row(r as usize), row.as_slice());
        }
    }
}
