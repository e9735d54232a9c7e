//! The server-side `uniform` assignor of KIP-848 consumer groups: balanced and
//! sticky to the group's current target assignment.
//!
//! The target assignment arrives as the members' claims (all of one generation,
//! so a partition two members both hold goes to neither first). Homogeneous groups
//! (every member subscribes to the same topics) follow Kafka's
//! `UniformHomogeneousAssignmentBuilder`: the first `P % M` members in member order
//! get `P / M + 1` partitions, the others `P / M`; each keeps what it holds up to
//! that quota, in partition order; the rest (never assigned, then given up) are
//! dealt in order to the members still short, each filled before the next.
//! Heterogeneous groups go through the sticky general path ([`sticky::general`]),
//! which meets the same balance rule Kafka's `UniformHeterogeneousAssignmentBuilder`
//! checks: no partition can move to make two members more equal.
//!
//! Racks (KIP-881 data, used when [`sticky::rack_mode`] says they separate
//! partitions): a member keeps only rack-local partitions, unassigned partitions go
//! to rack-local members with room, then released ones back to their owner if it
//! still has room, before the plain dealing. Quotas
//! never change, so balance is the same with or without racks. (Kafka 4.x's own
//! uniform assignor ignores racks.)
//!
//! Member order is sorted member id: Kafka iterates a hash map, so its tie-breaks
//! are not reproducible and ours are not meant to match them.

use super::model::{collect, DenseId, GroupModel, MemberIdx, Plan, UNOWNED};
use super::rack::{RackId, Racks, NO_RACK};
use super::sticky::{owners_with, RackView};
use std::cmp::Reverse;
use std::collections::VecDeque;

pub fn assign(model: &GroupModel) -> Plan {
    if let Some(plan) = homogeneous_lists(model) {
        return plan;
    }
    collect(&uniform_owners(model), model.num_members())
}

/// [`homogeneous`] on per-member lists instead of per-partition tables, for the groups
/// where the two agree by construction: no racks, every member on the same topics, no
/// partition claimed twice (so no claim conflicts and generations do not matter). Its
/// cost is the claims plus what moves: after one member of 10,000 leaves a million-
/// partition group, a bitmap of the claims, the leaver's hundred partitions and a copy
/// of each list, where the tables path fills and scans four million-entry tables.
/// `None` for every other group.
fn homogeneous_lists(model: &GroupModel) -> Option<Plan> {
    let members = model.num_members();
    let first = model.members.first()?;
    if model.racks.is_some() || !model.members.iter().all(|m| m.topics == first.topics) {
        return None;
    }
    let topics = &first.topics;
    let total: usize = topics.iter().map(|&t| model.partitions_of(t).len()).sum();
    let (min_quota, extra) = (total / members, total % members);
    let quota = |m: usize| min_quota + usize::from(m < extra);

    // claimed: a bit per dense partition; a bit found set is a second claim
    let mut claimed = vec![0u64; model.num_partitions().div_ceil(64)];
    let mut lists: Vec<std::borrow::Cow<'_, [DenseId]>> = Vec::with_capacity(members);
    let mut held = 0usize;
    for member in &model.members {
        let claims = member.subscribed_claims();
        for &p in claims {
            let (word, bit) = (p as usize / 64, p % 64);
            if (claimed[word] >> bit) & 1 == 1 {
                return None;
            }
            claimed[word] |= 1 << bit;
        }
        held += claims.len();
        // a member keeps its claims in partition order
        lists.push(if claims.windows(2).all(|w| w[0] < w[1]) {
            std::borrow::Cow::Borrowed(claims)
        } else {
            let mut sorted = claims.to_vec();
            sorted.sort_unstable();
            std::borrow::Cow::Owned(sorted)
        });
    }

    // unowned partitions in partition order, then what members hold over quota,
    // member by member (as `homogeneous` orders them)
    let mut unassigned: Vec<DenseId> = Vec::with_capacity(total - held);
    if held < total {
        for &t in topics.iter() {
            let range = model.partitions_of(t);
            let mut p = range.start;
            while p < range.end {
                let word = claimed[p as usize / 64];
                // whole words at once: all claimed (after a leave), none (fresh)
                if p.is_multiple_of(64) && p + 64 <= range.end && (word == u64::MAX || word == 0) {
                    if word == 0 {
                        unassigned.extend(p..p + 64);
                    }
                    p += 64;
                    continue;
                }
                if (word >> (p % 64)) & 1 == 0 {
                    unassigned.push(p);
                }
                p += 1;
            }
        }
    }
    for (m, list) in lists.iter().enumerate() {
        unassigned.extend_from_slice(list.get(quota(m)..).unwrap_or(&[]));
    }

    // each member keeps its first claims up to quota; the rest of its quota is the next
    // stretch of `unassigned`
    let mut plan: Plan = Vec::with_capacity(members);
    let mut next = 0usize;
    for (m, list) in lists.iter().enumerate() {
        let keep = &list[..list.len().min(quota(m))];
        let take = (quota(m) - keep.len()).min(unassigned.len() - next);
        let dealt = &mut unassigned[next..next + take];
        next += take;
        if dealt.is_empty() {
            plan.push(keep.to_vec());
            continue;
        }
        dealt.sort_unstable();
        plan.push(merge(keep, dealt));
    }
    debug_assert_eq!(next, unassigned.len(), "partitions left unassigned");
    Some(plan)
}

/// Two ascending, disjoint lists as one ascending list.
fn merge(a: &[DenseId], b: &[DenseId]) -> Vec<DenseId> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] < b[j] {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// Per dense partition: the member it goes to ([`UNOWNED`] when nobody subscribes).
pub fn uniform_owners(model: &GroupModel) -> Vec<MemberIdx> {
    owners_with(model, |model, previous, racks| {
        homogeneous(model, &previous, racks)
    })
}

fn homogeneous(
    model: &GroupModel,
    previous: &[MemberIdx],
    racks: Option<RackView<'_>>,
) -> Vec<MemberIdx> {
    let members = model.num_members();
    let topics = &model.members[0].topics;
    let subscribed = || topics.iter().flat_map(|&t| model.partitions_of(t));
    let total: usize = topics.iter().map(|&t| model.partitions_of(t).len()).sum();
    let (min_quota, extra) = (total / members, total % members);
    // room[m]: what member m may still take; the first `extra` members get one more.
    let mut room: Vec<usize> = (0..members)
        .map(|m| min_quota + usize::from(m < extra))
        .collect();

    let mut owner = vec![UNOWNED; model.num_partitions()];
    let mut unassigned: Vec<DenseId> = Vec::new();
    let mut given_up: Vec<(MemberIdx, DenseId)> = Vec::new();
    for p in subscribed() {
        let m = previous[p as usize];
        if m == UNOWNED {
            unassigned.push(p);
        } else if room[m as usize] > 0 {
            room[m as usize] -= 1;
            owner[p as usize] = m;
        } else {
            given_up.push((m, p));
        }
    }
    // Kafka appends the partitions over quota after the unowned ones, member by member.
    given_up.sort_by_key(|&(m, _)| m);
    unassigned.extend(given_up.into_iter().map(|(_, p)| p));

    if let Some((racks, released)) = racks {
        deal_rack_local(racks, &mut owner, &mut room, &unassigned);
        // no local member had room: back to the owner whose claim racks released
        for &p in &unassigned {
            let m = released[p as usize];
            if owner[p as usize] == UNOWNED && m != UNOWNED && room[m as usize] > 0 {
                room[m as usize] -= 1;
                owner[p as usize] = m;
            }
        }
        unassigned.retain(|&p| owner[p as usize] == UNOWNED);
    }
    let mut next = unassigned.into_iter();
    for (m, left) in room.iter_mut().enumerate() {
        for p in next.by_ref().take(*left) {
            owner[p as usize] = m as MemberIdx;
        }
        *left = 0;
    }
    debug_assert!(next.next().is_none(), "partitions left unassigned");
    owner
}

/// Gives partitions of `unassigned` to rack-local members with room: fewest local
/// members first; each to the rack (of its replicas) with the most members still
/// having room, to the one waiting longest there. The rest stay unowned.
fn deal_rack_local(
    racks: &Racks,
    owner: &mut [MemberIdx],
    room: &mut [usize],
    unassigned: &[DenseId],
) {
    let by_rack = racks.members_by_rack(0..room.len() as MemberIdx);
    let mut waiting: Vec<VecDeque<MemberIdx>> = by_rack
        .iter()
        .map(|ms| {
            ms.iter()
                .copied()
                .filter(|&m| room[m as usize] > 0)
                .collect()
        })
        .collect();
    let mut order: Vec<(usize, usize)> = unassigned
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            let local = racks
                .of_partition(p)
                .iter()
                .map(|&r| by_rack[r as usize].len())
                .sum();
            (local, i)
        })
        .collect();
    order.sort_unstable();
    for (_, i) in order {
        let p = unassigned[i];
        let rack: Option<RackId> = racks
            .of_partition(p)
            .iter()
            .copied()
            .filter(|&r| r != NO_RACK && !waiting[r as usize].is_empty())
            .max_by_key(|&r| (waiting[r as usize].len(), Reverse(r)));
        let Some(r) = rack else { continue };
        let m = waiting[r as usize].pop_front().expect("non-empty");
        owner[p as usize] = m;
        room[m as usize] -= 1;
        if room[m as usize] > 0 {
            waiting[r as usize].push_back(m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::invariants::{check_balanced, check_valid, groups, next_round};
    use super::super::model::{MemberSpec, ModelBuilder};
    use super::*;
    use proptest::prelude::*;

    fn group(members: &[(&str, Option<&str>)], partitions: i64, racks: &[&[&str]]) -> GroupModel {
        let mut b = ModelBuilder::new(vec![("t".into(), partitions)]).unwrap();
        for (id, rack) in members {
            b.push_member(MemberSpec {
                id: (*id).into(),
                topics: vec![0].into(),
                rack: rack.map(Into::into),
                ..Default::default()
            });
        }
        for (p, rs) in racks.iter().enumerate() {
            b.add_partition_racks(0, p as i64, rs.iter().map(|r| (*r).into()).collect());
        }
        b.build().unwrap()
    }

    #[test]
    fn fresh_homogeneous_deals_contiguous_ranges_as_kafka() {
        let plan = assign(&group(&[("a", None), ("b", None), ("c", None)], 7, &[]));
        assert_eq!(plan, vec![vec![0, 1, 2], vec![3, 4], vec![5, 6]]);
    }

    #[test]
    fn racks_pick_local_members_without_changing_counts() {
        let racks: &[&[&str]] = &[&["y"], &["x"], &["y"], &["x"]];
        let plan = assign(&group(&[("a", Some("x")), ("b", Some("y"))], 4, racks));
        assert_eq!(plan, vec![vec![1, 3], vec![0, 2]]);
    }

    /// The list path against the tables path, on random groups (claims conflicting or
    /// not) and on the round after one (disjoint claims) with a member gone.
    fn check_lists_path(model: &GroupModel) -> Result<(), TestCaseError> {
        if let Some(plan) = homogeneous_lists(model) {
            prop_assert_eq!(plan, collect(&uniform_owners(model), model.num_members()));
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn the_list_path_is_the_tables_path(
            model in groups(),
            leaver in any::<usize>(),
            owners in proptest::collection::vec(0usize..12, 0..80),
        ) {
            check_lists_path(&model)?;
            // disjoint, unbalanced claims: members over quota give partitions up
            let mut random: Plan = vec![Vec::new(); model.num_members()];
            for (p, &o) in owners.iter().enumerate().take(model.num_partitions()) {
                if o < model.num_members() {
                    random[o].push(p as DenseId);
                }
            }
            check_lists_path(&next_round(&model, &random, 0))?;
            let plan = collect(&uniform_owners(&model), model.num_members());
            let mut next = next_round(&model, &plan, 0);
            check_lists_path(&next)?;
            prop_assert!(homogeneous_lists(&next).is_some() || next.members.iter().any(|m| m.topics != next.members[0].topics));
            next.members.remove(leaver % next.members.len());
            check_lists_path(&next)?;
        }

        /// Topics past 64 partitions, where the unowned scan takes whole bitmap words.
        #[test]
        fn the_list_path_is_the_tables_path_on_long_topics(
            sizes in proptest::collection::vec(0i64..300, 1..4),
            members in 1u32..20,
            seed in any::<u64>(),
            none_in in 1u64..6,
        ) {
            let mut b = ModelBuilder::new(
                sizes.iter().enumerate().map(|(i, &n)| (format!("t{i}"), n)).collect(),
            )
            .unwrap();
            let topics: std::sync::Arc<[u32]> = (0..sizes.len() as u32).collect();
            for m in 0..members {
                b.push_member(MemberSpec {
                    id: format!("m{m:02}"),
                    topics: topics.clone(),
                    ..Default::default()
                });
            }
            let model = b.build().unwrap();
            check_lists_path(&model)?;
            // each partition owned by a random member, or (one in `none_in`) by none
            let mut rng = seed;
            let mut plan: Plan = vec![Vec::new(); members as usize];
            for p in 0..model.num_partitions() as DenseId {
                rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let draw = rng >> 33;
                if draw % none_in != 0 {
                    plan[(draw / none_in % u64::from(members)) as usize].push(p);
                }
            }
            let next = next_round(&model, &plan, 0);
            check_lists_path(&next)?;
            let settled = assign(&next);
            let mut leave = next_round(&next, &settled, 0);
            leave.members.remove((seed % u64::from(members)) as usize);
            check_lists_path(&leave)?;
        }

        #[test]
        fn valid_balanced_sticky_and_idempotent(model in groups()) {
            let plan = assign(&model);
            check_valid(&model, &plan).map_err(TestCaseError::fail)?;
            check_balanced(&model, &plan).map_err(TestCaseError::fail)?;
            let again = next_round(&model, &plan, 0);
            prop_assert_eq!(assign(&again), plan);
        }
    }
}

/// Named benchmark cases next to the code (franz-go style); run with
/// `cargo test --release bench_server -- --ignored --nocapture`. The end-to-end
/// numbers the README reports come from tools/server_assignor_bench.py.
#[cfg(test)]
mod bench {
    use super::super::invariants::next_round;
    use super::super::model::{MemberSpec, ModelBuilder};
    use super::super::range;
    use super::*;
    use std::time::Instant;

    /// `members` x (`topics` x `per_topic`); `buckets` > 0: member `i` subscribes to the
    /// topics `t` with `t % buckets != i % buckets` (tools/server_assignor_bench.py's shapes).
    fn shape(members: u32, topics: u32, per_topic: i64, buckets: u32) -> GroupModel {
        let names = (0..topics)
            .map(|t| (format!("topic-{t:04}"), per_topic))
            .collect();
        let mut b = ModelBuilder::new(names).unwrap();
        for m in 0..members {
            b.push_member(MemberSpec {
                id: format!("member-{m:05}"),
                topics: (0..topics)
                    .filter(|t| buckets == 0 || t % buckets != m % buckets)
                    .collect(),
                ..Default::default()
            });
        }
        b.build().unwrap()
    }

    fn time(name: &str, f: impl Fn() -> Plan) -> Plan {
        let mut best = f64::MAX;
        let mut out = Vec::new();
        for _ in 0..3 {
            let start = Instant::now();
            out = f();
            best = best.min(start.elapsed().as_secs_f64() * 1e3);
        }
        println!("{name}: {best:.1} ms (best of 3)");
        out
    }

    #[test]
    #[ignore]
    fn bench_server_10000_members_1m_partitions() {
        for buckets in [0, 4] {
            let kind = if buckets == 0 {
                "homogeneous"
            } else {
                "heterogeneous"
            };
            let fresh = shape(10_000, 1000, 1000, buckets);
            let assign_uniform = |m: &GroupModel| assign(m);
            let plan = time(&format!("uniform {kind} fresh"), || assign_uniform(&fresh));
            let mut leave = next_round(&fresh, &plan, 0);
            leave.members.remove(5000);
            time(&format!("uniform {kind} leave"), || assign_uniform(&leave));
            if buckets == 0 {
                time(&format!("uniform {kind} leave, tables path"), || {
                    collect(&uniform_owners(&leave), leave.num_members())
                });
            }
            time(&format!("range {kind} fresh"), || range::assign(&fresh));
        }
    }
}
