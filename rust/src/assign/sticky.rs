//! StickyAssignor (KIP-54): balance first, then keep as many owned partitions as possible.
//!
//! A pipeline of named steps, the same step for step as the reference in
//! `python/groupcoord/reference/assign/sticky.py` (the differential tests hold the
//! two to identical output):
//!
//! 1. [`resolve_previous_owners`]: one previous owner per partition, judged by
//!    generation (KAFKA-12984 / KAFKA-14639): the highest generation claim wins;
//!    two members claiming a partition in that same generation leave it unowned.
//!    Claims on topics a member no longer subscribes to were dropped by the model.
//! 2. All subscriptions equal: [`constrained`]. Each member keeps up to its quota
//!    (`P / M`, plus one for `P % M` members) of what it owned; the rest are dealt
//!    round-robin to members under quota. `max - min <= 1`, O(P + M).
//! 3. Otherwise [`general`]: members keep what they owned; unowned partitions go,
//!    most-constrained topic first, to the least-loaded subscriber; then a repair
//!    loop moves a partition of topic `t` from its most-loaded holder to its
//!    least-loaded subscriber while those differ by two or more (among equally
//!    loaded holders, one holding a partition placed this round; when the holder
//!    owned all it holds of `t` before, chains of fresh moves first:
//!    [`super::fresh_chains`]). At the fixed point no partition can move to make two
//!    members more equal (Java's `verifyValidityAndBalance` rule). Each move lowers
//!    the sum of squared loads (but a bounded number of sideways chains), so the loop
//!    ends. Last, [`give_back`] returns partitions the repair moved
//!    away from their previous owner along chains that leave every load as it is.
//!
//! Ties go to the lower member index (sorted member id) and are otherwise decided
//! by dense partition id, never by input order.
//!
//! Racks (KIP-881), when [`rack_mode`] says they are worth it, change three things and
//! never a quota: in homogeneous groups a member keeps only the owned partitions it is
//! rack-local to (Java's `racksMismatch` rule; see [`release_foreign`]); the constrained path deals unowned partitions to
//! rack-local members under quota before the plain round-robin (fewest local
//! members first, as Java's `assignRackAwareRoundRobin`); the general path gives a
//! partition to a rack-local subscriber only when one is among the least loaded, and
//! its repair loop moves a partition local to the receiver, or foreign to the giver,
//! before any other.

use super::fresh_chains::{chain_into, chain_out, Holdings};
use super::give_back::give_back;
use super::model::{collect, DenseId, GroupModel, MemberIdx, Plan, UNOWNED};
use super::rack::{RackId, Racks};
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, VecDeque};

/// Per dense partition: the member that owned it before this round, or [`UNOWNED`].
pub fn resolve_previous_owners(model: &GroupModel) -> Vec<MemberIdx> {
    let n = model.num_partitions();
    let mut owner = vec![UNOWNED; n];
    let mut best = vec![0i32; n];
    let mut tied = vec![false; n];
    for (m, member) in model.members.iter().enumerate() {
        let generation = member.generation;
        for &p in member.subscribed_claims() {
            let p = p as usize;
            if (owner[p] == UNOWNED && !tied[p]) || generation > best[p] {
                owner[p] = m as MemberIdx;
                best[p] = generation;
                tied[p] = false;
            } else if generation == best[p] {
                tied[p] = true;
            }
        }
    }
    for (o, &t) in owner.iter_mut().zip(&tied) {
        if t {
            *o = UNOWNED;
        }
    }
    owner
}

/// Per dense partition: the member it goes to ([`UNOWNED`] when nobody subscribes).
pub fn sticky_owners(model: &GroupModel) -> Vec<MemberIdx> {
    owners_with(model, constrained)
}

/// The steps every sticky-family assignor shares (previous owners, the rack view, KIP-881's
/// release of foreign claims); groups whose members all subscribe to the same topics take
/// `homogeneous_path`, the others the general path.
pub fn owners_with(
    model: &GroupModel,
    homogeneous_path: impl FnOnce(&GroupModel, Vec<MemberIdx>, Option<RackView<'_>>) -> Vec<MemberIdx>,
) -> Vec<MemberIdx> {
    if model.members.is_empty() {
        return vec![UNOWNED; model.num_partitions()];
    }
    let mut previous = resolve_previous_owners(model);
    let racks = rack_mode(model);
    let first = &model.members[0].topics;
    let homogeneous = model.members.iter().all(|m| &m.topics == first);
    let released = racks.map(|r| release_foreign(r, &mut previous, homogeneous));
    let racks = racks.zip(released.as_deref());
    if homogeneous {
        homogeneous_path(model, previous, racks)
    } else {
        general(model, previous, racks)
    }
}

/// Rack data as the sticky paths use it: the racks, and per partition the member
/// whose claim [`release_foreign`] dropped ([`UNOWNED`] for the others).
pub type RackView<'a> = (&'a Racks, &'a [MemberIdx]);

/// Java's rule: a member keeps only partitions it is rack-local to (`racksMismatch`),
/// here for homogeneous groups (`release`) only. Unlike Java, the dropped claims are
/// remembered: a partition no rack-local member has room for goes back to its owner
/// rather than to whoever the plain dealing reaches. Heterogeneous groups keep
/// every claim, also unlike Java: there the least-loaded placement is not anchored to
/// the previous round, so released partitions wandered from round to round (a
/// third of random racked groups needed 3 or more rounds to settle); keeping them
/// makes every result a fixed point, and locality still improves whenever balance
/// moves partitions (the repair loop moves foreign ones first).
pub fn release_foreign(racks: &Racks, previous: &mut [MemberIdx], release: bool) -> Vec<MemberIdx> {
    let mut released = vec![UNOWNED; previous.len()];
    if !release {
        return released;
    }
    for (p, m) in previous.iter_mut().enumerate() {
        if *m != UNOWNED && racks.mismatch(*m, p as DenseId) {
            released[p] = std::mem::replace(m, UNOWNED);
        }
    }
    released
}

/// The racks, when Java's sticky `RackInfo` would use them: over all members and
/// the partitions of every subscribed topic (see [`Racks::worth_using`]).
pub fn rack_mode(model: &GroupModel) -> Option<&Racks> {
    let racks = model.racks.as_ref()?;
    let mut subscribed = vec![false; model.num_topics()];
    for member in &model.members {
        for &t in member.topics.iter() {
            subscribed[t as usize] = true;
        }
    }
    let partitions = (0..model.num_topics() as u32)
        .filter(|&t| subscribed[t as usize])
        .flat_map(|t| model.partitions_of(t));
    racks
        .worth_using(0..model.num_members() as MemberIdx, partitions)
        .then_some(racks)
}

pub fn assign(model: &GroupModel) -> Plan {
    collect(&sticky_owners(model), model.num_members())
}

fn constrained(
    model: &GroupModel,
    previous: Vec<MemberIdx>,
    racks: Option<RackView<'_>>,
) -> Vec<MemberIdx> {
    let members = model.num_members();
    let topics = &model.members[0].topics;
    let subscribed = || topics.iter().flat_map(|&t| model.partitions_of(t));
    let total: usize = topics.iter().map(|&t| model.partitions_of(t).len()).sum();
    let min_quota = total / members;
    let extra = total % members;

    // What each member owned, in dense order; kept[m] is cut down to its quota below.
    let mut kept_counts = vec![0usize; members];
    for p in subscribed() {
        let m = previous[p as usize];
        if m != UNOWNED {
            kept_counts[m as usize] += 1;
        }
    }
    let mut quota = vec![0usize; members];
    let mut extra_left = extra;
    for m in 0..members {
        quota[m] = if kept_counts[m] > min_quota && extra_left > 0 {
            extra_left -= 1;
            min_quota + 1
        } else {
            kept_counts[m].min(min_quota)
        };
    }

    let mut owner = previous;
    let mut count = vec![0usize; members];
    let mut unassigned: Vec<DenseId> = Vec::new();
    for p in subscribed() {
        let m = owner[p as usize];
        if m != UNOWNED && count[m as usize] < quota[m as usize] {
            count[m as usize] += 1;
        } else {
            owner[p as usize] = UNOWNED;
            unassigned.push(p);
        }
    }
    if let Some((racks, released)) = racks {
        let mut extra_left = rack_fill(
            racks,
            &mut owner,
            &mut count,
            &mut unassigned,
            min_quota,
            extra_left,
        );
        // no local member had room: back to the owner whose claim racks released
        for &p in &unassigned {
            let m = released[p as usize];
            if m == UNOWNED {
                continue;
            }
            let c = &mut count[m as usize];
            if *c < min_quota || (*c == min_quota && extra_left > 0) {
                extra_left -= usize::from(*c == min_quota);
                *c += 1;
                owner[p as usize] = m;
            }
        }
        unassigned.retain(|&p| owner[p as usize] == UNOWNED);
    }

    let mut next = 0usize;
    // Round-robin up to the minimum quota, so each topic spreads over the members.
    let mut under: VecDeque<usize> = (0..members).filter(|&m| count[m] < min_quota).collect();
    while let Some(m) = under.pop_front() {
        owner[unassigned[next] as usize] = m as MemberIdx;
        next += 1;
        count[m] += 1;
        if count[m] < min_quota {
            under.push_back(m);
        }
    }
    // What is left is one partition per extra slot not taken while keeping.
    for (m, c) in count.iter_mut().enumerate() {
        if next == unassigned.len() {
            break;
        }
        if *c == min_quota {
            owner[unassigned[next] as usize] = m as MemberIdx;
            next += 1;
            *c += 1;
        }
    }
    debug_assert_eq!(
        next,
        unassigned.len(),
        "constrained assignment left partitions over: counts {count:?}"
    );
    owner
}

/// Deals unowned partitions to rack-local members up to their quota: below
/// `min_quota` first, then one over it while `extra_left` members may still be.
/// Partitions with the fewest local members go first; each goes to the rack (of its
/// replicas) with the most members still under quota, to its longest-waiting member.
/// What finds no local member stays in `unassigned`. Returns the extra slots left.
fn rack_fill(
    racks: &Racks,
    owner: &mut [MemberIdx],
    count: &mut [usize],
    unassigned: &mut Vec<DenseId>,
    min_quota: usize,
    mut extra_left: usize,
) -> usize {
    let by_rack = racks.members_by_rack(0..count.len() as MemberIdx);
    let queue = |keep: &dyn Fn(usize) -> bool| -> Vec<VecDeque<MemberIdx>> {
        by_rack
            .iter()
            .map(|ms| {
                ms.iter()
                    .copied()
                    .filter(|&m| keep(count[m as usize]))
                    .collect()
            })
            .collect()
    };
    let mut under = queue(&|c| c < min_quota);
    let mut at_min = queue(&|c| c == min_quota);
    let mut order: Vec<(usize, DenseId)> = unassigned
        .iter()
        .map(|&p| {
            let local: usize = racks
                .of_partition(p)
                .iter()
                .map(|&r| by_rack[r as usize].len())
                .sum();
            (local, p)
        })
        .collect();
    order.sort_unstable();
    let fullest = |queues: &[VecDeque<MemberIdx>], rows: &[RackId]| {
        rows.iter()
            .copied()
            .filter(|&r| !queues[r as usize].is_empty())
            .max_by_key(|&r| (queues[r as usize].len(), Reverse(r)))
    };
    for (_, p) in order {
        let rows = racks.of_partition(p);
        if let Some(r) = fullest(&under, rows) {
            let m = under[r as usize].pop_front().expect("non-empty");
            owner[p as usize] = m;
            count[m as usize] += 1;
            if count[m as usize] < min_quota {
                under[r as usize].push_back(m);
            } else {
                at_min[r as usize].push_back(m);
            }
        } else if extra_left > 0 {
            if let Some(r) = fullest(&at_min, rows) {
                let m = at_min[r as usize].pop_front().expect("non-empty");
                owner[p as usize] = m;
                count[m as usize] += 1;
                extra_left -= 1;
            }
        }
    }
    unassigned.retain(|&p| owner[p as usize] == UNOWNED);
    extra_left
}

/// The least loaded subscriber in a lazily updated heap: entries whose load is no
/// longer the member's are dropped on the way.
fn least(
    heap: &mut BinaryHeap<Reverse<(u32, MemberIdx)>>,
    load: &[u32],
) -> Option<(u32, MemberIdx)> {
    while let Some(&Reverse((l, m))) = heap.peek() {
        if load[m as usize] == l {
            return Some((l, m));
        }
        heap.pop();
    }
    None
}

/// Placement of topic `t`'s unowned partitions when racks count: the least loaded
/// subscriber, unless a rack-local one is just as little loaded, or else the owner
/// whose claim was released for racks is.
fn place_with_racks(
    (racks, released): RackView<'_>,
    subscribers: &[MemberIdx],
    range: std::ops::Range<DenseId>,
    owner: &mut [MemberIdx],
    load: &mut [u32],
) {
    let mut all: BinaryHeap<Reverse<(u32, MemberIdx)>> = BinaryHeap::new();
    let mut by_rack: FxHashMap<RackId, BinaryHeap<Reverse<(u32, MemberIdx)>>> =
        FxHashMap::default();
    for &m in subscribers {
        all.push(Reverse((load[m as usize], m)));
        let r = racks.of_member(m);
        if r != super::rack::NO_RACK {
            by_rack
                .entry(r)
                .or_default()
                .push(Reverse((load[m as usize], m)));
        }
    }
    for p in range {
        if owner[p as usize] != UNOWNED {
            continue;
        }
        let (lowest, fallback) = least(&mut all, load).expect("a subscribed topic has subscribers");
        let mut chosen = fallback;
        let mut best: Option<MemberIdx> = None;
        for r in racks.of_partition(p) {
            if let Some(heap) = by_rack.get_mut(r) {
                if let Some((l, m)) = least(heap, load) {
                    if l == lowest && best.is_none_or(|b| m < b) {
                        best = Some(m);
                    }
                }
            }
        }
        let before = released[p as usize];
        if let Some(m) = best {
            chosen = m;
        } else if before != UNOWNED
            && load[before as usize] == lowest
            && subscribers.binary_search(&before).is_ok()
        {
            chosen = before;
        }
        owner[p as usize] = chosen;
        load[chosen as usize] += 1;
        let entry = Reverse((load[chosen as usize], chosen));
        all.push(entry);
        let r = racks.of_member(chosen);
        if r != super::rack::NO_RACK {
            by_rack.get_mut(&r).expect("built above").push(entry);
        }
    }
}

pub fn general(
    model: &GroupModel,
    previous: Vec<MemberIdx>,
    racks: Option<RackView<'_>>,
) -> Vec<MemberIdx> {
    let subscribers = model.subscribers();
    let mut owner = previous.clone();
    let mut load = vec![0u32; model.num_members()];
    // retained[p]: p sits with the member that owned it before this round; the
    // repair loop moves such partitions only when nothing else will do.
    let mut retained = vec![false; owner.len()];
    for (p, &m) in owner.iter().enumerate() {
        if m != UNOWNED {
            load[m as usize] += 1;
            retained[p] = true;
        }
    }

    let mut topic_order: Vec<u32> = (0..subscribers.len() as u32)
        .filter(|&t| !subscribers[t as usize].is_empty())
        .collect();
    topic_order.sort_unstable_by_key(|&t| (subscribers[t as usize].len(), t));

    for &t in &topic_order {
        if let Some(view) = racks {
            let subs = &subscribers[t as usize];
            place_with_racks(view, subs, model.partitions_of(t), &mut owner, &mut load);
            continue;
        }
        let mut heap: BinaryHeap<Reverse<(u32, MemberIdx)>> = subscribers[t as usize]
            .iter()
            .map(|&m| Reverse((load[m as usize], m)))
            .collect();
        for p in model.partitions_of(t) {
            if owner[p as usize] != UNOWNED {
                continue;
            }
            let Reverse((least, m)) = heap.pop().expect("a subscribed topic has subscribers");
            owner[p as usize] = m;
            load[m as usize] = least + 1;
            heap.push(Reverse((least + 1, m)));
        }
    }

    // chain_out's moves that leave the sum of squared loads as it is: at most one per
    // member (fresh_chains.rs), so the loop ends
    let mut sideways = 0;
    // per member, the fresh (not retained) partitions it holds: the chains' quick
    // test for whether any member could start or end one
    // nothing retained stays so: a partition only becomes retained by going back to its
    // previous owner
    let any_retained = retained.iter().any(|&r| r);
    let mut fresh_held = vec![0u32; model.num_members()];
    for (p, &m) in owner.iter().enumerate() {
        if m != UNOWNED && !retained[p] {
            fresh_held[m as usize] += 1;
        }
    }
    // the fresh partitions, built when a chain is first tried (never, in a group
    // without retained partitions) and kept up to date from then on
    let mut fresh: Option<BTreeSet<DenseId>> = None;
    let mut moved = true;
    while moved {
        moved = false;
        for &t in &topic_order {
            let range = model.partitions_of(t);
            if range.is_empty() {
                continue;
            }
            let subs = &subscribers[t as usize];
            loop {
                let receiver = *subs
                    .iter()
                    .min_by_key(|&&m| (load[m as usize], m))
                    .expect("a subscribed topic has subscribers");
                // The most loaded holder gives; among equals, one holding a partition
                // placed this round (moving that one leaves every previous owner's
                // partitions where they are: a cooperative round then revokes nothing
                // where it otherwise would), then the lower index.
                let mut giver = owner[range.start as usize];
                for p in range.clone() {
                    let o = owner[p as usize];
                    let (lo, lg) = (load[o as usize], load[giver as usize]);
                    if lo > lg || (lo == lg && o < giver) {
                        giver = o;
                    }
                }
                let top = load[giver as usize];
                if top < load[receiver as usize] + 2 {
                    break;
                }
                // With nothing retained (a fresh assignment) the giver holds only fresh
                // partitions; otherwise one of the holders as loaded does only if such a
                // member holds any fresh partition at all (rarely, when members keep
                // what they owned), which is checked before the topic is scanned.
                let fresh_giver = if !any_retained {
                    Some(giver)
                } else if subs
                    .iter()
                    .any(|&m| load[m as usize] == top && fresh_held[m as usize] > 0)
                {
                    range
                        .clone()
                        .filter(|&p| !retained[p as usize])
                        .map(|p| owner[p as usize])
                        .filter(|&o| load[o as usize] == top)
                        .min()
                } else {
                    None
                };
                if let Some(f) = fresh_giver {
                    giver = f;
                }
                if racks.is_none() && fresh_giver.is_none() {
                    // the giver holds only partitions it owned before of this topic:
                    // first try to balance by moving fresh ones (no revocation)
                    let set = fresh.get_or_insert_with(|| {
                        (0..owner.len())
                            .filter(|&p| owner[p] != UNOWNED && !retained[p])
                            .map(|p| p as DenseId)
                            .collect()
                    });
                    let mut h = Holdings {
                        owner: &mut owner,
                        load: &mut load,
                        retained: &mut retained,
                        fresh_held: &mut fresh_held,
                        fresh: set,
                        previous: &previous,
                    };
                    if chain_into(model, &mut h, receiver) {
                        moved = true;
                        continue;
                    }
                    if sideways < model.num_members()
                        && h.load[giver as usize] == h.load[receiver as usize] + 2
                        && chain_out(model, &subscribers, &mut h, giver)
                    {
                        sideways += 1;
                        moved = true;
                        continue;
                    }
                }
                let victim = match racks {
                    None => pick_victim(&owner, &retained, giver, range.clone()),
                    Some((racks, _)) => pick_victim_with_racks(
                        racks,
                        &owner,
                        &retained,
                        giver,
                        receiver,
                        range.clone(),
                    ),
                };
                owner[victim as usize] = receiver;
                if !retained[victim as usize] {
                    fresh_held[giver as usize] -= 1;
                }
                retained[victim as usize] = previous[victim as usize] == receiver;
                if !retained[victim as usize] {
                    fresh_held[receiver as usize] += 1;
                }
                if let Some(set) = fresh.as_mut() {
                    if retained[victim as usize] {
                        set.remove(&victim);
                    } else {
                        set.insert(victim);
                    }
                }
                load[giver as usize] -= 1;
                load[receiver as usize] += 1;
                moved = true;
            }
        }
    }
    // With racks the repair loop chose what to move for locality; giving partitions
    // back could undo that, so only rackless groups take this step.
    if racks.is_none() {
        give_back(&subscribers, &model.offsets, &previous, &mut owner, &load);
    }
    owner
}

/// The giver's partition of the range to move: a newly placed one first, highest id first.
fn pick_victim(
    owner: &[MemberIdx],
    retained: &[bool],
    giver: MemberIdx,
    range: std::ops::Range<DenseId>,
) -> DenseId {
    let mut fallback = None;
    for p in range.rev() {
        if owner[p as usize] == giver {
            if !retained[p as usize] {
                return p;
            }
            fallback.get_or_insert(p);
        }
    }
    fallback.expect("the giver holds a partition of this topic")
}

/// [`pick_victim`] when racks count: among the giver's partitions of the range, one
/// newly placed before a retained one, then one local to the receiver, then one
/// foreign to the giver; highest id first among equals.
fn pick_victim_with_racks(
    racks: &Racks,
    owner: &[MemberIdx],
    retained: &[bool],
    giver: MemberIdx,
    receiver: MemberIdx,
    range: std::ops::Range<DenseId>,
) -> DenseId {
    let mut best: Option<((bool, bool, bool), DenseId)> = None;
    for p in range.rev() {
        if owner[p as usize] != giver {
            continue;
        }
        let key = (
            retained[p as usize],
            !racks.local(receiver, p),
            racks.local(giver, p),
        );
        if best.is_none_or(|(k, _)| key < k) {
            best = Some((key, p));
        }
    }
    best.expect("the giver holds a partition of this topic").1
}

#[cfg(test)]
mod tests {
    use super::super::invariants::{check_balanced, check_valid, groups, next_round};
    use super::super::model::{MemberSpec, ModelBuilder};
    use super::*;
    use proptest::prelude::*;

    fn identical_group(members: usize, partitions: i64, owned: &[Vec<i64>]) -> GroupModel {
        let mut b = ModelBuilder::new(vec![("t".into(), partitions)]).unwrap();
        for m in 0..members {
            b.push_member(MemberSpec {
                id: format!("m{m}"),
                topics: vec![0].into(),
                owned: owned
                    .get(m)
                    .map(|o| o.iter().map(|&p| (0, p)).collect())
                    .unwrap_or_default(),
                generation: 1,
                ..Default::default()
            });
        }
        b.build().unwrap()
    }

    #[test]
    fn fresh_assignment_deals_round_robin() {
        let plan = assign(&identical_group(3, 7, &[]));
        assert_eq!(plan, vec![vec![0, 3, 6], vec![1, 4], vec![2, 5]]);
    }

    #[test]
    fn a_joiner_takes_only_what_it_needs() {
        let owned = vec![vec![0, 1, 2, 3], vec![4, 5, 6], vec![7, 8, 9]];
        let plan = assign(&identical_group(4, 10, &owned));
        assert_eq!(
            plan,
            vec![vec![0, 1, 2], vec![4, 5, 6], vec![7, 8], vec![3, 9]]
        );
    }

    #[test]
    fn same_generation_double_claims_are_unowned_and_higher_generations_win() {
        let mut b = ModelBuilder::new(vec![("t".into(), 2)]).unwrap();
        for (id, generation) in [("a", 3), ("b", 3), ("c", 5)] {
            b.push_member(MemberSpec {
                id: id.into(),
                topics: vec![0].into(),
                owned: if id == "c" {
                    vec![(0, 1)]
                } else {
                    vec![(0, 0), (0, 1)]
                },
                generation,
                ..Default::default()
            });
        }
        let previous = resolve_previous_owners(&b.build().unwrap());
        assert_eq!(previous, vec![UNOWNED, 2]);
    }

    proptest! {
        #[test]
        fn valid_balanced_and_idempotent(model in groups()) {
            let plan = assign(&model);
            check_valid(&model, &plan).map_err(TestCaseError::fail)?;
            check_balanced(&model, &plan).map_err(TestCaseError::fail)?;
            let again = next_round(&model, &plan, 100);
            prop_assert_eq!(assign(&again), plan);
        }
    }
}

/// Named benchmark cases next to the code (franz-go style); run with
/// `cargo test --release bench_ -- --ignored --nocapture`. The Python-level
/// benchmarks in benches/ are the ones the README reports.
#[cfg(test)]
mod bench {
    use super::super::invariants::next_round;
    use super::super::model::{MemberSpec, ModelBuilder};
    use super::*;
    use std::time::Instant;

    fn java_large_test() -> GroupModel {
        let topics = (0..500).map(|t| (format!("topic-{t:03}"), 2000)).collect();
        let mut b = ModelBuilder::new(topics).unwrap();
        for m in 0..2000 {
            b.push_member(MemberSpec {
                id: format!("member-{m:04}"),
                topics: (0..500).collect(),
                ..Default::default()
            });
        }
        b.build().unwrap()
    }

    fn time<T>(name: &str, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        println!("{name}: {:.1} ms", start.elapsed().as_secs_f64() * 1e3);
        out
    }

    #[test]
    #[ignore]
    fn bench_2000_members_1m_partitions() {
        let fresh = java_large_test();
        let plan = time("fresh", || assign(&fresh));
        let mut existing = next_round(&fresh, &plan, 1);
        existing.members.remove(7);
        let plan = time("existing (one left)", || assign(&existing));
        // imbalanced: every survivor heterogeneous by dropping one topic from half of them
        let mut imbalanced = next_round(&existing, &plan, 2);
        for m in imbalanced.members.iter_mut().step_by(2) {
            m.topics = m.topics[..m.topics.len().saturating_sub(1)].into();
        }
        time("imbalanced (general path)", || assign(&imbalanced));
    }
}
