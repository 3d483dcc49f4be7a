//! Typed indices of the engine's flat arrays, and [`IdVec`], a `Vec` indexed by one of them.
//!
//! Input: nothing. Output: one `FooId(u32)` per index kind the simulator uses, so that an
//! index of one kind cannot be used in an array of another (a stream id into a node array, a
//! link into an op array). Invariant: every id is a position in the array its kind names and
//! is below `u32::MAX` (the simulator checks its sizes before building).

use crate::trace::{GroupId, RankId};
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

/// An id usable as an [`IdVec`] index.
pub(crate) trait Id: Copy {
    fn new(i: usize) -> Self;
    fn ix(self) -> usize;
}

macro_rules! ids {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub(crate) struct $name(pub(crate) u32);

        impl Id for $name {
            #[inline]
            fn new(i: usize) -> Self {
                $name(i as u32)
            }
            #[inline]
            fn ix(self) -> usize {
                self.0 as usize
            }
        }
    )*};
}

ids! {
    /// A node of the whole simulation: `offset[rank] + local id` over the simulated ranks.
    GNodeId;
    /// A simulated rank: its position in `Trace::ranks` (the timeline's `rank_index`).
    SimRankId;
    /// A stream of the whole simulation: per simulated rank, `max stream id + 1` streams.
    SimStreamId;
    /// A slot of an active operation (a transfer or a collective instance) and of its
    /// current flow. Slots are reused once their operation finishes.
    OpId;
    /// A link: one per (simulated rank, dim, direction), `(rank · dims + dim) · 2 + dir`.
    LinkId;
    /// A collective instance: the k-th collective of every member on one group.
    InstId;
    /// A collective signature `(group, kind, bytes)`: instances of one signature share
    /// their phases.
    SigId;
}

impl Id for RankId {
    #[inline]
    fn new(i: usize) -> Self {
        RankId(i as u32)
    }
    #[inline]
    fn ix(self) -> usize {
        self.0 as usize
    }
}

impl Id for GroupId {
    #[inline]
    fn new(i: usize) -> Self {
        GroupId(i as u32)
    }
    #[inline]
    fn ix(self) -> usize {
        self.0 as usize
    }
}

/// A `Vec<T>` indexed by the id kind `I`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct IdVec<I, T> {
    raw: Vec<T>,
    _id: PhantomData<fn(I)>,
}

impl<I: Id, T> IdVec<I, T> {
    pub(crate) fn new() -> Self {
        IdVec::from_vec(Vec::new())
    }

    pub(crate) fn from_vec(raw: Vec<T>) -> Self {
        IdVec {
            raw,
            _id: PhantomData,
        }
    }

    /// `n` copies of `v`.
    pub(crate) fn filled(n: usize, v: T) -> Self
    where
        T: Clone,
    {
        IdVec::from_vec(vec![v; n])
    }

    pub(crate) fn len(&self) -> usize {
        self.raw.len()
    }

    /// Appends `v` and returns its id.
    pub(crate) fn push(&mut self, v: T) -> I {
        self.raw.push(v);
        I::new(self.raw.len() - 1)
    }

    pub(crate) fn get(&self, i: I) -> Option<&T> {
        self.raw.get(i.ix())
    }

    /// Every id, in order.
    pub(crate) fn ids(&self) -> impl Iterator<Item = I> + Clone {
        (0..self.raw.len()).map(I::new)
    }

    pub(crate) fn iter(&self) -> std::slice::Iter<'_, T> {
        self.raw.iter()
    }

    pub(crate) fn into_vec(self) -> Vec<T> {
        self.raw
    }
}

impl<I: Id, T> Index<I> for IdVec<I, T> {
    type Output = T;
    #[inline]
    fn index(&self, i: I) -> &T {
        &self.raw[i.ix()]
    }
}

impl<I: Id, T> IndexMut<I> for IdVec<I, T> {
    #[inline]
    fn index_mut(&mut self, i: I) -> &mut T {
        &mut self.raw[i.ix()]
    }
}
