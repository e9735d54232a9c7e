//! One connection's replies in request order (Kafka answers a connection's requests in the
//! order they came): every request read takes the next sequence number and a slot; a slot
//! is filled when its reply is ready (at once for a heartbeat answered natively, later for
//! what Python answers, possibly out of order), and replies leave only from the front, up
//! to the first slot still empty.

use std::collections::VecDeque;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Slot {
    /// with whoever answers it (Python, or the shell itself at once)
    Waiting,
    /// Python parked it (a JoinGroup in its join phase): answered later, maybe much later
    Parked,
    /// the reply frame (size prefix included); `None`: the request has no reply (an
    /// acks=0 Produce)
    Ready(Option<Vec<u8>>),
}

#[derive(Debug, Default)]
pub struct ReplyOrder {
    slots: VecDeque<Slot>,
    /// the sequence number of `slots[0]`
    front_seq: u64,
}

impl ReplyOrder {
    /// A slot for the next request; its sequence number.
    pub fn open(&mut self) -> u64 {
        self.slots.push_back(Slot::Waiting);
        self.front_seq + self.slots.len() as u64 - 1
    }

    /// The reply to request `seq` is ready: `Some(was_parked)`, or `None` (nothing
    /// changes) if `seq` has no empty slot: already sent or filled, or never opened.
    pub fn fill(&mut self, seq: u64, reply: Option<Vec<u8>>) -> Option<bool> {
        let slot = self.slot(seq)?;
        let parked = match slot {
            Slot::Waiting => false,
            Slot::Parked => true,
            Slot::Ready(_) => return None,
        };
        *slot = Slot::Ready(reply);
        Some(parked)
    }

    /// Request `seq` is parked: its reply comes later. `false` if it was not waiting.
    pub fn park(&mut self, seq: u64) -> bool {
        match self.slot(seq) {
            Some(slot @ Slot::Waiting) => {
                *slot = Slot::Parked;
                true
            }
            _ => false,
        }
    }

    fn slot(&mut self, seq: u64) -> Option<&mut Slot> {
        let i = usize::try_from(seq.checked_sub(self.front_seq)?).ok()?;
        self.slots.get_mut(i)
    }

    /// Append the replies ready at the front to `out`; how many slots left.
    pub fn take_ready(&mut self, out: &mut Vec<u8>) -> usize {
        let mut n = 0;
        while let Some(Slot::Ready(_)) = self.slots.front() {
            if let Some(Slot::Ready(Some(bytes))) = self.slots.pop_front() {
                out.extend_from_slice(&bytes);
            }
            self.front_seq += 1;
            n += 1;
        }
        n
    }

    /// Requests not yet answered on the wire (waiting or ready behind one that waits).
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Bytes of replies ready but held behind a waiting one.
    pub fn held_bytes(&self) -> usize {
        self.slots
            .iter()
            .map(|s| match s {
                Slot::Ready(Some(b)) => b.len(),
                _ => 0,
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_late_reply_holds_back_the_ones_after_it() {
        let mut o = ReplyOrder::default();
        let (a, b, c) = (o.open(), o.open(), o.open());
        assert_eq!(o.fill(b, Some(vec![2])), Some(false));
        assert!(o.park(c));
        assert!(!o.park(c), "parked twice");
        assert_eq!(o.fill(c, None), Some(true));
        let mut out = Vec::new();
        assert_eq!(o.take_ready(&mut out), 0);
        assert_eq!(o.held_bytes(), 1);
        assert_eq!(o.fill(a, Some(vec![1])), Some(false));
        assert_eq!(o.fill(a, Some(vec![9])), None, "filled twice");
        assert_eq!(o.take_ready(&mut out), 3);
        assert_eq!(out, vec![1, 2]);
        assert_eq!(o.fill(a, Some(vec![9])), None, "already sent");
        assert_eq!(o.fill(99, Some(vec![9])), None, "never opened");
        assert!(!o.park(99));
        assert!(o.is_empty());
    }

    proptest! {
        /// Filled in any order, the replies leave in request order, each once.
        #[test]
        fn replies_leave_in_request_order(order in Just((0u64..30).collect::<Vec<_>>()).prop_shuffle(),
                                          opened in 1usize..30) {
            let mut o = ReplyOrder::default();
            let seqs: Vec<u64> = (0..opened).map(|_| o.open()).collect();
            prop_assert_eq!(&seqs, &(0..opened as u64).collect::<Vec<_>>());
            let mut out = Vec::new();
            for s in order.into_iter().filter(|&s| (s as usize) < opened) {
                if s % 3 == 0 {
                    prop_assert!(o.park(s));
                }
                prop_assert_eq!(o.fill(s, Some(vec![s as u8])), Some(s % 3 == 0));
                o.take_ready(&mut out);
            }
            prop_assert_eq!(out, (0..opened as u8).collect::<Vec<_>>());
            prop_assert!(o.is_empty());
        }
    }
}
