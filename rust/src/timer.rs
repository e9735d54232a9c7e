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
//! indices sequentially and prefetches nodes ahead instead of chasing pointers. Kafka's `TimingWheel` /
//! `SystemTimer` is the same idea with per-level "current time" and a delay queue of buckets.
//!
//! Differences from tokio that this coordinator needs:
//! - time is explicit: the wheel never reads a clock; `advance(now)` is the only thing that
//!   moves it, and it refuses to move backwards;
//! - it covers the whole `i64` millisecond range (11 levels instead of 6), so a deadline
//!   days or centuries away needs no special "overflow" handling;
//! - expired keys come out ordered by `(deadline, key)`, exactly once;
//! - `next_deadline()` is exact (not a slot boundary), kept cheap by a per-level count
//!   histogram of the earliest slot (see [`CountSet`]);
//! - keys are arbitrary `u64`s, indexed directly when they are dense member handles;
//! - rescheduling a key to a *later* deadline (a heartbeat) leaves it on its current slot,
//!   which is earlier than the new deadline: the key is moved once, when `advance` (or
//!   `next_deadline`) reaches that slot, instead of once per heartbeat. A heartbeat then
//!   writes one node and touches no list neighbours, which at a million members is the
//!   difference between one cache miss and three (the idea of lazy timer cancellation,
//!   applied to moves).
//!
//! This module has no PyO3: `crate::bindings::timer` adapts it to Python.

use std::collections::HashMap;

use rustc_hash::FxHashMap;

/// Bits of the deadline each level resolves. 64 slots per level make a level's occupancy
/// one `u64` bitmap, so "next occupied slot" is a single `trailing_zeros`.
pub const SLOT_BITS: u32 = 6;

/// Slots per level (`2^SLOT_BITS`). Slot `s` of level `l` holds deadlines whose bits
/// `[6l, 6l+6)` equal `s` (within the current rotation of that level, see [`level_for`]).
pub const SLOTS: usize = 1 << SLOT_BITS;

/// Number of levels: `ceil(64 / 6)`, so the wheel spans the full 64-bit time axis.
/// Level `l` has a slot width of `64^l` ticks: level 0 = 1 ms, level 1 = 64 ms,
/// level 2 = 4.096 s, level 3 = 262 s, level 4 = 4.66 h, level 5 = 12.4 days, ...,
/// level 10 = the top 4 bits (only 16 of its slots can ever be used).
pub const LEVELS: usize = 11;

/// The tick: one millisecond. Deadlines are integer milliseconds, so the keys a level-0 slot
/// fires all share one deadline, which is what makes `(deadline, key)` ordering cheap.
pub const TICK_MS: i64 = 1;

/// Deepest level whose earliest slot gets a count histogram for an exact `next_deadline`
/// (level 3 = 262,144 one-millisecond counters, 1 MiB). Above it (slots 4.66 hours wide or
/// more) the slot's minimum and its multiplicity are kept instead; when the last key at the
/// minimum leaves, the next `next_deadline` rescans that slot once.
const HIST_MAX_LEVEL: usize = 3;

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
/// A processed slot's array is kept for reuse only up to this capacity, so slots that once
/// held a burst of keys do not pin that memory forever.
const KEEP_CAPACITY: usize = 4096;

// ---------------------------------------------------------------------------------------
// Pure bit arithmetic. Everything the wheel knows about time is in these functions, and
// the tests at the bottom check them exhaustively on small domains against naive versions.
// ---------------------------------------------------------------------------------------

/// Maps signed milliseconds to the wheel's unsigned tick axis, preserving order
/// (flipping the sign bit: `i64::MIN` -> 0, `0` -> 2^63, `i64::MAX` -> `u64::MAX`).
#[inline]
pub const fn encode_time(ms: i64) -> u64 {
    (ms as u64) ^ (1 << 63)
}

/// Inverse of [`encode_time`].
#[inline]
pub const fn decode_time(t: u64) -> i64 {
    (t ^ (1 << 63)) as i64
}

/// The level at which a deadline `when` lives while the wheel's time is `elapsed`
/// (requires `when > elapsed`): the level whose 6-bit digit holds the highest bit in which
/// the two differ. All higher digits are equal, so the key is in the current rotation of
/// that level, and its digit there is strictly greater than `elapsed`'s. As `elapsed` grows
/// towards `when` that stays true until `elapsed` reaches the slot's start, which is exactly
/// when `advance` cascades the slot; so a key's level never has to be stored.
#[inline]
pub const fn level_for(elapsed: u64, when: u64) -> usize {
    // `| (SLOTS - 1)` makes differences confined to the lowest digit land on level 0 and
    // keeps the argument of leading_zeros non-zero.
    let masked = (elapsed ^ when) | (SLOTS as u64 - 1);
    let significant = 63 - masked.leading_zeros();
    (significant / SLOT_BITS) as usize
}

/// The slot index of `when` at `level`: its digit `[6l, 6l+6)`.
#[inline]
pub const fn slot_for(when: u64, level: usize) -> usize {
    ((when >> (level as u32 * SLOT_BITS)) & (SLOTS as u64 - 1)) as usize
}

/// First tick of slot `slot` of `level` in the rotation that contains `elapsed`.
#[inline]
pub const fn slot_start(elapsed: u64, level: usize, slot: usize) -> u64 {
    let shift = level as u32 * SLOT_BITS;
    let rotation_bits = shift + SLOT_BITS;
    // The top level's rotation is the whole axis (66 bits > 64), hence no base bits.
    let base = if rotation_bits >= 64 {
        0
    } else {
        elapsed & !((1u64 << rotation_bits) - 1)
    };
    base | ((slot as u64) << shift)
}

/// Width of a slot of `level` in ticks (`64^level`), saturating for the top level.
#[inline]
pub const fn slot_width(level: usize) -> u64 {
    let shift = level as u32 * SLOT_BITS;
    if shift >= 64 {
        u64::MAX
    } else {
        1u64 << shift
    }
}

#[inline]
const fn list_id(level: usize, slot: usize) -> u32 {
    (level * SLOTS + slot) as u32
}

// ---------------------------------------------------------------------------------------
// Key index: key -> node.
// ---------------------------------------------------------------------------------------

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
struct KeyIndex {
    direct: Vec<u32>,
    sparse: FxHashMap<u64, u32>,
}

impl KeyIndex {
    /// Keys below this always go to the vector (16 KiB of index at most).
    const DIRECT_FLOOR: u64 = 1 << 12;

    #[inline]
    fn get(&self, key: u64) -> Option<u32> {
        if key < self.direct.len() as u64 {
            let n = self.direct[key as usize];
            (n != NIL).then_some(n)
        } else {
            self.sparse.get(&key).copied()
        }
    }

    /// Inserts a key that is not present. `live` is the number of keys already indexed.
    #[inline]
    fn insert(&mut self, key: u64, node: u32, live: usize) {
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
    fn remove(&mut self, key: u64) -> Option<u32> {
        if key < self.direct.len() as u64 {
            let slot = &mut self.direct[key as usize];
            let n = *slot;
            *slot = NIL;
            (n != NIL).then_some(n)
        } else {
            self.sparse.remove(&key)
        }
    }

    fn bytes(&self) -> usize {
        self.direct.capacity() * 4 + self.sparse.capacity() * 16
    }
}

// ---------------------------------------------------------------------------------------
// Exact minimum of the earliest slot.
// ---------------------------------------------------------------------------------------

/// A multiset of offsets in `[0, 64^depth)` with O(depth) add / remove / min: a count per
/// offset plus a hierarchy of occupancy bitmaps (64-ary, like the wheel itself). It mirrors
/// the deadlines of one slot of level `depth` at one-tick resolution, which is what makes
/// `next_deadline` exact without rescanning a slot that may hold most of the members.
struct CountSet {
    counts: Vec<u32>,
    /// Sum of all counts.
    total: usize,
    /// `bits[0]` has one bit per offset; `bits[i + 1]` one bit per non-zero word of
    /// `bits[i]`; the last level is a single word.
    bits: Vec<Vec<u64>>,
}

impl CountSet {
    fn new(depth: usize) -> Self {
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
    fn add(&mut self, offset: usize) {
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
    fn remove(&mut self, offset: usize) {
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
    fn min(&self) -> Option<usize> {
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
    fn clear(&mut self) {
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

    fn total(&self) -> usize {
        self.total
    }

    fn bytes(&self) -> usize {
        self.counts.capacity() * 4 + self.bits.iter().map(|b| b.capacity() * 8).sum::<usize>()
    }

    fn count(&self, offset: usize) -> u32 {
        self.counts[offset]
    }
}

/// What `next_deadline` knows about the earliest slot of one level (the "tracked" slot):
/// the slot is settled (every key on it has its deadline inside the slot) and its exact
/// minimum is maintained: trivially on level 0 (a level-0 slot is one millisecond), by a
/// [`CountSet`] histogram on levels 1..=[`HIST_MAX_LEVEL`], and by a minimum with its
/// multiplicity on higher levels (dropped when the last key at the minimum leaves; those
/// slots are hours away, so a rescan then is cheap in practice). Keys on a tracked slot are
/// moved eagerly, so the tracking stays exact.
struct Tracked {
    /// The tracked list, or NIL.
    list: u32,
    /// First tick of the slot.
    base: u64,
    /// Levels above HIST_MAX_LEVEL: the minimum deadline on the slot and how many keys have it.
    min: u64,
    count: u32,
    /// Levels 1..=HIST_MAX_LEVEL: allocated on first use and reused.
    hist: Option<CountSet>,
}

impl Tracked {
    const NONE: Tracked = Tracked {
        list: NIL,
        base: 0,
        min: 0,
        count: 0,
        hist: None,
    };
}

/// Exact minimum and its multiplicity of the overdue list; invalid (`valid == false`) once
/// the last key with the minimum leaves, and recomputed by one scan when next needed.
#[derive(Clone, Copy)]
struct MinCache {
    valid: bool,
    min: u64,
    count: u32,
}

impl MinCache {
    const INVALID: MinCache = MinCache {
        valid: false,
        min: 0,
        count: 0,
    };
}

// ---------------------------------------------------------------------------------------
// The wheel.
// ---------------------------------------------------------------------------------------

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

/// Asks the CPU to start loading the cache line of `p`. A hint only: it never faults and
/// never changes behaviour.
#[inline(always)]
pub(crate) fn prefetch<T: ?Sized>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` only hints the cache (SSE is baseline on x86_64), and `p` is
    // a valid reference anyway.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((p as *const T).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
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
///   of `occupied[l]` is set iff slot `s` is non-empty (bit `l` of `level_mask` iff
///   `occupied[l] != 0`);
/// - hence slot starts increase with the level, and the first occupied slot of the lowest
///   occupied level is the earliest slot: nothing is due before its start.
pub struct TimerWheel {
    nodes: Vec<Node>,
    free_head: u32,
    /// Each slot (and the overdue list) is an array of node indices, unordered; a node knows
    /// its position, so removal is a `swap_remove`. Arrays rather than intrusive linked
    /// lists: walking a slot (`advance`, settling) reads indices sequentially and can
    /// prefetch the nodes ahead, where a linked list is a chain of dependent cache misses.
    lists: Vec<Vec<u32>>,
    index: KeyIndex,
    occupied: [u64; LEVELS],
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
            lists: (0..LISTS).map(|_| Vec::new()).collect(),
            index: KeyIndex::default(),
            occupied: [0; LEVELS],
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
        let lists: usize = self.lists.iter().map(|l| l.capacity() * 4).sum();
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
        if key < self.index.direct.len() as u64 {
            prefetch(&self.index.direct[key as usize]);
        }
    }

    /// Prefetch hint, second stage: the node of `key` (reads the index entry).
    #[inline]
    pub(crate) fn prefetch_node(&self, key: u64) {
        if key < self.index.direct.len() as u64 {
            let n = self.index.direct[key as usize];
            if n != NIL {
                prefetch(&self.nodes[n as usize]);
            }
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
        if !self.lists[OVERDUE as usize].is_empty() {
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
            let slot = self.occupied[level].trailing_zeros() as usize;
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
        if !self.lists[OVERDUE as usize].is_empty() {
            return Some(decode_time(self.overdue_minimum()));
        }
        loop {
            if self.level_mask == 0 {
                return None;
            }
            let level = self.level_mask.trailing_zeros() as usize;
            let slot = self.occupied[level].trailing_zeros() as usize;
            let list = list_id(level, slot);
            if self.tracked[level].list != list && !self.track(level, list) {
                continue; // every key on it was lazy and moved on: look again
            }
            let t = &self.tracked[level];
            let when = match level {
                0 => t.base,
                1..=HIST_MAX_LEVEL => {
                    let offset = t.hist.as_ref().and_then(CountSet::min);
                    t.base + offset.expect("tracked slot is non-empty") as u64
                }
                _ => t.min,
            };
            return Some(decode_time(when));
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
        while let Some(&n) = self.lists[list as usize].get(i) {
            if let Some(&ahead) = self.lists[list as usize].get(i + NODE_AHEAD) {
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
        let non_empty = !self.lists[list as usize].is_empty();
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

    fn untrack(&mut self, level: usize) {
        let t = &mut self.tracked[level];
        if t.list != NIL {
            if let Some(h) = t.hist.as_mut() {
                h.clear();
            }
            t.list = NIL;
        }
    }

    /// Exact minimum of the overdue list via its cache (one scan when it is invalid).
    fn overdue_minimum(&mut self) -> u64 {
        if !self.overdue_min.valid {
            let mut min = u64::MAX;
            let mut count = 0;
            for &n in &self.lists[OVERDUE as usize] {
                let when = self.nodes[n as usize].when;
                if when < min {
                    min = when;
                    count = 1;
                } else if when == min {
                    count += 1;
                }
            }
            debug_assert!(count > 0, "minimum of an empty overdue list");
            self.overdue_min = MinCache {
                valid: true,
                min,
                count,
            };
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
        let keys = &mut self.lists[list as usize];
        if keys.is_empty() && list != OVERDUE {
            let (level, slot) = (list as usize / SLOTS, list as usize % SLOTS);
            self.occupied[level] |= 1 << slot;
            self.level_mask |= 1 << level;
        }
        let node = &mut self.nodes[n as usize];
        node.list = list;
        node.pos = keys.len() as u32;
        keys.push(n);
        let when = node.when;
        self.note_add(list, when);
    }

    #[inline]
    fn unlink(&mut self, n: u32) {
        let Node {
            when, list, pos, ..
        } = self.nodes[n as usize];
        let keys = &mut self.lists[list as usize];
        keys.swap_remove(pos as usize);
        if let Some(&moved) = keys.get(pos as usize) {
            self.nodes[moved as usize].pos = pos;
        }
        if keys.is_empty() {
            if keys.capacity() > KEEP_CAPACITY {
                *keys = Vec::new();
            }
            self.on_list_emptied(list);
        } else {
            self.note_remove(list, when);
        }
    }

    /// Takes a whole list (marking the slot empty) to be walked by the caller, who hands
    /// the array back with [`recycle`](Self::recycle) once its keys are fired or moved.
    fn detach(&mut self, list: u32) -> Vec<u32> {
        let keys = std::mem::take(&mut self.lists[list as usize]);
        self.on_list_emptied(list);
        keys
    }

    /// Returns a detached array for reuse by `list` (if still empty and not too big).
    fn recycle(&mut self, list: u32, mut keys: Vec<u32>) {
        let slot = &mut self.lists[list as usize];
        if slot.capacity() == 0 && keys.capacity() <= KEEP_CAPACITY {
            keys.clear();
            *slot = keys;
        }
    }

    #[inline]
    fn on_list_emptied(&mut self, list: u32) {
        if list == OVERDUE {
            self.overdue_min = MinCache::INVALID;
            return;
        }
        let (level, slot) = (list as usize / SLOTS, list as usize % SLOTS);
        self.occupied[level] &= !(1 << slot);
        if self.occupied[level] == 0 {
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
            let c = &mut self.overdue_min;
            if c.valid {
                if when < c.min {
                    c.min = when;
                    c.count = 1;
                } else if when == c.min {
                    c.count += 1;
                }
            }
            return;
        }
        let level = list as usize / SLOTS;
        let t = &mut self.tracked[level];
        if t.list != list {
            return;
        }
        if let Some(h) = t.hist.as_mut() {
            h.add((when - t.base) as usize);
        } else if level > 0 {
            if when < t.min {
                t.min = when;
                t.count = 1;
            } else if when == t.min {
                t.count += 1;
            }
        }
    }

    /// Keeps the exact minimum of `list` (if it is tracked) in step with a key removed
    /// from it (the list is not empty afterwards).
    #[inline]
    fn note_remove(&mut self, list: u32, when: u64) {
        if list == OVERDUE {
            let c = &mut self.overdue_min;
            if c.valid && when == c.min {
                c.count -= 1;
                c.valid = c.count > 0;
            }
            return;
        }
        let level = list as usize / SLOTS;
        let t = &mut self.tracked[level];
        if t.list != list {
            return;
        }
        if let Some(h) = t.hist.as_mut() {
            h.remove((when - t.base) as usize);
        } else if level > 0 && when == t.min {
            t.count -= 1;
            if t.count == 0 {
                // The minimum left; without a histogram the next one is unknown. Stop
                // tracking; the next `next_deadline` settles and scans the slot again.
                self.untrack(level);
            }
        }
    }

    // --- diagnostics -----------------------------------------------------------------------

    /// A one-line summary for assertion messages.
    pub fn debug_state(&self) -> String {
        let levels: Vec<String> = (0..LEVELS)
            .filter(|&l| self.occupied[l] != 0)
            .map(|l| format!("L{l}={:#018x}", self.occupied[l]))
            .collect();
        let tracked: Vec<String> = (0..LEVELS)
            .filter(|&l| self.tracked[l].list != NIL)
            .map(|l| format!("L{l}:{}", self.tracked[l].list as usize % SLOTS))
            .collect();
        format!(
            "TimerWheel {{ now_ms: {}, len: {}, level_mask: {:#06x}, occupied: [{}], tracked: [{}], overdue: {}, nodes: {} }}",
            self.now_ms(),
            self.len,
            self.level_mask,
            levels.join(" "),
            tracked.join(" "),
            !self.lists[OVERDUE as usize].is_empty(),
            self.nodes.len(),
        )
    }

    /// Walks the whole structure and checks every invariant; O(n). For tests.
    pub fn check_invariants(&self) -> Result<(), String> {
        let state = || self.debug_state();
        let mut seen = 0usize;
        let mut level_mask = 0u16;
        let mut on_lists = vec![false; self.nodes.len()];
        for list in 0..LISTS as u32 {
            let keys = &self.lists[list as usize];
            let count = keys.len();
            let mut multiset: HashMap<u64, u32> = HashMap::new();
            let tracked = self.is_tracked(list);
            for (pos, &n) in keys.iter().enumerate() {
                if n as usize >= self.nodes.len()
                    || std::mem::replace(&mut on_lists[n as usize], true)
                {
                    return Err(format!(
                        "list {list}: bad or repeated node {n}; {}",
                        state()
                    ));
                }
                let node = &self.nodes[n as usize];
                let (key, deadline) = (node.key, decode_time(node.when));
                if node.list != list || node.pos as usize != pos {
                    return Err(format!(
                        "list {list}: node {n} at {pos} says list {} pos {}; {}",
                        node.list,
                        node.pos,
                        state()
                    ));
                }
                if list == OVERDUE {
                    if node.when > self.elapsed {
                        return Err(format!(
                            "key {key} (deadline {deadline}) on the overdue list is not due; {}",
                            state()
                        ));
                    }
                } else {
                    let (level, slot) = (list as usize / SLOTS, list as usize % SLOTS);
                    if node.when < slot_start(self.elapsed, level, slot) {
                        return Err(format!(
                            "key {key} (deadline {deadline}) sits on list {list} which starts after it; {}",
                            state()
                        ));
                    }
                    if tracked && self.list_of(node.when) != list {
                        return Err(format!(
                            "key {key} (deadline {deadline}) is lazy on tracked list {list}; {}",
                            state()
                        ));
                    }
                }
                if self.index.get(key) != Some(n) {
                    return Err(format!("key {key} not indexed to node {n}; {}", state()));
                }
                *multiset.entry(node.when).or_default() += 1;
            }
            seen += count;
            let min = multiset.keys().min().copied();
            if list == OVERDUE {
                let c = &self.overdue_min;
                if c.valid && (min != Some(c.min) || multiset.get(&c.min) != Some(&c.count)) {
                    return Err(format!("overdue minimum cache is stale; {}", state()));
                }
                continue;
            }
            let (level, slot) = (list as usize / SLOTS, list as usize % SLOTS);
            let bit = (self.occupied[level] >> slot) & 1 == 1;
            if bit != (count > 0) {
                return Err(format!(
                    "occupancy bit of list {list} is {bit} with {count} keys; {}",
                    state()
                ));
            }
            if count > 0 {
                level_mask |= 1 << level;
                if slot <= slot_for(self.elapsed, level) {
                    return Err(format!(
                        "occupied list {list} is not after the current time; {}",
                        state()
                    ));
                }
            }
            if tracked {
                let t = &self.tracked[level];
                if count == 0 {
                    return Err(format!("tracked list {list} is empty; {}", state()));
                }
                if t.base != slot_start(self.elapsed, level, slot) {
                    return Err(format!("tracked list {list} has a stale base; {}", state()));
                }
                if let Some(h) = t.hist.as_ref() {
                    for (&when, &c) in &multiset {
                        if h.count((when - t.base) as usize) != c {
                            return Err(format!(
                                "histogram of list {list} is wrong at {}; {}",
                                decode_time(when),
                                state()
                            ));
                        }
                    }
                    if h.total() != count {
                        return Err(format!(
                            "histogram of list {list} holds extra keys; {}",
                            state()
                        ));
                    }
                    if h.min().map(|o| t.base + o as u64) != min {
                        return Err(format!(
                            "histogram minimum of list {list} is wrong; {}",
                            state()
                        ));
                    }
                } else if level > 0
                    && (min != Some(t.min) || multiset.get(&t.min) != Some(&t.count))
                {
                    return Err(format!(
                        "minimum of tracked list {list} is stale; {}",
                        state()
                    ));
                }
            }
        }
        for (level, t) in self.tracked.iter().enumerate() {
            if t.list != NIL && t.list as usize / SLOTS != level {
                return Err(format!(
                    "level {level} tracks list {} of another level; {}",
                    t.list,
                    state()
                ));
            }
            if t.list == NIL && t.hist.as_ref().is_some_and(|h| h.total() != 0) {
                return Err(format!(
                    "untracked histogram of level {level} is not clear; {}",
                    state()
                ));
            }
        }
        if level_mask != self.level_mask {
            return Err(format!("level_mask should be {level_mask:#x}; {}", state()));
        }
        if seen != self.len {
            return Err(format!(
                "{seen} keys on lists, len says {}; {}",
                self.len,
                state()
            ));
        }
        let indexed =
            self.index.direct.iter().filter(|&&n| n != NIL).count() + self.index.sparse.len();
        if indexed != self.len {
            return Err(format!(
                "{indexed} keys indexed, len says {}; {}",
                self.len,
                state()
            ));
        }
        let mut free = 0usize;
        let mut n = self.free_head;
        while n != NIL {
            if self.nodes[n as usize].list != FREE {
                return Err(format!(
                    "node {n} on the free list is not marked free; {}",
                    state()
                ));
            }
            free += 1;
            if free > self.nodes.len() {
                return Err(format!("free list has a cycle; {}", state()));
            }
            n = self.nodes[n as usize].pos;
        }
        if self.len + free != self.nodes.len() {
            return Err(format!(
                "{} nodes = {} live + {free} free does not add up; {}",
                self.nodes.len(),
                self.len,
                state()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    // --- the pure functions, exhaustively ------------------------------------------------

    /// Naive definition: the lowest level whose rotation (all digits above it) is shared.
    fn naive_level(elapsed: u64, when: u64) -> usize {
        (0..LEVELS)
            .find(|&l| {
                let bits = (l as u32 + 1) * SLOT_BITS;
                bits >= 64 || elapsed >> bits == when >> bits
            })
            .unwrap()
    }

    #[test]
    fn level_for_matches_naive_on_all_small_pairs() {
        // Every pair below 2^13 spans levels 0..=2 with every digit combination.
        for elapsed in 0..1u64 << 13 {
            for when in elapsed + 1..1u64 << 13 {
                assert_eq!(
                    level_for(elapsed, when),
                    naive_level(elapsed, when),
                    "{elapsed} {when}"
                );
            }
        }
    }

    #[test]
    fn level_for_matches_naive_for_every_differing_bit() {
        // For every highest differing bit position and a spread of backgrounds.
        let backgrounds = [
            0u64,
            u64::MAX >> 1,
            0x5555_5555_5555_5555,
            0xdead_beef_0bad_f00d,
            1 << 63,
        ];
        for bg in backgrounds {
            for bit in 0..64 {
                let elapsed = bg & !(1u64 << bit);
                let when = elapsed | (1u64 << bit);
                assert_eq!(level_for(elapsed, when), naive_level(elapsed, when));
                assert_eq!(level_for(elapsed, when), (bit / SLOT_BITS) as usize);
                // Lower bits of `when` below the differing bit do not matter.
                let when2 = when | ((1u64 << bit) - 1);
                assert_eq!(level_for(elapsed, when2), (bit / SLOT_BITS) as usize);
            }
        }
        assert_eq!(level_for(0, u64::MAX), LEVELS - 1);
    }

    #[test]
    fn slot_for_and_slot_start_agree_exhaustively() {
        // Every time below 2^12 at levels 0 and 1, and every slot of every level from
        // several positions: the slot of `slot_start(e, l, s)` at level `l` is `s`, the
        // start is aligned, and `e` and the start share the rotation above level `l`.
        for t in 0..1u64 << 12 {
            for level in 0..2 {
                let s = slot_for(t, level);
                let start = slot_start(t, level, s);
                assert!(start <= t && t - start < slot_width(level), "{t} {level}");
            }
        }
        for e in [0u64, 12345, 1 << 40, u64::MAX - 7, encode_time(0)] {
            for level in 0..LEVELS {
                let usable = if level == LEVELS - 1 { 16 } else { SLOTS };
                for slot in 0..usable {
                    let start = slot_start(e, level, slot);
                    assert_eq!(slot_for(start, level), slot);
                    assert_eq!(start % slot_width(level).max(1), 0, "aligned");
                    if level < LEVELS - 1 {
                        let bits = (level as u32 + 1) * SLOT_BITS;
                        assert_eq!(start >> bits, e >> bits);
                    }
                    if level > 0 {
                        assert_eq!(slot_for(start, level - 1), 0);
                    }
                }
            }
        }
    }

    #[test]
    fn time_encoding_preserves_order_and_round_trips() {
        let samples = [
            i64::MIN,
            i64::MIN + 1,
            -1_000_000,
            -1,
            0,
            1,
            1_700_000_000_000,
            i64::MAX - 1,
            i64::MAX,
        ];
        for w in samples.windows(2) {
            assert!(encode_time(w[0]) < encode_time(w[1]));
        }
        for &s in &samples {
            assert_eq!(decode_time(encode_time(s)), s);
        }
        for ms in -70_000i64..70_000 {
            assert_eq!(decode_time(encode_time(ms)), ms);
            assert_eq!(encode_time(ms) + 1, encode_time(ms + 1));
        }
    }

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

    // --- behaviour -------------------------------------------------------------------------

    fn drain(w: &mut TimerWheel, now: i64) -> Vec<(i64, u64)> {
        let mut out = Vec::new();
        w.advance(now, &mut out).unwrap();
        w.check_invariants().unwrap();
        out.into_iter().map(|f| (f.deadline_ms, f.key)).collect()
    }

    #[test]
    fn fires_in_deadline_then_key_order_exactly_once() {
        let mut w = TimerWheel::new(0);
        for (k, d) in [
            (5u64, 100i64),
            (3, 100),
            (9, 50),
            (1, 5000),
            (2, 1 << 40),
            (7, 100),
        ] {
            w.schedule(k, d);
        }
        w.check_invariants().unwrap();
        assert_eq!(w.next_deadline(), Some(50));
        assert_eq!(drain(&mut w, 99), vec![(50, 9)]);
        assert_eq!(drain(&mut w, 100), vec![(100, 3), (100, 5), (100, 7)]);
        assert_eq!(drain(&mut w, 100), vec![]);
        assert_eq!(w.next_deadline(), Some(5000));
        assert_eq!(drain(&mut w, (1 << 40) - 1), vec![(5000, 1)]);
        assert_eq!(drain(&mut w, i64::MAX), vec![(1 << 40, 2)]);
        assert!(w.is_empty());
        assert_eq!(w.next_deadline(), None);
    }

    #[test]
    fn past_deadlines_fire_on_the_next_advance_before_everything_else() {
        let mut w = TimerWheel::new(1_000);
        w.schedule(1, 2_000);
        w.schedule(2, 1_000); // equal to now: due
        w.schedule(3, -5);
        w.schedule(4, 999);
        assert_eq!(w.next_deadline(), Some(-5));
        assert_eq!(drain(&mut w, 1_000), vec![(-5, 3), (999, 4), (1_000, 2)]);
        assert_eq!(drain(&mut w, 5_000), vec![(2_000, 1)]);
    }

    #[test]
    fn time_cannot_go_backwards() {
        let mut w = TimerWheel::new(10);
        let mut out = Vec::new();
        assert_eq!(
            w.advance(9, &mut out),
            Err(TimeWentBackwards {
                now_ms: 9,
                current_ms: 10
            })
        );
        w.advance(10, &mut out).unwrap();
        assert_eq!(w.now_ms(), 10);
    }

    #[test]
    fn reschedule_moves_earlier_and_later_and_cancel_removes() {
        let mut w = TimerWheel::new(0);
        w.schedule(1, 10_000);
        w.schedule(1, 20);
        assert_eq!(w.deadline(1), Some(20));
        w.schedule(1, 300_000);
        w.schedule(2, 300_001);
        assert_eq!(w.len(), 2);
        assert!(w.cancel(2));
        assert!(!w.cancel(2));
        assert_eq!(drain(&mut w, 299_999), vec![]);
        assert_eq!(drain(&mut w, 300_000), vec![(300_000, 1)]);
        assert!(!w.contains(1));
        // A fired key can be reused.
        w.schedule(1, 300_000);
        assert_eq!(drain(&mut w, 300_000), vec![(300_000, 1)]);
    }

    #[test]
    fn sparse_and_dense_keys_coexist_and_migrate() {
        let mut w = TimerWheel::new(0);
        // Big keys go to the hash map; then many dense keys grow the vector past some of them.
        let big = [u64::MAX, 1 << 40, 70_000, 9_000];
        for (i, &k) in big.iter().enumerate() {
            w.schedule(k, 1_000 + i as i64);
        }
        for k in 0..20_000u64 {
            w.schedule(k, 5_000);
        }
        w.check_invariants().unwrap();
        for (i, &k) in big.iter().enumerate().take(3) {
            assert_eq!(w.deadline(k), Some(1_000 + i as i64), "key {k}");
        }
        assert_eq!(w.deadline(9_000), Some(5_000), "rescheduled as a dense key");
        let fired = drain(&mut w, 5_000);
        assert_eq!(
            fired.len(),
            20_000 + big.len() - 1,
            "9_000 was rescheduled to 5_000"
        );
        assert!(fired.windows(2).all(|p| p[0] < p[1]));
    }

    #[test]
    fn next_deadline_stays_exact_in_a_heartbeat_storm() {
        // All keys far away on a high level: the histogram must follow reschedules.
        let mut w = TimerWheel::new(0);
        let n = 3_000u64;
        for k in 0..n {
            w.schedule(k, 45_000 + k as i64);
        }
        let mut model: BTreeMap<u64, i64> = (0..n).map(|k| (k, 45_000 + k as i64)).collect();
        let mut now = 0;
        for round in 0..60 {
            now += 100;
            let mut out = Vec::new();
            w.advance(now, &mut out).unwrap();
            assert!(out.is_empty());
            for k in (round * 50..round * 50 + 50).map(|k| k % n) {
                w.schedule(k, now + 45_000);
                model.insert(k, now + 45_000);
            }
            assert_eq!(w.next_deadline(), model.values().min().copied());
            if round % 10 == 0 {
                w.check_invariants().unwrap();
            }
        }
    }

    #[test]
    fn later_deadlines_leave_the_key_in_place_until_its_slot_is_reached() {
        let mut w = TimerWheel::new(0);
        w.schedule(1, 45_000); // level 2
        let list = w.nodes[w.index.get(1).unwrap() as usize].list;
        for beat in 1..=14 {
            w.schedule(1, 45_000 + beat * 3_000);
            // Lazy: the node has not moved, only its deadline did.
            assert_eq!(w.nodes[w.index.get(1).unwrap() as usize].list, list);
            w.check_invariants().unwrap();
        }
        // Reaching the old slot moves the key instead of firing it.
        assert_eq!(drain(&mut w, 44_999), vec![]);
        assert_eq!(drain(&mut w, 86_999), vec![]);
        assert_eq!(w.next_deadline(), Some(87_000));
        assert_eq!(drain(&mut w, 87_000), vec![(87_000, 1)]);
        // Moving earlier is never lazy.
        w.schedule(2, 500_000);
        w.schedule(2, 87_001);
        assert_eq!(w.next_deadline(), Some(87_001));
        assert_eq!(drain(&mut w, 87_001), vec![(87_001, 2)]);
    }

    #[test]
    fn next_deadline_settles_lazy_slots_until_it_finds_the_minimum() {
        let mut w = TimerWheel::new(0);
        for k in 0..100u64 {
            w.schedule(k, 10_000 + k as i64);
        }
        // Everybody moves far later except key 50: the earliest slot is mostly lazy keys.
        for k in (0..100u64).filter(|&k| k != 50) {
            w.schedule(k, 900_000 + k as i64);
        }
        assert_eq!(w.next_deadline(), Some(10_050));
        w.check_invariants().unwrap();
        assert!(w.cancel(50));
        assert_eq!(w.next_deadline(), Some(900_000));
        w.check_invariants().unwrap();
    }

    #[test]
    fn extreme_times() {
        let mut w = TimerWheel::new(i64::MIN);
        w.schedule(1, i64::MAX);
        w.schedule(2, i64::MIN);
        w.schedule(3, 0);
        w.check_invariants().unwrap();
        assert_eq!(w.next_deadline(), Some(i64::MIN));
        assert_eq!(drain(&mut w, i64::MIN), vec![(i64::MIN, 2)]);
        assert_eq!(w.next_deadline(), Some(0));
        assert_eq!(drain(&mut w, i64::MAX - 1), vec![(0, 3)]);
        assert_eq!(w.next_deadline(), Some(i64::MAX));
        assert_eq!(drain(&mut w, i64::MAX), vec![(i64::MAX, 1)]);
    }

    #[test]
    fn memory_per_key_is_small() {
        let mut w = TimerWheel::new(0);
        let n = 1_000_000u64;
        w.reserve(n as usize);
        for k in 0..n {
            w.schedule(k, 45_000 + (k % 3_000) as i64);
        }
        let bytes = w.heap_bytes();
        assert!(bytes < 64 << 20, "{bytes} bytes for a million keys");
    }

    // --- model-based property test ---------------------------------------------------------

    #[derive(Clone, Debug)]
    enum Op {
        Schedule(u64, i64),
        Cancel(u64),
        Advance(i64),
        NextDeadline,
    }

    fn key() -> impl Strategy<Value = u64> {
        prop_oneof![
            8 => 0u64..24,
            1 => Just(u64::MAX),
            1 => (1u64 << 33)..(1u64 << 33) + 4,
        ]
    }

    /// Offsets from the current time: zero, the past, every level boundary, and far futures.
    fn offset() -> impl Strategy<Value = i64> {
        prop_oneof![
            2 => Just(0i64),
            2 => -100i64..0,
            4 => 1i64..130,
            3 => (0u32..62).prop_flat_map(|b| {
                let p = 1i64 << b;
                (p - 2)..(p + 2)
            }),
            1 => Just(i64::MAX),
            1 => Just(i64::MIN),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (key(), offset()).prop_map(|(k, o)| Op::Schedule(k, o)),
            2 => key().prop_map(Op::Cancel),
            3 => offset().prop_map(|o| Op::Advance(o.max(0))),
            2 => Just(Op::NextDeadline),
        ]
    }

    proptest! {
        // 512 cases by default; PROPTEST_CASES=100000 for a deeper run.
        #![proptest_config(ProptestConfig::with_cases(
            std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(512)
        ))]

        #[test]
        fn wheel_matches_a_sorted_map(start in prop_oneof![Just(0i64), Just(i64::MIN), -1_000i64..1_000_000, Just(i64::MAX - 5_000)],
                                      ops in proptest::collection::vec(op(), 1..120)) {
            let mut w = TimerWheel::new(start);
            let mut model: BTreeMap<u64, i64> = BTreeMap::new();
            let mut now = start;
            for op in ops {
                match op {
                    Op::Schedule(k, o) => {
                        let d = now.saturating_add(o);
                        w.schedule(k, d);
                        model.insert(k, d);
                    }
                    Op::Cancel(k) => {
                        prop_assert_eq!(w.cancel(k), model.remove(&k).is_some());
                    }
                    Op::Advance(o) => {
                        now = now.saturating_add(o);
                        let mut expected: Vec<(i64, u64)> =
                            model.iter().filter(|(_, &d)| d <= now).map(|(&k, &d)| (d, k)).collect();
                        expected.sort();
                        for (_, k) in &expected {
                            model.remove(k);
                        }
                        let mut out = Vec::new();
                        w.advance(now, &mut out).unwrap();
                        let got: Vec<(i64, u64)> = out.iter().map(|f| (f.deadline_ms, f.key)).collect();
                        prop_assert_eq!(got, expected);
                    }
                    Op::NextDeadline => {
                        prop_assert_eq!(w.next_deadline(), model.values().min().copied());
                    }
                }
                prop_assert_eq!(w.len(), model.len());
                if let Err(e) = w.check_invariants() {
                    return Err(TestCaseError::fail(e));
                }
                for (&k, &d) in &model {
                    prop_assert_eq!(w.deadline(k), Some(d));
                }
            }
        }
    }
}
