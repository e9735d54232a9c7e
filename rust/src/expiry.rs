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
//! Ids are opaque byte strings compared bytewise. The Python bindings pass UTF-8 (with
//! `surrogatepass`, so every `str` round-trips), whose byte order is code point order, i.e.
//! Python's `str` order: the tie-break below is the same as the reference's.
//!
//! This module has no PyO3: `crate::bindings::timer` adapts it to Python.

use std::collections::HashMap;
use std::sync::Arc;

use crate::timer::{FastBuild, Fired, TimeWentBackwards, TimerWheel};

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

struct Group {
    name: Arc<[u8]>,
    members: HashMap<Arc<[u8]>, u32, FastBuild>,
}

struct Member {
    group: u32,
    id: Arc<[u8]>,
    /// Bit `kind as u8` set iff that deadline is scheduled in the wheel.
    pending: u8,
}

/// Per-(group, member) SESSION / JOIN / SYNC deadlines with interned ids.
#[derive(Default)]
pub struct MemberExpiry {
    wheel: TimerWheel,
    groups: Vec<Option<Group>>,
    free_groups: Vec<u32>,
    group_index: HashMap<Arc<[u8]>, u32, FastBuild>,
    members: Vec<Option<Member>>,
    free_members: Vec<u32>,
    member_count: usize,
    /// Scratch for `expire`, kept to avoid an allocation per call.
    fired: Vec<Fired>,
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
        self.group_index.len()
    }

    /// Member handle slots allocated (live + free): stays at the peak member count, however
    /// many members come and go.
    pub fn member_slots(&self) -> usize {
        self.members.len()
    }

    /// Group handle slots allocated (live + free).
    pub fn group_slots(&self) -> usize {
        self.groups.len()
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
        let g = self.intern_group(group);
        let m = self.intern_member(g, member);
        self.schedule(m, kind, deadline_ms);
    }

    /// Sets the deadline of `kind` for many members at once: `items` yields
    /// `(group, member, deadline_ms)`. Consecutive items naming the same group by the same
    /// slice (same pointer and length, as the bindings produce for the same `str` object)
    /// skip the group lookup.
    pub fn set_deadlines<'a, I>(&mut self, kind: Kind, items: I)
    where
        I: IntoIterator<Item = (&'a [u8], &'a [u8], i64)>,
    {
        let mut last: Option<(*const u8, usize, u32)> = None;
        for (group, member, deadline) in items {
            let g = match last {
                Some((p, l, g)) if p == group.as_ptr() && l == group.len() => g,
                _ => {
                    let g = self.intern_group(group);
                    last = Some((group.as_ptr(), group.len(), g));
                    g
                }
            };
            let m = self.intern_member(g, member);
            self.schedule(m, kind, deadline);
        }
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
            self.member_mut(m).pending &= !k.bit();
        }
        if self.member_mut(m).pending == 0 {
            self.release_member(m);
        }
        cleared
    }

    /// Drops every deadline of every member of `group`; returns how many members it had.
    pub fn remove_group(&mut self, group: &[u8]) -> usize {
        let Some(&g) = self.group_index.get(group) else {
            return 0;
        };
        let entry = self.groups[g as usize]
            .take()
            .expect("indexed group is live");
        self.group_index.remove(group);
        self.free_groups.push(g);
        let count = entry.members.len();
        for (_, m) in entry.members {
            let member = self.members[m as usize]
                .take()
                .expect("group member is live");
            for k in Kind::ALL {
                if member.pending & k.bit() != 0 {
                    self.wheel.cancel(wheel_key(m, k));
                }
            }
            self.free_members.push(m);
            self.member_count -= 1;
        }
        count
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
            let group = self.groups[member.group as usize]
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
            let member = self.member_mut(m);
            member.pending &= !kind.bit();
            if member.pending == 0 {
                self.release_member(m);
            }
        }
        self.fired = fired;
        Ok(())
    }

    // --- interning ---------------------------------------------------------------------------

    fn lookup(&self, group: &[u8], member: &[u8]) -> Option<u32> {
        let &g = self.group_index.get(group)?;
        let group = self.groups[g as usize].as_ref()?;
        group.members.get(member).copied()
    }

    #[inline]
    fn intern_group(&mut self, name: &[u8]) -> u32 {
        if let Some(&g) = self.group_index.get(name) {
            return g;
        }
        let name: Arc<[u8]> = Arc::from(name);
        let group = Group {
            name: name.clone(),
            members: HashMap::default(),
        };
        let g = match self.free_groups.pop() {
            Some(g) => {
                self.groups[g as usize] = Some(group);
                g
            }
            None => {
                self.groups.push(Some(group));
                u32::try_from(self.groups.len() - 1).expect("fewer than 2^32 groups")
            }
        };
        self.group_index.insert(name, g);
        g
    }

    #[inline]
    fn intern_member(&mut self, g: u32, id: &[u8]) -> u32 {
        let group = self.groups[g as usize]
            .as_mut()
            .expect("interned group is live");
        if let Some(&m) = group.members.get(id) {
            return m;
        }
        let id: Arc<[u8]> = Arc::from(id);
        let member = Member {
            group: g,
            id: id.clone(),
            pending: 0,
        };
        let m = match self.free_members.pop() {
            Some(m) => {
                self.members[m as usize] = Some(member);
                m
            }
            None => {
                self.members.push(Some(member));
                // wheel_key(m, Sync) must fit a u64 and handles a u32: 2^32 members at most.
                u32::try_from(self.members.len() - 1).expect("fewer than 2^32 members")
            }
        };
        group.members.insert(id, m);
        self.member_count += 1;
        m
    }

    #[inline]
    fn schedule(&mut self, m: u32, kind: Kind, deadline_ms: i64) {
        self.member_mut(m).pending |= kind.bit();
        self.wheel.schedule(wheel_key(m, kind), deadline_ms);
    }

    #[inline]
    fn member_mut(&mut self, m: u32) -> &mut Member {
        self.members[m as usize]
            .as_mut()
            .expect("member handle is live")
    }

    /// Forgets a member with no pending deadline, and its group if that was the last member.
    fn release_member(&mut self, m: u32) {
        let member = self.members[m as usize]
            .take()
            .expect("released member is live");
        debug_assert_eq!(
            member.pending, 0,
            "releasing a member with pending deadlines"
        );
        self.free_members.push(m);
        self.member_count -= 1;
        let g = member.group;
        let group = self.groups[g as usize]
            .as_mut()
            .expect("member's group is live");
        group.members.remove(&member.id[..]);
        if group.members.is_empty() {
            let group = self.groups[g as usize].take().expect("checked above");
            self.group_index.remove(&group.name[..]);
            self.free_groups.push(g);
        }
    }

    // --- diagnostics -------------------------------------------------------------------------

    pub fn debug_state(&self) -> String {
        format!(
            "MemberExpiry {{ groups: {} ({} slots), members: {} ({} slots), {} }}",
            self.group_index.len(),
            self.groups.len(),
            self.member_count,
            self.members.len(),
            self.wheel.debug_state()
        )
    }

    /// Checks every invariant linking the intern tables and the wheel; O(n). For tests.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.wheel.check_invariants()?;
        let state = || self.debug_state();
        let mut live_members = 0usize;
        let mut pending_total = 0usize;
        for (m, slot) in self.members.iter().enumerate() {
            let Some(member) = slot else { continue };
            live_members += 1;
            let m = m as u32;
            if member.pending == 0 {
                return Err(format!(
                    "member {m} is live with nothing pending; {}",
                    state()
                ));
            }
            for k in Kind::ALL {
                let scheduled = self.wheel.contains(wheel_key(m, k));
                if scheduled != (member.pending & k.bit() != 0) {
                    return Err(format!(
                        "member {m} pending bits disagree with the wheel for {k:?}; {}",
                        state()
                    ));
                }
                pending_total += usize::from(scheduled);
            }
            let Some(group) = self
                .groups
                .get(member.group as usize)
                .and_then(Option::as_ref)
            else {
                return Err(format!("member {m} points at a dead group; {}", state()));
            };
            if group.members.get(&member.id[..]) != Some(&m) {
                return Err(format!(
                    "member {m} is not in its group's table; {}",
                    state()
                ));
            }
        }
        if live_members != self.member_count {
            return Err(format!(
                "member_count {} but {live_members} live; {}",
                self.member_count,
                state()
            ));
        }
        if pending_total != self.wheel.len() {
            return Err(format!("wheel holds keys of no member; {}", state()));
        }
        let mut live_groups = 0usize;
        for (g, slot) in self.groups.iter().enumerate() {
            let Some(group) = slot else { continue };
            live_groups += 1;
            if group.members.is_empty() {
                return Err(format!("group {g} is live with no members; {}", state()));
            }
            if self.group_index.get(&group.name[..]) != Some(&(g as u32)) {
                return Err(format!("group {g} is not indexed; {}", state()));
            }
            for &m in group.members.values() {
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
        if live_groups != self.group_index.len() {
            return Err(format!(
                "{live_groups} live groups, {} indexed; {}",
                self.group_index.len(),
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
        if !free_ok(&self.free_groups, self.groups.len(), &|g| {
            self.groups[g as usize].is_some()
        }) || self.free_groups.len() + live_groups != self.groups.len()
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
        b.set_deadlines(Kind::Session, items.iter().copied());
        assert_eq!(expire(&mut a, 1_000), expire(&mut b, 1_000));
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
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn table_matches_a_sorted_map(ops in proptest::collection::vec(op(), 1..100)) {
            let mut t = MemberExpiry::new(0);
            let mut model = Model::new();
            let mut now = 0i64;
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
