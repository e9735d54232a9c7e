//! The sticky general path's last step: partitions back to their previous owners.
//!
//! The repair loop balances by moving partitions one at a time, and sometimes moves a
//! member's own partition out before another member's comes back to it. This step
//! undoes such moves where it can without changing any member's load: a partition `p`
//! that sits with `x` but was owned by `y` goes back to `y`, which passes on one
//! partition it holds and did not own before, and so on along a chain of members that
//! ends at `x`. Every member in the chain gives one partition and takes one, so the
//! loads (and with them balance) stay as they are; a partition may go to a member only
//! if that member's load is at most one above the least loaded subscriber of its topic
//! (Java's balance rule). Each chain puts at least one more partition with its previous
//! owner and never takes one from its previous owner, so the step ends.
//!
//! For cooperative-sticky this is what lets the second round keep everything: by then
//! the first round's result, minus what was withheld, is owned, and a chain from the
//! placed partitions back to their owners is what keeps the repair loop from revoking
//! some of it.
//!
//! The same step for step as `python/groupcoord/reference/assign/give_back.py` (ties:
//! candidates in dense order, chains found breadth first over topics and members in
//! ascending order).

use super::model::{DenseId, MemberIdx, TopicId, UNOWNED};
use std::collections::{BTreeMap, VecDeque};

/// Per member and topic: the partitions it holds and did not own before, ascending.
type Movable = Vec<BTreeMap<TopicId, Vec<DenseId>>>;

/// Moves partitions (in `owner`) back to their previous owners along load-neutral
/// chains; `load` is per member and does not change. `offsets[t]..offsets[t + 1]` are
/// topic `t`'s dense ids.
pub fn give_back(
    subscribers: &[Vec<MemberIdx>],
    offsets: &[DenseId],
    previous: &[MemberIdx],
    owner: &mut [MemberIdx],
    load: &[u32],
) {
    // what the repair moved away from its previous owner; most groups have nothing
    // here (fresh ones in particular), and then nothing else is built
    let candidates: Vec<DenseId> = (0..owner.len() as DenseId)
        .filter(|&p| {
            let (m, before) = (owner[p as usize], previous[p as usize]);
            before != UNOWNED && m != before
        })
        .collect();
    if candidates.is_empty() {
        return;
    }
    let mut topic_of = vec![0 as TopicId; owner.len()];
    for t in 0..subscribers.len() {
        for p in offsets[t]..offsets[t + 1] {
            topic_of[p as usize] = t as TopicId;
        }
    }
    // the highest load a member may have and still take a partition of topic t
    let ceiling: Vec<u32> = subscribers
        .iter()
        .map(|subs| subs.iter().map(|&m| load[m as usize]).min().unwrap_or(0) + 1)
        .collect();
    let mut movable: Movable = vec![BTreeMap::new(); load.len()];
    for (p, &m) in owner.iter().enumerate() {
        if m != UNOWNED && previous[p] != m {
            movable[m as usize]
                .entry(topic_of[p])
                .or_default()
                .push(p as DenseId);
        }
    }
    let graph = Graph {
        subscribers,
        ceiling: &ceiling,
        load,
    };

    let mut changed = true;
    while changed {
        changed = false;
        // per member y: the members a search from y reached when it found no chain (all
        // it can reach), valid until the next chain is applied
        let mut reached: BTreeMap<MemberIdx, Vec<bool>> = BTreeMap::new();
        for &p in &candidates {
            let (x, y) = (owner[p as usize], previous[p as usize]);
            let t = topic_of[p as usize];
            if x == y || load[y as usize] > ceiling[t as usize] {
                continue;
            }
            if reached.get(&y).is_some_and(|seen| !seen[x as usize]) {
                continue;
            }
            let parent = match graph.search(&movable, y, x) {
                Ok(parent) => parent,
                Err(seen) => {
                    reached.insert(y, seen);
                    continue;
                }
            };
            // p back to y, then along the chain backwards from x, each member giving
            // the next one a partition it did not own before
            owner[p as usize] = y;
            remove(&mut movable[x as usize], t, p);
            let mut v = x;
            while v != y {
                let (u, topic) = parent[v as usize];
                let held = &movable[u as usize][&topic];
                let q = held
                    .iter()
                    .copied()
                    .find(|&q| previous[q as usize] == v)
                    .unwrap_or(*held.last().expect("the search saw a partition here"));
                remove(&mut movable[u as usize], topic, q);
                owner[q as usize] = v;
                if previous[q as usize] != v {
                    let list = movable[v as usize].entry(topic).or_default();
                    let at = list.partition_point(|&o| o < q);
                    list.insert(at, q);
                }
                v = u;
            }
            changed = true;
            reached.clear();
        }
    }
}

fn remove(movable: &mut BTreeMap<TopicId, Vec<DenseId>>, t: TopicId, p: DenseId) {
    let list = movable.get_mut(&t).expect("the partition is listed");
    let at = list.binary_search(&p).expect("the partition is listed");
    list.remove(at);
}

/// "Member u holds a partition of topic t it did not own before, and member v may take
/// it" (v subscribes to t and its load is within t's ceiling).
struct Graph<'a> {
    subscribers: &'a [Vec<MemberIdx>],
    ceiling: &'a [u32],
    load: &'a [u32],
}

impl Graph<'_> {
    /// Breadth first from `start`: per member, the (member, topic) it is reached from,
    /// once `target` is reached; else which members were reached.
    fn search(
        &self,
        movable: &Movable,
        start: MemberIdx,
        target: MemberIdx,
    ) -> Result<Vec<(MemberIdx, TopicId)>, Vec<bool>> {
        let mut seen = vec![false; self.load.len()];
        seen[start as usize] = true;
        let mut expanded = vec![false; self.subscribers.len()];
        let mut parent = vec![(UNOWNED, 0 as TopicId); self.load.len()];
        let mut queue = VecDeque::from([start]);
        while let Some(u) = queue.pop_front() {
            for (&t, held) in &movable[u as usize] {
                // a topic's takers are the same whoever gives: expanding it once is enough
                if expanded[t as usize] || held.is_empty() {
                    continue;
                }
                expanded[t as usize] = true;
                for &v in &self.subscribers[t as usize] {
                    if seen[v as usize] || self.load[v as usize] > self.ceiling[t as usize] {
                        continue;
                    }
                    seen[v as usize] = true;
                    parent[v as usize] = (u, t);
                    if v == target {
                        return Ok(parent);
                    }
                    queue.push_back(v);
                }
            }
        }
        Err(seen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // topics 0 (dense 0..2) and 1 (dense 2..3); members 0 and 1 subscribe to both,
    // member 2 to topic 1 only
    const OFFSETS: [DenseId; 3] = [0, 2, 3];

    #[test]
    fn a_partition_goes_back_in_exchange_for_one_the_owner_did_not_own() {
        let subscribers = vec![vec![0, 1], vec![0, 1]];
        // partition 0 was member 1's; the repair left it with member 0 and gave 1 the new 2
        let previous = [1, UNOWNED, UNOWNED];
        let mut owner = [0, 0, 1];
        give_back(&subscribers, &OFFSETS, &previous, &mut owner, &[2, 1]);
        assert_eq!(owner, [1, 0, 0]);
    }

    #[test]
    fn no_partition_goes_where_balance_forbids() {
        // member 0 holds 2, member 1 holds 1 and member 2 nothing: partition 2 may not go
        // to member 0, whose load is two above member 2's (a subscriber of topic 1)
        let subscribers = vec![vec![0, 1], vec![0, 1, 2]];
        let previous = [1, UNOWNED, UNOWNED];
        let mut owner = [0, 0, 1];
        give_back(&subscribers, &OFFSETS, &previous, &mut owner, &[2, 1, 0]);
        assert_eq!(owner, [0, 0, 1]);
    }
}
