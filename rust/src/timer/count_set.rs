//! A multiset of small integers with a fast minimum: how the wheel knows the exact earliest
//! deadline inside a slot that may hold most of the members.

use super::bits::SLOTS;

/// A multiset of offsets in `[0, 64^depth)` with O(depth) add / remove / min: a count per
/// offset plus a hierarchy of occupancy bitmaps (64-ary, like the wheel itself). It mirrors
/// the deadlines of one slot of level `depth` at one-tick resolution, which is what makes
/// `next_deadline` exact without rescanning a slot that may hold most of the members.
pub(super) struct CountSet {
    counts: Vec<u32>,
    /// Sum of all counts.
    total: usize,
    /// `bits[0]` has one bit per offset; `bits[i + 1]` one bit per non-zero word of
    /// `bits[i]`; the last level is a single word.
    bits: Vec<Vec<u64>>,
}

impl CountSet {
    pub(super) fn new(depth: usize) -> Self {
        let n = SLOTS.pow(depth as u32);
        let mut bits = Vec::new();
        let mut words = n / SLOTS;
        loop {
            bits.push(vec![0u64; words.max(1)]);
            if words <= 1 {
                break;
            }
            words /= SLOTS;
        }
        CountSet {
            counts: vec![0; n],
            total: 0,
            bits,
        }
    }

    #[inline]
    pub(super) fn add(&mut self, offset: usize) {
        self.total += 1;
        let c = &mut self.counts[offset];
        *c += 1;
        if *c == 1 {
            let mut i = offset;
            for level in &mut self.bits {
                let word = &mut level[i / SLOTS];
                let was = *word;
                *word |= 1 << (i % SLOTS);
                if was != 0 {
                    break;
                }
                i /= SLOTS;
            }
        }
    }

    #[inline]
    pub(super) fn remove(&mut self, offset: usize) {
        let c = &mut self.counts[offset];
        debug_assert!(*c > 0, "CountSet::remove of absent offset {offset}");
        *c -= 1;
        self.total -= 1;
        if *c == 0 {
            let mut i = offset;
            for level in &mut self.bits {
                let word = &mut level[i / SLOTS];
                *word &= !(1 << (i % SLOTS));
                if *word != 0 {
                    break;
                }
                i /= SLOTS;
            }
        }
    }

    #[inline]
    pub(super) fn min(&self) -> Option<usize> {
        let top = *self.bits.last()?.first()?;
        if top == 0 {
            return None;
        }
        let mut i = top.trailing_zeros() as usize;
        for level in self.bits.iter().rev().skip(1) {
            i = i * SLOTS + level[i].trailing_zeros() as usize;
        }
        Some(i)
    }

    /// Zeroes everything, touching only words that are set.
    pub(super) fn clear(&mut self) {
        let (finest, _) = self.bits.split_first_mut().expect("at least one level");
        for (w, word) in finest.iter_mut().enumerate() {
            let mut b = *word;
            while b != 0 {
                self.counts[w * SLOTS + b.trailing_zeros() as usize] = 0;
                b &= b - 1;
            }
            *word = 0;
        }
        for level in self.bits.iter_mut().skip(1) {
            level.fill(0);
        }
        self.total = 0;
    }

    pub(super) fn total(&self) -> usize {
        self.total
    }

    pub(super) fn bytes(&self) -> usize {
        self.counts.capacity() * 4 + self.bits.iter().map(|b| b.capacity() * 8).sum::<usize>()
    }

    pub(super) fn count(&self, offset: usize) -> u32 {
        self.counts[offset]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[test]
    fn count_set_is_a_multiset_with_min() {
        for depth in 1..=3usize {
            let mut s = CountSet::new(depth);
            let size = SLOTS.pow(depth as u32);
            assert_eq!(s.min(), None);
            let (mid, last) = (size / 2, size - 1);
            for o in [last, 0, mid, 1, mid] {
                s.add(o);
            }
            assert_eq!(s.min(), Some(0));
            s.remove(0);
            assert_eq!(s.min(), Some(1));
            s.remove(1);
            assert_eq!(s.min(), Some(mid));
            s.remove(mid);
            assert_eq!(s.min(), Some(mid), "mid was added twice");
            s.remove(mid);
            assert_eq!(s.min(), Some(last));
            s.clear();
            assert_eq!(s.min(), None);
            assert!((0..size).all(|o| s.count(o) == 0));
            // Every offset alone is its own minimum.
            for o in (0..size).step_by(size / 64 + 1).chain([size - 1]) {
                s.add(o);
                assert_eq!(s.min(), Some(o));
                s.remove(o);
                assert_eq!(s.min(), None);
            }
        }
    }

    proptest! {
        /// Against a sorted map of counts, at every depth the wheel uses: the minimum, each
        /// offset's count and the total agree after any sequence of adds and removes.
        #[test]
        fn count_set_matches_a_sorted_multiset(
            depth in 1usize..=3,
            ops in proptest::collection::vec((any::<bool>(), any::<usize>(), 0u32..64), 1..200),
        ) {
            let size = SLOTS.pow(depth as u32);
            let mut set = CountSet::new(depth);
            let mut model: BTreeMap<usize, u32> = BTreeMap::new();
            for (add, raw, bucket) in ops {
                // Offsets clustered in a few buckets, so removes usually find something.
                let offset = (bucket as usize * (size / 64) + raw % 3) % size;
                if add {
                    set.add(offset);
                    *model.entry(offset).or_default() += 1;
                } else if let Some(c) = model.get_mut(&offset) {
                    set.remove(offset);
                    *c -= 1;
                    if *c == 0 {
                        model.remove(&offset);
                    }
                }
                prop_assert_eq!(set.min(), model.keys().next().copied());
                prop_assert_eq!(set.total(), model.values().map(|&c| c as usize).sum::<usize>());
                prop_assert_eq!(set.count(offset), model.get(&offset).copied().unwrap_or(0));
            }
            set.clear();
            prop_assert_eq!(set.min(), None);
            prop_assert!(model.keys().all(|&o| set.count(o) == 0));
        }
    }
}
