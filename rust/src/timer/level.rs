//! One level of the wheel: its 64 slots and the bitmap saying which of them hold keys. The
//! same array-of-node-indices list is used for the wheel's overdue list, hence the free
//! functions below.

use super::bits::SLOTS;

/// A processed slot's array is kept for reuse only up to this capacity, so slots that once
/// held a burst of keys do not pin that memory forever.
const KEEP_CAPACITY: usize = 4096;

/// One level of the wheel.
///
/// Each slot is an array of node indices, unordered; a node knows its position, so removal
/// is a `swap_remove`. Arrays rather than tokio's intrusive linked lists: walking a slot
/// (`advance`, settling) reads indices sequentially and can prefetch the nodes ahead, where
/// a linked list is a chain of dependent cache misses.
pub(super) struct Level {
    /// Bit `s` is set iff `slots[s]` is non-empty, so the first occupied slot is one
    /// `trailing_zeros`.
    occupied: u64,
    slots: [Vec<u32>; SLOTS],
}

impl Level {
    pub(super) fn new() -> Self {
        Level {
            occupied: 0,
            slots: std::array::from_fn(|_| Vec::new()),
        }
    }

    /// The occupancy bitmap.
    #[inline]
    pub(super) fn occupied(&self) -> u64 {
        self.occupied
    }

    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.occupied == 0
    }

    /// The first occupied slot (`SLOTS` if none).
    #[inline]
    pub(super) fn first_occupied(&self) -> usize {
        self.occupied.trailing_zeros() as usize
    }

    #[inline]
    pub(super) fn slot(&self, slot: usize) -> &[u32] {
        &self.slots[slot]
    }

    /// Appends node `n` to `slot`; returns its position there.
    #[inline]
    pub(super) fn push(&mut self, slot: usize, n: u32) -> u32 {
        let keys = &mut self.slots[slot];
        if keys.is_empty() {
            self.occupied |= 1 << slot;
        }
        push(keys, n)
    }

    /// Removes the entry at `pos` of `slot` (see [`swap_remove`]); returns the node moved
    /// into `pos`, if any, and whether the slot is now empty.
    #[inline]
    pub(super) fn remove(&mut self, slot: usize, pos: u32) -> (Option<u32>, bool) {
        let keys = &mut self.slots[slot];
        let moved = swap_remove(keys, pos);
        let emptied = keys.is_empty();
        if emptied {
            self.occupied &= !(1 << slot);
        }
        (moved, emptied)
    }

    /// Takes the whole of `slot` (now empty), to be walked by the caller and handed back
    /// with [`give_back`](Self::give_back).
    #[inline]
    pub(super) fn take(&mut self, slot: usize) -> Vec<u32> {
        self.occupied &= !(1 << slot);
        std::mem::take(&mut self.slots[slot])
    }

    /// Returns a taken array to `slot` for reuse (see [`recycle`]).
    #[inline]
    pub(super) fn give_back(&mut self, slot: usize, keys: Vec<u32>) {
        recycle(&mut self.slots[slot], keys);
    }

    /// Heap bytes of the slots' arrays.
    pub(super) fn bytes(&self) -> usize {
        self.slots.iter().map(|s| s.capacity() * 4).sum()
    }
}

/// Appends `n`; returns its position.
#[inline]
pub(super) fn push(keys: &mut Vec<u32>, n: u32) -> u32 {
    let pos = keys.len() as u32;
    keys.push(n);
    pos
}

/// Removes the entry at `pos` in O(1) by moving the last entry there; returns the node so
/// moved, whose recorded position the caller must update. An emptied array that grew past
/// `KEEP_CAPACITY` is freed.
#[inline]
pub(super) fn swap_remove(keys: &mut Vec<u32>, pos: u32) -> Option<u32> {
    keys.swap_remove(pos as usize);
    let moved = keys.get(pos as usize).copied();
    if keys.is_empty() && keys.capacity() > KEEP_CAPACITY {
        *keys = Vec::new();
    }
    moved
}

/// Gives a detached array back to `list` for reuse, if `list` is still without one and
/// the array is not too big.
#[inline]
pub(super) fn recycle(list: &mut Vec<u32>, mut keys: Vec<u32>) {
    if list.capacity() == 0 && keys.capacity() <= KEEP_CAPACITY {
        keys.clear();
        *list = keys;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_bitmap_follows_the_slots() {
        let mut level = Level::new();
        assert!(level.is_empty());
        assert_eq!(level.first_occupied(), SLOTS);
        assert_eq!(level.push(63, 7), 0);
        assert_eq!(level.push(5, 8), 0);
        assert_eq!(level.push(5, 9), 1);
        assert_eq!(
            (level.occupied(), level.first_occupied()),
            (1 << 63 | 1 << 5, 5)
        );
        // Removing the first of two moves the second into its place.
        assert_eq!(level.remove(5, 0), (Some(9), false));
        assert_eq!(level.slot(5), &[9]);
        assert_eq!(level.remove(5, 0), (None, true));
        assert_eq!(level.first_occupied(), 63);
        let taken = level.take(63);
        assert_eq!(taken, vec![7]);
        assert!(level.is_empty());
        level.give_back(63, taken);
        assert!(level.slot(63).is_empty() && level.is_empty());
    }

    #[test]
    fn big_arrays_are_not_kept() {
        let mut level = Level::new();
        for n in 0..=KEEP_CAPACITY as u32 {
            level.push(0, n);
        }
        let taken = level.take(0);
        level.give_back(0, taken);
        assert_eq!(level.bytes(), 0, "a burst's array is dropped, not recycled");
        for n in 0..=KEEP_CAPACITY as u32 {
            level.push(1, n);
        }
        for _ in 0..=KEEP_CAPACITY {
            level.remove(1, 0);
        }
        assert_eq!(
            level.bytes(),
            0,
            "emptied by removals, the array is freed too"
        );
        level.push(2, 1);
        let taken = level.take(2);
        level.give_back(2, taken);
        assert!(level.bytes() > 0, "a small array is kept for reuse");
    }

    proptest! {
        /// Against a set per slot: contents, positions and the bitmap agree after any
        /// sequence of pushes, removals (at any position) and takes.
        #[test]
        fn level_matches_a_set_per_slot(ops in proptest::collection::vec((0u8..3, 0usize..8, any::<u32>()), 1..200)) {
            let mut level = Level::new();
            let mut model: Vec<Vec<u32>> = vec![Vec::new(); SLOTS];
            for (i, (op, slot, r)) in ops.into_iter().enumerate() {
                // Few slots, spread over the bitmap's width.
                let slot = slot * 9;
                match op {
                    0 => {
                        prop_assert_eq!(level.push(slot, i as u32), model[slot].len() as u32);
                        model[slot].push(i as u32);
                    }
                    1 if !model[slot].is_empty() => {
                        let pos = r as usize % model[slot].len();
                        let (moved, emptied) = level.remove(slot, pos as u32);
                        model[slot].swap_remove(pos);
                        prop_assert_eq!(moved, model[slot].get(pos).copied());
                        prop_assert_eq!(emptied, model[slot].is_empty());
                    }
                    2 => {
                        let taken = level.take(slot);
                        prop_assert_eq!(&taken, &model[slot]);
                        model[slot].clear();
                        level.give_back(slot, taken);
                    }
                    _ => {}
                }
                for (s, keys) in model.iter().enumerate() {
                    prop_assert_eq!(level.slot(s), &keys[..]);
                    prop_assert_eq!(level.occupied() >> s & 1 == 1, !keys.is_empty());
                }
                let first = model.iter().position(|k| !k.is_empty()).unwrap_or(SLOTS);
                prop_assert_eq!(level.first_occupied(), first);
            }
        }
    }
}
