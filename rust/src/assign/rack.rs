//! Rack data for rack-aware assignment (KIP-881): each member's rack and each
//! partition's replica racks, interned to dense integers.
//!
//! Racks are interned in sorted-name order so that every tie broken by rack id is
//! broken the same way whatever order the caller listed them in. A partition's racks
//! are stored as one compressed row per dense partition id (`starts[p]..starts[p + 1]`
//! into `ids`), sorted and distinct: a million partitions with three replicas cost
//! 16 MB, not a million small vectors.
//!
//! Capacity: rack ids are `u32` ([`NO_RACK`] is reserved); the rows hold at most
//! `u32::MAX` (partition, rack) pairs in all.

use super::model::{DenseId, MemberIdx};

pub type RackId = u32;

/// A member without a rack (no `rack_id`, or an empty one: Java filters `""` out too).
pub const NO_RACK: RackId = RackId::MAX;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Racks {
    pub names: Vec<String>,
    /// Per member index: its rack, or [`NO_RACK`].
    pub member_rack: Vec<RackId>,
    /// Row starts per dense partition id, plus one past the end.
    pub starts: Vec<u32>,
    pub ids: Vec<RackId>,
}

impl Racks {
    /// The replica racks of partition `p`, ascending.
    #[inline]
    pub fn of_partition(&self, p: DenseId) -> &[RackId] {
        &self.ids[self.starts[p as usize] as usize..self.starts[p as usize + 1] as usize]
    }

    #[inline]
    pub fn of_member(&self, m: MemberIdx) -> RackId {
        self.member_rack[m as usize]
    }

    /// Member `m` has a rack and `p` has a replica there.
    #[inline]
    pub fn local(&self, m: MemberIdx, p: DenseId) -> bool {
        let r = self.of_member(m);
        r != NO_RACK && self.of_partition(p).binary_search(&r).is_ok()
    }

    /// Java's `racksMismatch`: member `m` has a rack and `p` has no replica there.
    /// A member without a rack mismatches nothing.
    #[inline]
    pub fn mismatch(&self, m: MemberIdx, p: DenseId) -> bool {
        let r = self.of_member(m);
        r != NO_RACK && self.of_partition(p).binary_search(&r).is_err()
    }

    /// Java's `AbstractPartitionAssignor.useRackAwareAssignment` (KIP-881, with
    /// `preferRackAwareLogic` off): rack-aware assignment pays off when some of
    /// `members` have racks, those racks hold replicas of some of `partitions`, and
    /// not every partition has replicas on every rack that holds any of them
    /// (otherwise every member is equally close to every partition).
    pub fn worth_using(
        &self,
        members: impl IntoIterator<Item = MemberIdx>,
        partitions: impl Iterator<Item = DenseId> + Clone,
    ) -> bool {
        let mut member_racks = vec![false; self.names.len()];
        let mut any_member_rack = false;
        for m in members {
            let r = self.of_member(m);
            if r != NO_RACK {
                member_racks[r as usize] = true;
                any_member_rack = true;
            }
        }
        if !any_member_rack {
            return false;
        }
        let mut union = vec![false; self.names.len()];
        let mut union_size = 0usize;
        for p in partitions.clone() {
            for &r in self.of_partition(p) {
                if !std::mem::replace(&mut union[r as usize], true) {
                    union_size += 1;
                }
            }
        }
        if !union.iter().zip(&member_racks).any(|(&u, &m)| u && m) {
            return false;
        }
        // Rows are distinct racks drawn from the union, so "equals the union" is a length test.
        partitions
            .into_iter()
            .any(|p| self.of_partition(p).len() != union_size)
    }

    /// Per rack id: the given members in that rack, in the order given.
    pub fn members_by_rack(
        &self,
        members: impl IntoIterator<Item = MemberIdx>,
    ) -> Vec<Vec<MemberIdx>> {
        let mut by_rack = vec![Vec::new(); self.names.len()];
        for m in members {
            let r = self.of_member(m);
            if r != NO_RACK {
                by_rack[r as usize].push(m);
            }
        }
        by_rack
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn racks(rows: &[&[RackId]], members: &[RackId]) -> Racks {
        let mut starts = vec![0u32];
        let mut ids = Vec::new();
        for row in rows {
            ids.extend_from_slice(row);
            starts.push(ids.len() as u32);
        }
        Racks {
            names: vec!["a".into(), "b".into(), "c".into()],
            member_rack: members.to_vec(),
            starts,
            ids,
        }
    }

    #[test]
    fn local_and_mismatch_follow_java() {
        let r = racks(&[&[0, 1], &[]], &[0, 2, NO_RACK]);
        assert!(r.local(0, 0) && !r.mismatch(0, 0));
        assert!(!r.local(1, 0) && r.mismatch(1, 0));
        assert!(
            !r.local(2, 0) && !r.mismatch(2, 0),
            "no rack mismatches nothing"
        );
        assert!(
            r.mismatch(0, 1),
            "a partition without racks mismatches a racked member"
        );
    }

    #[test]
    fn worth_using_only_when_racks_separate_partitions() {
        // every partition on every rack: no member is closer to any partition
        let even = racks(&[&[0, 1], &[0, 1]], &[0, 1]);
        assert!(!even.worth_using(0..2, 0..2));
        let uneven = racks(&[&[0], &[1]], &[0, 1]);
        assert!(uneven.worth_using(0..2, 0..2));
        // member racks disjoint from replica racks
        let disjoint = racks(&[&[0], &[1]], &[2, 2]);
        assert!(!disjoint.worth_using(0..2, 0..2));
        // no member has a rack
        let none = racks(&[&[0], &[1]], &[NO_RACK]);
        assert!(!none.worth_using(0..1, 0..2));
    }
}
