//! Member expiry table: for every (group, member) three independent deadlines — SESSION
//! (no heartbeat within session.timeout.ms), JOIN (a pending member, KIP-394, or a member
//! that has not rejoined within the rebalance timeout, KIP-62) and SYNC (no SyncGroup within
//! the rebalance timeout) — on top of one [`TimerWheel`].
//!
//! Group and member ids are interned to dense handles, so the wheel's keys are dense too
//! (`member_handle * 3 + kind`) and index its key table directly. A member's handle is
//! released as soon as it has no pending deadline, and a group's as soon as it has no
//! member; released handles are reused (free lists), so a coordinator that creates and
//! removes millions of members over its life holds memory for the members it has now.
//!
//! Callers that heartbeat the same members over and over can skip the id lookup: `handle`
//! gives a member's *handle*, its slot number with the slot's generation packed above it
//! (see [`Handle`]). A handle is live exactly as long as its member has a pending deadline;
//! releasing the slot bumps its generation, so a handle kept past that (a *stale* handle)
//! is refused instead of addressing whichever member gets the slot next.
//!
//! Ids are opaque byte strings compared bytewise. The Python bindings pass UTF-8 (with
//! `surrogatepass`, so every `str` round-trips), whose byte order is code point order, i.e.
//! Python's `str` order: the tie-break below is the same as the reference's.
//!
//! This module has no PyO3: `crate::bindings::timer` adapts it to Python.

use std::hash::Hasher;
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHasher};

use crate::prefetch::prefetch;
use crate::timer::{Deadlines, Fired, TimeWentBackwards, TimerWheel};

/// The three deadlines a member can have. The discriminant is the wheel key offset and the
/// tie-break order among kinds sharing a deadline (declaration order, not alphabetical).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Kind {
    /// No heartbeat within the member's session timeout.
    Session = 0,
    /// A pending member that has not joined, or a member that has not rejoined within the
    /// group's rebalance timeout.
    Join = 1,
    /// No SyncGroup within the rebalance timeout.
    Sync = 2,
}

/// Number of kinds: the stride of member handles in the wheel's key space.
const KINDS: u64 = 3;

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Session, Kind::Join, Kind::Sync];

    /// The public name (`"session"`, `"join"`, `"sync"`).
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Session => "session",
            Kind::Join => "join",
            Kind::Sync => "sync",
        }
    }

    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    #[inline]
    const fn bit(self) -> u8 {
        1 << self as u8
    }

    #[inline]
    const fn from_index(i: u64) -> Kind {
        match i {
            0 => Kind::Session,
            1 => Kind::Join,
            _ => Kind::Sync,
        }
    }
}

/// Wheel key of a member's deadline of `kind`.
#[inline]
pub const fn wheel_key(member: u32, kind: Kind) -> u64 {
    member as u64 * KINDS + kind as u64
}

/// Inverse of [`wheel_key`].
#[inline]
pub const fn split_key(key: u64) -> (u32, Kind) {
    ((key / KINDS) as u32, Kind::from_index(key % KINDS))
}

/// One missed deadline, as [`MemberExpiry::expire`] reports it. The ids are shared with
/// the table (reference-counted), so reporting costs no string copies.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Expired {
    pub group: Arc<[u8]>,
    pub member: Arc<[u8]>,
    pub kind: Kind,
    pub deadline_ms: i64,
}

/// Why an operation was refused (nothing was changed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpiryError {
    TimeWentBackwards(TimeWentBackwards),
    /// A session timeout below zero.
    NegativeTimeout {
        timeout_ms: i64,
    },
    /// `now_ms + session_timeout_ms` does not fit in an i64.
    DeadlineOverflow {
        now_ms: i64,
        timeout_ms: i64,
    },
}

impl std::fmt::Display for ExpiryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExpiryError::TimeWentBackwards(e) => e.fmt(f),
            ExpiryError::NegativeTimeout { timeout_ms } => {
                write!(f, "session_timeout_ms must be >= 0, got {timeout_ms}")
            }
            ExpiryError::DeadlineOverflow { now_ms, timeout_ms } => write!(
                f,
                "now_ms + session_timeout_ms overflows a signed 64-bit integer ({now_ms} + {timeout_ms})"
            ),
        }
    }
}

impl std::error::Error for ExpiryError {}

/// The session deadline of a heartbeat at `now_ms`, validated.
pub fn session_deadline(now_ms: i64, session_timeout_ms: i64) -> Result<i64, ExpiryError> {
    if session_timeout_ms < 0 {
        return Err(ExpiryError::NegativeTimeout {
            timeout_ms: session_timeout_ms,
        });
    }
    now_ms
        .checked_add(session_timeout_ms)
        .ok_or(ExpiryError::DeadlineOverflow {
            now_ms,
            timeout_ms: session_timeout_ms,
        })
}

/// A group id as the key of the group index: stored inline when short (most group ids
/// are), so a lookup compares bytes already in the map's bucket instead of following a
/// pointer to a heap allocation, which at a million members is a cache miss per heartbeat.
/// Hashes and compares exactly like `[u8]`, so the map is queried with plain slices.
#[derive(Clone)]
enum GroupKey {
    Inline {
        len: u8,
        bytes: [u8; GroupKey::INLINE],
    },
    Heap(Arc<[u8]>),
}

impl GroupKey {
    const INLINE: usize = 30;

    fn new(name: &[u8]) -> Self {
        if name.len() <= Self::INLINE {
            let mut bytes = [0u8; Self::INLINE];
            bytes[..name.len()].copy_from_slice(name);
            GroupKey::Inline {
                len: name.len() as u8,
                bytes,
            }
        } else {
            GroupKey::Heap(Arc::from(name))
        }
    }

    #[inline]
    fn as_bytes(&self) -> &[u8] {
        match self {
            GroupKey::Inline { len, bytes } => &bytes[..*len as usize],
            GroupKey::Heap(b) => b,
        }
    }
}

impl std::borrow::Borrow<[u8]> for GroupKey {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq for GroupKey {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for GroupKey {}

impl std::hash::Hash for GroupKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

/// A group: its name and the handles of its members (for `remove_group`).
struct Group {
    name: Arc<[u8]>,
    /// The name again, inline when short: what [`Groups::is_named`] compares with.
    key: GroupKey,
    members: Vec<u32>,
}

/// A member with at least one pending deadline.
struct Member {
    /// Hash of `(group, id)`, as the intern table uses it.
    hash: u64,
    id: Arc<[u8]>,
    group: u32,
    /// Position of this member's handle in `groups[group].members`.
    group_pos: u32,
}

/// Bits of a slot's stamp below its generation: the pending-kinds mask.
const PENDING_BITS: u32 = 3;
const PENDING_MASK: u32 = (1 << PENDING_BITS) - 1;
/// Generations count modulo this (29 bits: the rest of a `u32` stamp).
const GENERATIONS: u32 = 1 << (32 - PENDING_BITS);

/// A member handle as `MemberExpiry::handle` gives it out: `generation << 32 | slot`.
///
/// The slot indexes the member tables directly; the generation is the slot's reuse count
/// (mod 2^29) when the handle was made. Handles stay below 2^61, so they fit an `i64` as
/// well as a `u64` (`array('q')` or `array('Q')` on the Python side).
///
/// Why a generation: slots are reused as soon as a member has nothing pending, and
/// without one a handle kept by the caller past that point would silently address the
/// next member given the slot. A stale handle aliases a live one only if its slot was
/// reused a multiple of 2^29 times in between.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Handle(pub u64);

impl Handle {
    #[inline]
    const fn new(slot: u32, generation: u32) -> Handle {
        Handle(((generation as u64) << 32) | slot as u64)
    }

    #[inline]
    const fn slot(self) -> u32 {
        self.0 as u32
    }

    #[inline]
    const fn generation(self) -> u64 {
        self.0 >> 32
    }
}

/// A handle that names no live member: its member has no pending deadline any more
/// (expired, cleared, or its group removed), or it was never a handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaleHandle {
    /// Position in the batch (0 for a single call).
    pub index: usize,
    pub handle: u64,
}

#[inline]
fn member_hash(group: u32, id: &[u8]) -> u64 {
    // The intern table takes its tag and slot from the top 32 bits. FxHash puts there bits
    // 6..38 of its last multiply, which depend on the low 38 bits of that multiply's input:
    // the group handle plus the id's byte hash, a folded 128-bit product with every bit
    // mixed, so they are well spread too.
    let mut h = FxHasher::default();
    h.write_u32(group);
    h.write(id);
    h.finish()
}

/// Open-addressing table (linear probing, load <= 1/2) from `(group, member id)` to member
/// handle. A slot packs the high 32 bits of the hash (the tag) with `handle + 1` (0 =
/// empty). The slot index is taken from the tag's top bits, so growing the table and
/// backward-shift deletion never need to look at a member; a lookup touches a member only
/// when the tag matches. Batch callers can compute the slot of an item ahead of time and
/// prefetch it, which std's `HashMap` does not allow.
#[derive(Default)]
struct InternTable {
    slots: Vec<u64>,
    /// log2(slots.len()); 0 while empty.
    bits: u32,
    len: usize,
}

impl InternTable {
    #[inline]
    fn tag(hash: u64) -> u64 {
        hash >> 32
    }

    #[inline]
    fn home(&self, tag: u64) -> usize {
        (tag >> (32 - self.bits)) as usize
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// The first slot a lookup of `hash` reads, for prefetching.
    #[inline]
    fn first_slot(&self, hash: u64) -> Option<&u64> {
        if self.slots.is_empty() {
            None
        } else {
            self.slots.get(self.home(Self::tag(hash)))
        }
    }

    /// Finds the handle whose member satisfies `is_it`, among slots tagged like `hash`.
    #[inline]
    fn find(&self, hash: u64, mut is_it: impl FnMut(u32) -> bool) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let tag = Self::tag(hash);
        let mut i = self.home(tag);
        loop {
            let slot = self.slots[i];
            if slot == 0 {
                return None;
            }
            if slot >> 32 == tag {
                let handle = (slot as u32) - 1;
                if is_it(handle) {
                    return Some(handle);
                }
            }
            i = (i + 1) & self.mask();
        }
    }

    fn insert(&mut self, hash: u64, handle: u32) {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let tag = Self::tag(hash);
        let mut i = self.home(tag);
        while self.slots[i] != 0 {
            i = (i + 1) & self.mask();
        }
        self.slots[i] = (tag << 32) | (u64::from(handle) + 1);
        self.len += 1;
    }

    #[cold]
    fn grow(&mut self) {
        let bits = (self.bits + 1).max(4);
        assert!(bits <= 32, "intern table limited to 2^31 members");
        let old = std::mem::replace(&mut self.slots, vec![0; 1 << bits]);
        self.bits = bits;
        for slot in old.into_iter().filter(|&s| s != 0) {
            let mut i = self.home(slot >> 32);
            while self.slots[i] != 0 {
                i = (i + 1) & self.mask();
            }
            self.slots[i] = slot;
        }
    }

    /// Removes `handle` (present, with hash `hash`), shifting later entries of its probe
    /// run back so lookups never need tombstones.
    fn remove(&mut self, hash: u64, handle: u32) {
        let want = (Self::tag(hash) << 32) | (u64::from(handle) + 1);
        let mut i = self.home(Self::tag(hash));
        while self.slots[i] != want {
            debug_assert_ne!(
                self.slots[i], 0,
                "removing handle {handle} not in the table"
            );
            i = (i + 1) & self.mask();
        }
        let mask = self.mask();
        let mut hole = i;
        let mut j = (i + 1) & mask;
        loop {
            let slot = self.slots[j];
            if slot == 0 {
                break;
            }
            let home = self.home(slot >> 32);
            // Move `slot` into the hole unless its home lies cyclically in (hole, j].
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.slots[hole] = slot;
                hole = j;
            }
            j = (j + 1) & mask;
        }
        self.slots[hole] = 0;
        self.len -= 1;
    }
}

/// The interned groups: handle -> group, name -> handle, and the handles free for reuse.
/// A group is live while it has a member; a batch hands this table to its [`GroupLookup`].
#[derive(Default)]
pub struct Groups {
    slots: Vec<Option<Group>>,
    free: Vec<u32>,
    index: FxHashMap<GroupKey, u32>,
}

impl Groups {
    /// Number of live groups.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The handle of the group `name`, if it is live.
    #[inline]
    pub fn get(&self, name: &[u8]) -> Option<u32> {
        self.index.get(name).copied()
    }

    /// The handle of the group `name`, interned if new. Within a batch the caller gives the
    /// group a member at once (a live group always has one).
    #[inline]
    pub fn intern(&mut self, name: &[u8]) -> u32 {
        if let Some(&g) = self.index.get(name) {
            return g;
        }
        let key = GroupKey::new(name);
        let group = Group {
            name: Arc::from(name),
            key: key.clone(),
            members: Vec::new(),
        };
        let g = match self.free.pop() {
            Some(g) => {
                self.slots[g as usize] = Some(group);
                g
            }
            None => {
                self.slots.push(Some(group));
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 groups")
            }
        };
        self.index.insert(key, g);
        g
    }

    /// Whether `g` is a live group named `name`: the check for a handle remembered from
    /// an earlier batch, since handles are reused once a group has no member left.
    #[inline]
    pub fn is_named(&self, g: u32, name: &[u8]) -> bool {
        let group = self.slots.get(g as usize).and_then(Option::as_ref);
        group.is_some_and(|group| group.key.as_bytes() == name)
    }
}

/// How a batch ([`MemberExpiry::set_deadlines_with`]) finds the group handle of each item.
///
/// [`MemberExpiry::set_deadlines`] looks every name up in the group index ([`ByName`]). A
/// caller that knows more about where its names come from can remember answers instead:
/// the Python bindings see the same few `str` objects over and over, and remember handles
/// by the address of their UTF-8, which only they can know is stable.
pub trait GroupLookup {
    /// A batch starts; `live_groups` groups are live.
    fn begin(&mut self, live_groups: usize);
    /// `name` is resolved a few items from now: a prefetch hint.
    fn prefetch(&self, name: &[u8]);
    /// The handle of the group `name`, interned if new: what `groups.intern(name)` returns.
    /// A handle stays valid for the whole batch (a batch releases nothing); one remembered
    /// from an earlier batch must be checked with [`Groups::is_named`] first.
    fn resolve(&mut self, groups: &mut Groups, name: &[u8]) -> u32;
}

/// The plain [`GroupLookup`]: the group index, for every item.
pub struct ByName;

impl GroupLookup for ByName {
    fn begin(&mut self, _live_groups: usize) {}

    fn prefetch(&self, _name: &[u8]) {}

    #[inline]
    fn resolve(&mut self, groups: &mut Groups, name: &[u8]) -> u32 {
        groups.intern(name)
    }
}

/// Per-(group, member) SESSION / JOIN / SYNC deadlines with interned ids.
#[derive(Default)]
pub struct MemberExpiry {
    wheel: TimerWheel,
    groups: Groups,
    members: Vec<Option<Member>>,
    /// Per member slot, live or free: `generation << PENDING_BITS | pending`, where bit
    /// `kind as u8` of `pending` is set iff that deadline is scheduled in the wheel (so a
    /// slot is live iff `pending != 0`). Kept apart from `members` so a heartbeat by
    /// handle touches 4 bytes per member here instead of a whole member record.
    stamps: Vec<u32>,
    free_members: Vec<u32>,
    member_count: usize,
    table: InternTable,
    /// Scratch for `expire` and `set_deadlines`, kept to avoid allocations per call.
    fired: Vec<Fired>,
    resolved: Vec<(u32, u64)>,
}

impl MemberExpiry {
    /// An empty table whose current time is `now_ms`.
    pub fn new(now_ms: i64) -> Self {
        MemberExpiry {
            wheel: TimerWheel::new(now_ms),
            ..Default::default()
        }
    }

    /// The current time: the last `now_ms` passed to [`expire`](Self::expire).
    pub fn now_ms(&self) -> i64 {
        self.wheel.now_ms()
    }

    /// Number of pending deadlines (each member has 0 to 3).
    pub fn len(&self) -> usize {
        self.wheel.len()
    }

    pub fn is_empty(&self) -> bool {
        self.wheel.is_empty()
    }

    /// Members with at least one pending deadline.
    pub fn member_count(&self) -> usize {
        self.member_count
    }

    /// Groups with at least one such member.
    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// Member handle slots allocated (live + free): stays at the peak member count, however
    /// many members come and go.
    pub fn member_slots(&self) -> usize {
        self.members.len()
    }

    /// Group handle slots allocated (live + free).
    pub fn group_slots(&self) -> usize {
        self.groups.slots.len()
    }

    /// A heartbeat at `now_ms`: the SESSION deadline becomes `now_ms + session_timeout_ms`.
    pub fn heartbeat(
        &mut self,
        group: &[u8],
        member: &[u8],
        now_ms: i64,
        session_timeout_ms: i64,
    ) -> Result<(), ExpiryError> {
        let deadline = session_deadline(now_ms, session_timeout_ms)?;
        self.set_deadline(group, member, Kind::Session, deadline);
        Ok(())
    }

    /// Sets (or replaces) the member's deadline of `kind`. A deadline at or before the
    /// current time fires on the next `expire`.
    pub fn set_deadline(&mut self, group: &[u8], member: &[u8], kind: Kind, deadline_ms: i64) {
        let g = self.groups.intern(group);
        let hash = member_hash(g, member);
        let m = self.intern_member(g, member, hash);
        self.schedule(m, kind, deadline_ms);
    }

    /// Sets the deadline of `kind` for many members at once, in order: `items` holds
    /// `(group, member, deadline_ms)`; the same as `set_deadline` in a loop.
    pub fn set_deadlines(&mut self, kind: Kind, items: &[(&[u8], &[u8], i64)]) {
        self.set_deadlines_with(kind, items, &mut ByName);
    }

    /// [`set_deadlines`](Self::set_deadlines), with the items' groups found by `groups`.
    ///
    /// Why a separate path: at a million members each item is a chain of dependent cache
    /// misses (table slot, member record, id bytes, wheel index, wheel node). The loop first
    /// resolves groups and hashes, then runs a few items ahead of itself prefetching each
    /// stage, so the misses of consecutive items overlap.
    pub fn set_deadlines_with(
        &mut self,
        kind: Kind,
        items: &[(&[u8], &[u8], i64)],
        groups: &mut impl GroupLookup,
    ) {
        // Items are resolved (group handle, hash) a chunk at a time, just ahead of the
        // main loop, so the id bytes hashed here are still in cache when compared there.
        const CHUNK: usize = 256;
        // Prefetch distances (in items) of the pipeline stages.
        const SLOT_AHEAD: usize = 16;
        const MEMBER_AHEAD: usize = 10;
        const ID_AHEAD: usize = 5;
        let mut resolved = std::mem::take(&mut self.resolved);
        resolved.clear();
        groups.begin(self.groups.len());
        for (i, &(_, member, deadline)) in items.iter().enumerate() {
            if i + SLOT_AHEAD >= resolved.len() && resolved.len() < items.len() {
                let (begin, end) = (resolved.len(), (resolved.len() + CHUNK).min(items.len()));
                for j in begin..end {
                    let (group, member, _) = items[j];
                    // The ids are the caller's, wherever they live: start loading the
                    // next ones (and what their group lookup reads) while this one is hashed.
                    if let Some(&(ahead_group, ahead, _)) = items.get(j + 4) {
                        if let (Some(first), Some(last)) = (ahead.first(), ahead.last()) {
                            prefetch(first);
                            prefetch(last);
                        }
                        groups.prefetch(ahead_group);
                    }
                    let g = groups.resolve(&mut self.groups, group);
                    resolved.push((g, member_hash(g, member)));
                }
            }
            if let Some(&(_, hash)) = resolved.get(i + SLOT_AHEAD) {
                if let Some(slot) = self.table.first_slot(hash) {
                    prefetch(slot);
                }
            }
            if let Some(&(_, hash)) = resolved.get(i + MEMBER_AHEAD) {
                if let Some(m) = self.first_candidate(hash) {
                    if let Some(rec) = self.members.get(m as usize) {
                        prefetch(rec);
                    }
                    self.wheel.prefetch_index(wheel_key(m, kind));
                }
            }
            if let Some(&(_, hash)) = resolved.get(i + ID_AHEAD) {
                if let Some(m) = self.first_candidate(hash) {
                    if let Some(Some(rec)) = self.members.get(m as usize) {
                        // Both ends: an id usually spans two cache lines.
                        if let (Some(first), Some(last)) = (rec.id.first(), rec.id.last()) {
                            prefetch(first);
                            prefetch(last);
                        }
                    }
                    self.wheel.prefetch_node(wheel_key(m, kind));
                }
            }
            let (g, hash) = resolved[i];
            let m = self.intern_member(g, member, hash);
            self.schedule(m, kind, deadline);
        }
        self.resolved = resolved;
    }

    /// The handle in the first slot a lookup of `hash` probes, if its tag matches: what a
    /// lookup is most likely to touch next (a prefetch hint only).
    #[inline]
    fn first_candidate(&self, hash: u64) -> Option<u32> {
        let slot = *self.table.first_slot(hash)?;
        (slot != 0 && slot >> 32 == InternTable::tag(hash)).then(|| (slot as u32) - 1)
    }

    /// The handle of a member with at least one pending deadline (None for any other):
    /// live until the member has no pending deadline left, see [`Handle`].
    pub fn handle(&self, group: &[u8], member: &[u8]) -> Option<Handle> {
        let m = self.lookup(group, member)?;
        Some(Handle::new(m, self.stamps[m as usize] >> PENDING_BITS))
    }

    /// Whether `handle` names a member that has a pending deadline.
    #[inline]
    pub fn is_live(&self, handle: u64) -> bool {
        self.live_slot(handle).is_some()
    }

    /// The slot `handle` names, if it is live (right generation, something pending).
    #[inline]
    fn live_slot(&self, handle: u64) -> Option<u32> {
        let h = Handle(handle);
        let stamp = *self.stamps.get(h.slot() as usize)?;
        let live = u64::from(stamp >> PENDING_BITS) == h.generation() && stamp & PENDING_MASK != 0;
        live.then_some(h.slot())
    }

    /// Sets (or replaces) the deadline of `kind` of the member `handle` names: the same as
    /// `set_deadline` with its ids, without looking them up.
    pub fn set_deadline_by_handle(
        &mut self,
        handle: u64,
        kind: Kind,
        deadline_ms: i64,
    ) -> Result<(), StaleHandle> {
        let m = self
            .live_slot(handle)
            .ok_or(StaleHandle { index: 0, handle })?;
        self.schedule(m, kind, deadline_ms);
        Ok(())
    }

    /// `set_deadline_by_handle(handles[i], kind, deadlines.get(i))` for every `i` in order,
    /// all or nothing: if any handle is stale, nothing changes and the first stale one is
    /// reported.
    ///
    /// Why two passes: checking every handle first keeps the batch atomic; the check reads
    /// only the 4-byte stamps, which the second pass then finds in cache. The second pass
    /// prefetches the wheel's index entry and node a few handles ahead, as
    /// [`TimerWheel::schedule_many`] does, so the misses of consecutive handles overlap.
    pub fn set_deadlines_by_handle(
        &mut self,
        kind: Kind,
        handles: &[u64],
        deadlines: Deadlines<'_>,
    ) -> Result<(), StaleHandle> {
        if let Deadlines::Each(ds) = deadlines {
            assert_eq!(ds.len(), handles.len(), "one deadline per handle");
        }
        const STAMP_AHEAD: usize = 16;
        const INDEX_AHEAD: usize = 16;
        const NODE_AHEAD: usize = 8;
        for (i, &h) in handles.iter().enumerate() {
            if let Some(&ahead) = handles.get(i + STAMP_AHEAD) {
                if let Some(stamp) = self.stamps.get(Handle(ahead).slot() as usize) {
                    prefetch(stamp);
                }
            }
            if self.live_slot(h).is_none() {
                return Err(StaleHandle {
                    index: i,
                    handle: h,
                });
            }
        }
        let key = |h: u64| wheel_key(Handle(h).slot(), kind);
        for (i, &h) in handles.iter().enumerate() {
            if let Some(&ahead) = handles.get(i + INDEX_AHEAD) {
                self.wheel.prefetch_index(key(ahead));
            }
            if let Some(&ahead) = handles.get(i + NODE_AHEAD) {
                self.wheel.prefetch_node(key(ahead));
            }
            self.schedule(Handle(h).slot(), kind, deadlines.get(i));
        }
        Ok(())
    }

    /// The member's pending deadline of `kind`, if any.
    pub fn deadline(&self, group: &[u8], member: &[u8], kind: Kind) -> Option<i64> {
        let m = self.lookup(group, member)?;
        self.wheel.deadline(wheel_key(m, kind))
    }

    /// Clears the member's deadline of `kind`, or all three with `None`. Returns whether a
    /// deadline was pending.
    pub fn clear(&mut self, group: &[u8], member: &[u8], kind: Option<Kind>) -> bool {
        let Some(m) = self.lookup(group, member) else {
            return false;
        };
        let kinds: &[Kind] = match kind {
            Some(ref k) => std::slice::from_ref(k),
            None => &Kind::ALL,
        };
        let mut cleared = false;
        for &k in kinds {
            cleared |= self.wheel.cancel(wheel_key(m, k));
            self.stamps[m as usize] &= !u32::from(k.bit());
        }
        if self.pending(m) == 0 {
            self.release_member(m);
        }
        cleared
    }

    /// Drops every deadline of every member of `group`; returns how many members it had.
    pub fn remove_group(&mut self, group: &[u8]) -> usize {
        let Some(g) = self.groups.get(group) else {
            return 0;
        };
        let entry = self.groups.slots[g as usize]
            .take()
            .expect("indexed group is live");
        self.groups.index.remove(group);
        self.groups.free.push(g);
        for &m in &entry.members {
            let member = self.members[m as usize]
                .take()
                .expect("group member is live");
            let pending = self.pending(m);
            for k in Kind::ALL {
                if pending & k.bit() != 0 {
                    self.wheel.cancel(wheel_key(m, k));
                }
            }
            self.retire_slot(m);
            self.table.remove(member.hash, m);
            self.free_members.push(m);
            self.member_count -= 1;
        }
        entry.members.len()
    }

    /// The earliest pending deadline, exactly (see [`TimerWheel::next_deadline`]).
    pub fn next_deadline(&mut self) -> Option<i64> {
        self.wheel.next_deadline()
    }

    /// Moves time to `now_ms` and appends every deadline `<= now_ms` to `out`, ordered by
    /// `(deadline_ms, group, member, kind)` (ids bytewise, kinds in declaration order),
    /// removing them. Each kind is independent: an expired SESSION leaves JOIN and SYNC
    /// pending. A member left with no deadline is forgotten (its handle is reused).
    ///
    /// Cost: the wheel's advance (O(1) if nothing is due) plus O(k log k) in the number k
    /// of expirations sharing a deadline, for the tie-break.
    pub fn expire(&mut self, now_ms: i64, out: &mut Vec<Expired>) -> Result<(), ExpiryError> {
        let mut fired = std::mem::take(&mut self.fired);
        fired.clear();
        let result = self.wheel.advance(now_ms, &mut fired);
        if let Err(e) = result {
            self.fired = fired;
            return Err(ExpiryError::TimeWentBackwards(e));
        }
        let first = out.len();
        out.reserve(fired.len());
        for f in &fired {
            let (m, kind) = split_key(f.key);
            let member = self.members[m as usize]
                .as_ref()
                .expect("fired member is live");
            let group = self.groups.slots[member.group as usize]
                .as_ref()
                .expect("member's group is live");
            out.push(Expired {
                group: group.name.clone(),
                member: member.id.clone(),
                kind,
                deadline_ms: f.deadline_ms,
            });
        }
        // The wheel orders ties by key (handle order, an accident of allocation); re-sort
        // each run of equal deadlines by ids so the order is the documented one.
        for run in out[first..].chunk_by_mut(|a, b| a.deadline_ms == b.deadline_ms) {
            if run.len() > 1 {
                run.sort_unstable_by(|a, b| {
                    (&a.group, &a.member, a.kind).cmp(&(&b.group, &b.member, b.kind))
                });
            }
        }
        for f in &fired {
            let (m, kind) = split_key(f.key);
            self.stamps[m as usize] &= !u32::from(kind.bit());
            if self.pending(m) == 0 {
                self.release_member(m);
            }
        }
        self.fired = fired;
        Ok(())
    }

    // --- interning ---------------------------------------------------------------------------

    fn lookup(&self, group: &[u8], member: &[u8]) -> Option<u32> {
        let g = self.groups.get(group)?;
        self.find_member(g, member, member_hash(g, member))
    }

    #[inline]
    fn find_member(&self, g: u32, id: &[u8], hash: u64) -> Option<u32> {
        let members = &self.members;
        self.table.find(hash, |m| {
            members[m as usize]
                .as_ref()
                .is_some_and(|rec| rec.hash == hash && rec.group == g && *rec.id == *id)
        })
    }

    #[inline]
    fn intern_member(&mut self, g: u32, id: &[u8], hash: u64) -> u32 {
        if let Some(m) = self.find_member(g, id, hash) {
            return m;
        }
        let group = self.groups.slots[g as usize]
            .as_mut()
            .expect("interned group is live");
        let member = Member {
            hash,
            id: Arc::from(id),
            group: g,
            group_pos: u32::try_from(group.members.len()).expect("fewer than 2^32 members"),
        };
        let m = match self.free_members.pop() {
            Some(m) => {
                self.members[m as usize] = Some(member);
                m
            }
            None => {
                self.members.push(Some(member));
                self.stamps.push(0);
                // Handles are u32 and wheel keys `3 * handle + kind` fit a u64.
                u32::try_from(self.members.len() - 1).expect("fewer than 2^32 members")
            }
        };
        group.members.push(m);
        self.table.insert(hash, m);
        self.member_count += 1;
        m
    }

    #[inline]
    fn schedule(&mut self, m: u32, kind: Kind, deadline_ms: i64) {
        self.stamps[m as usize] |= u32::from(kind.bit());
        self.wheel.schedule(wheel_key(m, kind), deadline_ms);
    }

    /// The pending-kinds mask of slot `m` (0 iff the slot is free).
    #[inline]
    fn pending(&self, m: u32) -> u8 {
        (self.stamps[m as usize] & PENDING_MASK) as u8
    }

    /// Marks slot `m` free: nothing pending, and the next generation, so handles made for
    /// the member that had it are stale from now on.
    #[inline]
    fn retire_slot(&mut self, m: u32) {
        let generation = self.stamps[m as usize] >> PENDING_BITS;
        self.stamps[m as usize] = ((generation + 1) % GENERATIONS) << PENDING_BITS;
    }

    /// Forgets a member with no pending deadline, and its group if that was the last member.
    fn release_member(&mut self, m: u32) {
        let member = self.members[m as usize]
            .take()
            .expect("released member is live");
        debug_assert_eq!(
            self.pending(m),
            0,
            "releasing a member with pending deadlines"
        );
        self.retire_slot(m);
        self.table.remove(member.hash, m);
        self.free_members.push(m);
        self.member_count -= 1;
        let g = member.group;
        let group = self.groups.slots[g as usize]
            .as_mut()
            .expect("member's group is live");
        let pos = member.group_pos as usize;
        group.members.swap_remove(pos);
        if let Some(&moved) = group.members.get(pos) {
            self.members[moved as usize]
                .as_mut()
                .expect("group member is live")
                .group_pos = member.group_pos;
        }
        if group.members.is_empty() {
            let group = self.groups.slots[g as usize].take().expect("checked above");
            self.groups.index.remove(&group.name[..]);
            self.groups.free.push(g);
        }
    }

    // --- diagnostics -------------------------------------------------------------------------

    pub fn debug_state(&self) -> String {
        format!(
            "MemberExpiry {{ groups: {} ({} slots), members: {} ({} slots), table: {}/{}, {} }}",
            self.groups.len(),
            self.groups.slots.len(),
            self.member_count,
            self.members.len(),
            self.table.len,
            self.table.slots.len(),
            self.wheel.debug_state()
        )
    }

    /// Checks every invariant linking the intern tables and the wheel; O(n). For tests.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.wheel.check_invariants()?;
        let state = || self.debug_state();
        let mut live_members = 0usize;
        let mut pending_total = 0usize;
        if self.stamps.len() != self.members.len() {
            return Err(format!(
                "{} stamps for {} member slots; {}",
                self.stamps.len(),
                self.members.len(),
                state()
            ));
        }
        for (m, slot) in self.members.iter().enumerate() {
            let m = m as u32;
            let Some(member) = slot else {
                if self.pending(m) != 0 {
                    return Err(format!("free slot {m} has pending bits; {}", state()));
                }
                continue;
            };
            live_members += 1;
            let pending = self.pending(m);
            if pending == 0 {
                return Err(format!(
                    "member {m} is live with nothing pending; {}",
                    state()
                ));
            }
            for k in Kind::ALL {
                let scheduled = self.wheel.contains(wheel_key(m, k));
                if scheduled != (pending & k.bit() != 0) {
                    return Err(format!(
                        "member {m} pending bits disagree with the wheel for {k:?}; {}",
                        state()
                    ));
                }
                pending_total += usize::from(scheduled);
            }
            let Some(group) = self
                .groups
                .slots
                .get(member.group as usize)
                .and_then(Option::as_ref)
            else {
                return Err(format!("member {m} points at a dead group; {}", state()));
            };
            if group.members.get(member.group_pos as usize) != Some(&m) {
                return Err(format!(
                    "member {m} is not at its position in its group; {}",
                    state()
                ));
            }
            if member.hash != member_hash(member.group, &member.id) {
                return Err(format!("member {m} has a stale hash; {}", state()));
            }
            if self.find_member(member.group, &member.id, member.hash) != Some(m) {
                return Err(format!(
                    "member {m} cannot be found through the table; {}",
                    state()
                ));
            }
        }
        if live_members != self.member_count || live_members != self.table.len {
            return Err(format!(
                "member_count {}, table len {}, but {live_members} live; {}",
                self.member_count,
                self.table.len,
                state()
            ));
        }
        if self.table.slots.iter().filter(|&&s| s != 0).count() != self.table.len {
            return Err(format!(
                "table slot count disagrees with its len; {}",
                state()
            ));
        }
        if pending_total != self.wheel.len() {
            return Err(format!("wheel holds keys of no member; {}", state()));
        }
        let mut live_groups = 0usize;
        for (g, slot) in self.groups.slots.iter().enumerate() {
            let Some(group) = slot else { continue };
            live_groups += 1;
            if group.members.is_empty() {
                return Err(format!("group {g} is live with no members; {}", state()));
            }
            if self.groups.index.get(&group.name[..]) != Some(&(g as u32)) {
                return Err(format!("group {g} is not indexed; {}", state()));
            }
            for &m in &group.members {
                match &self.members[m as usize] {
                    Some(member) if member.group == g as u32 => {}
                    _ => {
                        return Err(format!(
                            "group {g} lists a member that is not its own; {}",
                            state()
                        ))
                    }
                }
            }
        }
        if live_groups != self.groups.len() {
            return Err(format!(
                "{live_groups} live groups, {} indexed; {}",
                self.groups.len(),
                state()
            ));
        }
        let free_ok = |free: &[u32], slots: usize, live: &dyn Fn(u32) -> bool| {
            let mut seen = vec![false; slots];
            free.iter().all(|&h| {
                let fresh = !std::mem::replace(&mut seen[h as usize], true);
                fresh && !live(h)
            })
        };
        if !free_ok(&self.free_members, self.members.len(), &|m| {
            self.members[m as usize].is_some()
        }) || self.free_members.len() + live_members != self.members.len()
        {
            return Err(format!("member free list is inconsistent; {}", state()));
        }
        if !free_ok(&self.groups.free, self.groups.slots.len(), &|g| {
            self.groups.slots[g as usize].is_some()
        }) || self.groups.free.len() + live_groups != self.groups.slots.len()
        {
            return Err(format!("group free list is inconsistent; {}", state()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[test]
    fn wheel_keys_round_trip_for_every_kind_and_boundary_handle() {
        for m in [0u32, 1, 2, 3, 1 << 20, u32::MAX - 1, u32::MAX] {
            for k in Kind::ALL {
                assert_eq!(split_key(wheel_key(m, k)), (m, k));
            }
        }
        // Dense: consecutive (handle, kind) pairs are consecutive keys.
        let keys: Vec<u64> = (0..4u32)
            .flat_map(|m| Kind::ALL.map(|k| wheel_key(m, k)))
            .collect();
        assert_eq!(keys, (0..12).collect::<Vec<u64>>());
    }

    #[test]
    fn kind_names_round_trip() {
        for k in Kind::ALL {
            assert_eq!(Kind::from_name(k.name()), Some(k));
        }
        assert_eq!(Kind::from_name("SESSION"), None);
        assert!(Kind::Session < Kind::Join && Kind::Join < Kind::Sync);
    }

    #[test]
    fn session_deadline_validates() {
        assert_eq!(session_deadline(5, 10), Ok(15));
        assert_eq!(session_deadline(5, 0), Ok(5));
        assert!(matches!(
            session_deadline(5, -1),
            Err(ExpiryError::NegativeTimeout { .. })
        ));
        assert!(matches!(
            session_deadline(i64::MAX, 1),
            Err(ExpiryError::DeadlineOverflow { .. })
        ));
    }

    fn expire(t: &mut MemberExpiry, now: i64) -> Vec<(i64, String, String, Kind)> {
        let mut out = Vec::new();
        t.expire(now, &mut out).unwrap();
        t.check_invariants().unwrap();
        out.into_iter()
            .map(|e| {
                (
                    e.deadline_ms,
                    String::from_utf8(e.group.to_vec()).unwrap(),
                    String::from_utf8(e.member.to_vec()).unwrap(),
                    e.kind,
                )
            })
            .collect()
    }

    fn s(x: &str) -> String {
        x.to_string()
    }

    #[test]
    fn kinds_are_independent_and_ties_break_by_ids_then_kind() {
        let mut t = MemberExpiry::new(0);
        t.heartbeat(b"g2", b"a", 0, 100).unwrap();
        t.set_deadline(b"g1", b"b", Kind::Sync, 100);
        t.set_deadline(b"g1", b"b", Kind::Join, 100);
        t.heartbeat(b"g1", b"b", 0, 100).unwrap();
        t.set_deadline(b"g1", b"a", Kind::Join, 50);
        assert_eq!(t.len(), 5);
        assert_eq!(t.next_deadline(), Some(50));
        assert_eq!(
            expire(&mut t, 100),
            vec![
                (50, s("g1"), s("a"), Kind::Join),
                (100, s("g1"), s("b"), Kind::Session),
                (100, s("g1"), s("b"), Kind::Join),
                (100, s("g1"), s("b"), Kind::Sync),
                (100, s("g2"), s("a"), Kind::Session),
            ]
        );
        assert!(t.is_empty());
        assert_eq!((t.member_count(), t.group_count()), (0, 0));
    }

    #[test]
    fn clear_and_remove_group() {
        let mut t = MemberExpiry::new(0);
        t.heartbeat(b"g", b"m1", 0, 10).unwrap();
        t.set_deadline(b"g", b"m1", Kind::Join, 20);
        t.heartbeat(b"g", b"m2", 0, 10).unwrap();
        t.heartbeat(b"h", b"m1", 0, 10).unwrap();
        assert!(t.clear(b"g", b"m1", Some(Kind::Session)));
        assert!(!t.clear(b"g", b"m1", Some(Kind::Session)));
        assert_eq!(t.deadline(b"g", b"m1", Kind::Join), Some(20));
        assert_eq!(t.remove_group(b"g"), 2);
        assert_eq!(t.remove_group(b"g"), 0);
        t.check_invariants().unwrap();
        assert_eq!(
            expire(&mut t, 100),
            vec![(10, s("h"), s("m1"), Kind::Session)]
        );
        assert!(!t.clear(b"nope", b"m", None));
    }

    #[test]
    fn handles_are_reused_so_churn_does_not_grow_the_tables() {
        let mut t = MemberExpiry::new(0);
        let mut now = 0;
        for round in 0..2_000u32 {
            let group = format!("group-{round}");
            for m in 0..10u32 {
                let member = format!("member-{round}-{m}");
                t.heartbeat(group.as_bytes(), member.as_bytes(), now, 1_000)
                    .unwrap();
            }
            if round % 2 == 0 {
                t.remove_group(group.as_bytes());
            } else {
                now += 1_000;
                expire(&mut t, now);
            }
        }
        t.check_invariants().unwrap();
        assert!(t.member_slots() <= 20, "{} member slots", t.member_slots());
        assert!(t.group_slots() <= 2, "{} group slots", t.group_slots());
    }

    #[test]
    fn intern_table_survives_heavy_churn() {
        // Many members, removed in an order unrelated to insertion: exercises probe runs,
        // wrap-around and backward-shift deletion.
        let mut t = MemberExpiry::new(0);
        let mut live: Vec<(String, String)> = Vec::new();
        let mut x = 12345u64;
        let mut rand = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..30 {
            for i in 0..400 {
                let (g, m) = (format!("g{}", rand() % 7), format!("m-{round}-{i}"));
                t.heartbeat(g.as_bytes(), m.as_bytes(), 0, 1_000).unwrap();
                live.push((g, m));
            }
            for _ in 0..300 {
                let i = (rand() % live.len() as u64) as usize;
                let (g, m) = live.swap_remove(i);
                assert!(t.clear(g.as_bytes(), m.as_bytes(), None));
            }
            if round % 10 == 9 {
                let g = format!("g{}", rand() % 7);
                let before = live.len();
                live.retain(|(lg, _)| *lg != g);
                assert_eq!(t.remove_group(g.as_bytes()), before - live.len());
            }
            t.check_invariants().unwrap();
            assert_eq!(t.member_count(), live.len());
            for (g, m) in &live {
                assert_eq!(
                    t.deadline(g.as_bytes(), m.as_bytes(), Kind::Session),
                    Some(1_000)
                );
            }
        }
    }

    #[test]
    fn batch_is_the_same_as_one_by_one() {
        let ids: Vec<String> = (0..50).map(|i| format!("m{i}")).collect();
        let mut a = MemberExpiry::new(0);
        let mut b = MemberExpiry::new(0);
        let g1 = b"g1".to_vec();
        let items: Vec<(&[u8], &[u8], i64)> = ids
            .iter()
            .enumerate()
            .map(|(i, m)| {
                (
                    if i % 7 == 0 { &b"g2"[..] } else { &g1[..] },
                    m.as_bytes(),
                    100 + (i % 5) as i64,
                )
            })
            .collect();
        for &(g, m, d) in &items {
            a.set_deadline(g, m, Kind::Session, d);
        }
        b.set_deadlines(Kind::Session, &items);
        assert_eq!(expire(&mut a, 1_000), expire(&mut b, 1_000));
    }

    #[test]
    fn a_reused_slot_does_not_revive_the_old_handle() {
        let mut t = MemberExpiry::new(0);
        t.heartbeat(b"g", b"a", 0, 10).unwrap();
        let a = t.handle(b"g", b"a").unwrap();
        assert_eq!(t.handle(b"g", b"a"), Some(a));
        expire(&mut t, 10); // a's only deadline: a is forgotten, its slot freed
        assert_eq!(t.handle(b"g", b"a"), None);
        t.heartbeat(b"g", b"b", 10, 10).unwrap();
        let b = t.handle(b"g", b"b").unwrap();
        assert_eq!(a.slot(), b.slot(), "the slot is reused");
        assert_ne!(a, b);
        let stale = Err(StaleHandle {
            index: 0,
            handle: a.0,
        });
        assert_eq!(t.set_deadline_by_handle(a.0, Kind::Session, 99), stale);
        // A batch with a stale handle changes nothing, not even the live handles before it.
        assert_eq!(
            t.set_deadlines_by_handle(Kind::Join, &[b.0, a.0], Deadlines::All(50)),
            Err(StaleHandle {
                index: 1,
                handle: a.0
            })
        );
        assert_eq!(t.deadline(b"g", b"b", Kind::Join), None);
        t.set_deadlines_by_handle(Kind::Join, &[b.0], Deadlines::All(50))
            .unwrap();
        assert_eq!(t.deadline(b"g", b"b", Kind::Join), Some(50));
        assert_eq!(t.deadline(b"g", b"b", Kind::Session), Some(20));
        t.check_invariants().unwrap();
    }

    #[test]
    fn generations_wrap_within_their_bits() {
        let mut t = MemberExpiry::new(0);
        t.heartbeat(b"g", b"a", 0, 10).unwrap();
        // Pretend the slot has been reused GENERATIONS - 1 times.
        t.stamps[0] = ((GENERATIONS - 1) << PENDING_BITS) | u32::from(Kind::Session.bit());
        let old = t.handle(b"g", b"a").unwrap();
        assert_eq!(old.generation(), u64::from(GENERATIONS - 1));
        assert!(old.0 < 1 << 63);
        assert!(t.clear(b"g", b"a", None));
        t.heartbeat(b"g", b"a", 0, 10).unwrap();
        let new = t.handle(b"g", b"a").unwrap();
        assert_eq!((new.slot(), new.generation()), (0, 0));
        assert!(!t.is_live(old.0));
        // Handles with generation bits no slot can have are stale, not a panic.
        assert!(!t.is_live(u64::MAX));
        assert!(!t.is_live(1 << 62));
    }

    // --- model-based property test ---------------------------------------------------------

    type Model = BTreeMap<(Vec<u8>, Vec<u8>, Kind), i64>;

    #[derive(Clone, Debug)]
    enum Op {
        Set(usize, usize, Kind, i64),
        Clear(usize, usize, Option<Kind>),
        RemoveGroup(usize),
        Expire(i64),
        NextDeadline,
        /// Ask for the handle of (group, member).
        GetHandle(usize, usize),
        /// Set a deadline by the n-th handle ever issued (modulo the count), live or stale.
        SetByHandle(usize, Kind, i64),
        /// A batch by handles (indices as above), one deadline each.
        SetManyByHandle(Kind, Vec<(usize, i64)>),
        /// A handle never issued: must be stale unless it happens to equal a live one.
        ForgedHandle(u64, Kind),
    }

    const GROUPS: [&[u8]; 3] = [b"", b"g", b"\xc3\xa9t\xc3\xa9"];
    const MEMBERS: [&[u8]; 4] = [
        b"a",
        b"b",
        b"a-longer-member-id-0123456789",
        b"\xed\xa0\x80",
    ];

    fn kind() -> impl Strategy<Value = Kind> {
        prop_oneof![Just(Kind::Session), Just(Kind::Join), Just(Kind::Sync)]
    }

    fn offset() -> impl Strategy<Value = i64> {
        prop_oneof![
            Just(0i64),
            -50i64..0,
            1i64..200,
            (0u32..40).prop_map(|b| 1i64 << b)
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0..GROUPS.len(), 0..MEMBERS.len(), kind(), offset()).prop_map(|(g, m, k, o)| Op::Set(g, m, k, o)),
            2 => (0..GROUPS.len(), 0..MEMBERS.len(), proptest::option::of(kind())).prop_map(|(g, m, k)| Op::Clear(g, m, k)),
            1 => (0..GROUPS.len()).prop_map(Op::RemoveGroup),
            3 => offset().prop_map(|o| Op::Expire(o.max(0))),
            1 => Just(Op::NextDeadline),
            3 => (0..GROUPS.len(), 0..MEMBERS.len()).prop_map(|(g, m)| Op::GetHandle(g, m)),
            4 => (any::<usize>(), kind(), offset()).prop_map(|(i, k, o)| Op::SetByHandle(i, k, o)),
            2 => (kind(), proptest::collection::vec((any::<usize>(), offset()), 0..6))
                .prop_map(|(k, items)| Op::SetManyByHandle(k, items)),
            1 => (prop_oneof![0u64..8, (0u64..8).prop_map(|s| s | 1 << 32), any::<u64>()], kind())
                .prop_map(|(h, k)| Op::ForgedHandle(h, k)),
        ]
    }

    proptest! {
        // 512 cases by default; PROPTEST_CASES=100000 for a deeper run.
        #![proptest_config(ProptestConfig::with_cases(
            std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(512)
        ))]

        #[test]
        fn table_matches_a_sorted_map(ops in proptest::collection::vec(op(), 1..100)) {
            let mut t = MemberExpiry::new(0);
            let mut model = Model::new();
            let mut now = 0i64;
            // Every handle issued, in order, and which of them are live (with their member).
            let mut issued: Vec<u64> = Vec::new();
            let mut live: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
            let tracked = |model: &Model, g: usize, m: usize| {
                model.keys().any(|(mg, mm, _)| mg == GROUPS[g] && mm == MEMBERS[m])
            };
            for op in ops {
                match op {
                    Op::Set(g, m, k, o) => {
                        t.set_deadline(GROUPS[g], MEMBERS[m], k, now + o);
                        model.insert((GROUPS[g].to_vec(), MEMBERS[m].to_vec(), k), now + o);
                    }
                    Op::Clear(g, m, k) => {
                        let before = model.len();
                        model.retain(|(mg, mm, mk), _| {
                            !(mg == GROUPS[g] && mm == MEMBERS[m] && k.is_none_or(|k| k == *mk))
                        });
                        prop_assert_eq!(t.clear(GROUPS[g], MEMBERS[m], k), model.len() < before);
                    }
                    Op::RemoveGroup(g) => {
                        let mut members: Vec<&Vec<u8>> =
                            model.keys().filter(|(mg, _, _)| mg == GROUPS[g]).map(|(_, m, _)| m).collect();
                        members.dedup();
                        let expected = members.len();
                        model.retain(|(mg, _, _), _| mg != GROUPS[g]);
                        prop_assert_eq!(t.remove_group(GROUPS[g]), expected);
                    }
                    Op::Expire(o) => {
                        now += o;
                        let mut expected: Vec<(i64, Vec<u8>, Vec<u8>, Kind)> = model
                            .iter()
                            .filter(|(_, &d)| d <= now)
                            .map(|((g, m, k), &d)| (d, g.clone(), m.clone(), *k))
                            .collect();
                        expected.sort();
                        model.retain(|_, d| *d > now);
                        let mut out = Vec::new();
                        t.expire(now, &mut out).unwrap();
                        let got: Vec<(i64, Vec<u8>, Vec<u8>, Kind)> =
                            out.into_iter().map(|e| (e.deadline_ms, e.group.to_vec(), e.member.to_vec(), e.kind)).collect();
                        prop_assert_eq!(got, expected);
                    }
                    Op::NextDeadline => {
                        prop_assert_eq!(t.next_deadline(), model.values().min().copied());
                    }
                    Op::GetHandle(g, m) => {
                        let got = t.handle(GROUPS[g], MEMBERS[m]).map(|h| h.0);
                        prop_assert_eq!(got.is_some(), tracked(&model, g, m));
                        if let Some(h) = got {
                            prop_assert!(h < 1 << 63, "handle {} does not fit an i64", h);
                            // The same member keeps its handle while it stays live; no live
                            // handle names two members.
                            let same = live.iter().find(|(_, &gm)| gm == (g, m)).map(|(&h, _)| h);
                            prop_assert!(same.is_none_or(|s| s == h), "member got a second handle");
                            prop_assert!(live.get(&h).is_none_or(|&gm| gm == (g, m)), "handle names two members");
                            live.insert(h, (g, m));
                            issued.push(h);
                        }
                    }
                    Op::SetByHandle(i, k, o) => {
                        if let Some(&h) = issued.get(i % issued.len().max(1)) {
                            let result = t.set_deadline_by_handle(h, k, now + o);
                            match live.get(&h) {
                                Some(&(g, m)) => {
                                    prop_assert_eq!(result, Ok(()));
                                    model.insert((GROUPS[g].to_vec(), MEMBERS[m].to_vec(), k), now + o);
                                }
                                None => prop_assert_eq!(result, Err(StaleHandle { index: 0, handle: h })),
                            }
                        }
                    }
                    Op::SetManyByHandle(k, items) => {
                        if !issued.is_empty() {
                            let hs: Vec<u64> = items.iter().map(|&(i, _)| issued[i % issued.len()]).collect();
                            let ds: Vec<i64> = items.iter().map(|&(_, o)| now + o).collect();
                            let result = t.set_deadlines_by_handle(k, &hs, Deadlines::Each(&ds));
                            match hs.iter().position(|h| !live.contains_key(h)) {
                                Some(index) => prop_assert_eq!(result, Err(StaleHandle { index, handle: hs[index] })),
                                None => {
                                    prop_assert_eq!(result, Ok(()));
                                    for (h, d) in hs.iter().zip(ds) {
                                        let (g, m) = live[h];
                                        model.insert((GROUPS[g].to_vec(), MEMBERS[m].to_vec(), k), d);
                                    }
                                }
                            }
                        }
                    }
                    Op::ForgedHandle(h, k) => {
                        // Live only if it happens to be the handle of a tracked member.
                        let owner = (0..GROUPS.len())
                            .flat_map(|g| (0..MEMBERS.len()).map(move |m| (g, m)))
                            .find(|&(g, m)| t.handle(GROUPS[g], MEMBERS[m]).map(|x| x.0) == Some(h));
                        let result = t.set_deadline_by_handle(h, k, now);
                        match owner {
                            Some((g, m)) => {
                                prop_assert_eq!(result, Ok(()));
                                model.insert((GROUPS[g].to_vec(), MEMBERS[m].to_vec(), k), now);
                                live.insert(h, (g, m));
                                issued.push(h);
                            }
                            None => prop_assert_eq!(result, Err(StaleHandle { index: 0, handle: h })),
                        }
                    }
                }
                // A handle dies with the last pending deadline of its member.
                live.retain(|_, &mut (g, m)| tracked(&model, g, m));
                for &h in &issued {
                    prop_assert_eq!(t.is_live(h), live.contains_key(&h), "liveness of handle {}", h);
                }
                prop_assert_eq!(t.len(), model.len());
                if let Err(e) = t.check_invariants() {
                    return Err(TestCaseError::fail(e));
                }
                for ((g, m, k), &d) in &model {
                    prop_assert_eq!(t.deadline(g, m, *k), Some(d));
                }
            }
        }
    }
}
