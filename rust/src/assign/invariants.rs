//! Reusable invariant checkers and random groups for the assignor tests.

use super::model::{DenseId, GroupModel, MemberSpec, ModelBuilder, Plan};
use proptest::prelude::*;

/// Every partition of a subscribed topic assigned exactly once, only to a subscriber.
pub fn check_valid(model: &GroupModel, plan: &Plan) -> Result<(), String> {
    let mut seen = vec![false; model.num_partitions()];
    for (m, partitions) in plan.iter().enumerate() {
        for &p in partitions {
            let t = model.topic_of(p);
            if !model.members[m].topics.contains(&t) {
                return Err(format!("member {m} got {p} of unsubscribed topic {t}"));
            }
            if std::mem::replace(&mut seen[p as usize], true) {
                return Err(format!("partition {p} assigned twice"));
            }
        }
    }
    for member in &model.members {
        for &t in member.topics.iter() {
            if let Some(p) = model.partitions_of(t).find(|&p| !seen[p as usize]) {
                return Err(format!("partition {p} of subscribed topic {t} unassigned"));
            }
        }
    }
    Ok(())
}

/// Java's `verifyValidityAndBalance` rule: when two members' loads differ by two or
/// more, the larger holds no partition of a topic the smaller subscribes to.
pub fn check_balanced(model: &GroupModel, plan: &Plan) -> Result<(), String> {
    for (a, small) in plan.iter().enumerate() {
        for (b, large) in plan.iter().enumerate() {
            if large.len() < small.len() + 2 {
                continue;
            }
            for &p in large {
                if model.members[a].topics.contains(&model.topic_of(p)) {
                    return Err(format!(
                        "partition {p} could move from member {b} ({}) to member {a} ({})",
                        large.len(),
                        small.len()
                    ));
                }
            }
        }
    }
    Ok(())
}

/// A random group: topic sizes, subscriptions (identical or not) and prior claims.
pub fn groups() -> impl Strategy<Value = GroupModel> {
    (
        prop::collection::vec(0i64..12, 1..6),
        1usize..10,
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(|(sizes, members, identical, seed)| {
            let mut rng = seed;
            let mut next = move |n: u64| {
                rng = rng
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (rng >> 33) % n.max(1)
            };
            let topics: Vec<(String, i64)> = sizes
                .iter()
                .enumerate()
                .map(|(i, &s)| (format!("t{i}"), s))
                .collect();
            let mut b = ModelBuilder::new(topics).unwrap();
            let nt = sizes.len() as u32;
            for m in 0..members {
                let topics: std::sync::Arc<[u32]> = if identical {
                    (0..nt).collect()
                } else {
                    (0..nt).filter(|_| next(2) == 0).collect()
                };
                let owned = (0..next(8))
                    .map(|_| (next(nt as u64) as u32, next(14) as i64))
                    .collect();
                b.push_member(MemberSpec {
                    id: format!("m{m:02}"),
                    topics,
                    owned,
                    generation: next(4) as i32 - 1,
                    ..Default::default()
                });
            }
            b.build().unwrap()
        })
}

/// Rebuild `model` with each member claiming what `plan` gave it, at `generation`.
pub fn next_round(model: &GroupModel, plan: &Plan, generation: i32) -> GroupModel {
    let topics = model
        .topic_names
        .iter()
        .enumerate()
        .map(|(t, name)| (name.clone(), model.partitions_of(t as u32).len() as i64))
        .collect();
    let mut b = ModelBuilder::new(topics).unwrap();
    for (member, partitions) in model.members.iter().zip(plan) {
        let owned = partitions
            .iter()
            .map(|&p: &DenseId| {
                let t = model.topic_of(p);
                (t, i64::from(p - model.offsets[t as usize]))
            })
            .collect();
        b.push_member(MemberSpec {
            id: member.id.clone(),
            instance_id: member.instance_id.clone(),
            topics: member.topics.clone(),
            owned,
            held: Vec::new(),
            generation,
            rack: member.rack.clone(),
        });
    }
    if let Some(racks) = &model.racks {
        for p in 0..model.num_partitions() as DenseId {
            let t = model.topic_of(p);
            let names = racks
                .of_partition(p)
                .iter()
                .map(|&r| racks.names[r as usize].clone())
                .collect();
            b.add_partition_racks(t, i64::from(p - model.offsets[t as usize]), names);
        }
    }
    b.build().unwrap()
}

/// `model` with racks: each member in one of three racks or none, each partition
/// with replicas on a random subset of four (`r3` holds no member, so some
/// partitions have no local member). `seed` drives every choice.
pub fn with_racks(model: &GroupModel, seed: u64) -> GroupModel {
    let mut rng = seed;
    let mut next = move |n: u64| {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (rng >> 33) % n.max(1)
    };
    let members: Vec<Option<String>> = (0..model.num_members())
        .map(|_| match next(4) {
            3 => None,
            r => Some(format!("r{r}")),
        })
        .collect();
    let partitions: Vec<Vec<String>> = (0..model.num_partitions())
        .map(|_| {
            (0..4)
                .filter(|_| next(2) == 0)
                .map(|r| format!("r{r}"))
                .collect()
        })
        .collect();
    rebuild(
        model,
        |m| members[m].clone(),
        |p| partitions[p as usize].clone(),
    )
}

/// `model` with member racks and partition racks that never meet: rack-aware
/// assignment must then give exactly what it gives without racks.
pub fn with_disjoint_racks(model: &GroupModel) -> GroupModel {
    rebuild(
        model,
        |m| Some(format!("member-{}", m % 3)),
        |p| vec![format!("replica-{}", p % 3)],
    )
}

fn rebuild(
    model: &GroupModel,
    mut member_rack: impl FnMut(usize) -> Option<String>,
    mut partition_racks: impl FnMut(DenseId) -> Vec<String>,
) -> GroupModel {
    let topics = model
        .topic_names
        .iter()
        .enumerate()
        .map(|(t, name)| (name.clone(), model.partitions_of(t as u32).len() as i64))
        .collect();
    let mut b = ModelBuilder::new(topics).unwrap();
    for (m, member) in model.members.iter().enumerate() {
        let claim = |&p: &DenseId| {
            let t = model.topic_of(p);
            (t, i64::from(p - model.offsets[t as usize]))
        };
        b.push_member(MemberSpec {
            id: member.id.clone(),
            instance_id: member.instance_id.clone(),
            topics: member.topics.clone(),
            owned: member.claims.iter().map(claim).collect(),
            held: Vec::new(),
            generation: member.generation,
            rack: member_rack(m),
        });
    }
    for p in 0..model.num_partitions() as DenseId {
        let t = model.topic_of(p);
        b.add_partition_racks(
            t,
            i64::from(p - model.offsets[t as usize]),
            partition_racks(p),
        );
    }
    b.build().unwrap()
}
