//! RoundRobinAssignor: all partitions in (topic, partition) order dealt to the
//! members in Java's member order, skipping members not subscribed to the topic
//! (Java's `CircularIterator`), so non-uniform subscriptions work.

use super::model::{GroupModel, Plan};
use super::range::kafka_member_order;

pub fn assign(model: &GroupModel) -> Plan {
    let mut plan: Plan = vec![Vec::new(); model.num_members()];
    let order = kafka_member_order(model);
    let n = order.len();
    // subscribed_by_rank[r]: the member at rank r takes the current topic.
    let mut subscribed_by_rank = vec![false; n];
    let mut rank = vec![0usize; n];
    for (r, &m) in order.iter().enumerate() {
        rank[m as usize] = r;
    }
    let mut cursor = 0usize;
    for (t, members) in model.subscribers().into_iter().enumerate() {
        if members.is_empty() {
            continue;
        }
        for &m in &members {
            subscribed_by_rank[rank[m as usize]] = true;
        }
        for p in model.partitions_of(t as u32) {
            // Terminates: at least one member subscribes to t.
            while !subscribed_by_rank[cursor] {
                cursor = (cursor + 1) % n;
            }
            plan[order[cursor] as usize].push(p);
            cursor = (cursor + 1) % n;
        }
        for &m in &members {
            subscribed_by_rank[rank[m as usize]] = false;
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::super::invariants::{check_valid, groups};
    use super::super::model::{MemberSpec, ModelBuilder};
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn valid_and_balanced_when_subscriptions_are_equal(model in groups()) {
            let plan = assign(&model);
            check_valid(&model, &plan).map_err(TestCaseError::fail)?;
            let first = &model.members[0].topics;
            if model.members.iter().all(|m| &m.topics == first) {
                let loads: Vec<usize> = plan.iter().map(Vec::len).collect();
                let (min, max) = (loads.iter().min().unwrap(), loads.iter().max().unwrap());
                prop_assert!(max - min <= 1, "{loads:?}");
            }
        }
    }

    #[test]
    fn deals_in_turn_and_skips_non_subscribers() {
        let mut b = ModelBuilder::new(vec![("a".into(), 3), ("b".into(), 2)]).unwrap();
        b.push_member(MemberSpec {
            id: "m1".into(),
            topics: vec![0, 1].into(),
            ..Default::default()
        });
        b.push_member(MemberSpec {
            id: "m2".into(),
            topics: vec![1].into(),
            ..Default::default()
        });
        let plan = assign(&b.build().unwrap());
        // a-0 m1, a-1 m1 (m2 skipped), a-2 m1; cursor then at m2: b-0 m2, b-1 m1
        assert_eq!(plan, vec![vec![0, 1, 2, 4], vec![3]]);
    }
}
