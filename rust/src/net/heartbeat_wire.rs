//! Heartbeat (API 12, v0-v4) frames in their common shape, for the native shell's fast
//! path: a request is read only if it is exactly what a client sends (strings shorter
//! than 128 bytes, valid UTF-8, no tagged fields, nothing after the body); everything else
//! is `None` and goes to Python, whose codec (`groupcoord.protocol.heartbeat_codec`) reads
//! any valid frame and names the fault in a bad one. So this never has to produce an error.
//!
//! Layouts: request header v1 (v0-v3) or v2 (v4): `int16 api_key, int16 version, int32
//! correlation_id, nullable string client_id` (int16 length), v2 then tagged fields; body
//! `group_id, int32 generation_id, member_id`, v3+ `nullable group_instance_id`, v4 with
//! compact strings (uvarint length + 1) and trailing tagged fields. Response header v0
//! (v1 for v4, with tagged fields): `int32 correlation_id`; body v1+ `int32
//! throttle_time_ms`, `int16 error_code`, v4 tagged fields.

use super::member::Member;
use super::wire_cursor::read_header;

pub const HEARTBEAT_API_KEY: i16 = 12;
pub const HEARTBEAT_MAX_VERSION: i16 = 4;
const FLEXIBLE: i16 = 4;

/// A Heartbeat request read from a frame body; the strings borrow the frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatFrame<'a> {
    pub version: i16,
    pub correlation_id: i32,
    pub member: Member<'a>,
}

/// The request in `frame` (a frame body: header and payload, no size prefix) if it is a
/// Heartbeat of a version in `versions` in its common shape; else `None`.
pub fn read_common(frame: &[u8], versions: (i16, i16)) -> Option<HeartbeatFrame<'_>> {
    let supported = (0, HEARTBEAT_MAX_VERSION);
    let (version, correlation_id, mut b) =
        read_header(frame, HEARTBEAT_API_KEY, versions, supported, FLEXIBLE)?;
    let member = b.member(version >= 3)?;
    b.no_tagged_fields()?;
    b.c.at_end().then_some(HeartbeatFrame {
        version,
        correlation_id,
        member,
    })
}

/// A whole Heartbeat response frame (size prefix included): the coordinator never
/// throttles, so `throttle_time_ms` is 0.
pub fn response(correlation_id: i32, version: i16, error_code: i16) -> Vec<u8> {
    let mut out = Vec::with_capacity(16);
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&correlation_id.to_be_bytes());
    if version >= FLEXIBLE {
        out.push(0); // response header tagged fields
    }
    if version >= 1 {
        out.extend_from_slice(&0i32.to_be_bytes());
    }
    out.extend_from_slice(&error_code.to_be_bytes());
    if version >= FLEXIBLE {
        out.push(0); // body tagged fields
    }
    let size = (out.len() - 4) as i32;
    out[..4].copy_from_slice(&size.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A request frame body as a client writes it.
    fn request(
        version: i16,
        correlation: i32,
        client: Option<&str>,
        group: &str,
        generation: i32,
        member: &str,
        instance: Option<&str>,
    ) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend_from_slice(&HEARTBEAT_API_KEY.to_be_bytes());
        f.extend_from_slice(&version.to_be_bytes());
        f.extend_from_slice(&correlation.to_be_bytes());
        match client {
            None => f.extend_from_slice(&(-1i16).to_be_bytes()),
            Some(c) => {
                f.extend_from_slice(&(c.len() as i16).to_be_bytes());
                f.extend_from_slice(c.as_bytes());
            }
        }
        let legacy = |f: &mut Vec<u8>, s: Option<&str>| match s {
            None => f.extend_from_slice(&(-1i16).to_be_bytes()),
            Some(s) => {
                f.extend_from_slice(&(s.len() as i16).to_be_bytes());
                f.extend_from_slice(s.as_bytes());
            }
        };
        let compact = |f: &mut Vec<u8>, s: Option<&str>| match s {
            None => f.push(0),
            Some(s) => {
                f.push(s.len() as u8 + 1);
                f.extend_from_slice(s.as_bytes());
            }
        };
        if version >= FLEXIBLE {
            f.push(0);
            compact(&mut f, Some(group));
            f.extend_from_slice(&generation.to_be_bytes());
            compact(&mut f, Some(member));
            compact(&mut f, instance);
            f.push(0);
        } else {
            legacy(&mut f, Some(group));
            f.extend_from_slice(&generation.to_be_bytes());
            legacy(&mut f, Some(member));
            if version >= 3 {
                legacy(&mut f, instance);
            }
        }
        f
    }

    #[test]
    fn responses_have_each_versions_layout() {
        assert_eq!(response(7, 0, 27), vec![0, 0, 0, 6, 0, 0, 0, 7, 0, 27]);
        assert_eq!(
            response(7, 3, 0),
            vec![0, 0, 0, 10, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(
            response(-1, 4, 22),
            vec![0, 0, 0, 12, 255, 255, 255, 255, 0, 0, 0, 0, 0, 0, 22, 0]
        );
    }

    #[test]
    fn irregular_frames_go_to_python() {
        let good = request(4, 1, Some("c"), "g", 3, "m", None);
        assert!(read_common(&good, (0, 4)).is_some());
        assert!(read_common(&good, (0, 3)).is_none(), "a version not served");
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(
            read_common(&trailing, (0, 4)).is_none(),
            "bytes after the body"
        );
        let mut tagged = good.clone();
        *tagged.last_mut().unwrap() = 1;
        assert!(read_common(&tagged, (0, 4)).is_none(), "body tagged fields");
        let bad_utf8 = request(2, 1, None, "\u{e9}", 3, "m", None);
        let mut bad = bad_utf8.clone();
        let at = bad.iter().position(|&b| b == 0xc3).unwrap();
        bad[at] = 0xff;
        assert!(read_common(&bad, (0, 4)).is_none(), "bad UTF-8");
        let long = "x".repeat(200);
        assert!(read_common(&request(4, 1, None, &long, 3, "m", None), (0, 4)).is_none());
        assert!(read_common(&request(2, 1, None, &long, 3, "m", None), (0, 4)).is_some());
        let mut not_heartbeat = good.clone();
        not_heartbeat[1] = 8;
        assert!(read_common(&not_heartbeat, (0, 4)).is_none());
        assert!(read_common(&[], (0, 4)).is_none());
    }

    proptest! {
        /// Every version's common shape reads back what was written; any cut of it is
        /// left to Python.
        #[test]
        fn reads_what_clients_write(
            version in 0i16..=4,
            correlation in any::<i32>(),
            client in proptest::option::of("[a-z0-9-]{0,20}"),
            group in "[a-z0-9._-]{0,30}",
            generation in any::<i32>(),
            member in "[a-zé0-9-]{0,40}",
            instance in proptest::option::of("[a-z0-9-]{0,20}"),
            cut in 0usize..200,
        ) {
            let instance = if version >= 3 { instance } else { None };
            let f = request(version, correlation, client.as_deref(), &group, generation,
                            &member, instance.as_deref());
            let got = read_common(&f, (0, 4)).unwrap();
            prop_assert_eq!(got, HeartbeatFrame {
                version, correlation_id: correlation, member: Member {
                    group_id: group.as_bytes(), generation_id: generation,
                    member_id: member.as_bytes(),
                    group_instance_id: instance.as_deref().map(str::as_bytes),
                },
            });
            if cut < f.len() {
                prop_assert!(read_common(&f[..cut], (0, 4)).is_none());
            }
        }
    }
}
