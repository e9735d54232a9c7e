//! CooperativeStickyAssignor (KIP-429) on top of the sticky target.
//!
//! A partition whose owner changes must first be revoked by the member holding
//! it, so it is left out of this round: a partition in member `x`'s sticky target
//! that `x` does not claim but another member does is withheld. The holder sees it
//! missing, revokes it and rejoins; the next round finds it unclaimed and places
//! it. Claims count whatever their generation: a member revokes every owned
//! partition missing from its assignment, so giving such a partition to someone
//! else in the same round would give it two consumers.

use super::model::{collect, GroupModel, MemberIdx, Plan, UNOWNED};
use super::sticky::sticky_owners;

pub fn cooperative_owners(model: &GroupModel) -> Vec<MemberIdx> {
    let mut target = sticky_owners(model);
    let n = target.len();
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
    for (p, owner) in target.iter_mut().enumerate() {
        if *owner != UNOWNED && claimed[p] && !kept_by_claimant[p] {
            *owner = UNOWNED;
        }
    }
    target
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
