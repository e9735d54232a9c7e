//! The wheel's key index: which node holds a key.

use rustc_hash::FxHashMap;

use super::NIL;
use crate::prefetch::prefetch;

/// Maps keys to node indices. Member handles are dense small integers, so they index a
/// plain vector (one predictable memory access, sequential for sequential handles);
/// anything else goes to a hash map. The vector only grows to cover a key while that
/// keeps it at least ~1/8 full (`key < 4 * live`, doubled by power-of-two rounding), so a
/// few huge keys cannot make it allocate gigabytes.
///
/// The map hashes with FxHash (`rustc-hash`): keys are member handles and ids the
/// coordinator itself accepted, not attacker-chosen map keys in a hot loop, and std's
/// SipHash would cost more than the whole wheel operation.
#[derive(Default)]
pub(super) struct KeyIndex {
    direct: Vec<u32>,
    sparse: FxHashMap<u64, u32>,
}

impl KeyIndex {
    /// Keys below this always go to the vector (16 KiB of index at most).
    const DIRECT_FLOOR: u64 = 1 << 12;

    #[inline]
    pub(super) fn get(&self, key: u64) -> Option<u32> {
        if key < self.direct.len() as u64 {
            let n = self.direct[key as usize];
            (n != NIL).then_some(n)
        } else {
            self.sparse.get(&key).copied()
        }
    }

    /// Inserts a key that is not present. `live` is the number of keys already indexed.
    #[inline]
    pub(super) fn insert(&mut self, key: u64, node: u32, live: usize) {
        let len = self.direct.len() as u64;
        if key >= len && key < (4 * live as u64).max(Self::DIRECT_FLOOR) {
            self.grow_to(key);
        }
        if key < self.direct.len() as u64 {
            debug_assert_eq!(self.direct[key as usize], NIL, "key {key} indexed twice");
            self.direct[key as usize] = node;
        } else {
            let old = self.sparse.insert(key, node);
            debug_assert!(old.is_none(), "key {key} indexed twice");
        }
    }

    #[cold]
    fn grow_to(&mut self, key: u64) {
        let new_len = (key + 1).next_power_of_two() as usize;
        self.direct.resize(new_len, NIL);
        if !self.sparse.is_empty() {
            // Keys now covered by the vector must move there, or `get` would miss them.
            let direct = &mut self.direct;
            self.sparse.retain(|&k, &mut n| {
                if k < new_len as u64 {
                    direct[k as usize] = n;
                    false
                } else {
                    true
                }
            });
        }
    }

    #[inline]
    pub(super) fn remove(&mut self, key: u64) -> Option<u32> {
        if key < self.direct.len() as u64 {
            let slot = &mut self.direct[key as usize];
            let n = *slot;
            *slot = NIL;
            (n != NIL).then_some(n)
        } else {
            self.sparse.remove(&key)
        }
    }

    /// The node of `key` if the vector covers it: a lookup that never hashes, for prefetch
    /// hints (a sparse key gives `None` whether present or not).
    #[inline]
    pub(super) fn get_direct(&self, key: u64) -> Option<u32> {
        let n = *self.direct.get(usize::try_from(key).ok()?)?;
        (n != NIL).then_some(n)
    }

    /// Prefetch hint: the vector entry of `key`, if the vector covers it.
    #[inline]
    pub(super) fn prefetch(&self, key: u64) {
        if key < self.direct.len() as u64 {
            prefetch(&self.direct[key as usize]);
        }
    }

    /// Number of keys indexed; O(capacity), for invariant checks.
    pub(super) fn count(&self) -> usize {
        self.direct.iter().filter(|&&n| n != NIL).count() + self.sparse.len()
    }

    pub(super) fn bytes(&self) -> usize {
        self.direct.capacity() * 4 + self.sparse.capacity() * 16
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[test]
    fn huge_keys_stay_in_the_map_and_dense_keys_migrate_to_the_vector() {
        let mut index = KeyIndex::default();
        index.insert(u64::MAX, 0, 0);
        index.insert(9_000, 1, 1);
        assert!(index.direct.len() <= KeyIndex::DIRECT_FLOOR as usize);
        assert_eq!(index.sparse.len(), 2);
        // Enough live keys that 9_000 < 4 * live: growing the vector takes 9_000 with it.
        for k in 0..3_000u64 {
            index.insert(k, 2 + k as u32, 2 + k as usize);
        }
        index.insert(9_001, 5_000, 3_002);
        assert!(index.direct.len() > 9_001);
        assert_eq!(index.sparse.len(), 1, "only u64::MAX is left in the map");
        assert_eq!(index.get(9_000), Some(1));
        assert_eq!(index.get_direct(9_000), Some(1));
        assert_eq!(index.get(u64::MAX), Some(0));
        assert_eq!(
            index.get_direct(u64::MAX),
            None,
            "sparse keys are not direct"
        );
        assert_eq!(index.count(), 3_003);
        assert_eq!(index.remove(9_000), Some(1));
        assert_eq!(index.remove(9_000), None);
        assert_eq!(index.get(9_000), None);
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u64),
        Remove(u64),
    }

    fn key() -> impl Strategy<Value = u64> {
        prop_oneof![
            6 => 0u64..64,
            2 => 4_000u64..4_200,
            1 => (0u32..64).prop_map(|b| 1u64 << b),
            1 => Just(u64::MAX),
        ]
    }

    proptest! {
        /// Against a HashMap: every lookup agrees after any sequence of inserts and
        /// removes, whichever side of the vector/map boundary a key is on.
        #[test]
        fn index_matches_a_hash_map(ops in proptest::collection::vec(
            prop_oneof![3 => key().prop_map(Op::Insert), 1 => key().prop_map(Op::Remove)], 1..300)
        ) {
            let mut index = KeyIndex::default();
            let mut model: HashMap<u64, u32> = HashMap::new();
            let mut peak = 0usize;
            for (i, op) in ops.into_iter().enumerate() {
                match op {
                    Op::Insert(k) => {
                        if !model.contains_key(&k) {
                            index.insert(k, i as u32, model.len());
                            model.insert(k, i as u32);
                        }
                    }
                    Op::Remove(k) => prop_assert_eq!(index.remove(k), model.remove(&k)),
                }
                prop_assert_eq!(index.count(), model.len());
                for (&k, &n) in &model {
                    prop_assert_eq!(index.get(k), Some(n));
                }
                // A few huge keys never make the vector big: it covers at most twice the
                // larger of 4 x the peak of live keys and the floor.
                peak = peak.max(model.len());
                prop_assert!(index.direct.len() as u64 <= 2 * (4 * peak as u64).max(KeyIndex::DIRECT_FLOOR));
            }
        }
    }
}
