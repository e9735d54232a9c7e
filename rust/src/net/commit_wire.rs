//! OffsetCommit (API 8, v2-v9) frames in their common shape, for the native shell's
//! durable commit path: a request is read only where Python's hand codec
//! (`groupcoord.protocol.offset_commit_codec`) would read it, to the same values (its rules
//! are the spec: no null but a null client id, instance id or metadata, flexible strings
//! and arrays under 127 (one varint byte), no tagged fields, the default retention (-1),
//! valid UTF-8, nothing after the body); everything else is `None` and goes to Python,
//! whose generic path reads any valid frame and names the fault in a bad one. So this
//! never has to produce an error. The response written is byte for byte what that codec's
//! `encode_offset_commit_response` writes for the same answer.
//!
//! Layouts: request header v1 (v2-v7) or v2 (v8+): `int16 api_key, int16 version, int32
//! correlation_id, nullable string client_id` (int16 length), v2 then tagged fields; body
//! `group_id, int32 generation_id_or_member_epoch, member_id`, v7+ `nullable
//! group_instance_id`, v2-v4 `int64 retention_time_ms`, `topics: [name, partitions:
//! [int32 partition_index, int64 committed_offset`, v6+ `int32 committed_leader_epoch`,
//! `nullable committed_metadata]]`; v8+ with compact strings and arrays (uvarint
//! `length + 1`) and tagged fields ending every struct. Response header v0 (v1 for v8+,
//! with tagged fields): `int32 correlation_id`; body v3+ `int32 throttle_time_ms`,
//! `topics: [name, partitions: [int32 partition_index, int16 error_code]]`, compact with
//! tagged fields in v8+.

use super::member::Member;
use super::wire_cursor::read_header;

pub const OFFSET_COMMIT_API_KEY: i16 = 8;
/// v0 and v1 carry other fields (v1 a per-partition timestamp): Python serves them.
const MIN_VERSION: i16 = 2;
const MAX_VERSION: i16 = 9;
const FLEXIBLE: i16 = 8;

/// One partition's commit; `committed_leader_epoch` is -1 before v6 (not on the wire).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitPartition<'a> {
    pub partition_index: i32,
    pub committed_offset: i64,
    pub committed_leader_epoch: i32,
    pub committed_metadata: Option<&'a [u8]>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitTopic<'a> {
    pub name: &'a [u8],
    pub partitions: Vec<CommitPartition<'a>>,
}

/// An OffsetCommit request read from a frame body; the strings borrow the frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitFrame<'a> {
    pub version: i16,
    pub correlation_id: i32,
    pub member: Member<'a>,
    pub topics: Vec<CommitTopic<'a>>,
}

/// The request in `frame` (a frame body: header and payload, no size prefix) if it is an
/// OffsetCommit of a version in `versions` in its common shape; else `None`.
pub fn read_common(frame: &[u8], versions: (i16, i16)) -> Option<CommitFrame<'_>> {
    let supported = (MIN_VERSION, MAX_VERSION);
    let (version, correlation_id, mut b) =
        read_header(frame, OFFSET_COMMIT_API_KEY, versions, supported, FLEXIBLE)?;
    let member = b.member(version >= 7)?;
    // Any other retention goes to Python: kio reads it as a timedelta with its own range
    // checks, and clients send the default.
    if version <= 4 && b.c.i64()? != -1 {
        return None;
    }
    // No capacity from the counts: they are the client's word until the bytes are read
    // (each element takes at least one byte, so a false count ends in `None` soon).
    let mut topics = Vec::new();
    for _ in 0..b.count()? {
        let name = b.string(false)??;
        let mut partitions = Vec::new();
        for _ in 0..b.count()? {
            let partition_index = b.c.i32()?;
            let committed_offset = b.c.i64()?;
            let committed_leader_epoch = if version >= 6 { b.c.i32()? } else { -1 };
            let committed_metadata = b.string(true)?;
            b.no_tagged_fields()?;
            partitions.push(CommitPartition {
                partition_index,
                committed_offset,
                committed_leader_epoch,
                committed_metadata,
            });
        }
        b.no_tagged_fields()?;
        topics.push(CommitTopic { name, partitions });
    }
    b.no_tagged_fields()?;
    b.c.at_end().then_some(CommitFrame {
        version,
        correlation_id,
        member,
        topics,
    })
}

impl CommitFrame<'_> {
    /// A whole OffsetCommit response frame (size prefix included) answering every
    /// partition of the request, in request order, with `error_code`; the coordinator never
    /// throttles, so `throttle_time_ms` (v3+) is 0.
    pub fn response(&self, error_code: i16) -> Vec<u8> {
        let flexible = self.version >= FLEXIBLE;
        let size: usize = self
            .topics
            .iter()
            .map(|t| t.name.len() + 10 + 7 * t.partitions.len())
            .sum();
        let mut out = Vec::with_capacity(18 + size);
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&self.correlation_id.to_be_bytes());
        if flexible {
            out.push(0); // response header tagged fields
        }
        if self.version >= 3 {
            out.extend_from_slice(&0i32.to_be_bytes());
        }
        array_length(&mut out, self.topics.len(), flexible);
        for t in &self.topics {
            if flexible {
                uvarint(&mut out, t.name.len() + 1);
            } else {
                out.extend_from_slice(&(t.name.len() as i16).to_be_bytes());
            }
            out.extend_from_slice(t.name);
            array_length(&mut out, t.partitions.len(), flexible);
            for p in &t.partitions {
                out.extend_from_slice(&p.partition_index.to_be_bytes());
                out.extend_from_slice(&error_code.to_be_bytes());
                if flexible {
                    out.push(0); // partition tagged fields
                }
            }
            if flexible {
                out.push(0); // topic tagged fields
            }
        }
        if flexible {
            out.push(0); // body tagged fields
        }
        let size = (out.len() - 4) as i32;
        out[..4].copy_from_slice(&size.to_be_bytes());
        out
    }

    /// Each (topic, partition) named once and each topic name once (the answer order the
    /// coordinator gives then is the request's).
    pub fn names_each_once(&self) -> bool {
        let mut names: Vec<&[u8]> = self.topics.iter().map(|t| t.name).collect();
        names.sort_unstable();
        if names.windows(2).any(|w| w[0] == w[1]) {
            return false;
        }
        let mut indexes = Vec::new();
        self.topics.iter().all(|t| {
            indexes.clear();
            indexes.extend(t.partitions.iter().map(|p| p.partition_index));
            indexes.sort_unstable();
            indexes.windows(2).all(|w| w[0] != w[1])
        })
    }
}

/// Python writes a real uvarint, so a name of 127 bytes or more (never read here, but
/// `CommitFrame` can be built) still gets its answer.
fn uvarint(out: &mut Vec<u8>, mut value: usize) {
    while value >= 0x80 {
        out.push((value & 0x7f) as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn array_length(out: &mut Vec<u8>, n: usize, flexible: bool) {
    if flexible {
        uvarint(out, n + 1);
    } else {
        out.extend_from_slice(&(n as i32).to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    struct Part {
        index: i32,
        offset: i64,
        epoch: i32,
        metadata: Option<String>,
    }

    /// A request as a client means it; fields its version lacks are not written.
    #[derive(Debug, Clone)]
    struct Req {
        version: i16,
        correlation: i32,
        client: Option<String>,
        group: String,
        generation: i32,
        member: String,
        instance: Option<String>,
        retention: i64,
        topics: Vec<(String, Vec<Part>)>,
    }

    impl Req {
        /// The request frame body as a client writes it.
        fn frame(&self) -> Vec<u8> {
            let v = self.version;
            let flexible = v >= FLEXIBLE;
            let mut f = Vec::new();
            f.extend_from_slice(&OFFSET_COMMIT_API_KEY.to_be_bytes());
            f.extend_from_slice(&v.to_be_bytes());
            f.extend_from_slice(&self.correlation.to_be_bytes());
            legacy(&mut f, self.client.as_deref());
            let string = |f: &mut Vec<u8>, s: Option<&str>| {
                if flexible {
                    compact(f, s)
                } else {
                    legacy(f, s)
                }
            };
            let count = |f: &mut Vec<u8>, n: usize| {
                if flexible {
                    f.push(n as u8 + 1);
                } else {
                    f.extend_from_slice(&(n as i32).to_be_bytes());
                }
            };
            let tags = |f: &mut Vec<u8>| {
                if flexible {
                    f.push(0);
                }
            };
            tags(&mut f);
            string(&mut f, Some(&self.group));
            f.extend_from_slice(&self.generation.to_be_bytes());
            string(&mut f, Some(&self.member));
            if v >= 7 {
                string(&mut f, self.instance.as_deref());
            }
            if v <= 4 {
                f.extend_from_slice(&self.retention.to_be_bytes());
            }
            count(&mut f, self.topics.len());
            for (name, parts) in &self.topics {
                string(&mut f, Some(name));
                count(&mut f, parts.len());
                for p in parts {
                    f.extend_from_slice(&p.index.to_be_bytes());
                    f.extend_from_slice(&p.offset.to_be_bytes());
                    if v >= 6 {
                        f.extend_from_slice(&p.epoch.to_be_bytes());
                    }
                    string(&mut f, p.metadata.as_deref());
                    tags(&mut f);
                }
                tags(&mut f);
            }
            tags(&mut f);
            f
        }

        /// What `read_common` should make of `frame()`.
        fn expected(&self) -> CommitFrame<'_> {
            let v = self.version;
            CommitFrame {
                version: v,
                correlation_id: self.correlation,
                member: Member {
                    group_id: self.group.as_bytes(),
                    generation_id: self.generation,
                    member_id: self.member.as_bytes(),
                    group_instance_id: self
                        .instance
                        .as_deref()
                        .filter(|_| v >= 7)
                        .map(str::as_bytes),
                },
                topics: self
                    .topics
                    .iter()
                    .map(|(name, parts)| CommitTopic {
                        name: name.as_bytes(),
                        partitions: parts
                            .iter()
                            .map(|p| CommitPartition {
                                partition_index: p.index,
                                committed_offset: p.offset,
                                committed_leader_epoch: if v >= 6 { p.epoch } else { -1 },
                                committed_metadata: p.metadata.as_deref().map(str::as_bytes),
                            })
                            .collect(),
                    })
                    .collect(),
            }
        }
    }

    fn legacy(f: &mut Vec<u8>, s: Option<&str>) {
        match s {
            None => f.extend_from_slice(&(-1i16).to_be_bytes()),
            Some(s) => {
                f.extend_from_slice(&(s.len() as i16).to_be_bytes());
                f.extend_from_slice(s.as_bytes());
            }
        }
    }

    fn compact(f: &mut Vec<u8>, s: Option<&str>) {
        match s {
            None => f.push(0),
            Some(s) => {
                f.push(s.len() as u8 + 1);
                f.extend_from_slice(s.as_bytes());
            }
        }
    }

    /// Requests of every version in the common shape (strings and arrays short enough for
    /// one compact length byte), the retention the default.
    fn requests() -> impl Strategy<Value = Req> {
        let part = (
            any::<i32>(),
            any::<i64>(),
            any::<i32>(),
            proptest::option::of("[a-z {}€]{0,20}"),
        )
            .prop_map(|(index, offset, epoch, metadata)| Part {
                index,
                offset,
                epoch,
                metadata,
            });
        let topic = (
            "[a-zA-Z0-9._-]{0,40}",
            proptest::collection::vec(part, 0..5),
        );
        (
            2i16..=9,
            any::<i32>(),
            proptest::option::of("[a-z0-9-]{0,20}"),
            "[a-z0-9._-]{0,30}",
            any::<i32>(),
            "[a-zé0-9-]{0,40}",
            proptest::option::of("[a-z0-9-]{0,20}"),
            proptest::collection::vec(topic, 0..4),
        )
            .prop_map(
                |(version, correlation, client, group, generation, member, instance, topics)| Req {
                    version,
                    correlation,
                    client,
                    group,
                    generation,
                    member,
                    instance,
                    retention: -1,
                    topics,
                },
            )
    }

    /// A plain request with one string of each kind: ASCII and small numbers, so a marker
    /// put in one string is the only place its bytes occur.
    fn plain(version: i16) -> Req {
        let part = |index, metadata: Option<&str>| Part {
            index,
            offset: 3,
            epoch: 4,
            metadata: metadata.map(String::from),
        };
        Req {
            version,
            correlation: 1,
            client: Some("client".into()),
            group: "group".into(),
            generation: 2,
            member: "member".into(),
            instance: Some("instance".into()),
            retention: -1,
            topics: vec![
                ("t1".into(), vec![part(0, Some("md")), part(1, None)]),
                ("t2".into(), vec![part(5, Some(""))]),
            ],
        }
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// A v8 request frame body written by the Python side (groupcoord's
    /// `to_kio_request` of an `OffsetCommitRequest`, encoded by kio with client id "cli").
    const PYTHON_V8: &str = concat!(
        "00080008010203040003636c690003673100000005046d2d3103693103027403",
        "00000000000000000000002a00000003036d640000000002ffffffffffffffff",
        "ffffffff0000000475c3a902000000070000010000000000ffffffff01000000",
    );

    #[test]
    fn reads_a_frame_the_python_codec_wrote() {
        let f = hex(PYTHON_V8);
        let part =
            |partition_index, committed_offset, committed_leader_epoch, md| CommitPartition {
                partition_index,
                committed_offset,
                committed_leader_epoch,
                committed_metadata: md,
            };
        assert_eq!(
            read_common(&f, (0, 9)).unwrap(),
            CommitFrame {
                version: 8,
                correlation_id: 0x01020304,
                member: Member {
                    group_id: b"g1",
                    generation_id: 5,
                    member_id: b"m-1",
                    group_instance_id: Some(b"i1"),
                },
                topics: vec![
                    CommitTopic {
                        name: b"t",
                        partitions: vec![part(0, 42, 3, Some(&b"md"[..])), part(2, -1, -1, None)],
                    },
                    CommitTopic {
                        name: "u\u{e9}".as_bytes(),
                        partitions: vec![part(7, 1 << 40, -1, Some(&b""[..]))],
                    },
                ],
            }
        );
    }

    /// `encode_offset_commit_response` of the Python codec for the request above (v8,
    /// error 0) and for it as v2 with correlation id 9 and error 25.
    #[test]
    fn responses_match_the_python_codec() {
        let f = hex(PYTHON_V8);
        let v8 = read_common(&f, (0, 9)).unwrap();
        assert_eq!(
            v8.response(0),
            hex(concat!(
                "0000002a010203040000000000030274030000000000000000000002000000",
                "000475c3a902000000070000000000",
            ))
        );
        let v2 = CommitFrame {
            version: 2,
            correlation_id: 9,
            ..v8
        };
        assert_eq!(
            v2.response(25),
            hex(concat!(
                "0000002a000000090000000200017400000002000000000019000000020019",
                "000375c3a900000001000000070019",
            ))
        );
    }

    #[test]
    fn responses_have_each_versions_layout() {
        let frame = |version, topics| CommitFrame {
            version,
            correlation_id: 7,
            member: Member {
                group_id: b"g",
                generation_id: 1,
                member_id: b"m",
                group_instance_id: None,
            },
            topics,
        };
        let part = |partition_index| CommitPartition {
            partition_index,
            committed_offset: 0,
            committed_leader_epoch: -1,
            committed_metadata: None,
        };
        let topics = vec![
            CommitTopic {
                name: b"ab",
                partitions: vec![part(1), part(258)],
            },
            CommitTopic {
                name: b"c",
                partitions: vec![],
            },
        ];
        #[rustfmt::skip]
        let v2 = vec![
            0, 0, 0, 35, 0, 0, 0, 7, // size, correlation id
            0, 0, 0, 2, // topics
            0, 2, b'a', b'b', 0, 0, 0, 2, 0, 0, 0, 1, 0, 16, 0, 0, 1, 2, 0, 16,
            0, 1, b'c', 0, 0, 0, 0,
        ];
        assert_eq!(frame(2, topics.clone()).response(16), v2);
        #[rustfmt::skip]
        let v3 = vec![
            0, 0, 0, 39, 0, 0, 0, 7, // size, correlation id
            0, 0, 0, 0, // throttle time
            0, 0, 0, 2,
            0, 2, b'a', b'b', 0, 0, 0, 2, 0, 0, 0, 1, 0, 16, 0, 0, 1, 2, 0, 16,
            0, 1, b'c', 0, 0, 0, 0,
        ];
        for v in 3..=7 {
            assert_eq!(frame(v, topics.clone()).response(16), v3, "v{v}");
        }
        #[rustfmt::skip]
        let v8 = vec![
            0, 0, 0, 34, 0, 0, 0, 7, 0, // size, correlation id, header tags
            0, 0, 0, 0, // throttle time
            3, // topics + 1
            3, b'a', b'b', 3, 0, 0, 0, 1, 0, 16, 0, 0, 0, 1, 2, 0, 16, 0, 0,
            2, b'c', 1, 0,
            0, // body tags
        ];
        for v in 8..=9 {
            assert_eq!(frame(v, topics.clone()).response(16), v8, "v{v}");
        }
        assert_eq!(
            frame(9, vec![]).response(0),
            vec![0, 0, 0, 11, 0, 0, 0, 7, 0, 0, 0, 0, 0, 1, 0]
        );
        // a name too long for one length byte (never read here) gets a real uvarint
        let long = [b'x'; 200];
        let r = frame(
            9,
            vec![CommitTopic {
                name: &long,
                partitions: vec![],
            }],
        )
        .response(0);
        assert_eq!(r[13..16], [2, 0xc9, 0x01]); // topics + 1, then 201 as a uvarint
        assert_eq!(&r[16..216], &long[..]);
        assert_eq!(r[216..], [1, 0, 0]);
    }

    #[test]
    fn irregular_frames_go_to_python() {
        let good = hex(PYTHON_V8);
        assert!(read_common(&good, (0, 9)).is_some());
        let n = good.len();
        // header (after the 3-byte client id), last partition, last topic, body
        for at in [13, n - 3, n - 2, n - 1] {
            for tag in [1, 0x80] {
                let mut tagged = good.clone();
                tagged[at] = tag;
                assert!(
                    read_common(&tagged, (0, 9)).is_none(),
                    "tagged fields at {at}"
                );
            }
        }
        let mut not_commit = good.clone();
        not_commit[1] = 12;
        assert!(read_common(&not_commit, (0, 9)).is_none());
        assert!(read_common(&[], (0, 9)).is_none());

        let long = "x".repeat(200);
        for v in 2..=9 {
            let mut r = plain(v);
            r.topics[0].0 = long.clone();
            let read = read_common(&r.frame(), (0, 9)).is_some();
            assert_eq!(read, v < FLEXIBLE, "a long name in v{v}");
        }
        // null arrays: topics, then a topic's partitions
        for (v, null) in [(8, vec![0u8]), (5, (-1i32).to_be_bytes().to_vec())] {
            let mut r = plain(v);
            r.topics.clear();
            let f = r.frame();
            let at = f.len() - if v >= FLEXIBLE { 2 } else { 4 };
            let nulled = [&f[..at], &null[..], &f[at + null.len()..]].concat();
            assert!(read_common(&f, (0, 9)).is_some());
            assert!(read_common(&nulled, (0, 9)).is_none(), "null topics v{v}");
        }
        let mut r = plain(9);
        r.topics = vec![("t".into(), vec![])];
        let mut f = r.frame();
        let at = f.len() - 3;
        assert_eq!(f[at], 1);
        f[at] = 0;
        assert!(read_common(&f, (0, 9)).is_none(), "null partitions");
        // a null group id
        let f = plain(3).frame();
        let at = 16; // after the header: 8 fixed bytes and the client id's 8
        let nulled = [&f[..at], &[0xff, 0xff], &f[at + 7..]].concat();
        assert_eq!(&f[at..at + 7], b"\x00\x05group");
        assert!(read_common(&nulled, (0, 9)).is_none());
    }

    proptest! {
        /// Every version's common shape reads back what was written.
        #[test]
        fn reads_what_clients_write(r in requests()) {
            let f = r.frame();
            prop_assert_eq!(read_common(&f, (0, 9)).unwrap(), r.expected());
        }

        /// Any strict prefix of a frame, or the frame with a byte more, is left to Python.
        #[test]
        fn cuts_and_trailing_bytes_go_to_python(r in requests(), extra in any::<u8>()) {
            let f = r.frame();
            for cut in 0..f.len() {
                prop_assert!(read_common(&f[..cut], (0, 9)).is_none(), "cut at {}", cut);
            }
            let mut longer = f.clone();
            longer.push(extra);
            prop_assert!(read_common(&longer, (0, 9)).is_none());
        }

        #[test]
        fn retention_other_than_default_goes_to_python(
            r in requests(),
            version in 2i16..=4,
            retention in any::<i64>(),
        ) {
            let r = Req { version, retention, ..r };
            prop_assert_eq!(read_common(&r.frame(), (0, 9)).is_some(), retention == -1);
        }

        /// Read only within the served range and 2-9; v0, v1 and v10+ never.
        #[test]
        fn versions_outside_the_range_go_to_python(
            r in requests(),
            lo in -2i16..12,
            hi in -2i16..12,
            other in prop_oneof![Just(-1i16), Just(0), Just(1), 10..=i16::MAX],
        ) {
            let f = r.frame();
            let served = lo.max(2) <= r.version && r.version <= hi.min(9);
            prop_assert_eq!(read_common(&f, (lo, hi)).is_some(), served);
            let mut not_served = f.clone();
            not_served[2..4].copy_from_slice(&other.to_be_bytes());
            prop_assert!(read_common(&not_served, (i16::MIN, i16::MAX)).is_none());
        }

        /// Invalid UTF-8 in any string (a stray byte, or a surrogate, which Python's strict
        /// decoder refuses too) is left to Python.
        #[test]
        fn invalid_utf8_goes_to_python(
            version in 2i16..=9,
            which in 0usize..6,
            bad in prop_oneof![Just([0xffu8, 0x82, 0xac]), Just([0xed, 0xa0, 0x80])],
        ) {
            prop_assume!(which != 3 || version >= 7, "no instance id before v7");
            let mut r = plain(version);
            let marked = match which {
                0 => r.client.as_mut().unwrap(),
                1 => &mut r.group,
                2 => &mut r.member,
                3 => r.instance.as_mut().unwrap(),
                4 => &mut r.topics[1].0,
                _ => r.topics[0].1[0].metadata.as_mut().unwrap(),
            };
            marked.push('€');
            let mut f = r.frame();
            prop_assert!(read_common(&f, (0, 9)).is_some());
            let at = f.windows(3).position(|w| w == "€".as_bytes()).unwrap();
            f[at..at + 3].copy_from_slice(&bad);
            prop_assert!(read_common(&f, (0, 9)).is_none());
        }

        #[test]
        fn response_size_prefix_is_its_length(r in requests(), error in any::<i16>()) {
            let response = r.expected().response(error);
            let size = i32::from_be_bytes(response[..4].try_into().unwrap());
            prop_assert_eq!(size as usize, response.len() - 4);
            prop_assert_eq!(&response[4..8], &r.correlation.to_be_bytes());
        }

        /// Distinct names are each once; a repeated topic or (topic, partition) is not.
        #[test]
        fn names_each_once_refuses_a_repeat(r in requests(), pick in any::<prop::sample::Index>()) {
            let mut r = r;
            for (i, (name, parts)) in r.topics.iter_mut().enumerate() {
                name.push_str(&format!("-{i}"));
                for (j, p) in parts.iter_mut().enumerate() {
                    p.index = j as i32;
                }
            }
            prop_assert!(r.expected().names_each_once());
            if !r.topics.is_empty() {
                let t = pick.index(r.topics.len());
                let mut repeated_topic = r.clone();
                repeated_topic.topics.push((r.topics[t].0.clone(), vec![]));
                prop_assert!(!repeated_topic.expected().names_each_once());
                if !r.topics[t].1.is_empty() {
                    let p = r.topics[t].1[pick.index(r.topics[t].1.len())].clone();
                    let mut repeated_partition = r.clone();
                    repeated_partition.topics[t].1.push(p);
                    prop_assert!(!repeated_partition.expected().names_each_once());
                }
            }
        }
    }
}
