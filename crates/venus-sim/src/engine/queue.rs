//! The engine's event queue: events in `(time, sequence)` order, FIFO among equal times.
//!
//! Input: `push(time, event)` with `time >= now`. Output: `pop` returns the pending events in
//! increasing time, and events of one time in the order they were pushed; it advances `now`
//! to the popped event's time.
//! Invariants: time never goes backwards (a push before `now` is a caller bug, checked in
//! debug builds); equal-time ties are broken by the push sequence alone, never by the event's
//! value, so the order is the same on every run. Cancellation is lazy: an event the caller no
//! longer wants stays queued and is dropped when popped ([`EventQueue::pop_live`]).
//!
//! Layout: a binary heap keyed by `(time, seq)` plus a FIFO of the events pushed for the
//! current time `now`. Those come after every heap entry for `now` (the heap's were pushed
//! before time reached `now`, so their sequence numbers are smaller) and before any later one,
//! so popping the heap's `now` entries, then the FIFO, then the heap again is exactly
//! `(time, seq)` order without a heap operation for same-time events (most of them: a node's
//! completion wakes its stream and dependents at the same instant).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Pending events of a simulation, ordered by `(time, push sequence)`.
#[derive(Clone, Debug)]
pub(crate) struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Entry<E>>>,
    /// Events pushed for time `now`, in push order.
    ready: VecDeque<E>,
    seq: u64,
    now: u64,
}

/// A heap entry, ordered by `(time, seq)` only: two entries never share a `seq`, so the
/// event's own value never decides an order.
#[derive(Clone, Copy, Debug)]
struct Entry<E> {
    time: u64,
    seq: u64,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        (self.time, self.seq) == (o.time, o.seq)
    }
}

impl<E> Eq for Entry<E> {}

impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl<E> Ord for Entry<E> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.time, self.seq).cmp(&(o.time, o.seq))
    }
}

impl<E> EventQueue<E> {
    /// An empty queue at time 0, with room for `heap` future and `ready` same-time events.
    pub(crate) fn with_capacity(heap: usize, ready: usize) -> EventQueue<E> {
        EventQueue {
            heap: BinaryHeap::with_capacity(heap),
            ready: VecDeque::with_capacity(ready),
            seq: 0,
            now: 0,
        }
    }

    /// The time of the last popped event (0 before the first).
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        self.now
    }

    /// Schedules `ev` at `time` (not before [`EventQueue::now`]).
    #[inline]
    pub(crate) fn push(&mut self, time: u64, ev: E) {
        debug_assert!(time >= self.now, "event scheduled in the past");
        if time == self.now {
            self.ready.push_back(ev);
        } else {
            self.heap.push(Reverse(Entry {
                time,
                seq: self.seq,
                ev,
            }));
        }
        self.seq += 1;
    }

    /// The next event in `(time, seq)` order and its time; `now` becomes that time.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(u64, E)> {
        let from_heap = match self.heap.peek() {
            Some(Reverse(e)) => e.time == self.now || self.ready.is_empty(),
            None => false,
        };
        let (time, ev) = if from_heap {
            let Reverse(e) = self.heap.pop()?;
            (e.time, e.ev)
        } else {
            (self.now, self.ready.pop_front()?)
        };
        self.now = time;
        Some((time, ev))
    }

    /// The next event for which `live` holds; the others (superseded events, lazily
    /// cancelled) are dropped on the way.
    #[inline]
    pub(crate) fn pop_live(&mut self, mut live: impl FnMut(&E) -> bool) -> Option<(u64, E)> {
        loop {
            let (t, ev) = self.pop()?;
            if live(&ev) {
                return Some((t, ev));
            }
        }
    }

    /// Pending events, live or not.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.heap.len() + self.ready.len()
    }
}

#[cfg(test)]
mod tests {
    use super::EventQueue;
    use proptest::prelude::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    fn drain(q: &mut EventQueue<u32>) -> Vec<(u64, u32)> {
        std::iter::from_fn(|| q.pop()).collect()
    }

    #[test]
    fn events_pop_in_increasing_time() {
        let mut q = EventQueue::with_capacity(4, 4);
        q.push(30, 3);
        q.push(10, 1);
        q.push(20, 2);
        assert_eq!(drain(&mut q), [(10, 1), (20, 2), (30, 3)]);
        assert_eq!(q.now(), 30);
    }

    #[test]
    fn equal_times_pop_in_push_order_whatever_the_event_values() {
        let mut q = EventQueue::with_capacity(4, 4);
        q.push(5, 9);
        q.push(5, 1);
        q.push(5, 4);
        assert_eq!(drain(&mut q), [(5, 9), (5, 1), (5, 4)]);
    }

    #[test]
    fn events_pushed_for_now_run_after_earlier_pushed_events_of_now() {
        let mut q = EventQueue::with_capacity(4, 4);
        q.push(7, 1);
        q.push(7, 2);
        q.push(9, 5);
        assert_eq!(q.pop(), Some((7, 1)));
        // Pushed at now = 7: after the heap's remaining 7, before the 9.
        q.push(7, 3);
        q.push(7, 4);
        assert_eq!(drain(&mut q), [(7, 2), (7, 3), (7, 4), (9, 5)]);
    }

    #[test]
    fn events_pushed_at_time_zero_run_first_in_push_order() {
        let mut q = EventQueue::with_capacity(4, 4);
        q.push(1, 10);
        q.push(0, 20);
        q.push(0, 30);
        assert_eq!(q.len(), 3);
        assert_eq!(drain(&mut q), [(0, 20), (0, 30), (1, 10)]);
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn pop_live_drops_cancelled_events() {
        let mut q = EventQueue::with_capacity(4, 4);
        for (t, e) in [(1, 1), (2, 2), (2, 3), (4, 4)] {
            q.push(t, e);
        }
        let odd = |e: &u32| e % 2 == 1;
        assert_eq!(q.pop_live(odd), Some((1, 1)));
        assert_eq!(q.pop_live(odd), Some((2, 3)));
        assert_eq!(q.pop_live(odd), None);
        assert_eq!(q.now(), 4);
    }

    /// A step of a queue workload: push an event `delay` after now, or pop one.
    #[derive(Clone, Debug)]
    enum Step {
        Push(u64),
        Pop,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            // Small delays so that equal times (and pushes at now) are common.
            3 => (0u64..4).prop_map(Step::Push),
            2 => Just(Step::Pop),
        ]
    }

    proptest! {
        /// The queue pops exactly what a plain `BinaryHeap<Reverse<(time, seq)>>` pops, for any
        /// interleaving of pushes (never before now) and pops.
        #[test]
        fn queue_matches_a_plain_time_seq_heap(steps in proptest::collection::vec(step(), 0..200)) {
            let mut q = EventQueue::with_capacity(0, 0);
            let mut model: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
            let (mut seq, mut now) = (0u64, 0u64);
            for s in steps.iter().chain(std::iter::repeat_n(&Step::Pop, steps.len())) {
                match *s {
                    Step::Push(delay) => {
                        q.push(now + delay, seq as u32);
                        model.push(Reverse((now + delay, seq)));
                        seq += 1;
                    }
                    Step::Pop => {
                        let want = model.pop().map(|Reverse((t, s))| (t, s as u32));
                        prop_assert_eq!(q.pop(), want);
                        if let Some((t, _)) = want {
                            now = t;
                        }
                        prop_assert_eq!(q.now(), now);
                    }
                }
                prop_assert_eq!(q.len(), model.len());
            }
        }
    }
}
