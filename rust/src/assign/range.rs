//! RangeAssignor: per topic, contiguous ranges over the members subscribed to it;
//! the first `P % M` members (in Java's member order) get one partition more.
//!
//! With racks (KIP-881) it is Java's `RangeAssignor.assignPartitions` step for step:
//! when some topic is worth it ([`Racks::worth_using`]), rack-local partitions are
//! handed out first within each member's per-topic quota (topics with the same
//! subscribers and partition count together, partition `p` of all of them to one
//! member, so co-partitioning survives), then the usual ranges fill what is left.
//! The per-topic quotas are the ones without racks, so balance never moves.

use super::model::{DenseId, GroupModel, MemberIdx, Plan, TopicId};
use super::rack::Racks;
use std::cmp::Ordering;

/// Java's `MemberInfo` order: members with a group.instance.id first, by it; then
/// the others by member id. Member id breaks ties between equal instance ids so
/// the order is total (a real coordinator never admits two equal instance ids).
pub fn kafka_member_order(model: &GroupModel) -> Vec<MemberIdx> {
    let mut order: Vec<MemberIdx> = (0..model.num_members() as MemberIdx).collect();
    order.sort_unstable_by(|&a, &b| {
        let (ma, mb) = (&model.members[a as usize], &model.members[b as usize]);
        match (&ma.instance_id, &mb.instance_id) {
            (Some(x), Some(y)) => x.cmp(y).then_with(|| ma.id.cmp(&mb.id)),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => ma.id.cmp(&mb.id),
        }
    });
    order
}

pub fn assign(model: &GroupModel) -> Plan {
    if let Some(racks) = &model.racks {
        if let Some(plan) = rack_aware(model, racks) {
            return plan;
        }
    }
    plain(model)
}

/// Per topic id: its subscribers in Java's member order. Filled by walking the members
/// in that order once, rather than sorting each topic's list: at 10,000 members x 1,000
/// topics the sorts were most of the assignor's time.
fn subscribers_in_order(model: &GroupModel, order: &[MemberIdx]) -> Vec<Vec<MemberIdx>> {
    let mut counts = vec![0usize; model.num_topics()];
    for member in &model.members {
        for &t in member.topics.iter() {
            counts[t as usize] += 1;
        }
    }
    let mut subs: Vec<Vec<MemberIdx>> = counts.into_iter().map(Vec::with_capacity).collect();
    for &m in order {
        for &t in model.members[m as usize].topics.iter() {
            subs[t as usize].push(m);
        }
    }
    subs
}

fn plain(model: &GroupModel) -> Plan {
    let order = kafka_member_order(model);
    // Equal subscriptions (the usual case) share one list: `order` itself.
    let homogeneous = model
        .members
        .iter()
        .all(|m| m.topics == model.members[0].topics);
    let subs = if homogeneous {
        Vec::new()
    } else {
        subscribers_in_order(model, &order)
    };
    let topic_members = |t: usize| -> &[MemberIdx] {
        match (homogeneous, model.members.first()) {
            (true, Some(m)) if m.topics.binary_search(&(t as TopicId)).is_ok() => &order,
            (true, _) => &[],
            (false, _) => subs.get(t).map_or(&[], Vec::as_slice),
        }
    };
    // the i-th of a topic's `n` members gets `quota + (i < extra)` of its `count`
    // partitions; with fewer partitions than members, those past the first `count` none
    let share = |t: usize, n: usize| {
        let count = model.partitions_of(t as TopicId).len() as u32;
        let n = n as u32;
        (count / n, count % n, count.min(n) as usize)
    };
    // Each member's list allocated once at its size (a million partitions pushed through
    // doublings touch twice the memory). Homogeneous: counts by position in `order`,
    // `quota` for the first `taking` and one more for the first `extra`, as differences.
    let mut sizes = vec![0i64; model.num_members() + 1];
    for t in 0..model.num_topics() {
        let members = topic_members(t);
        if members.is_empty() {
            continue;
        }
        let (quota, extra, taking) = share(t, members.len());
        if homogeneous {
            sizes[0] += i64::from(quota) + 1;
            sizes[taking] -= i64::from(quota);
            sizes[extra as usize] -= 1;
        } else {
            for (i, &m) in members.iter().enumerate().take(taking) {
                sizes[m as usize] += i64::from(quota + u32::from((i as u32) < extra));
            }
        }
    }
    let mut plan: Plan = vec![Vec::new(); model.num_members()];
    let mut running = 0i64;
    for (i, &size) in sizes[..model.num_members()].iter().enumerate() {
        let (m, size) = if homogeneous {
            running += size;
            (order[i] as usize, running)
        } else {
            (i, size)
        };
        plan[m] = Vec::with_capacity(size as usize);
    }
    for t in 0..model.num_topics() {
        let members = topic_members(t);
        if members.is_empty() {
            continue;
        }
        let first = model.partitions_of(t as TopicId).start;
        let (quota, extra, taking) = share(t, members.len());
        for (i, &m) in members.iter().enumerate().take(taking) {
            let i = i as u32;
            let start = first + i * quota + i.min(extra);
            let len = quota + u32::from(i < extra);
            plan[m as usize].extend(start..start + len);
        }
    }
    debug_assert!(plan.iter().all(|p| p.len() == p.capacity()));
    plan
}

/// Java's `TopicAssignmentState`: one topic's subscribers (in Java's member order)
/// and how much of their quota each has used.
struct TopicState {
    topic: TopicId,
    consumers: Vec<MemberIdx>,
    first: DenseId,
    unassigned: Vec<bool>,
    left: usize,
    assigned: Vec<u32>,
    min_quota: u32,
    /// members that may still go one over `min_quota`
    extra_left: u32,
    worth_racks: bool,
}

impl TopicState {
    fn max_assignable(&self, i: usize) -> u32 {
        (self.min_quota + u32::from(self.extra_left > 0)).saturating_sub(self.assigned[i])
    }

    fn give(&mut self, plan: &mut Plan, i: usize, partitions: &[DenseId]) {
        for &p in partitions {
            self.unassigned[(p - self.first) as usize] = false;
        }
        self.left -= partitions.len();
        self.assigned[i] += partitions.len() as u32;
        if self.assigned[i] > self.min_quota {
            self.extra_left -= 1;
        }
        plan[self.consumers[i] as usize].extend_from_slice(partitions);
    }

    /// Java's `assignRanges`: each member in turn takes the first unassigned
    /// partitions `may_take` allows, up to what its quota still admits.
    fn assign_ranges(&mut self, plan: &mut Plan, may_take: impl Fn(MemberIdx, DenseId) -> bool) {
        let mut take = Vec::new();
        for i in 0..self.consumers.len() {
            if self.left == 0 {
                break;
            }
            let limit = self.max_assignable(i) as usize;
            let m = self.consumers[i];
            take.clear();
            for (k, &free) in self.unassigned.iter().enumerate() {
                if take.len() == limit {
                    break;
                }
                let p = self.first + k as DenseId;
                if free && may_take(m, p) {
                    take.push(p);
                }
            }
            if !take.is_empty() {
                self.give(plan, i, &take);
            }
        }
    }
}

fn rack_aware(model: &GroupModel, racks: &Racks) -> Option<Plan> {
    let mut states: Vec<TopicState> = Vec::new();
    let order = kafka_member_order(model);
    for (t, consumers) in subscribers_in_order(model, &order).into_iter().enumerate() {
        let range = model.partitions_of(t as TopicId);
        if consumers.is_empty() || range.is_empty() {
            continue;
        }
        let count = range.len() as u32;
        let n = consumers.len() as u32;
        states.push(TopicState {
            topic: t as TopicId,
            worth_racks: racks.worth_using(consumers.iter().copied(), range.clone()),
            first: range.start,
            unassigned: vec![true; count as usize],
            left: count as usize,
            assigned: vec![0; consumers.len()],
            min_quota: count / n,
            extra_left: count % n,
            consumers,
        });
    }
    if !states.iter().any(|s| s.worth_racks) {
        return None;
    }
    let mut plan: Plan = vec![Vec::new(); model.num_members()];
    let local = |m: MemberIdx, p: DenseId| !racks.mismatch(m, p);

    // Java's assignWithRackMatching groups topics by subscribers, then by the size of
    // their partition-rack table (the partition count when a subscriber has a rack,
    // else 0). Groups touch disjoint topics, so their order does not matter.
    let mut keys: Vec<(usize, usize)> = states
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let racked = s
                .consumers
                .iter()
                .any(|&m| racks.of_member(m) != super::rack::NO_RACK);
            (i, if racked { s.unassigned.len() } else { 0 })
        })
        .collect();
    keys.sort_by(|a, b| {
        (&states[a.0].consumers, a.1, states[a.0].topic).cmp(&(
            &states[b.0].consumers,
            b.1,
            states[b.0].topic,
        ))
    });
    let mut start = 0;
    while start < keys.len() {
        let same = |k: &(usize, usize)| {
            states[k.0].consumers == states[keys[start].0].consumers && k.1 == keys[start].1
        };
        let end = start + keys[start..].iter().take_while(|k| same(k)).count();
        let group: Vec<usize> = keys[start..end].iter().map(|k| k.0).collect();
        if group.len() > 1 {
            co_partitioned(&mut states, &group, keys[start].1, &mut plan, &local);
        } else if states[group[0]].worth_racks {
            states[group[0]].assign_ranges(&mut plan, local);
        }
        start = end;
    }
    for state in &mut states {
        state.assign_ranges(&mut plan, |_, _| true);
    }
    for partitions in &mut plan {
        partitions.sort_unstable();
    }
    Some(plan)
}

/// Java's `assignCoPartitionedWithRackMatching`: partition `p` of every topic of the
/// group goes to the first member (in order) local to all of them with quota left.
fn co_partitioned(
    states: &mut [TopicState],
    group: &[usize],
    num_partitions: usize,
    plan: &mut Plan,
    local: &impl Fn(MemberIdx, DenseId) -> bool,
) {
    let consumers = states[group[0]].consumers.clone();
    let mut remaining: Vec<usize> = (0..consumers.len()).collect();
    for p in 0..num_partitions as DenseId {
        let found = remaining.iter().position(|&i| {
            group.iter().all(|&s| {
                let state = &states[s];
                local(consumers[i], state.first + p) && state.max_assignable(i) > 0
            })
        });
        let Some(at) = found else { continue };
        let i = remaining[at];
        for &s in group {
            let first = states[s].first;
            states[s].give(plan, i, &[first + p]);
        }
        if group.iter().all(|&s| states[s].max_assignable(i) == 0) {
            remaining.remove(at);
            if remaining.is_empty() {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::invariants::{check_valid, groups};
    use super::super::model::{MemberSpec, ModelBuilder};
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn valid_and_each_topic_split_within_one(model in groups()) {
            let plan = assign(&model);
            check_valid(&model, &plan).map_err(TestCaseError::fail)?;
            for (t, members) in model.subscribers().iter().enumerate() {
                let counts: Vec<usize> = members
                    .iter()
                    .map(|&m| plan[m as usize].iter().filter(|&&p| model.topic_of(p) == t as u32).count())
                    .collect();
                if let (Some(min), Some(max)) = (counts.iter().min(), counts.iter().max()) {
                    prop_assert!(max - min <= 1, "topic {t}: {counts:?}");
                }
            }
        }
    }

    fn member(id: &str, instance: Option<&str>, topics: Vec<u32>) -> MemberSpec {
        MemberSpec {
            id: id.into(),
            instance_id: instance.map(Into::into),
            topics: topics.into(),
            ..Default::default()
        }
    }

    #[test]
    fn first_members_get_the_remainder() {
        let mut b = ModelBuilder::new(vec![("t".into(), 7)]).unwrap();
        for id in ["c", "a", "b"] {
            b.push_member(member(id, None, vec![0]));
        }
        let plan = assign(&b.build().unwrap());
        assert_eq!(plan, vec![vec![0, 1, 2], vec![3, 4], vec![5, 6]]);
    }

    #[test]
    fn static_members_sort_first_by_instance_id() {
        let mut b = ModelBuilder::new(vec![("t".into(), 3)]).unwrap();
        b.push_member(member("a", None, vec![0]));
        b.push_member(member("b", Some("z"), vec![0]));
        b.push_member(member("c", Some("y"), vec![0]));
        let plan = assign(&b.build().unwrap());
        // order: c (y), b (z), a
        assert_eq!(plan, vec![vec![2], vec![1], vec![0]]);
    }
}
