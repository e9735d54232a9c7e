//! The members whose heartbeats the native shell may answer itself, without Python.
//!
//! A heartbeat is most of a coordinator's traffic, and nearly always the same question:
//! is this still a current member of a Stable group in this generation? Python answers it
//! the first time (the coordinator is the authority) and then *admits* the member here,
//! with its generation, `group.instance.id`, session timeout and `MemberExpiry` handle.
//! From then on the I/O thread answers an identical heartbeat with no error and records
//! the session refresh; Python applies the refreshes to `MemberExpiry` (`take_refreshed`)
//! before each coordinator call, so the coordinator's deadlines are exact whenever it
//! looks at them. A member whose group's offsets cannot expire while it has members may
//! also have its commits taken here (`take_commit`, the same checks and refresh; what
//! else a commit needs is [`super::fast_commits`]).
//!
//! Why this is the coordinator's own answer (linearizable with Python's calls, all of
//! which hold this table's lock for their part):
//! - Python removes a group's members from here *before* any request that may change the
//!   group (JoinGroup, SyncGroup, LeaveGroup, ... : everything but Heartbeat,
//!   OffsetCommit, OffsetFetch and the reads). A heartbeat answered before that removal
//!   is one the coordinator would have answered the same way had it come first. The
//!   refreshes of the members removed are kept (`orphaned`) until the next
//!   `take_refreshed`, which Python calls after the removal and before the request, so
//!   none is lost and none is applied to a member the request may have removed.
//! - Deadlines: each `take_refreshed(now)` raises the table's *floor* to `now`, and a
//!   member is answered here only while its session deadline is above the floor (with the
//!   refresh time at least the floor). So a member the coordinator may expire at `now`
//!   (deadline <= now) is never refreshed behind its back; its heartbeat goes to Python.
//!   Python removes the group's members when one expires.
//!
//! Keys are the ids' UTF-8 bytes; the table is bounded by the coordinator's members.

use rustc_hash::FxHashMap;

use super::heartbeat_wire::HeartbeatFrame;
use super::member::Member;

/// One admitted member.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Lease {
    generation_id: i32,
    group_instance_id: Option<Box<[u8]>>,
    session_timeout_ms: i64,
    /// its `MemberExpiry` handle (live while the member has a pending deadline)
    handle: u64,
    /// its session deadline as of the last refresh (Python's or ours)
    deadline_ms: i64,
    /// its commits may be taken here too (`crate::net::fast_commits`): the coordinator
    /// said its group's offsets cannot expire while it has members
    takes_commits: bool,
    /// refreshed here since the last `take_refreshed`
    refreshed: bool,
}

/// A refresh to apply to `MemberExpiry`: the member's session deadline is now `deadline_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refresh {
    pub group_id: Box<[u8]>,
    pub member_id: Box<[u8]>,
    pub handle: u64,
    pub deadline_ms: i64,
}

/// An id's UTF-8 bytes.
type Id = Box<[u8]>;

#[derive(Debug, Default)]
pub struct FastHeartbeats {
    /// group id -> member id -> lease
    groups: FxHashMap<Id, FxHashMap<Id, Lease>>,
    /// (group, member) refreshed here since the last `take_refreshed` (each once)
    refreshed: Vec<(Id, Id)>,
    /// refreshes of members invalidated since the last `take_refreshed`: still owed to
    /// `MemberExpiry` (Python syncs after withdrawing a group and before its next
    /// coordinator call, so the members are still there)
    orphaned: Vec<Refresh>,
    /// the latest `now_ms` Python synced at: no refresh here is earlier, and no member
    /// whose deadline is at or below it is answered here
    floor_ms: i64,
    answered: u64,
}

impl FastHeartbeats {
    /// Python found `member_id` a current member of Stable `group_id` in `generation_id`,
    /// its session lasting until `deadline_ms`: answer its like heartbeats from now on.
    #[allow(clippy::too_many_arguments)]
    pub fn admit(
        &mut self,
        group_id: &[u8],
        member_id: &[u8],
        generation_id: i32,
        group_instance_id: Option<&[u8]>,
        session_timeout_ms: i64,
        handle: u64,
        deadline_ms: i64,
        takes_commits: bool,
    ) {
        let members = self.groups.entry(group_id.into()).or_default();
        let refreshed = members.get(member_id).is_some_and(|l| l.refreshed);
        members.insert(
            member_id.into(),
            Lease {
                generation_id,
                group_instance_id: group_instance_id.map(Into::into),
                session_timeout_ms,
                handle,
                deadline_ms,
                takes_commits,
                refreshed,
            },
        );
    }

    /// Answer `hb` here at `now_ms` (refreshing the member's session) if it is an admitted
    /// member's heartbeat in its generation and its session is alive above the floor.
    pub fn answer(&mut self, hb: &HeartbeatFrame<'_>, now_ms: i64) -> bool {
        let answered = self.refresh(&hb.member, now_ms, false).is_some();
        self.answered += u64::from(answered);
        answered
    }

    /// Take an OffsetCommit of `member` here at `now_ms` (its partitions checked by the
    /// caller): `Some(commit time)` and the session refreshed, as the coordinator does for
    /// a current member's commit, if the member is admitted, takes commits, and is in its
    /// generation and alive above the floor; else `None` and nothing changes. The commit
    /// time is `now_ms`, raised to the floor (no refresh is earlier than a sync).
    pub fn take_commit(&mut self, member: &Member<'_>, now_ms: i64) -> Option<i64> {
        self.refresh(member, now_ms, true)
    }

    /// The checks and the refresh both answers share; `Some(refresh time)`.
    fn refresh(&mut self, m: &Member<'_>, now_ms: i64, commit: bool) -> Option<i64> {
        let lease = self
            .groups
            .get_mut(m.group_id)
            .and_then(|ms| ms.get_mut(m.member_id))?;
        let now = now_ms.max(self.floor_ms);
        if lease.generation_id != m.generation_id
            || (m.group_instance_id.is_some()
                && m.group_instance_id != lease.group_instance_id.as_deref())
            || lease.deadline_ms <= now
            || (commit && !lease.takes_commits)
        {
            return None;
        }
        lease.deadline_ms = lease
            .deadline_ms
            .max(now.saturating_add(lease.session_timeout_ms));
        if !lease.refreshed {
            lease.refreshed = true;
            self.refreshed.push((m.group_id.into(), m.member_id.into()));
        }
        Some(now)
    }

    /// The group may change: answer none of its members here until Python admits them
    /// again.
    pub fn invalidate_group(&mut self, group_id: &[u8]) -> bool {
        match self.groups.remove_entry(group_id) {
            Some((g, members)) => {
                self.keep_refreshes(&g, members);
                true
            }
            None => false,
        }
    }

    /// Anything may change (a failed write, the topics changed): answer no one here until
    /// Python admits them again.
    pub fn invalidate_all(&mut self) {
        for (g, members) in std::mem::take(&mut self.groups) {
            self.keep_refreshes(&g, members);
        }
    }

    /// The refreshes still owed of a group's members being invalidated.
    fn keep_refreshes(&mut self, group_id: &Id, members: FxHashMap<Id, Lease>) {
        for (m, lease) in members {
            if lease.refreshed {
                self.orphaned.push(Refresh {
                    group_id: group_id.clone(),
                    member_id: m,
                    handle: lease.handle,
                    deadline_ms: lease.deadline_ms,
                });
            }
        }
    }

    /// Refreshes since the last call (of members admitted then, invalidated since or not),
    /// and raise the floor to `now_ms`: from here on nothing is refreshed earlier, and no
    /// member due by then is answered here.
    pub fn take_refreshed(&mut self, now_ms: i64) -> Vec<Refresh> {
        self.floor_ms = self.floor_ms.max(now_ms);
        // owed refreshes first: a member admitted again since has only later ones
        let mut out = std::mem::take(&mut self.orphaned);
        out.reserve(self.refreshed.len());
        for (g, m) in self.refreshed.drain(..) {
            // a member invalidated (and perhaps admitted again) since is not refreshed
            let lease = self.groups.get_mut(&g).and_then(|ms| ms.get_mut(&m));
            if let Some(lease) = lease.filter(|l| l.refreshed) {
                lease.refreshed = false;
                out.push(Refresh {
                    handle: lease.handle,
                    deadline_ms: lease.deadline_ms,
                    group_id: g,
                    member_id: m,
                });
            }
        }
        out
    }

    /// Admitted members.
    pub fn len(&self) -> usize {
        self.groups.values().map(FxHashMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Heartbeats answered here so far.
    pub fn answered(&self) -> u64 {
        self.answered
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hb<'a>(g: &'a str, m: &'a str, gen: i32, inst: Option<&'a str>) -> HeartbeatFrame<'a> {
        HeartbeatFrame {
            version: 4,
            correlation_id: 1,
            member: Member {
                group_id: g.as_bytes(),
                generation_id: gen,
                member_id: m.as_bytes(),
                group_instance_id: inst.map(str::as_bytes),
            },
        }
    }

    #[test]
    fn only_an_admitted_members_like_heartbeat_is_answered() {
        let mut t = FastHeartbeats::default();
        assert!(!t.answer(&hb("g", "m", 1, None), 0));
        t.admit(b"g", b"m", 1, Some(b"i"), 10_000, 7, 11_000, false);
        assert!(
            !t.answer(&hb("g", "m", 2, None), 2_000),
            "another generation"
        );
        assert!(!t.answer(&hb("g", "x", 1, None), 2_000), "another member");
        assert!(
            !t.answer(&hb("g", "m", 1, Some("j")), 2_000),
            "another instance"
        );
        assert!(t.answer(&hb("g", "m", 1, Some("i")), 2_000));
        assert!(t.answer(&hb("g", "m", 1, None), 3_000));
        let r = t.take_refreshed(3_500);
        assert_eq!(r.len(), 1, "one refresh per member per sync");
        assert_eq!((r[0].handle, r[0].deadline_ms), (7, 13_000));
        assert!(t.invalidate_group(b"g"));
        assert!(!t.answer(&hb("g", "m", 1, None), 4_000));
        assert!(t.take_refreshed(4_000).is_empty());
    }

    #[test]
    fn a_member_due_by_the_floor_goes_to_python() {
        let mut t = FastHeartbeats::default();
        t.admit(b"g", b"m", 1, None, 10_000, 7, 10_000, false);
        t.take_refreshed(10_000); // Python may expire it at 10,000
        assert!(
            !t.answer(&hb("g", "m", 1, None), 9_999),
            "its clock read early"
        );
        t.admit(b"g", b"m", 1, None, 10_000, 7, 20_000, false);
        assert!(t.answer(&hb("g", "m", 1, None), 9_999));
        // refreshed at the floor, not at the earlier clock reading
        assert_eq!(t.take_refreshed(10_000)[0].deadline_ms, 20_000);
    }

    #[test]
    fn a_commit_is_taken_only_for_a_member_that_takes_commits() {
        let mut t = FastHeartbeats::default();
        let m = Member {
            group_id: b"g",
            member_id: b"m",
            generation_id: 1,
            group_instance_id: None,
        };
        t.admit(b"g", b"m", 1, None, 10_000, 7, 11_000, false);
        assert_eq!(
            t.take_commit(&m, 2_000),
            None,
            "its group's offsets may expire"
        );
        assert!(t.take_refreshed(2_000).is_empty(), "nothing refreshed");
        t.admit(b"g", b"m", 1, None, 10_000, 7, 11_000, true);
        assert_eq!(
            t.take_commit(&m, 1_500),
            Some(2_000),
            "at the floor at least"
        );
        assert_eq!(t.take_refreshed(2_500)[0].deadline_ms, 12_000);
        let other = Member {
            generation_id: 2,
            ..m
        };
        assert_eq!(t.take_commit(&other, 3_000), None, "another generation");
        assert_eq!(t.answered(), 0, "a commit is not a heartbeat answered");
    }

    proptest! {
        /// Against a model: a member's heartbeat is answered (its commit taken) exactly
        /// when it is admitted (admitted to take commits), not invalidated since, in its
        /// generation, and alive above the floor; the refreshes taken are those of the
        /// members refreshed since, with the latest deadline (invalidated ones included).
        #[test]
        fn agrees_with_a_model(ops in prop::collection::vec((0u8..6, 0u8..3, 0u8..3, 0i32..2, 0i64..50, any::<bool>()), 1..80)) {
            let mut t = FastHeartbeats::default();
            // model: (g, m) -> (gen, deadline, refreshed, takes commits)
            let mut model: std::collections::BTreeMap<(u8, u8), (i32, i64, bool, bool)> = Default::default();
            let mut floor = 0i64;
            let mut now = 0i64;
            // refreshes of members invalidated since the last take: (g, m, deadline)
            let mut owed: Vec<(u8, u8, i64)> = Vec::new();
            for (op, g, m, gen, dt, commits) in ops {
                now += dt;
                let (gs, ms) = (format!("g{g}"), format!("m{m}"));
                match op {
                    0 => {
                        t.admit(gs.as_bytes(), ms.as_bytes(), gen, None, 100, 1, now + 100, commits);
                        let refreshed = model.get(&(g, m)).is_some_and(|e| e.2);
                        model.insert((g, m), (gen, now + 100, refreshed, commits));
                    }
                    1 | 2 | 5 => {
                        let commit = op == 5;
                        let got = if commit {
                            let who = Member { group_id: gs.as_bytes(), member_id: ms.as_bytes(), generation_id: gen, group_instance_id: None };
                            t.take_commit(&who, now).is_some()
                        } else {
                            t.answer(&hb(&gs, &ms, gen, None), now)
                        };
                        let eff = now.max(floor);
                        let want = match model.get_mut(&(g, m)) {
                            Some(e) if e.0 == gen && e.1 > eff && (!commit || e.3) => {
                                e.1 = e.1.max(eff + 100);
                                e.2 = true;
                                true
                            }
                            _ => false,
                        };
                        prop_assert_eq!(got, want);
                    }
                    3 => {
                        t.invalidate_group(gs.as_bytes());
                        for (k, e) in model.iter().filter(|(k, e)| k.0 == g && e.2) {
                            owed.push((k.0, k.1, e.1));
                        }
                        model.retain(|k, _| k.0 != g);
                    }
                    _ => {
                        floor = floor.max(now);
                        let mut got: Vec<_> = t.take_refreshed(now).into_iter()
                            .map(|r| (r.group_id, r.member_id, r.deadline_ms)).collect();
                        got.sort();
                        let id = |g: u8, m: u8| (
                            format!("g{g}").into_bytes().into_boxed_slice(),
                            format!("m{m}").into_bytes().into_boxed_slice());
                        let mut want: Vec<_> = owed.drain(..).map(|(g, m, d)| { let (g, m) = id(g, m); (g, m, d) })
                            .chain(model.iter_mut().filter(|(_, e)| e.2)
                                .map(|(k, e)| { e.2 = false; let (g, m) = id(k.0, k.1); (g, m, e.1) }))
                            .collect();
                        want.sort();
                        prop_assert_eq!(got, want);
                    }
                }
            }
            prop_assert_eq!(t.len(), model.len());
        }
    }
}
