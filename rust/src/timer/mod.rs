//! Hierarchical timing wheel: O(1) schedule / reschedule / cancel of integer keys, and an
//! `advance(now)` whose cost is the number of keys it expires (plus a bounded number of
//! cascades), never the number of keys scheduled.
//!
//! The design is Varghese & Lauck's hierarchical wheel ("Hashed and Hierarchical Timing
//! Wheels", SOSP 1987) in the shape tokio uses (`tokio::runtime::time::wheel`): every level
//! has 64 slots and an occupancy bitmap, a key lives in exactly one slot, and the level of a
//! deadline is read off the highest bit in which it differs from the wheel's current time.
//! A slot is an array of node indices in which each node knows its position (removal is a
//! `swap_remove`, O(1)), rather than tokio's intrusive linked list: walking a slot then reads
//! indices sequentially and prefetches nodes ahead instead of chasing pointers. Kafka's
//! `TimingWheel` / `SystemTimer` is the same idea with per-level "current time" and a delay
//! queue of buckets.
//!
//! Differences from tokio that this coordinator needs:
//! - time is explicit: the wheel never reads a clock; `advance(now)` is the only thing that
//!   moves it, and it refuses to move backwards;
//! - it covers the whole `i64` millisecond range (11 levels instead of 6), so a deadline
//!   days or centuries away needs no special "overflow" handling;
//! - expired keys come out ordered by `(deadline, key)`, exactly once;
//! - `next_deadline()` is exact (not a slot boundary), kept cheap by a per-level count
//!   histogram of the earliest slot (see [`minimum`]);
//! - keys are arbitrary `u64`s, indexed directly when they are dense member handles;
//! - rescheduling a key to a *later* deadline (a heartbeat) leaves it on its current slot,
//!   which is earlier than the new deadline: the key is moved once, when `advance` (or
//!   `next_deadline`) reaches that slot, instead of once per heartbeat. A heartbeat then
//!   writes one node and touches no list neighbours, which at a million members is the
//!   difference between one cache miss and three (the idea of lazy timer cancellation,
//!   applied to moves).
//!
//! The parts, one file each: [`bits`] (the time arithmetic: levels, slots, their starts and
//! widths), [`level`] (a level's slots and occupancy bitmap), [`key_index`] (key -> node),
//! [`count_set`] and [`minimum`] (the exact earliest deadline), `invariants` (the full
//! consistency check and the state dump assertions print); this file is the wheel itself.
//!
//! This module has no PyO3: `crate::bindings::timer` adapts it to Python.

pub mod bits;
mod count_set;
mod invariants;
mod key_index;
mod level;
mod minimum;
#[cfg(test)]
mod tests;

pub use bits::{
    decode_time, encode_time, level_for, slot_for, slot_start, slot_width, LEVELS, SLOTS,
    SLOT_BITS, TICK_MS,
};

use crate::prefetch::prefetch;
use count_set::CountSet;
use key_index::KeyIndex;
use level::Level;
use minimum::{MinCache, Tracked, HIST_MAX_LEVEL};

/// "No node" / "no list" in the key index, the free list and the tracked slots.
const NIL: u32 = u32::MAX;
/// Marks a node on the free list (in `list`), so invariant checks can tell.
const FREE: u32 = u32::MAX - 1;
/// Lists `0 .. WHEEL_LISTS` are the wheel's slots: list id = `level * SLOTS + slot`.
const WHEEL_LISTS: usize = LEVELS * SLOTS;
/// One extra list for keys whose deadline is already due when scheduled.
const OVERDUE: u32 = WHEEL_LISTS as u32;
/// Number of lists: the wheel's slots plus the overdue list.
const LISTS: usize = WHEEL_LISTS + 1;
/// How many keys ahead walks over a slot (and batch schedules) prefetch nodes.
const NODE_AHEAD: usize = 8;

/// The id of slot `slot` of `level` (what a node records as its list).
#[inline]
const fn list_id(level: usize, slot: usize) -> u32 {
    (level * SLOTS + slot) as u32
}

/// Inverse of [`list_id`] for a wheel list (not [`OVERDUE`]).
#[inline]
const fn level_and_slot(list: u32) -> (usize, usize) {
    (list as usize / SLOTS, list as usize % SLOTS)
}

/// One scheduled key (or a free node). 24 bytes.
#[derive(Clone, Copy)]
struct Node {
    key: u64,
    /// Encoded deadline ([`encode_time`]).
    when: u64,
    /// The list the node is on (FREE when free). Not derivable from `when`, because a key
    /// whose deadline moved later may stay on an earlier slot ("lazy" key, see
    /// [`TimerWheel::schedule`]).
    list: u32,
    /// Index of the node in its list's array (the next free node when free).
    pos: u32,
}

/// Deadlines for [`TimerWheel::schedule_many`]: one for all keys, or one per key.
#[derive(Clone, Copy, Debug)]
pub enum Deadlines<'a> {
    All(i64),
    Each(&'a [i64]),
}

impl Deadlines<'_> {
    #[inline]
    pub fn get(&self, i: usize) -> i64 {
        match self {
            Deadlines::All(d) => *d,
            Deadlines::Each(ds) => ds[i],
        }
    }
}

/// A key that `advance` expired, with its deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Fired {
    pub deadline_ms: i64,
    pub key: u64,
}

/// `advance` was asked to move time backwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeWentBackwards {
    pub now_ms: i64,
    pub current_ms: i64,
}

impl std::fmt::Display for TimeWentBackwards {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "time went backwards: now_ms={} is before the current time {}",
            self.now_ms, self.current_ms
        )
    }
}

impl std::error::Error for TimeWentBackwards {}

/// A hierarchical timing wheel over `u64` keys with `i64` millisecond deadlines.
///
/// Invariants (checked by [`TimerWheel::check_invariants`] in tests):
/// - a key with deadline `<= now` scheduled since the last `advance` is on the overdue list;
/// - every other key is on a slot of some level `l` whose start is `<= ` its deadline. The
///   key is *settled* if its deadline lies inside the slot (`slot_for(when, l)` at
///   `l = level_for(now, when)`), or *lazy* if it lies later (the deadline was moved later
///   and the key was left where it was). Keys on tracked slots are all settled;
/// - every occupied slot of level `l` is after the current time's slot at `l`, and bit `s`
///   of level `l`'s bitmap is set iff slot `s` is non-empty (bit `l` of `level_mask` iff
///   the level has an occupied slot);
/// - hence slot starts increase with the level, and the first occupied slot of the lowest
///   occupied level is the earliest slot: nothing is due before its start.
pub struct TimerWheel {
    nodes: Vec<Node>,
    free_head: u32,
    /// The levels, lowest first; level `l` has 64 slots of `64^l` ticks (milliseconds),
    /// and its slots span one rotation of `64^(l+1)` ticks:
    ///
    /// | level | slot width     | range (one rotation) |
    /// |------:|----------------|----------------------|
    /// | 0     | 1 ms           | 64 ms                |
    /// | 1     | 64 ms          | ~4.1 s               |
    /// | 2     | ~4.1 s         | ~4.4 min             |
    /// | 3     | ~4.4 min       | ~4.7 h               |
    /// | 4     | ~4.7 h         | ~12.4 days           |
    /// | 5     | ~12.4 days     | ~2.2 years           |
    /// | 6     | ~2.2 years     | ~139 years           |
    /// | 7     | ~139 years     | ~8,900 years         |
    /// | 8     | ~8,900 years   | ~571,000 years       |
    /// | 9     | ~571,000 years | ~36.6M years         |
    /// | 10    | ~36.6M years   | the rest of the `i64` axis (top 4 bits: 16 usable slots, ~584M years in all) |
    ///
    /// A deadline lives on the level of the highest 6-bit digit in which it differs from
    /// the current time ([`level_for`]), so levels 0-3 hold every session and rebalance
    /// timeout a coordinator sees, and the upper levels exist so that no deadline needs
    /// overflow handling.
    levels: Box<[Level; LEVELS]>,
    /// Keys scheduled at or before the current time: they fire first on the next advance.
    overdue: Vec<u32>,
    index: KeyIndex,
    /// Bit `l` set iff level `l` has an occupied slot: the lowest occupied level is one
    /// `trailing_zeros`.
    level_mask: u16,
    /// The wheel's current time (encoded): the last `now` given to `advance`.
    elapsed: u64,
    len: usize,
    /// Per level, the tracked slot (see [`Tracked`]).
    tracked: [Tracked; LEVELS],
    overdue_min: MinCache,
}

impl Default for TimerWheel {
    fn default() -> Self {
        Self::new(0)
    }
}

impl TimerWheel {
    /// An empty wheel whose current time is `now_ms`.
    pub fn new(now_ms: i64) -> Self {
        TimerWheel {
            nodes: Vec::new(),
            free_head: NIL,
            levels: Box::new(std::array::from_fn(|_| Level::new())),
            overdue: Vec::new(),
            index: KeyIndex::default(),
            level_mask: 0,
            elapsed: encode_time(now_ms),
            len: 0,
            tracked: [const { Tracked::NONE }; LEVELS],
            overdue_min: MinCache::INVALID,
        }
    }

    /// The current time: the last `now_ms` passed to [`advance`](Self::advance), or the
    /// constructor's.
    #[inline]
    pub fn now_ms(&self) -> i64 {
        decode_time(self.elapsed)
    }

    /// Number of scheduled keys.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn contains(&self, key: u64) -> bool {
        self.index.get(key).is_some()
    }

    /// The deadline `key` is scheduled for, if any.
    #[inline]
    pub fn deadline(&self, key: u64) -> Option<i64> {
        self.index
            .get(key)
            .map(|n| decode_time(self.nodes[n as usize].when))
    }

    /// Reserves room for `additional` more keys.
    pub fn reserve(&mut self, additional: usize) {
        self.nodes.reserve(additional);
    }

    /// Approximate heap bytes held (nodes, index, histograms).
    pub fn heap_bytes(&self) -> usize {
        let hists: usize = self
            .tracked
            .iter()
            .filter_map(|t| t.hist.as_ref())
            .map(CountSet::bytes)
            .sum();
        let lists: usize =
            self.levels.iter().map(Level::bytes).sum::<usize>() + self.overdue.capacity() * 4;
        self.nodes.capacity() * std::mem::size_of::<Node>() + lists + self.index.bytes() + hists
    }

    /// The list a key with encoded deadline `when` is settled on right now.
    #[inline]
    fn list_of(&self, when: u64) -> u32 {
        if when <= self.elapsed {
            OVERDUE
        } else {
            let level = level_for(self.elapsed, when);
            list_id(level, slot_for(when, level))
        }
    }

    /// The node indices on `list`.
    #[inline]
    fn list(&self, list: u32) -> &[u32] {
        if list == OVERDUE {
            &self.overdue
        } else {
            let (level, slot) = level_and_slot(list);
            self.levels[level].slot(slot)
        }
    }

    #[inline]
    fn is_tracked(&self, list: u32) -> bool {
        list != OVERDUE && self.tracked[list as usize / SLOTS].list == list
    }

    /// Schedules `key` for `deadline_ms`, replacing any earlier deadline of the key. A
    /// deadline at or before the current time fires on the next `advance`. O(1).
    ///
    /// Moving a deadline later (a heartbeat) usually touches only the key's own node: the
    /// key stays on its slot, which is earlier than the new deadline, and is moved once when
    /// `advance` (or `next_deadline`) reaches that slot, instead of on every heartbeat.
    #[inline]
    pub fn schedule(&mut self, key: u64, deadline_ms: i64) {
        let when = encode_time(deadline_ms);
        let Some(n) = self.index.get(key) else {
            let n = self.alloc(key, when);
            self.index.insert(key, n, self.len);
            self.len += 1;
            let list = self.list_of(when);
            self.link(list, n);
            return;
        };
        let Node {
            when: old, list, ..
        } = self.nodes[n as usize];
        if when == old {
            return;
        }
        // Staying put is correct when the slot still starts no later than the deadline:
        // true if the deadline moved later (the slot started no later than the old one) or
        // stays inside the slot. Not on the overdue list (everything there fires next) and
        // not on a tracked slot (its exact minimum must stay exact).
        if list != OVERDUE && !self.is_tracked(list) && (when > old || self.list_of(when) == list) {
            self.nodes[n as usize].when = when;
            return;
        }
        let new_list = self.list_of(when);
        if new_list == list {
            self.note_remove(list, old);
            self.nodes[n as usize].when = when;
            self.note_add(list, when);
        } else {
            self.unlink(n);
            self.nodes[n as usize].when = when;
            self.link(new_list, n);
        }
    }

    /// Schedules `keys[i]` at `deadlines.get(i)` for every `i`, in order: the same as
    /// calling [`schedule`](Self::schedule) in a loop (a repeated key keeps its last
    /// deadline), but faster for keys in random order.
    ///
    /// Why: at a million keys a reschedule is memory-bound, and the key's index entry and
    /// its node are dependent cache misses. Looping over `schedule` pays them one after
    /// the other; here the loop prefetches them a few keys ahead, in two stages (the index
    /// entry, then the node it names), so the misses of consecutive keys overlap.
    pub fn schedule_many(&mut self, keys: &[u64], deadlines: Deadlines<'_>) {
        if let Deadlines::Each(ds) = deadlines {
            assert_eq!(ds.len(), keys.len(), "one deadline per key");
        }
        // Distances (in keys) of the two stages: far enough apart for a miss to resolve,
        // close enough that the lines are still cached when used.
        const INDEX_AHEAD: usize = 16;
        for i in 0..keys.len() {
            if let Some(&k) = keys.get(i + INDEX_AHEAD) {
                self.prefetch_index(k);
            }
            if let Some(&k) = keys.get(i + NODE_AHEAD) {
                self.prefetch_node(k);
            }
            self.schedule(keys[i], deadlines.get(i));
        }
    }

    /// Prefetch hint for a batch caller that will touch `key` soon: its index entry.
    #[inline]
    pub(crate) fn prefetch_index(&self, key: u64) {
        self.index.prefetch(key);
    }

    /// Prefetch hint, second stage: the node of `key` (reads the index entry).
    #[inline]
    pub(crate) fn prefetch_node(&self, key: u64) {
        if let Some(n) = self.index.get_direct(key) {
            prefetch(&self.nodes[n as usize]);
        }
    }

    /// Unschedules `key`; returns whether it was scheduled. O(1).
    #[inline]
    pub fn cancel(&mut self, key: u64) -> bool {
        match self.index.remove(key) {
            Some(n) => {
                self.unlink(n);
                self.release(n);
                self.len -= 1;
                true
            }
            None => false,
        }
    }

    /// Moves time to `now_ms` and appends every key with deadline `<= now_ms` to `out`,
    /// ordered by `(deadline, key)`, removing them from the wheel.
    ///
    /// Cost: O(1) when nothing is due (a bitmap lookup), otherwise O(expired + moved +
    /// levels crossed), plus sorting keys that share a deadline. A key moves at most once
    /// per level between two reschedules, and a key rescheduled before its slot is reached
    /// (a live member heartbeating) moves once per slot reached, not once per heartbeat.
    pub fn advance(&mut self, now_ms: i64, out: &mut Vec<Fired>) -> Result<(), TimeWentBackwards> {
        let now = encode_time(now_ms);
        if now < self.elapsed {
            return Err(TimeWentBackwards {
                now_ms,
                current_ms: self.now_ms(),
            });
        }
        // Overdue keys are all earlier than anything in the wheel (<= old now < wheel keys).
        if !self.overdue.is_empty() {
            let first = out.len();
            let due = self.detach(OVERDUE);
            for (i, &n) in due.iter().enumerate() {
                if let Some(&ahead) = due.get(i + NODE_AHEAD) {
                    prefetch(&self.nodes[ahead as usize]);
                }
                let node = self.nodes[n as usize];
                out.push(Fired {
                    deadline_ms: decode_time(node.when),
                    key: node.key,
                });
                self.index.remove(node.key);
                self.release(n);
                self.len -= 1;
            }
            self.recycle(OVERDUE, due);
            out[first..].sort_unstable();
        }
        while self.level_mask != 0 {
            let level = self.level_mask.trailing_zeros() as usize;
            let slot = self.levels[level].first_occupied();
            debug_assert!(
                slot > slot_for(self.elapsed, level),
                "slot {slot} of level {level} is not after the current time: {}",
                self.debug_state()
            );
            let start = slot_start(self.elapsed, level, slot);
            if start > now {
                break;
            }
            // Nothing is due before `start` (this is the earliest slot), so time may jump
            // to it; the slot's keys are then due exactly at `start`, or belong later.
            self.elapsed = start;
            let list = list_id(level, slot);
            let first = out.len();
            let keys = self.detach(list);
            for (i, &n) in keys.iter().enumerate() {
                if let Some(&ahead) = keys.get(i + NODE_AHEAD) {
                    prefetch(&self.nodes[ahead as usize]);
                }
                let node = self.nodes[n as usize];
                debug_assert!(
                    node.when >= start,
                    "key {} (deadline {}) sat on a slot starting after it: {}",
                    node.key,
                    decode_time(node.when),
                    self.debug_state()
                );
                if node.when == start {
                    out.push(Fired {
                        deadline_ms: decode_time(start),
                        key: node.key,
                    });
                    self.index.remove(node.key);
                    self.release(n);
                    self.len -= 1;
                } else {
                    let dest = self.list_of(node.when);
                    self.link(dest, n);
                }
            }
            self.recycle(list, keys);
            // All fired here share the deadline `start`.
            out[first..].sort_unstable_by_key(|f| f.key);
        }
        self.elapsed = now;
        Ok(())
    }

    /// The earliest scheduled deadline, exactly.
    ///
    /// O(1) when the earliest slot is already tracked. Otherwise the first call settles
    /// that slot (moves its lazy keys to where their deadlines are, work their heartbeats
    /// deferred) and builds its exact-minimum structure in one pass; from then on schedules
    /// and cancels keep it exact at O(1) each, so a coordinator may call this after every
    /// event.
    pub fn next_deadline(&mut self) -> Option<i64> {
        if !self.overdue.is_empty() {
            return Some(decode_time(self.overdue_minimum()));
        }
        loop {
            if self.level_mask == 0 {
                return None;
            }
            let level = self.level_mask.trailing_zeros() as usize;
            let slot = self.levels[level].first_occupied();
            let list = list_id(level, slot);
            if self.tracked[level].list != list && !self.track(level, list) {
                continue; // every key on it was lazy and moved on: look again
            }
            return Some(decode_time(self.tracked[level].minimum(level)));
        }
    }

    /// Settles `list` (the earliest slot, on `level`) and makes it the level's tracked slot.
    /// Returns false if no key was left on it.
    fn track(&mut self, level: usize, list: u32) -> bool {
        self.untrack(level);
        let slot = list as usize % SLOTS;
        let base = slot_start(self.elapsed, level, slot);
        let mut min = u64::MAX;
        let mut count = 0u32;
        let mut hist = if (1..=HIST_MAX_LEVEL).contains(&level) {
            Some(
                self.tracked[level]
                    .hist
                    .take()
                    .unwrap_or_else(|| CountSet::new(level)),
            )
        } else {
            None
        };
        // Moving a lazy key out swaps the list's last key into its position, so the index
        // only advances past keys that stay.
        let mut i = 0;
        while let Some(&n) = self.list(list).get(i) {
            if let Some(&ahead) = self.list(list).get(i + NODE_AHEAD) {
                prefetch(&self.nodes[ahead as usize]);
            }
            let when = self.nodes[n as usize].when;
            let dest = self.list_of(when);
            if dest != list {
                // A lazy key: move it where its deadline is (a later slot).
                self.unlink(n);
                self.link(dest, n);
                continue;
            }
            if let Some(h) = hist.as_mut() {
                h.add((when - base) as usize);
            } else if when < min {
                min = when;
                count = 1;
            } else if when == min {
                count += 1;
            }
            i += 1;
        }
        let non_empty = !self.list(list).is_empty();
        let t = &mut self.tracked[level];
        t.hist = hist;
        if non_empty {
            t.list = list;
            t.base = base;
            t.min = min;
            t.count = count;
        }
        non_empty
    }

    #[inline]
    fn untrack(&mut self, level: usize) {
        self.tracked[level].clear();
    }

    /// Exact minimum of the overdue list via its cache (one scan when it is invalid).
    fn overdue_minimum(&mut self) -> u64 {
        if !self.overdue_min.valid {
            let nodes = &self.nodes;
            self.overdue_min = MinCache::scan(self.overdue.iter().map(|&n| nodes[n as usize].when));
            debug_assert!(
                self.overdue_min.valid,
                "minimum of an empty overdue list: {}",
                self.debug_state()
            );
        }
        self.overdue_min.min
    }

    // --- lists ---------------------------------------------------------------------------

    #[inline]
    fn alloc(&mut self, key: u64, when: u64) -> u32 {
        let node = Node {
            key,
            when,
            list: NIL,
            pos: 0,
        };
        if self.free_head != NIL {
            let n = self.free_head;
            self.free_head = self.nodes[n as usize].pos;
            self.nodes[n as usize] = node;
            n
        } else {
            let n = self.nodes.len();
            assert!(n < FREE as usize, "timer wheel is limited to 2^32 - 2 keys");
            self.nodes.push(node);
            n as u32
        }
    }

    #[inline]
    fn release(&mut self, n: u32) {
        let node = &mut self.nodes[n as usize];
        node.list = FREE;
        node.pos = self.free_head;
        self.free_head = n;
    }

    #[inline]
    fn link(&mut self, list: u32, n: u32) {
        let pos = if list == OVERDUE {
            level::push(&mut self.overdue, n)
        } else {
            let (level, slot) = level_and_slot(list);
            debug_assert!(
                slot > slot_for(self.elapsed, level),
                "linking node {n} to slot {slot} of level {level}, not after the current time: {}",
                self.debug_state()
            );
            self.level_mask |= 1 << level;
            self.levels[level].push(slot, n)
        };
        let node = &mut self.nodes[n as usize];
        node.list = list;
        node.pos = pos;
        let when = node.when;
        self.note_add(list, when);
    }

    #[inline]
    fn unlink(&mut self, n: u32) {
        let Node {
            when, list, pos, ..
        } = self.nodes[n as usize];
        let (moved, emptied) = if list == OVERDUE {
            let moved = level::swap_remove(&mut self.overdue, pos);
            (moved, self.overdue.is_empty())
        } else {
            let (level, slot) = level_and_slot(list);
            self.levels[level].remove(slot, pos)
        };
        if let Some(moved) = moved {
            self.nodes[moved as usize].pos = pos;
        }
        if emptied {
            self.on_list_emptied(list);
        } else {
            self.note_remove(list, when);
        }
    }

    /// Takes a whole list (marking the slot empty) to be walked by the caller, who hands
    /// the array back with [`recycle`](Self::recycle) once its keys are fired or moved.
    fn detach(&mut self, list: u32) -> Vec<u32> {
        let keys = if list == OVERDUE {
            std::mem::take(&mut self.overdue)
        } else {
            let (level, slot) = level_and_slot(list);
            self.levels[level].take(slot)
        };
        self.on_list_emptied(list);
        keys
    }

    /// Returns a detached array for reuse by `list` (if still empty and not too big).
    fn recycle(&mut self, list: u32, keys: Vec<u32>) {
        if list == OVERDUE {
            level::recycle(&mut self.overdue, keys);
        } else {
            let (level, slot) = level_and_slot(list);
            self.levels[level].give_back(slot, keys);
        }
    }

    /// Bookkeeping once `list` has become empty (its level's bitmap bit is already clear).
    #[inline]
    fn on_list_emptied(&mut self, list: u32) {
        if list == OVERDUE {
            self.overdue_min = MinCache::INVALID;
            return;
        }
        let level = list as usize / SLOTS;
        if self.levels[level].is_empty() {
            self.level_mask &= !(1 << level);
        }
        if self.tracked[level].list == list {
            self.untrack(level);
        }
    }

    /// Keeps the exact minimum of `list` (if it is tracked) in step with a settled key
    /// added to it.
    #[inline]
    fn note_add(&mut self, list: u32, when: u64) {
        if list == OVERDUE {
            self.overdue_min.add(when);
            return;
        }
        let level = list as usize / SLOTS;
        let t = &mut self.tracked[level];
        if t.list == list {
            t.add(level, when);
        }
    }

    /// Keeps the exact minimum of `list` (if it is tracked) in step with a key removed
    /// from it (the list is not empty afterwards).
    #[inline]
    fn note_remove(&mut self, list: u32, when: u64) {
        if list == OVERDUE {
            self.overdue_min.remove(when);
            return;
        }
        let level = list as usize / SLOTS;
        let t = &mut self.tracked[level];
        if t.list == list && !t.remove(level, when) {
            // The minimum left; without a histogram the next one is unknown. Stop
            // tracking; the next `next_deadline` settles and scans the slot again.
            self.untrack(level);
        }
    }
}
