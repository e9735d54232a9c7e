//! RangeAssignor: per topic, contiguous ranges over the members subscribed to it;
//! the first `P % M` members (in Java's member order) get one partition more.

use super::model::{GroupModel, MemberIdx, Plan};
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
    let mut plan: Plan = vec![Vec::new(); model.num_members()];
    let order = kafka_member_order(model);
    let mut rank = vec![0u32; model.num_members()];
    for (r, &m) in order.iter().enumerate() {
        rank[m as usize] = r as u32;
    }
    for (t, mut members) in model.subscribers().into_iter().enumerate() {
        if members.is_empty() {
            continue;
        }
        members.sort_unstable_by_key(|&m| rank[m as usize]);
        let range = model.partitions_of(t as u32);
        let count = range.end - range.start;
        let n = members.len() as u32;
        let (quota, extra) = (count / n, count % n);
        for (i, &m) in members.iter().enumerate() {
            let i = i as u32;
            let start = range.start + i * quota + i.min(extra);
            let len = quota + u32::from(i < extra);
            plan[m as usize].extend(start..start + len);
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::super::model::{MemberSpec, ModelBuilder};
    use super::*;

    fn member(id: &str, instance: Option<&str>, topics: Vec<u32>) -> MemberSpec {
        MemberSpec {
            id: id.into(),
            instance_id: instance.map(Into::into),
            topics,
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
