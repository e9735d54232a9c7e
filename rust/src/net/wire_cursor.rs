//! A cursor over a frame body for the common-shape readers ([`super::heartbeat_wire`],
//! [`super::commit_wire`]): big-endian fixed-width fields and the two string shapes, each
//! `None` when the frame ends early or the field is anything unusual (a compact length
//! longer than one varint byte, invalid UTF-8); the request header both read alike, and
//! the body's encodings of its version ([`Body`]). The readers never name a fault: a
//! `None` sends the frame to Python, whose codec decides.

use super::member::Member;

pub(crate) struct Cursor<'a> {
    frame: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(frame: &'a [u8]) -> Self {
        Cursor { frame, pos: 0 }
    }
    /// Whether every byte was read: a reader refuses a frame with bytes after its body.
    pub(crate) fn at_end(&self) -> bool {
        self.pos == self.frame.len()
    }
    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.frame.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }
    pub(crate) fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    pub(crate) fn i16(&mut self) -> Option<i16> {
        Some(i16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }
    pub(crate) fn i32(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }
    pub(crate) fn i64(&mut self) -> Option<i64> {
        Some(i64::from_be_bytes(self.take(8)?.try_into().ok()?))
    }
    /// `int16` length then UTF-8; `Some(None)` for a null where `nullable`.
    pub(crate) fn legacy(&mut self, nullable: bool) -> Option<Option<&'a [u8]>> {
        let n = self.i16()?;
        if n == -1 && nullable {
            return Some(None);
        }
        let s = self.take(usize::try_from(n).ok()?)?;
        std::str::from_utf8(s).ok()?;
        Some(Some(s))
    }
    /// One-byte compact length (`len + 1`, 0 null) then UTF-8: the common shape only.
    pub(crate) fn compact(&mut self, nullable: bool) -> Option<Option<&'a [u8]>> {
        let n = self.u8()?;
        if n == 0 {
            return nullable.then_some(None);
        }
        if n >= 0x80 {
            return None; // a longer varint: Python's reader
        }
        let s = self.take(n as usize - 1)?;
        std::str::from_utf8(s).ok()?;
        Some(Some(s))
    }
}

/// A request body's cursor with its version's encodings: compact strings and arrays and
/// tagged fields (`flexible`), or the classic ones.
pub(crate) struct Body<'a> {
    pub(crate) c: Cursor<'a>,
    flexible: bool,
}

/// The header of a request of `api_key` (header v1, or v2 from version `flexible_from`:
/// `int16 api_key, int16 version, int32 correlation_id, nullable string client_id`, v2 then
/// tagged fields) whose version is in `versions` and in `supported`: `(version,
/// correlation_id, body)`.
pub(crate) fn read_header(
    frame: &[u8],
    api_key: i16,
    versions: (i16, i16),
    supported: (i16, i16),
    flexible_from: i16,
) -> Option<(i16, i32, Body<'_>)> {
    let mut c = Cursor::new(frame);
    if c.i16()? != api_key {
        return None;
    }
    let version = c.i16()?;
    if version < versions.0.max(supported.0) || version > versions.1.min(supported.1) {
        return None;
    }
    let correlation_id = c.i32()?;
    c.legacy(true)?; // client id: checked (Python would refuse bad UTF-8), not used
    let mut body = Body {
        c,
        flexible: version >= flexible_from,
    };
    body.no_tagged_fields()?; // the header's
    Some((version, correlation_id, body))
}

impl<'a> Body<'a> {
    pub(crate) fn string(&mut self, nullable: bool) -> Option<Option<&'a [u8]>> {
        if self.flexible {
            self.c.compact(nullable)
        } else {
            self.c.legacy(nullable)
        }
    }
    /// An array's length; a null array is unusual (Python's codecs refuse it too).
    pub(crate) fn count(&mut self) -> Option<usize> {
        if self.flexible {
            match self.c.u8()? {
                n @ 1..0x80 => Some(n as usize - 1),
                _ => None, // null, or a longer varint
            }
        } else {
            usize::try_from(self.c.i32()?).ok()
        }
    }
    /// A flexible struct's tagged fields: none (a single 0 byte) in the common shape.
    pub(crate) fn no_tagged_fields(&mut self) -> Option<()> {
        (!self.flexible || self.c.u8()? == 0).then_some(())
    }
    /// `group_id, int32 generation, member_id`, then `nullable group_instance_id` if the
    /// version has it: how a member's request names it.
    pub(crate) fn member(&mut self, with_instance: bool) -> Option<Member<'a>> {
        let group_id = self.string(false)??;
        let generation_id = self.c.i32()?;
        let member_id = self.string(false)??;
        let group_instance_id = if with_instance {
            self.string(true)?
        } else {
            None
        };
        Some(Member {
            group_id,
            generation_id,
            member_id,
            group_instance_id,
        })
    }
}
