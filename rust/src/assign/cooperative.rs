//! CooperativeStickyAssignor (KIP-429) on top of the sticky target.
//!
//! A partition whose owner changes must first be revoked by the member holding
//! it, so it is left out of this round: a partition in member `x`'s sticky target
//! that `x` does not claim but another member does is withheld. The holder sees it
//! missing, revokes it and rejoins; the next round finds it unclaimed and places
//! it. Claims count whatever their generation: a member revokes every owned
//! partition missing from its assignment, so giving such a partition to someone
//! else in the same round would give it two consumers.
//!
//! When this round revokes something, the members rejoin and the next round starts
//! from what they keep. With mixed subscriptions the sticky general path may then
//! settle on other, equally balanced loads than this round's target and revoke again
//! (a third round). So the leader looks one round ahead ([`settling_target`]): it runs
//! the next round's sticky target on what members would keep, and when that revokes
//! something, offers that target instead, eight candidates at most. Groups whose
//! members all subscribe to the same topics need none of this: the constrained path
//! keeps whatever a member holds up to its quota, so their second round never revokes.

use super::model::{collect, GroupModel, MemberIdx, Plan, UNOWNED};
use super::sticky::{general, rack_mode, sticky_owners};

/// Candidate targets checked, the first included. Of the 12,000 random groups of the
/// Java differential (tests/assignors/test_java_assignors.py) none needed more than two;
/// groups of 1,000 members that a few join (benches/bench_cooperative_join.py's shape)
/// needed up to five, each candidate passing the next round's revocation on to other
/// members of the same topic. Each check costs one run of the general path.
const LOOKAHEAD_TRIES: usize = 8;

pub fn cooperative_owners(model: &GroupModel) -> Vec<MemberIdx> {
    let handed = withhold(model, &sticky_owners(model));
    let Some(first) = model.members.first() else {
        return handed;
    };
    let homogeneous = model.members.iter().all(|m| m.topics == first.topics);
    if homogeneous || !revokes(model, &handed) {
        return handed;
    }
    settling_target(model, handed)
}

/// The sticky target with every partition another member claims withheld from its
/// new owner (the claimant revokes it first).
fn withhold(model: &GroupModel, target: &[MemberIdx]) -> Vec<MemberIdx> {
    let mut handed = target.to_vec();
    let n = handed.len();
    let mut claimed = vec![false; n];
    let mut kept_by_claimant = vec![false; n];
    for (m, member) in model.members.iter().enumerate() {
        for &p in &member.claims {
            claimed[p as usize] = true;
            if target[p as usize] == m as MemberIdx {
                kept_by_claimant[p as usize] = true;
            }
        }
    }
    for (p, owner) in handed.iter_mut().enumerate() {
        if *owner != UNOWNED && claimed[p] && !kept_by_claimant[p] {
            *owner = UNOWNED;
        }
    }
    handed
}

/// Whether some member loses a partition it claims (and so rejoins).
fn revokes(model: &GroupModel, handed: &[MemberIdx]) -> bool {
    model.members.iter().enumerate().any(|(m, member)| {
        member
            .claims
            .iter()
            .any(|&p| handed[p as usize] != m as MemberIdx)
    })
}

/// This round's assignment, chosen so that the next round revokes nothing when one of
/// a few candidates does: the next round's members own what they are handed now (one
/// claimant per partition, so generations no longer matter, and a mixed group takes
/// the general path with every claim kept, as here), and its target keeps all of it
/// unless it revokes. A candidate whose next round revokes gives way to that round's
/// target; when none settles, the first candidate stands.
fn settling_target(model: &GroupModel, first: Vec<MemberIdx>) -> Vec<MemberIdx> {
    let racks = rack_mode(model);
    // heterogeneous groups release no claim for racks (see `release_foreign`)
    let released = vec![UNOWNED; model.num_partitions()];
    let view = racks.map(|r| (r, released.as_slice()));
    let mut handed = first.clone();
    for _ in 0..LOOKAHEAD_TRIES {
        let following = general(model, handed.clone(), view);
        let keeps = handed
            .iter()
            .zip(&following)
            .all(|(&now, &next)| now == UNOWNED || now == next);
        if keeps {
            return handed;
        }
        handed = withhold(model, &following);
    }
    first
}

pub fn assign(model: &GroupModel) -> Plan {
    collect(&cooperative_owners(model), model.num_members())
}
#[cfg(test)]
mod tests {
    use super::super::invariants::{check_balanced, check_valid, groups, next_round};
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn never_hands_a_claimed_partition_to_another_member(model in groups()) {
            let plan = assign(&model);
            for (x, partitions) in plan.iter().enumerate() {
                for &p in partitions {
                    let new_to_x = !model.members[x].claims.contains(&p);
                    let claimed_elsewhere = model
                        .members
                        .iter()
                        .enumerate()
                        .any(|(y, m)| y != x && m.claims.contains(&p));
                    prop_assert!(!(new_to_x && claimed_elsewhere), "{p} moves to {x} unrevoked");
                }
            }
        }

        #[test]
        fn converges_to_a_stable_balanced_assignment(model in groups()) {
            let mut current = model;
            let mut plan = assign(&current);
            let mut rounds = 1;
            loop {
                let next = next_round(&current, &plan, rounds);
                let again = assign(&next);
                if again == plan {
                    break;
                }
                prop_assert!(rounds < 4, "no fixed point after {rounds} rounds");
                current = next;
                plan = again;
                rounds += 1;
            }
            check_valid(&current, &plan).map_err(TestCaseError::fail)?;
            check_balanced(&current, &plan).map_err(TestCaseError::fail)?;
        }
    }
}
