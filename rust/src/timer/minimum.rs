//! What makes `next_deadline` exact without rescanning: the minimum deadline of each level's
//! earliest slot, and of the overdue list, kept in step with every key that joins or leaves.

use super::count_set::CountSet;
use super::NIL;

/// Deepest level whose earliest slot gets a count histogram for an exact `next_deadline`
/// (level 3 = 262,144 one-millisecond counters, 1 MiB). Above it (slots 4.66 hours wide or
/// more) the slot's minimum and its multiplicity are kept instead; when the last key at the
/// minimum leaves, the next `next_deadline` rescans that slot once.
pub(super) const HIST_MAX_LEVEL: usize = 3;

/// What `next_deadline` knows about the earliest slot of one level (the "tracked" slot):
/// the slot is settled (every key on it has its deadline inside the slot) and its exact
/// minimum is maintained: trivially on level 0 (a level-0 slot is one millisecond), by a
/// [`CountSet`] histogram on levels 1..=[`HIST_MAX_LEVEL`], and by a minimum with its
/// multiplicity on higher levels (dropped when the last key at the minimum leaves; those
/// slots are hours away, so a rescan then is cheap in practice). Keys on a tracked slot are
/// moved eagerly, so the tracking stays exact.
pub(super) struct Tracked {
    /// The tracked list, or NIL.
    pub(super) list: u32,
    /// First tick of the slot.
    pub(super) base: u64,
    /// Levels above HIST_MAX_LEVEL: the minimum deadline on the slot and how many keys have it.
    pub(super) min: u64,
    pub(super) count: u32,
    /// Levels 1..=HIST_MAX_LEVEL: allocated on first use and reused.
    pub(super) hist: Option<CountSet>,
}

impl Tracked {
    pub(super) const NONE: Tracked = Tracked {
        list: NIL,
        base: 0,
        min: 0,
        count: 0,
        hist: None,
    };

    /// A settled key with deadline `when` joined the tracked slot, of `level`.
    #[inline]
    pub(super) fn add(&mut self, level: usize, when: u64) {
        if let Some(h) = self.hist.as_mut() {
            h.add((when - self.base) as usize);
        } else if level > 0 {
            if when < self.min {
                self.min = when;
                self.count = 1;
            } else if when == self.min {
                self.count += 1;
            }
        }
    }

    /// A key with deadline `when` left the tracked slot, of `level`, which still holds
    /// keys. Returns false when the minimum is no longer known (the last key at it left a
    /// slot without a histogram): the caller must stop tracking.
    #[inline]
    pub(super) fn remove(&mut self, level: usize, when: u64) -> bool {
        if let Some(h) = self.hist.as_mut() {
            h.remove((when - self.base) as usize);
        } else if level > 0 && when == self.min {
            self.count -= 1;
            return self.count > 0;
        }
        true
    }

    /// The exact minimum deadline on the tracked slot, of `level`.
    #[inline]
    pub(super) fn minimum(&self, level: usize) -> u64 {
        match level {
            0 => self.base,
            1..=HIST_MAX_LEVEL => {
                let offset = self.hist.as_ref().and_then(CountSet::min);
                self.base + offset.expect("tracked slot is non-empty") as u64
            }
            _ => self.min,
        }
    }

    /// Stops tracking; the histogram is cleared and kept for the next slot.
    pub(super) fn clear(&mut self) {
        if self.list != NIL {
            if let Some(h) = self.hist.as_mut() {
                h.clear();
            }
            self.list = NIL;
        }
    }
}

/// Exact minimum and its multiplicity of the overdue list; invalid (`valid == false`) once
/// the last key with the minimum leaves, and recomputed by one scan when next needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct MinCache {
    pub(super) valid: bool,
    pub(super) min: u64,
    pub(super) count: u32,
}

impl MinCache {
    pub(super) const INVALID: MinCache = MinCache {
        valid: false,
        min: 0,
        count: 0,
    };

    /// The cache of a whole list of deadlines, by one scan.
    pub(super) fn scan(deadlines: impl Iterator<Item = u64>) -> MinCache {
        let mut min = u64::MAX;
        let mut count = 0;
        for when in deadlines {
            if when < min {
                min = when;
                count = 1;
            } else if when == min {
                count += 1;
            }
        }
        MinCache {
            valid: count > 0,
            min,
            count,
        }
    }

    #[inline]
    pub(super) fn add(&mut self, when: u64) {
        if self.valid {
            if when < self.min {
                self.min = when;
                self.count = 1;
            } else if when == self.min {
                self.count += 1;
            }
        }
    }

    /// A deadline left the list (which still holds others).
    #[inline]
    pub(super) fn remove(&mut self, when: u64) {
        if self.valid && when == self.min {
            self.count -= 1;
            self.valid = self.count > 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[test]
    fn minimum_per_level_kind() {
        let mut t = Tracked::NONE;
        t.base = 1_000;
        t.list = 0;
        assert_eq!(t.minimum(0), 1_000, "a level-0 slot is one tick: its start");
        t.hist = Some(CountSet::new(2));
        t.add(2, 1_700);
        t.add(2, 1_200);
        assert_eq!(t.minimum(2), 1_200);
        assert!(
            t.remove(2, 1_200),
            "a histogram always knows the next minimum"
        );
        assert_eq!(t.minimum(2), 1_700);
        t.clear();
        assert_eq!(
            (t.list, t.hist.as_ref().and_then(CountSet::min)),
            (NIL, None)
        );
    }

    proptest! {
        /// Against a sorted multiset: while valid, `MinCache` holds the exact minimum and
        /// its count; it turns invalid exactly when the last key at the minimum leaves, and
        /// a scan makes it valid and exact again. A tracked slot without a histogram (levels
        /// above HIST_MAX_LEVEL) keeps the same minimum and says when it is lost.
        #[test]
        fn caches_match_a_sorted_multiset(
            first in 0u64..8,
            ops in proptest::collection::vec((any::<bool>(), 0u64..8), 1..100),
        ) {
            let mut model: BTreeMap<u64, u32> = BTreeMap::from([(first, 1)]);
            let mut cache = MinCache::scan([first].into_iter());
            let mut tracked = Tracked { list: 0, base: 0, min: first, count: 1, hist: None };
            let mut tracked_valid = true;
            let level = HIST_MAX_LEVEL + 1;
            for (add, when) in ops {
                if add {
                    cache.add(when);
                    tracked.add(level, when);
                    *model.entry(when).or_default() += 1;
                } else {
                    // Removals keep the list non-empty, as the wheel guarantees.
                    let total: u32 = model.values().sum();
                    if total == 1 || !model.contains_key(&when) {
                        continue;
                    }
                    let was_min = when == *model.keys().next().unwrap();
                    let c = model.get_mut(&when).unwrap();
                    *c -= 1;
                    if *c == 0 {
                        model.remove(&when);
                    }
                    cache.remove(when);
                    let still = tracked.remove(level, when);
                    // Lost exactly when the last key at the minimum left.
                    prop_assert_eq!(still, !was_min || model.contains_key(&when));
                    tracked_valid &= still;
                }
                let (&min, &count) = model.iter().next().unwrap();
                if cache.valid {
                    prop_assert_eq!((cache.min, cache.count), (min, count));
                } else {
                    prop_assert!(!model.contains_key(&cache.min), "invalid while the minimum is still there");
                    let deadlines = model.iter().flat_map(|(&w, &c)| std::iter::repeat_n(w, c as usize));
                    cache = MinCache::scan(deadlines);
                    prop_assert_eq!((cache.valid, cache.min, cache.count), (true, min, count));
                }
                if !tracked_valid {
                    tracked = Tracked { list: 0, base: 0, min, count, hist: None };
                    tracked_valid = true;
                }
                prop_assert_eq!((tracked.minimum(level), tracked.count), (min, count));
            }
        }
    }
}
