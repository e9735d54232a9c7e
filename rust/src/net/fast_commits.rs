//! The OffsetCommits the native shell takes itself, without Python, and hands over for
//! storing: the durable-commit counterpart of [`super::fast_heartbeats`].
//!
//! A commit of an admitted member ([`FastHeartbeats::take_commit`]) is the coordinator's
//! quiet case when every partition is one it accepts: each (topic, partition) named once,
//! of a topic the coordinator knows with that many partitions, its metadata within
//! `offset.metadata.max.bytes`. Then the coordinator's answer is known before it looks:
//! refresh the member's session, persist the offsets, answer every partition with no
//! error once they are on disk (COORDINATOR_NOT_AVAILABLE for each if the write fails).
//! The shell takes such a commit, holds both answers, and hands a [`TakenCommit`] to
//! Python, which stores it through the coordinator (`GroupCoordinator.store_shell_commits`)
//! before any request that came after it, and releases the answer when the write is
//! reported. Anything else goes to Python's dispatcher as before.
//!
//! Why it is exact is the argument of [`super::fast_heartbeats`]: a commit taken before
//! Python withdraws the group is one the coordinator would have accepted had it come
//! first, and Python stores the taken commits after each withdrawal and before the
//! request that caused it.
//!
//! [`FastHeartbeats::take_commit`]: super::fast_heartbeats::FastHeartbeats::take_commit

use rustc_hash::FxHashMap;

use super::commit_wire::CommitFrame;

/// One partition of a taken commit: index, offset, leader epoch, metadata (`None`: null).
pub type TakenPartition = (i32, i64, i32, Option<Box<[u8]>>);

/// A commit taken here, waiting for Python to store it; its answer is held on its
/// connection until then.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenCommit {
    pub conn: u64,
    pub seq: u64,
    pub group_id: Box<[u8]>,
    /// when it was taken: the offsets' commit timestamp
    pub at_ms: i64,
    /// its topics in request order, each with its partitions in request order
    pub topics: Vec<(Box<[u8]>, Vec<TakenPartition>)>,
}

impl TakenCommit {
    pub fn new(conn: u64, seq: u64, c: &CommitFrame<'_>, at_ms: i64) -> Self {
        TakenCommit {
            conn,
            seq,
            group_id: c.member.group_id.into(),
            at_ms,
            topics: c
                .topics
                .iter()
                .map(|t| {
                    let partitions = t
                        .partitions
                        .iter()
                        .map(|p| {
                            (
                                p.partition_index,
                                p.committed_offset,
                                p.committed_leader_epoch,
                                p.committed_metadata.map(Into::into),
                            )
                        })
                        .collect();
                    (t.name.into(), partitions)
                })
                .collect(),
        }
    }
}

/// What the coordinator's OffsetCommit check would accept, as far as the partitions go.
#[derive(Debug, Default)]
pub struct CommitRules {
    /// topic -> partition count, as the coordinator's check sees them (Python sets them at
    /// start and after every change of topics); `None`: take no commit here
    topics: Option<FxHashMap<Box<[u8]>, i32>>,
    /// Kafka's `offset.metadata.max.bytes`, which it compares with `String.length()`:
    /// UTF-16 code units, not bytes
    max_metadata: usize,
}

impl CommitRules {
    pub fn new(max_metadata: usize) -> Self {
        CommitRules {
            topics: None,
            max_metadata,
        }
    }

    /// The topics the coordinator knows now (`None`: take no commit here).
    pub fn set_topics(&mut self, topics: Option<FxHashMap<Box<[u8]>, i32>>) {
        self.topics = topics;
    }

    /// The coordinator accepts every partition of `c` once its member is current, and
    /// answers them in request order, topic by topic: at least one topic, each with at
    /// least one partition, each (topic, partition) and each topic named once, every
    /// partition in its topic's range, every metadata within bounds.
    pub fn accepts(&self, c: &CommitFrame<'_>) -> bool {
        let Some(topics) = &self.topics else {
            return false;
        };
        let in_range = |name: &[u8], index: i32| {
            topics
                .get(name)
                .is_some_and(|&count| (0..count).contains(&index))
        };
        // a topic with no partitions is left out of the coordinator's answer: Python's
        !c.topics.is_empty()
            && c.topics.iter().all(|t| {
                !t.partitions.is_empty()
                    && t.partitions.iter().all(|p| {
                        in_range(t.name, p.partition_index)
                            && utf16_len(p.committed_metadata.unwrap_or_default())
                                <= self.max_metadata
                    })
            })
            && c.names_each_once()
    }
}

/// `String.length()` of valid UTF-8 `s`: a character above U+FFFF counts twice.
fn utf16_len(s: &[u8]) -> usize {
    if s.is_ascii() {
        return s.len();
    }
    std::str::from_utf8(s).map_or(usize::MAX, |s| s.chars().map(char::len_utf16).sum())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::commit_wire::{CommitPartition, CommitTopic};
    use crate::net::member::Member;
    use proptest::prelude::*;

    /// A topic of a test commit: its name and partitions (index, metadata).
    type Topic<'a> = (&'a str, Vec<(i32, Option<&'a str>)>);

    fn commit(topics: Vec<Topic<'_>>) -> CommitFrame<'_> {
        CommitFrame {
            version: 8,
            correlation_id: 1,
            member: Member {
                group_id: b"g",
                generation_id: 1,
                member_id: b"m",
                group_instance_id: None,
            },
            topics: topics
                .into_iter()
                .map(|(name, ps)| CommitTopic {
                    name: name.as_bytes(),
                    partitions: ps
                        .into_iter()
                        .map(|(i, meta)| CommitPartition {
                            partition_index: i,
                            committed_offset: 5,
                            committed_leader_epoch: -1,
                            committed_metadata: meta.map(str::as_bytes),
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    fn rules(max_metadata: usize) -> CommitRules {
        let mut r = CommitRules::new(max_metadata);
        r.set_topics(Some(
            [(b"a".as_slice().into(), 3), (b"b".as_slice().into(), 1)]
                .into_iter()
                .collect(),
        ));
        r
    }

    #[test]
    fn only_partitions_the_coordinator_accepts_in_order() {
        let r = rules(4);
        assert!(r.accepts(&commit(vec![("a", vec![(0, None), (2, Some("x"))])])));
        assert!(r.accepts(&commit(vec![
            ("a", vec![(1, None)]),
            ("b", vec![(0, None)])
        ])));
        assert!(!r.accepts(&commit(vec![])), "nothing to commit");
        assert!(
            !r.accepts(&commit(vec![("a", vec![])])),
            "nothing to commit"
        );
        assert!(
            !r.accepts(&commit(vec![("a", vec![(0, None)]), ("b", vec![])])),
            "a topic the answer leaves out"
        );
        assert!(
            !r.accepts(&commit(vec![("a", vec![(3, None)])])),
            "out of range"
        );
        assert!(
            !r.accepts(&commit(vec![("a", vec![(-1, None)])])),
            "negative"
        );
        assert!(
            !r.accepts(&commit(vec![("c", vec![(0, None)])])),
            "unknown topic"
        );
        assert!(
            !r.accepts(&commit(vec![("a", vec![(0, None), (0, None)])])),
            "twice"
        );
        assert!(
            !r.accepts(&commit(vec![
                ("a", vec![(0, None)]),
                ("a", vec![(1, None)])
            ])),
            "a topic twice"
        );
        assert!(
            !r.accepts(&commit(vec![("a", vec![(0, Some("12345"))])])),
            "too long"
        );
        // four UTF-16 units: two of U+00E9, one pair for U+1F600
        assert!(r.accepts(&commit(vec![(
            "a",
            vec![(0, Some("\u{e9}\u{e9}\u{1f600}"))]
        )])));
        assert!(!r.accepts(&commit(vec![(
            "a",
            vec![(0, Some("\u{e9}\u{e9}\u{e9}\u{1f600}"))]
        )])));
        assert!(
            !CommitRules::new(4).accepts(&commit(vec![("a", vec![(0, None)])])),
            "no topics told yet"
        );
    }

    #[test]
    fn a_taken_commit_keeps_the_request_order() {
        let c = commit(vec![
            ("b", vec![(0, Some("m"))]),
            ("a", vec![(2, None), (0, None)]),
        ]);
        let t = TakenCommit::new(3, 9, &c, 1_000);
        assert_eq!(
            (t.conn, t.seq, t.at_ms, &*t.group_id),
            (3, 9, 1_000, b"g".as_slice())
        );
        let names: Vec<&[u8]> = t.topics.iter().map(|(n, _)| &**n).collect();
        assert_eq!(names, vec![b"b".as_slice(), b"a".as_slice()]);
        assert_eq!(t.topics[1].1, vec![(2, 5, -1, None), (0, 5, -1, None)]);
        assert_eq!(t.topics[0].1[0].3.as_deref(), Some(b"m".as_slice()));
    }

    proptest! {
        /// Against a model of the coordinator's checks (`commits.handle_offset_commit`).
        #[test]
        fn agrees_with_a_model(
            topics in prop::collection::vec(
                (0u8..4, prop::collection::vec((-1i32..4, prop::option::of("[a-z\u{e9}]{0,6}")), 0..4)),
                0..4,
            )
        ) {
            let r = rules(5);
            type Owned = (String, Vec<(i32, Option<String>)>);
            let owned: Vec<Owned> = topics
                .iter()
                .map(|(n, ps)| (["a", "b", "c", "d"][*n as usize].to_string(), ps.clone()))
                .collect();
            let c = commit(owned.iter().map(|(n, ps)| (n.as_str(), ps.iter().map(|(i, m)| (*i, m.as_deref())).collect())).collect());
            let counts = |n: &str| match n { "a" => Some(3), "b" => Some(1), _ => None };
            let mut names = std::collections::HashSet::new();
            let mut pairs = std::collections::HashSet::new();
            let mut want = !owned.is_empty();
            for (n, ps) in &owned {
                want &= !ps.is_empty();
                want &= names.insert(n.clone());
                for (i, m) in ps {
                    want &= counts(n).is_some_and(|k| (0..k).contains(i));
                    want &= pairs.insert((n.clone(), *i));
                    want &= m.as_deref().unwrap_or("").encode_utf16().count() <= 5;
                }
            }
            prop_assert_eq!(r.accepts(&c), want);
        }
    }
}
