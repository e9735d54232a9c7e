//! The group as the assignment algorithms see it: dense integers, no strings.
//!
//! Topics are interned in sorted-name order and their partitions numbered densely,
//! topic by topic, so dense-id order is (topic, partition) order: `offsets[t]` is
//! the first dense id of topic `t` and `offsets[t + 1]` one past its last. Members
//! are indexed in sorted member-id order, which makes every algorithm's output
//! independent of the order in which the caller listed them.
//!
//! Capacity: dense ids are `u32`, so a group may hold at most `u32::MAX - 1`
//! partitions in all (Kafka's own limit per topic is `i32::MAX`).

use super::rack::{RackId, Racks, NO_RACK};
use rustc_hash::FxHashMap;
use std::fmt;
use std::sync::Arc;

pub type TopicId = u32;
pub type MemberIdx = u32;
/// A partition's position in (topic, partition) order over the whole group.
pub type DenseId = u32;

/// Marks "no member" in per-partition owner tables.
pub const UNOWNED: MemberIdx = MemberIdx::MAX;

/// Input the algorithms refuse; the bindings turn it into `InvalidAssignorInput`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AssignError {
    NegativePartitionCount { topic: String, count: i64 },
    TooManyPartitions { topic: String },
    EmptyMemberId,
    DuplicateMemberId(String),
    DuplicateTopic(String),
}

impl fmt::Display for AssignError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NegativePartitionCount { topic, count } => {
                write!(
                    f,
                    "topic {topic:?} has a negative partition count ({count})"
                )
            }
            Self::TooManyPartitions { topic } => {
                write!(
                    f,
                    "topic {topic:?} takes the group past the partition limit"
                )
            }
            Self::EmptyMemberId => write!(f, "member ids must be non-empty strings"),
            Self::DuplicateMemberId(id) => write!(f, "duplicate member id {id:?}"),
            Self::DuplicateTopic(t) => write!(f, "topic {t:?} is listed twice"),
        }
    }
}

impl std::error::Error for AssignError {}

/// One member, interned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Member {
    pub id: String,
    pub instance_id: Option<String>,
    /// Sorted, distinct ids of the existing topics it subscribes to (shared between
    /// members with equal subscriptions).
    pub topics: Arc<[TopicId]>,
    /// Distinct valid claims (existing topic, partition in range), on any topic.
    pub claims: Vec<DenseId>,
    /// The subset of `claims` on topics the member still subscribes to, when that is
    /// not all of them ([`Member::subscribed_claims`]): usually it is, and a million
    /// claims are not copied to say so.
    subscribed: Option<Vec<DenseId>>,
    pub generation: i32,
    /// As given; [`GroupModel::racks`] holds it interned.
    pub rack: Option<String>,
}

impl Member {
    /// The subset of `claims` on topics the member still subscribes to, in order.
    pub fn subscribed_claims(&self) -> &[DenseId] {
        self.subscribed.as_deref().unwrap_or(&self.claims)
    }
}

#[derive(Debug, Clone, Default)]
pub struct GroupModel {
    pub topic_names: Vec<String>,
    pub offsets: Vec<DenseId>,
    pub members: Vec<Member>,
    /// KIP-881 rack data; `None` unless some member has a rack and some partition
    /// has replica racks (without both nothing can be rack-local).
    pub racks: Option<Racks>,
}

impl GroupModel {
    pub fn num_partitions(&self) -> usize {
        *self.offsets.last().unwrap_or(&0) as usize
    }

    pub fn num_members(&self) -> usize {
        self.members.len()
    }

    pub fn num_topics(&self) -> usize {
        self.topic_names.len()
    }

    /// The dense ids of topic `t`.
    pub fn partitions_of(&self, t: TopicId) -> std::ops::Range<DenseId> {
        self.offsets[t as usize]..self.offsets[t as usize + 1]
    }

    /// Per topic id: the member indexes subscribed to it, ascending.
    pub fn subscribers(&self) -> Vec<Vec<MemberIdx>> {
        let mut subs = vec![Vec::new(); self.num_topics()];
        for (m, member) in self.members.iter().enumerate() {
            for &t in member.topics.iter() {
                subs[t as usize].push(m as MemberIdx);
            }
        }
        subs
    }

    /// The topic of a dense id (binary search over `offsets`).
    pub fn topic_of(&self, p: DenseId) -> TopicId {
        (self.offsets.partition_point(|&o| o <= p) - 1) as TopicId
    }
}

/// A shared list of topic ids.
pub type Topics = Arc<[TopicId]>;

/// A member as the caller describes it, before interning.
#[derive(Debug, Clone, Default)]
pub struct MemberSpec {
    pub id: String,
    pub instance_id: Option<String>,
    /// Any order, repeats allowed; members with equal subscriptions may share one list
    /// (the model then shares the sorted one too).
    pub topics: Arc<[TopicId]>,
    /// Claimed partitions as (topic, partition); unknown topics are already dropped
    /// by the caller (it interns names through [`ModelBuilder::topic_id`]).
    pub owned: Vec<(TopicId, i64)>,
    /// Claims already as dense ids of this builder's topic table, ascending and
    /// distinct: a plan this table produced, kept by a caller that recomputes the
    /// same group, or claims a caller read in ascending order (a million `owned`
    /// pairs are not converted, checked and stamped again). Taken instead of `owned`,
    /// which is then empty.
    pub held: Vec<DenseId>,
    pub generation: i32,
    /// Subscription v3 `rack_id`; `None` and `""` both mean no rack (as in Java).
    pub rack: Option<String>,
}

/// Interns topics once, then takes members one by one.
pub struct ModelBuilder {
    topic_names: Vec<String>,
    index: FxHashMap<String, TopicId>,
    offsets: Vec<DenseId>,
    members: Vec<MemberSpec>,
    /// (dense id, replica racks) as the caller gave them.
    partition_racks: Vec<(DenseId, Vec<String>)>,
}

impl ModelBuilder {
    /// `topics`: (name, partition count) in any order.
    pub fn new(mut topics: Vec<(String, i64)>) -> Result<Self, AssignError> {
        topics.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut offsets = Vec::with_capacity(topics.len() + 1);
        offsets.push(0u32);
        let mut total: u64 = 0;
        for (i, (name, count)) in topics.iter().enumerate() {
            if i > 0 && topics[i - 1].0 == *name {
                return Err(AssignError::DuplicateTopic(name.clone()));
            }
            if *count < 0 {
                return Err(AssignError::NegativePartitionCount {
                    topic: name.clone(),
                    count: *count,
                });
            }
            total += *count as u64;
            if *count > i32::MAX as i64 || total >= u64::from(UNOWNED) {
                return Err(AssignError::TooManyPartitions {
                    topic: name.clone(),
                });
            }
            offsets.push(total as DenseId);
        }
        let index = topics
            .iter()
            .enumerate()
            .map(|(t, (name, _))| (name.clone(), t as TopicId))
            .collect();
        Ok(Self {
            topic_names: topics.into_iter().map(|(name, _)| name).collect(),
            index,
            offsets,
            members: Vec::new(),
            partition_racks: Vec::new(),
        })
    }

    pub fn topic_id(&self, name: &str) -> Option<TopicId> {
        self.index.get(name).copied()
    }

    /// [`Self::topic_id`] for names that mostly come in sorted order (as encoders
    /// write them): the topic after `hint`, then `hint` itself, are compared before
    /// hashing. `hint` is updated to the answer.
    #[inline]
    pub fn topic_id_near(&self, name: &str, hint: &mut Option<TopicId>) -> Option<TopicId> {
        if let Some(h) = *hint {
            let next = h as usize + 1;
            if self.topic_names.get(next).is_some_and(|n| n == name) {
                *hint = Some(next as TopicId);
                return *hint;
            }
            if self.topic_names[h as usize] == name {
                return *hint;
            }
        }
        let found = self.topic_id(name);
        if found.is_some() {
            *hint = found;
        }
        found
    }

    pub fn num_topics(&self) -> usize {
        self.topic_names.len()
    }

    /// The dense ids of topic `t` (as [`GroupModel::partitions_of`] will number them).
    pub fn partitions_of(&self, t: TopicId) -> std::ops::Range<DenseId> {
        self.offsets[t as usize]..self.offsets[t as usize + 1]
    }

    /// The topic of dense id `p` (binary search, as [`GroupModel::topic_of`]).
    pub fn topic_of(&self, p: DenseId) -> TopicId {
        (self.offsets.partition_point(|&o| o <= p) - 1) as TopicId
    }

    /// Whether this builder's topic table is `names` with dense `offsets` (a kept
    /// model's): then dense ids mean the same partitions in both, and a plan of the
    /// kept model can be passed as [`MemberSpec::held`].
    pub fn same_topics(&self, names: &[String], offsets: &[DenseId]) -> bool {
        self.offsets == offsets && self.topic_names == names
    }

    pub fn push_member(&mut self, member: MemberSpec) {
        self.members.push(member);
    }

    /// [`Self::push_member`] of each of `members`, taking the vector itself when it is
    /// the first (ten thousand specs are not moved one by one into another).
    pub fn push_members(&mut self, mut members: Vec<MemberSpec>) {
        if self.members.is_empty() {
            std::mem::swap(&mut self.members, &mut members);
        } else {
            self.members.append(&mut members);
        }
    }

    /// The replica racks of partition `partition` of topic `t`. Partitions outside the
    /// topic's range are ignored, as metadata for partitions the group cannot see is.
    pub fn add_partition_racks(&mut self, t: TopicId, partition: i64, racks: Vec<String>) {
        let (lo, hi) = (self.offsets[t as usize], self.offsets[t as usize + 1]);
        if partition >= 0 && partition < i64::from(hi - lo) && !racks.is_empty() {
            self.partition_racks
                .push((lo + partition as DenseId, racks));
        }
    }

    pub fn build(self) -> Result<GroupModel, AssignError> {
        let mut specs = self.members;
        specs.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        for (i, spec) in specs.iter().enumerate() {
            if spec.id.is_empty() {
                return Err(AssignError::EmptyMemberId);
            }
            if i > 0 && specs[i - 1].id == spec.id {
                return Err(AssignError::DuplicateMemberId(spec.id.clone()));
            }
        }
        let offsets = self.offsets;
        let num_partitions = *offsets.last().unwrap_or(&0) as usize;
        let racks = intern_racks(&specs, self.partition_racks, num_partitions);
        // stamp[p] == m + 1 while member m's claims are read: O(1) de-duplication.
        let mut stamp = vec![0u32; num_partitions];
        let mut subscribed = vec![false; self.topic_names.len()];
        let mut members = Vec::with_capacity(specs.len());
        // Members with equal subscriptions share one sorted topic list: a group of 10,000
        // members on 1,000 topics sorted and stored ten million ids otherwise. `last`:
        // the previous member's list as given and as sorted.
        let mut last: Option<(Topics, Topics)> = None;
        let mut marked: Option<Topics> = None;
        for (m, spec) in specs.into_iter().enumerate() {
            let topics = match &last {
                Some((raw, shared)) if Arc::ptr_eq(raw, &spec.topics) || *raw == spec.topics => {
                    Arc::clone(shared)
                }
                _ => {
                    let shared: Arc<[TopicId]> = if spec.topics.windows(2).all(|w| w[0] < w[1]) {
                        Arc::clone(&spec.topics)
                    } else {
                        let mut sorted = spec.topics.to_vec();
                        sorted.sort_unstable();
                        sorted.dedup();
                        sorted.into()
                    };
                    last = Some((Arc::clone(&spec.topics), Arc::clone(&shared)));
                    shared
                }
            };
            // `subscribed` marks the topics of `marked`, re-marked only when a member
            // with claims has another list (members mostly share one).
            let has_claims = !spec.owned.is_empty() || !spec.held.is_empty();
            if has_claims && !marked.as_ref().is_some_and(|k| Arc::ptr_eq(k, &topics)) {
                for &t in marked.iter().flat_map(|k| k.iter()) {
                    subscribed[t as usize] = false;
                }
                for &t in topics.iter() {
                    subscribed[t as usize] = true;
                }
                marked = Some(Arc::clone(&topics));
            }
            if !spec.held.is_empty() {
                debug_assert!(spec.owned.is_empty(), "held and owned claims together");
                debug_assert!(spec.held.windows(2).all(|w| w[0] < w[1]));
                debug_assert!(spec
                    .held
                    .last()
                    .is_some_and(|&p| (p as usize) < num_partitions));
                let subscribed = subscribed_runs(&offsets, &subscribed, &spec.held);
                members.push(Member {
                    id: spec.id,
                    instance_id: spec.instance_id,
                    topics,
                    claims: spec.held,
                    subscribed,
                    generation: spec.generation,
                    rack: spec.rack,
                });
                continue;
            }
            let mut claims = Vec::with_capacity(spec.owned.len());
            let mut subscribed_claims = Vec::with_capacity(spec.owned.len());
            let mark = m as u32 + 1;
            for (t, partition) in spec.owned {
                let (lo, hi) = (offsets[t as usize], offsets[t as usize + 1]);
                if partition < 0 || partition >= i64::from(hi - lo) {
                    continue;
                }
                let p = lo + partition as DenseId;
                if stamp[p as usize] == mark {
                    continue;
                }
                stamp[p as usize] = mark;
                claims.push(p);
                if subscribed[t as usize] {
                    subscribed_claims.push(p);
                }
            }
            let subscribed = (subscribed_claims.len() < claims.len()).then_some(subscribed_claims);
            members.push(Member {
                id: spec.id,
                instance_id: spec.instance_id,
                topics,
                claims,
                subscribed,
                generation: spec.generation,
                rack: spec.rack,
            });
        }
        Ok(GroupModel {
            topic_names: self.topic_names,
            offsets,
            members,
            racks,
        })
    }
}

/// The claims of `held` (ascending dense ids) on topics marked in `subscribed`, in
/// order, or `None` when that is all of them. Walked a topic's run at a time: a kept
/// plan holds long runs of one topic.
fn subscribed_runs(
    offsets: &[DenseId],
    subscribed: &[bool],
    held: &[DenseId],
) -> Option<Vec<DenseId>> {
    let mut out: Option<Vec<DenseId>> = None;
    let mut start = 0;
    while start < held.len() {
        let t = offsets.partition_point(|&o| o <= held[start]) - 1;
        let end = start + held[start..].partition_point(|&p| p < offsets[t + 1]);
        match (&mut out, subscribed[t]) {
            (Some(out), true) => out.extend_from_slice(&held[start..end]),
            (Some(_), false) => {}
            // the first run left out: what came before it was all subscribed
            (None, false) => out = Some(held[..start].to_vec()),
            (None, true) => {}
        }
        start = end;
    }
    out
}

/// Rack names interned in sorted order; `None` when no member has a rack or no
/// partition has one. `specs` are already in member-index order.
fn intern_racks(
    specs: &[MemberSpec],
    partition_racks: Vec<(DenseId, Vec<String>)>,
    num_partitions: usize,
) -> Option<Racks> {
    let member_has_rack = |s: &MemberSpec| s.rack.as_deref().is_some_and(|r| !r.is_empty());
    if partition_racks.is_empty() || !specs.iter().any(member_has_rack) {
        return None;
    }
    let mut names: Vec<String> = specs
        .iter()
        .filter(|s| member_has_rack(s))
        .filter_map(|s| s.rack.clone())
        .chain(partition_racks.iter().flat_map(|(_, r)| r.iter().cloned()))
        .collect();
    names.sort_unstable();
    names.dedup();
    let index: FxHashMap<&str, RackId> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i as RackId))
        .collect();
    let member_rack = specs
        .iter()
        .map(|s| match s.rack.as_deref() {
            Some(r) if !r.is_empty() => index[r],
            _ => NO_RACK,
        })
        .collect();
    let mut rows: Vec<Vec<RackId>> = vec![Vec::new(); num_partitions];
    for (p, racks) in &partition_racks {
        rows[*p as usize].extend(racks.iter().map(|r| index[r.as_str()]));
    }
    let mut starts = Vec::with_capacity(num_partitions + 1);
    let mut ids = Vec::new();
    starts.push(0u32);
    for mut row in rows {
        row.sort_unstable();
        row.dedup();
        ids.extend_from_slice(&row);
        starts.push(ids.len() as u32);
    }
    Some(Racks {
        names,
        member_rack,
        starts,
        ids,
    })
}

/// Per member: its assigned dense ids, ascending.
pub type Plan = Vec<Vec<DenseId>>;

/// Invert a per-partition owner table into sorted per-member lists in one pass.
pub fn collect(owner: &[MemberIdx], num_members: usize) -> Plan {
    let mut counts = vec![0usize; num_members];
    for &m in owner {
        if m != UNOWNED {
            counts[m as usize] += 1;
        }
    }
    let mut plan: Plan = counts.iter().map(|&c| Vec::with_capacity(c)).collect();
    for (p, &m) in owner.iter().enumerate() {
        if m != UNOWNED {
            plan[m as usize].push(p as DenseId);
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builder() -> ModelBuilder {
        ModelBuilder::new(vec![("b".into(), 3), ("a".into(), 2), ("c".into(), 0)]).unwrap()
    }

    #[test]
    fn topics_are_interned_in_sorted_order_with_dense_offsets() {
        let b = builder();
        assert_eq!(b.topic_id("a"), Some(0));
        assert_eq!(b.topic_id("b"), Some(1));
        assert_eq!(b.topic_id("c"), Some(2));
        let model = b.build().unwrap();
        assert_eq!(model.offsets, vec![0, 2, 5, 5]);
        assert_eq!(model.topic_of(0), 0);
        assert_eq!(model.topic_of(1), 0);
        assert_eq!(model.topic_of(2), 1);
        assert_eq!(model.topic_of(4), 1);
    }

    #[test]
    fn topic_hints_only_speed_up_lookups() {
        let b = builder();
        let mut hint = None;
        let answers: Vec<_> = ["a", "b", "b", "c", "a", "zz", "c"]
            .iter()
            .map(|n| b.topic_id_near(n, &mut hint))
            .collect();
        assert_eq!(
            answers,
            vec![Some(0), Some(1), Some(1), Some(2), Some(0), None, Some(2)]
        );
    }

    #[test]
    fn bad_topic_tables_are_refused() {
        assert!(matches!(
            ModelBuilder::new(vec![("t".into(), -1)]),
            Err(AssignError::NegativePartitionCount { .. })
        ));
        assert!(matches!(
            ModelBuilder::new(vec![("t".into(), 1), ("t".into(), 2)]),
            Err(AssignError::DuplicateTopic(_))
        ));
        assert!(matches!(
            ModelBuilder::new(vec![("t".into(), i64::from(i32::MAX) + 1)]),
            Err(AssignError::TooManyPartitions { .. })
        ));
    }

    #[test]
    fn claims_are_filtered_deduplicated_and_split_by_subscription() {
        let mut b = builder();
        b.push_member(MemberSpec {
            id: "m".into(),
            topics: vec![1, 1].into(),
            owned: vec![(0, 1), (1, 2), (1, 2), (1, 7), (1, -1)],
            generation: 4,
            ..Default::default()
        });
        let model = b.build().unwrap();
        let m = &model.members[0];
        assert_eq!(&*m.topics, &[1]);
        assert_eq!(m.claims, vec![1, 4]);
        assert_eq!(m.subscribed_claims(), &[4]);
    }

    #[test]
    fn members_are_sorted_and_ids_checked() {
        let mut b = builder();
        for id in ["z", "a"] {
            b.push_member(MemberSpec {
                id: id.into(),
                ..Default::default()
            });
        }
        let model = b.build().unwrap();
        assert_eq!(model.members[0].id, "a");
        let mut b = builder();
        b.push_member(MemberSpec::default());
        assert_eq!(b.build().unwrap_err(), AssignError::EmptyMemberId);
    }

    proptest::proptest! {
        /// Held claims (dense ids) build the members owned claims build, whichever
        /// members pass which (`mask` bit i: member i passes held ones).
        #[test]
        fn held_claims_build_what_owned_claims_build(
            sizes in proptest::collection::vec(0i64..6, 1..5),
            members in proptest::collection::vec(
                (proptest::collection::vec(0u32..5, 0..5), proptest::collection::vec(0u32..30, 0..12)),
                0..7,
            ),
            mask in 0u32..128,
        ) {
            let topics: Vec<(String, i64)> =
                sizes.iter().enumerate().map(|(i, &n)| (format!("t{i}"), n)).collect();
            let mut offsets = vec![0u32];
            for &n in &sizes {
                offsets.push(offsets.last().unwrap() + n as u32);
            }
            let total = *offsets.last().unwrap();
            let build = |mask: u32| {
                let mut b = ModelBuilder::new(topics.clone()).unwrap();
                assert!(b.same_topics(&b.topic_names.clone(), &offsets));
                for (i, (subscription, claims)) in members.iter().enumerate() {
                    let mut dense: Vec<DenseId> =
                        claims.iter().copied().filter(|&p| p < total).collect();
                    dense.sort_unstable();
                    dense.dedup();
                    let mut spec = MemberSpec {
                        id: format!("m{i}"),
                        topics: subscription
                            .iter()
                            .copied()
                            .filter(|&t| (t as usize) < sizes.len())
                            .collect(),
                        ..Default::default()
                    };
                    if mask & (1 << i) != 0 {
                        spec.held = dense;
                    } else {
                        spec.owned = dense
                            .iter()
                            .map(|&p| {
                                let t = offsets.partition_point(|&o| o <= p) - 1;
                                (t as TopicId, i64::from(p - offsets[t]))
                            })
                            .collect();
                    }
                    b.push_member(spec);
                }
                b.build().unwrap().members
            };
            proptest::prop_assert_eq!(build(mask), build(0));
        }
    }

    #[test]
    fn collect_inverts_owner_tables() {
        let plan = collect(&[1, UNOWNED, 0, 1], 3);
        assert_eq!(plan, vec![vec![2], vec![0, 3], vec![]]);
    }
}
