//! `MemberExpiry.heartbeat_many`'s group lookup: group handles remembered by the address of
//! the `str`'s UTF-8 buffer. Addresses of Python objects are a bindings matter, so this is
//! here and the expiry table only sees a [`GroupLookup`].

use crate::expiry::{GroupLookup, Groups};
use crate::prefetch::prefetch;

/// Which group a batch item names, remembered by the address of its bytes.
///
/// Why: a heartbeat batch names its groups by the same few `str` objects over and over, and
/// the bindings pass the UTF-8 cached inside each one. A direct-mapped array indexed by that
/// address finds the handle with one access whose location is known in advance (so it can
/// be prefetched), where a hash map lookup is two dependent misses.
///
/// An entry is trusted without checking within the call that wrote it (`stamp`): for the
/// whole call the batch's `str` objects are alive and unchanged (`StrBatch`), so one
/// address is one name. From an earlier call it is checked against the group's name first,
/// since the object may be gone and its address reused, or its group released.
#[derive(Default)]
pub(super) struct GroupMemo {
    entries: Vec<MemoEntry>,
    stamp: u32,
}

#[derive(Clone, Copy, Default)]
struct MemoEntry {
    ptr: usize,
    len: usize,
    group: u32,
    stamp: u32,
}

impl GroupMemo {
    #[inline]
    fn slot(&self, bytes: &[u8]) -> usize {
        let bits = self.entries.len().trailing_zeros();
        ((bytes.as_ptr() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - bits)) as usize
    }
}

impl GroupLookup for GroupMemo {
    /// Starts a call: sizes the array for the live groups (and one new) and moves the
    /// stamp on.
    fn begin(&mut self, live_groups: usize) {
        let want = (4 * (live_groups + 1))
            .clamp(256, 1 << 20)
            .next_power_of_two();
        if self.entries.len() < want {
            self.entries = vec![MemoEntry::default(); want];
        }
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.entries.fill(MemoEntry::default());
            self.stamp = 1;
        }
    }

    #[inline]
    fn prefetch(&self, name: &[u8]) {
        prefetch(&self.entries[self.slot(name)]);
    }

    #[inline]
    fn resolve(&mut self, groups: &mut Groups, name: &[u8]) -> u32 {
        let slot = self.slot(name);
        let e = self.entries[slot];
        if e.ptr == name.as_ptr() as usize && e.len == name.len() {
            if e.stamp == self.stamp {
                return e.group;
            }
            if groups.is_named(e.group, name) {
                self.entries[slot].stamp = self.stamp;
                return e.group;
            }
        }
        let g = groups.intern(name);
        self.entries[slot] = MemoEntry {
            ptr: name.as_ptr() as usize,
            len: name.len(),
            group: g,
            stamp: self.stamp,
        };
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reused_address_is_checked_against_the_name() {
        let mut groups = Groups::default();
        let mut memo = GroupMemo::default();
        let mut buf = *b"orders";
        memo.begin(groups.len());
        let orders = memo.resolve(&mut groups, &buf);
        assert_eq!(
            memo.resolve(&mut groups, &buf),
            orders,
            "remembered within a call"
        );
        assert_eq!(groups.get(b"orders"), Some(orders));
        // A later call, the same buffer now holding another name (a freed str's memory
        // reused): the entry must not be trusted.
        buf.copy_from_slice(b"events");
        memo.begin(groups.len());
        let events = memo.resolve(&mut groups, &buf);
        assert_ne!(events, orders);
        assert_eq!(groups.get(b"events"), Some(events));
        // And back: the entry written for "events" is checked too.
        buf.copy_from_slice(b"orders");
        memo.begin(groups.len());
        assert_eq!(memo.resolve(&mut groups, &buf), orders);
        // Same name at another address: a miss, found through the index.
        memo.begin(groups.len());
        assert_eq!(memo.resolve(&mut groups, b"orders".as_slice()), orders);
    }
}
