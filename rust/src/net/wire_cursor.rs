//! A cursor over a frame body for the common-shape readers ([`super::heartbeat_wire`],
//! [`super::commit_wire`]): big-endian fixed-width fields and the two string shapes, each
//! `None` when the frame ends early or the field is anything unusual (a compact length
//! longer than one varint byte, invalid UTF-8). The readers never name a fault: a `None`
//! sends the frame to Python, whose codec decides.

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
