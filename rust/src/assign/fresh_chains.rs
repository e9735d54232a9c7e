//! The sticky general path's repair loop without a revocation: chains of fresh moves.
//!
//! When the repair loop must unload a member that holds only partitions it owned
//! before (retained ones) of the topic at hand, the plain move takes one of them away:
//! for cooperative-sticky that is a revocation and a second round. Often the loads can
//! change in the same way by moving only partitions placed this round (fresh ones)
//! along a chain of members, each passing one on to a subscriber of its topic:
//!
//! - [`chain_into`]: into the receiver, from the first member reached (breadth first)
//!   that is loaded two or more above it. The giver loses one, the receiver gains one,
//!   no other load changes: the sum of squared loads falls, as with the plain move.
//! - [`chain_out`]: out of the giver, to the first member reached that is loaded below
//!   it. One loaded two or more below is a plain improvement; one loaded exactly one
//!   below (a sideways move: the sum of squares stays) only when, at its new load, it
//!   holds no retained partition of a topic with a subscriber loaded two or more
//!   below: the move then makes no new imbalance of the kind it removes. The caller
//!   bounds the sideways moves (one per member per run), so the loop ends whatever
//!   happens.
//!
//! Of the 95,000 groups with mixed subscriptions of 200 seeds of the Java differential
//! (tests/assignors/test_java_assignors.py), cooperative-sticky without these chains
//! took a round more than Kafka's in 11; with them in none, and it moved 2.7% fewer
//! partitions (123,726 against 127,146); no run needed more than three sideways moves.
//!
//! Each call is O(M + F + sum of subscriber counts), F the fresh partitions (kept in
//! a set, so a search never scans the retained ones). The same step for step as
//! `python/groupcoord/reference/assign/fresh_chains.py` (ties: breadth first over
//! members in the order reached, topics and partitions ascending).

use super::model::{DenseId, GroupModel, MemberIdx, TopicId};
use std::collections::{BTreeSet, VecDeque};

/// Not reached yet (in `via`).
const UNSEEN: (MemberIdx, DenseId) = (MemberIdx::MAX, DenseId::MAX);

/// The state the repair loop moves partitions in.
pub struct Holdings<'a> {
    pub owner: &'a mut [MemberIdx],
    pub load: &'a mut [u32],
    pub retained: &'a mut [bool],
    /// Per member, how many fresh partitions it holds.
    pub fresh_held: &'a mut [u32],
    /// The fresh partitions (held, not retained): a chain's search visits only these.
    pub fresh: &'a mut BTreeSet<DenseId>,
    pub previous: &'a [MemberIdx],
}

impl Holdings<'_> {
    /// One hop of a chain: fresh partition `p` goes from `from` to `to`.
    fn pass(&mut self, p: DenseId, from: MemberIdx, to: MemberIdx) {
        let p = p as usize;
        self.owner[p] = to;
        self.fresh_held[from as usize] -= 1;
        self.retained[p] = self.previous[p] == to;
        if self.retained[p] {
            self.fresh.remove(&(p as DenseId));
        } else {
            self.fresh_held[to as usize] += 1;
        }
    }
}

/// One more partition for `receiver` through fresh moves only; `false` (nothing
/// changed) when no member loaded two or more above it reaches it that way.
pub fn chain_into(model: &GroupModel, h: &mut Holdings<'_>, receiver: MemberIdx) -> bool {
    let need = h.load[receiver as usize] + 2;
    // the chain starts at a member loaded that high holding a fresh partition
    let possible = (0..h.load.len())
        .any(|m| m != receiver as usize && h.fresh_held[m] > 0 && h.load[m] >= need);
    if !possible {
        return false;
    }
    // via[y] = (x, p): y passes its fresh partition p on to x, one step nearer the
    // receiver
    let mut via = vec![UNSEEN; h.load.len()];
    via[receiver as usize] = (receiver, DenseId::MAX);
    // a topic's holders are all reached the first time one member's scan covers it
    let mut scanned = vec![false; model.num_topics()];
    let mut queue = VecDeque::from([receiver]);
    let mut giver = None;
    'search: while let Some(x) = queue.pop_front() {
        for &t in model.members[x as usize].topics.iter() {
            if std::mem::replace(&mut scanned[t as usize], true) {
                continue;
            }
            for &p in h.fresh.range(model.partitions_of(t)) {
                let y = h.owner[p as usize];
                if via[y as usize] != UNSEEN {
                    continue;
                }
                via[y as usize] = (x, p);
                if h.load[y as usize] >= need {
                    giver = Some(y);
                    break 'search;
                }
                queue.push_back(y);
            }
        }
    }
    let Some(mut y) = giver else {
        return false;
    };
    h.load[y as usize] -= 1;
    h.load[receiver as usize] += 1;
    while y != receiver {
        let (x, p) = via[y as usize];
        h.pass(p, y, x);
        y = x;
    }
    true
}

/// One partition fewer for `giver` through fresh moves only (see the module
/// documentation for whom it may end at); `false` (nothing changed) when none.
pub fn chain_out(
    model: &GroupModel,
    subscribers: &[Vec<MemberIdx>],
    h: &mut Holdings<'_>,
    giver: MemberIdx,
) -> bool {
    if h.fresh_held[giver as usize] == 0 {
        return false;
    }
    let top = h.load[giver as usize];
    // per member, the first fresh partition it holds of each topic, topics ascending
    let mut first_fresh: Vec<Vec<(TopicId, DenseId)>> = vec![Vec::new(); h.load.len()];
    for t in 0..model.num_topics() as TopicId {
        for &p in h.fresh.range(model.partitions_of(t)) {
            let x = h.owner[p as usize];
            let held = &mut first_fresh[x as usize];
            if held.last().is_none_or(|&(last, _)| last != t) {
                held.push((t, p));
            }
        }
    }
    // via[y] = (x, p): x passes its fresh partition p on to y, one step further out
    let mut via = vec![UNSEEN; h.load.len()];
    via[giver as usize] = (giver, DenseId::MAX);
    let mut scanned = vec![false; model.num_topics()];
    let mut queue = VecDeque::from([giver]);
    while let Some(x) = queue.pop_front() {
        for &(t, p) in &first_fresh[x as usize] {
            if std::mem::replace(&mut scanned[t as usize], true) {
                continue;
            }
            for &y in &subscribers[t as usize] {
                if via[y as usize] != UNSEEN {
                    continue;
                }
                via[y as usize] = (x, p);
                let l = h.load[y as usize];
                if l + 2 <= top || (l + 1 == top && calm(model, subscribers, h, y, top)) {
                    h.load[giver as usize] -= 1;
                    h.load[y as usize] += 1;
                    let mut y = y;
                    while y != giver {
                        let (x, p) = via[y as usize];
                        h.pass(p, x, y);
                        y = x;
                    }
                    return true;
                }
                queue.push_back(y);
            }
        }
    }
    false
}

/// At `new_load`, `member` holds no retained partition of a topic that has a
/// subscriber loaded two or more below it.
fn calm(
    model: &GroupModel,
    subscribers: &[Vec<MemberIdx>],
    h: &Holdings<'_>,
    member: MemberIdx,
    new_load: u32,
) -> bool {
    for &t in model.members[member as usize].topics.iter() {
        let holds_retained = model
            .partitions_of(t)
            .any(|p| h.owner[p as usize] == member && h.retained[p as usize]);
        if holds_retained {
            let least = subscribers[t as usize]
                .iter()
                .map(|&m| h.load[m as usize])
                .min()
                .expect("a subscribed topic has subscribers");
            if least + 2 <= new_load {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::super::model::{MemberSpec, ModelBuilder, UNOWNED};
    use super::*;
    use proptest::prelude::*;

    /// A group with every partition of a subscribed topic held by one of its subscribers
    /// (as after the general path's placement), some of them retained.
    fn state(
        sizes: &[i64],
        subscriptions: &[Vec<u32>],
        picks: &[(usize, bool)],
    ) -> (GroupModel, Vec<MemberIdx>, Vec<bool>) {
        let topics = sizes
            .iter()
            .enumerate()
            .map(|(t, &n)| (format!("t{t}"), n))
            .collect();
        let mut b = ModelBuilder::new(topics).unwrap();
        for (m, topics) in subscriptions.iter().enumerate() {
            let mut topics: Vec<u32> = topics.iter().map(|&t| t % sizes.len() as u32).collect();
            topics.sort_unstable();
            topics.dedup();
            b.push_member(MemberSpec {
                id: format!("m{m:02}"),
                topics: topics.into(),
                ..Default::default()
            });
        }
        let model = b.build().unwrap();
        let subscribers = model.subscribers();
        let mut owner = vec![UNOWNED; model.num_partitions()];
        let mut retained = vec![false; owner.len()];
        for t in 0..model.num_topics() as TopicId {
            let subs = &subscribers[t as usize];
            for p in model.partitions_of(t) {
                if subs.is_empty() {
                    continue;
                }
                let (pick, keep) = picks[p as usize % picks.len()];
                owner[p as usize] = subs[(pick + p as usize) % subs.len()];
                retained[p as usize] = keep;
            }
        }
        (model, owner, retained)
    }

    fn fresh_counts(owner: &[MemberIdx], retained: &[bool], members: usize) -> Vec<u32> {
        let mut fresh = vec![0; members];
        for (p, &m) in owner.iter().enumerate() {
            if m != UNOWNED && !retained[p] {
                fresh[m as usize] += 1;
            }
        }
        fresh
    }

    fn fresh_set(owner: &[MemberIdx], retained: &[bool]) -> BTreeSet<DenseId> {
        (0..owner.len())
            .filter(|&p| owner[p] != UNOWNED && !retained[p])
            .map(|p| p as DenseId)
            .collect()
    }

    fn loads(owner: &[MemberIdx], members: usize) -> Vec<u32> {
        let mut load = vec![0; members];
        for &m in owner.iter().filter(|&&m| m != UNOWNED) {
            load[m as usize] += 1;
        }
        load
    }

    /// What a successful chain must have done: only fresh partitions moved, each to a
    /// subscriber of its topic, and only `from` lost and `to` gained one.
    fn check_chain(
        model: &GroupModel,
        before: &[MemberIdx],
        was_retained: &[bool],
        after: &[MemberIdx],
        from: MemberIdx,
        to: MemberIdx,
    ) -> Result<(), TestCaseError> {
        for p in 0..before.len() {
            if before[p] != after[p] {
                prop_assert!(!was_retained[p], "retained partition {} moved", p);
                let t = model.topic_of(p as DenseId);
                prop_assert!(model.members[after[p] as usize].topics.contains(&t));
            }
        }
        let (lb, la) = (
            loads(before, model.num_members()),
            loads(after, model.num_members()),
        );
        for m in 0..lb.len() as MemberIdx {
            let expected = lb[m as usize] + u32::from(m == to) - u32::from(m == from);
            prop_assert_eq!(la[m as usize], expected, "load of member {}", m);
        }
        Ok(())
    }

    #[test]
    fn a_fresh_partition_travels_instead_of_a_retained_one() {
        // t0 (2 partitions): member 0 holds both, retained; t1 (1 partition): member 1
        // holds it, fresh, and member 2 subscribes to t0 and t1 only. The chain gives
        // member 2 the fresh t1 partition: member 1 drops to 0, nothing retained moves.
        let (model, mut owner, mut retained) =
            state(&[2, 1], &[vec![0], vec![0, 1], vec![0, 1]], &[(0, true)]);
        owner.copy_from_slice(&[0, 0, 1]);
        retained.copy_from_slice(&[true, true, false]);
        let mut load = loads(&owner, 3);
        load[1] += 2; // pretend member 1 carries two more of another topic
        let previous = vec![0, 0, UNOWNED];
        let mut fresh_held = fresh_counts(&owner, &retained, 3);
        let mut fresh = fresh_set(&owner, &retained);
        let mut h = Holdings {
            owner: &mut owner,
            load: &mut load,
            retained: &mut retained,
            fresh_held: &mut fresh_held,
            fresh: &mut fresh,
            previous: &previous,
        };
        assert!(chain_into(&model, &mut h, 2));
        assert_eq!(owner, [0, 0, 2]);
        assert_eq!(load, [2, 2, 1]);
    }

    proptest! {
        #[test]
        fn chains_move_only_fresh_partitions_and_change_two_loads(
            sizes in proptest::collection::vec(0i64..6, 1..4),
            subscriptions in proptest::collection::vec(proptest::collection::vec(0u32..4, 1..4), 1..7),
            picks in proptest::collection::vec((0usize..7, proptest::bool::ANY), 1..20),
            who in 0usize..7,
        ) {
            let (model, owner, retained) = state(&sizes, &subscriptions, &picks);
            let m = (who % model.num_members()) as MemberIdx;
            let previous: Vec<MemberIdx> = owner
                .iter()
                .zip(&retained)
                .map(|(&o, &r)| if r { o } else { UNOWNED })
                .collect();
            let subscribers = model.subscribers();

            let (mut o, mut r, mut l) = (owner.clone(), retained.clone(), loads(&owner, model.num_members()));
            let before = l.clone();
            let mut f = fresh_counts(&owner, &retained, model.num_members());
            let mut set = fresh_set(&owner, &retained);
            let mut h = Holdings { owner: &mut o, load: &mut l, retained: &mut r, fresh_held: &mut f, fresh: &mut set, previous: &previous };
            if chain_into(&model, &mut h, m) {
                let giver = (0..model.num_members() as MemberIdx)
                    .find(|&g| l[g as usize] + 1 == before[g as usize])
                    .expect("someone gave");
                prop_assert!(before[giver as usize] >= before[m as usize] + 2);
                check_chain(&model, &owner, &retained, &o, giver, m)?;
                prop_assert_eq!(&l, &loads(&o, model.num_members()));
                prop_assert_eq!(&f, &fresh_counts(&o, &r, model.num_members()));
                prop_assert_eq!(&set, &fresh_set(&o, &r));
            } else {
                prop_assert_eq!(&o, &owner);
            }

            let (mut o, mut r, mut l) = (owner.clone(), retained.clone(), loads(&owner, model.num_members()));
            let mut f = fresh_counts(&owner, &retained, model.num_members());
            let mut set = fresh_set(&owner, &retained);
            let mut h = Holdings { owner: &mut o, load: &mut l, retained: &mut r, fresh_held: &mut f, fresh: &mut set, previous: &previous };
            if chain_out(&model, &subscribers, &mut h, m) {
                let taker = (0..model.num_members() as MemberIdx)
                    .find(|&y| l[y as usize] == before[y as usize] + 1)
                    .expect("someone took");
                prop_assert!(before[taker as usize] < before[m as usize]);
                check_chain(&model, &owner, &retained, &o, m, taker)?;
                prop_assert_eq!(&l, &loads(&o, model.num_members()));
                prop_assert_eq!(&f, &fresh_counts(&o, &r, model.num_members()));
                prop_assert_eq!(&set, &fresh_set(&o, &r));
            } else {
                prop_assert_eq!(&o, &owner);
            }
        }
    }
}
