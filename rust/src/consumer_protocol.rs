//! Consumer-protocol payloads, byte for byte as the Java client writes them: the
//! `ConsumerProtocolSubscription` a member puts in JoinGroup, the `ConsumerProtocolAssignment`
//! the leader puts in SyncGroup, and the user data of the sticky and cooperative-sticky
//! assignors. Pure Rust (no PyO3); the assignors' bytes-in/bytes-out path builds on it and
//! `python/groupcoord/protocol/consumer.py` is its reference twin.
//!
//! Layouts (big-endian; strings are an int16 length + UTF-8, arrays an int32 count + items,
//! nullable bytes an int32 length with -1 for null):
//!
//! * Subscription: `version: i16`, `topics: [string]`, `user_data: nullable bytes`,
//!   v1+ `owned_partitions: [(topic: string, partitions: [i32])]`, v2+ `generation_id: i32`,
//!   v3+ `rack_id: nullable string`.
//! * Assignment (same fields in v0-v3): `version: i16`,
//!   `assigned_partitions: [(topic, [i32])]`, `user_data: nullable bytes`.
//! * Sticky user data (no version prefix): V0 `[(topic, [i32])]`, V1 = V0 + `generation: i32`.
//! * Cooperative-sticky user data: `generation: i32`.
//!
//! Decoding is zero-copy: views borrow the input, int32 arrays stay as validated raw bytes
//! ([`I32Array`]), and the only allocations are the `Vec`s of topics and topic groups, whose
//! capacity is bounded by the bytes actually present (a count of 2^31 in a short buffer is an
//! error, never a 2^31-entry allocation). Decoding is strict: a negative length is accepted
//! only as the -1 null marker of a nullable field, strings must be UTF-8, and a payload of a
//! known version must end exactly where its last field ends. A newer version (4+) is read with
//! the version-3 fields and the rest ignored, as Java does. Nothing here panics on any input.

use std::fmt;

/// Highest ConsumerProtocolSubscription version written and fully understood here.
pub const SUBSCRIPTION_MAX_VERSION: i16 = 3;
/// Highest ConsumerProtocolAssignment version written and fully understood here.
pub const ASSIGNMENT_MAX_VERSION: i16 = 3;

/// A payload that cannot be decoded, or values that cannot be encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadError {
    message: String,
}

impl PayloadError {
    fn new(message: String) -> Self {
        PayloadError { message }
    }

    /// The human-readable description (what, where, why).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for PayloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PayloadError {}

/// A validated array of big-endian int32s, borrowed from the payload.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct I32Array<'a> {
    raw: &'a [u8],
}

impl<'a> I32Array<'a> {
    /// The view of `raw`, or `None` if its length is not a multiple of 4.
    pub fn from_bytes(raw: &'a [u8]) -> Option<Self> {
        raw.len().is_multiple_of(4).then_some(I32Array { raw })
    }

    /// Number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.raw.len() / 4
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// Element `i`, or `None` past the end.
    #[inline]
    pub fn get(&self, i: usize) -> Option<i32> {
        let start = i.checked_mul(4)?;
        let bytes = self.raw.get(start..start.checked_add(4)?)?;
        Some(i32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }

    /// The elements in order.
    #[inline]
    pub fn iter(&self) -> impl ExactSizeIterator<Item = i32> + DoubleEndedIterator + 'a {
        self.raw
            .chunks_exact(4)
            .map(|c| i32::from_be_bytes([c[0], c[1], c[2], c[3]]))
    }

    /// The encoded elements (without the count prefix).
    #[inline]
    pub fn as_bytes(&self) -> &'a [u8] {
        self.raw
    }

    /// The elements copied into a `Vec`.
    pub fn to_vec(&self) -> Vec<i32> {
        self.iter().collect()
    }
}

impl fmt::Debug for I32Array<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// One `(topic, [partition])` group, as written on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicPartitionsView<'a> {
    pub topic: &'a str,
    pub partitions: I32Array<'a>,
}

/// A decoded ConsumerProtocolSubscription, borrowing the payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionView<'a> {
    /// The version as written (may be above [`SUBSCRIPTION_MAX_VERSION`]).
    pub version: i16,
    pub topics: Vec<&'a str>,
    /// The encoded topics array, int32 count included: equal spans mean equal topic lists,
    /// so identical subscriptions can be found with a memcmp.
    pub topics_bytes: &'a [u8],
    pub user_data: Option<&'a [u8]>,
    /// Empty before v1.
    pub owned_partitions: Vec<TopicPartitionsView<'a>>,
    /// -1 before v2.
    pub generation_id: i32,
    /// `None` before v3.
    pub rack_id: Option<&'a str>,
}

/// A decoded ConsumerProtocolAssignment, borrowing the payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssignmentView<'a> {
    /// The version as written (may be above [`ASSIGNMENT_MAX_VERSION`]).
    pub version: i16,
    pub partitions: Vec<TopicPartitionsView<'a>>,
    pub user_data: Option<&'a [u8]>,
}

/// Decoded StickyAssignor user data; `generation` is `None` for V0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StickyUserDataView<'a> {
    pub partitions: Vec<TopicPartitionsView<'a>>,
    pub generation: Option<i32>,
}

// ------------------------------------------------------------------------------- decoding

/// Bounds-checked cursor; every failure names the payload, the byte offset and the field.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8], what: &'static str) -> Self {
        Reader { buf, pos: 0, what }
    }

    #[cold]
    #[inline(never)]
    fn fail(&self, detail: fmt::Arguments<'_>) -> PayloadError {
        PayloadError::new(format!(
            "invalid {} at byte {}: {}",
            self.what, self.pos, detail
        ))
    }

    #[inline]
    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    #[inline]
    fn take(&mut self, n: usize, field: &str) -> Result<&'a [u8], PayloadError> {
        match self
            .pos
            .checked_add(n)
            .and_then(|end| self.buf.get(self.pos..end))
        {
            Some(bytes) => {
                self.pos += n;
                Ok(bytes)
            }
            None => Err(self.truncated(n, field)),
        }
    }

    #[cold]
    #[inline(never)]
    fn truncated(&self, n: usize, field: &str) -> PayloadError {
        self.fail(format_args!(
            "truncated {field}: needs {n} bytes, {} left",
            self.remaining()
        ))
    }

    #[inline]
    fn i16(&mut self, field: &str) -> Result<i16, PayloadError> {
        let b = self.take(2, field)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    #[inline]
    fn i32(&mut self, field: &str) -> Result<i32, PayloadError> {
        let b = self.take(4, field)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// An array count, checked against the bytes left (each item takes >= `min_item` bytes).
    #[inline]
    fn count(&mut self, field: &str, min_item: usize) -> Result<usize, PayloadError> {
        if self.remaining() < 4 {
            // named as the reference decoder names it ("topics count"), so both backends
            // refuse a truncated array with the same message
            return Err(self.fail(format_args!(
                "truncated {field} count: needs 4 bytes, {} left",
                self.remaining()
            )));
        }
        let n = self.i32(field)?;
        if n < 0 {
            return Err(self.fail(format_args!(
                "{field} count is {n} (the array is not nullable)"
            )));
        }
        let n = n as usize;
        if n.saturating_mul(min_item) > self.remaining() {
            return Err(self.fail(format_args!(
                "{field} count {n} needs at least {} bytes, {} left",
                n.saturating_mul(min_item),
                self.remaining()
            )));
        }
        Ok(n)
    }

    #[inline]
    fn text(&mut self, n: usize, field: &str) -> Result<&'a str, PayloadError> {
        // The checked path; the array loops try `split_ascii_string` first.
        let bytes = self.take(n, field)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s),
            Err(e) => Err(self.not_utf8(n, field, e)),
        }
    }

    #[cold]
    #[inline(never)]
    fn not_utf8(&mut self, n: usize, field: &str, e: std::str::Utf8Error) -> PayloadError {
        self.pos -= n;
        self.fail(format_args!("{field} is not valid UTF-8 ({e})"))
    }

    #[inline]
    fn string(&mut self, field: &str) -> Result<&'a str, PayloadError> {
        let n = self.i16(field)?;
        if n < 0 {
            return Err(self.fail(format_args!(
                "{field} length is {n} (the string is not nullable)"
            )));
        }
        self.text(n as usize, field)
    }

    fn nullable_string(&mut self, field: &str) -> Result<Option<&'a str>, PayloadError> {
        match self.i16(field)? {
            -1 => Ok(None),
            n if n < 0 => Err(self.fail(format_args!("{field} length is {n}"))),
            n => self.text(n as usize, field).map(Some),
        }
    }

    fn nullable_bytes(&mut self, field: &str) -> Result<Option<&'a [u8]>, PayloadError> {
        match self.i32(field)? {
            -1 => Ok(None),
            n if n < 0 => Err(self.fail(format_args!("{field} length is {n}"))),
            n => self.take(n as usize, field).map(Some),
        }
    }

    /// `[string]`, with the byte span it occupies (count included).
    fn strings(&mut self, field: &str) -> Result<(Vec<&'a str>, &'a [u8]), PayloadError> {
        let start = self.pos;
        let n = self.count(field, 2)?;
        let mut out = Vec::with_capacity(n);
        // The hot loop of subscription decoding: a local cursor and ASCII fast path. On any
        // problem, `self.string` re-reads the offending element and reports it precisely.
        let mut rest = &self.buf[self.pos..];
        for _ in 0..n {
            match split_ascii_string(rest) {
                Some((s, tail)) => {
                    out.push(s);
                    rest = tail;
                }
                None => {
                    self.pos = self.buf.len() - rest.len();
                    out.push(self.string(field)?);
                    rest = &self.buf[self.pos..];
                }
            }
        }
        self.pos = self.buf.len() - rest.len();
        Ok((out, &self.buf[start..self.pos]))
    }

    #[inline]
    fn i32_array(&mut self, field: &str) -> Result<I32Array<'a>, PayloadError> {
        let n = self.count(field, 4)?;
        // n * 4 <= remaining, checked by count().
        Ok(I32Array {
            raw: self.take(n * 4, field)?,
        })
    }

    /// `[(topic: string, partitions: [i32])]`.
    fn topic_partitions(
        &mut self,
        field: &str,
    ) -> Result<Vec<TopicPartitionsView<'a>>, PayloadError> {
        // Each group is at least a 2-byte topic length and a 4-byte partition count.
        let n = self.count(field, 6)?;
        let mut out = Vec::with_capacity(n);
        // Fast path as in `strings`; the checked readers report any problem.
        let mut rest = &self.buf[self.pos..];
        for _ in 0..n {
            match split_topic_partitions(rest) {
                Some((group, tail)) => {
                    out.push(group);
                    rest = tail;
                }
                None => {
                    self.pos = self.buf.len() - rest.len();
                    let topic = self.string("topic")?;
                    let partitions = self.i32_array("partitions")?;
                    out.push(TopicPartitionsView { topic, partitions });
                    rest = &self.buf[self.pos..];
                }
            }
        }
        self.pos = self.buf.len() - rest.len();
        Ok(out)
    }

    fn version(&mut self) -> Result<i16, PayloadError> {
        let version = self.i16("version")?;
        if version < 0 {
            self.pos = 0;
            return Err(self.fail(format_args!("unsupported version {version}")));
        }
        Ok(version)
    }

    /// A known version must be consumed exactly; newer versions may carry more fields.
    fn end(&self, version: i16, highest: i16) -> Result<(), PayloadError> {
        if version <= highest && self.remaining() != 0 {
            return Err(self.fail(format_args!(
                "{} unexpected trailing bytes after a v{version} body",
                self.remaining()
            )));
        }
        Ok(())
    }
}

/// `bytes.is_ascii()`, tuned for short strings such as topic names: word-at-a-time with an
/// overlapping last word instead of a byte loop for the tail.
#[inline]
fn is_ascii_short(bytes: &[u8]) -> bool {
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    let word = |w: &[u8]| w.try_into().map_or(HIGH_BITS, u64::from_ne_bytes);
    if bytes.len() < 8 {
        return bytes.iter().fold(0, |acc, b| acc | b) < 0x80;
    }
    let mut acc = word(&bytes[bytes.len() - 8..]);
    for chunk in bytes.chunks_exact(8) {
        acc |= word(chunk);
    }
    acc & HIGH_BITS == 0
}

/// An int16-length-prefixed string at the start of `buf` if it is well formed and ASCII
/// (the common case), with the bytes after it; `None` for anything else.
#[inline]
fn split_ascii_string(buf: &[u8]) -> Option<(&str, &[u8])> {
    let (len, tail) = buf.split_first_chunk::<2>()?;
    let len = usize::try_from(i16::from_be_bytes(*len)).ok()?;
    let (bytes, tail) = tail.split_at_checked(len)?;
    if !is_ascii_short(bytes) {
        return None;
    }
    // SAFETY: ASCII is valid UTF-8. (`from_utf8` costs several times more than this check
    // on short strings, and topic names are short and ASCII in practice.)
    Some((unsafe { std::str::from_utf8_unchecked(bytes) }, tail))
}

/// A well-formed `(topic, [i32])` group with an ASCII topic at the start of `buf`, with the
/// bytes after it; `None` for anything else.
#[inline]
fn split_topic_partitions(buf: &[u8]) -> Option<(TopicPartitionsView<'_>, &[u8])> {
    let (topic, tail) = split_ascii_string(buf)?;
    let (count, tail) = tail.split_first_chunk::<4>()?;
    let n = usize::try_from(i32::from_be_bytes(*count)).ok()?;
    let (raw, tail) = tail.split_at_checked(n.checked_mul(4)?)?;
    let partitions = I32Array { raw };
    Some((TopicPartitionsView { topic, partitions }, tail))
}

/// Decode ConsumerProtocolSubscription bytes (any version >= 0).
pub fn decode_subscription(buf: &[u8]) -> Result<SubscriptionView<'_>, PayloadError> {
    let mut r = Reader::new(buf, "subscription");
    let version = r.version()?;
    let (topics, topics_bytes) = r.strings("topics")?;
    let user_data = r.nullable_bytes("user_data")?;
    let owned_partitions = if version >= 1 {
        r.topic_partitions("owned_partitions")?
    } else {
        Vec::new()
    };
    let generation_id = if version >= 2 {
        r.i32("generation_id")?
    } else {
        -1
    };
    let rack_id = if version >= 3 {
        r.nullable_string("rack_id")?
    } else {
        None
    };
    r.end(version, SUBSCRIPTION_MAX_VERSION)?;
    Ok(SubscriptionView {
        version,
        topics,
        topics_bytes,
        user_data,
        owned_partitions,
        generation_id,
        rack_id,
    })
}

/// Decode ConsumerProtocolAssignment bytes (any version >= 0).
pub fn decode_assignment(buf: &[u8]) -> Result<AssignmentView<'_>, PayloadError> {
    let mut r = Reader::new(buf, "assignment");
    let version = r.version()?;
    let partitions = r.topic_partitions("assigned_partitions")?;
    let user_data = r.nullable_bytes("user_data")?;
    r.end(version, ASSIGNMENT_MAX_VERSION)?;
    Ok(AssignmentView {
        version,
        partitions,
        user_data,
    })
}

/// Decode StickyAssignor user data: V1 is a V0 body followed by exactly 4 bytes (the
/// generation), V0 the body alone. Empty input is an error; Java treats null or empty user
/// data as "no previous assignment", and callers should check for that first.
pub fn decode_sticky_user_data(buf: &[u8]) -> Result<StickyUserDataView<'_>, PayloadError> {
    let mut r = Reader::new(buf, "sticky user data");
    let partitions = r.topic_partitions("previous_assignment")?;
    let generation = match r.remaining() {
        0 => None,
        4 => Some(r.i32("generation")?),
        left => {
            return Err(r.fail(format_args!(
                "{left} bytes after the previous assignment (expected 0 or 4)"
            )))
        }
    };
    Ok(StickyUserDataView {
        partitions,
        generation,
    })
}

/// Decode CooperativeStickyAssignor user data: exactly one int32, the generation.
pub fn decode_cooperative_user_data(buf: &[u8]) -> Result<i32, PayloadError> {
    let mut r = Reader::new(buf, "cooperative user data");
    let generation = r.i32("generation")?;
    if r.remaining() != 0 {
        return Err(r.fail(format_args!("{} unexpected trailing bytes", r.remaining())));
    }
    Ok(generation)
}

// ------------------------------------------------------------------------------- encoding
//
// The encoders append to `out` and return an error (leaving `out` as it was) only for values
// the format cannot carry: a version out of range, a string over 32767 bytes, more than
// i32::MAX items or bytes.

fn encode_error(what: fmt::Arguments<'_>) -> PayloadError {
    PayloadError::new(format!("cannot encode: {what}"))
}

fn check_version(version: i16, highest: i16, what: &str) -> Result<(), PayloadError> {
    if (0..=highest).contains(&version) {
        Ok(())
    } else {
        Err(encode_error(format_args!(
            "{what} version must be between 0 and {highest}, got {version}"
        )))
    }
}

#[inline]
fn put_i16(out: &mut Vec<u8>, v: i16) {
    out.extend_from_slice(&v.to_be_bytes());
}

#[inline]
fn put_i32(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(&v.to_be_bytes());
}

fn len_i32(n: usize, what: &str) -> Result<i32, PayloadError> {
    i32::try_from(n).map_err(|_| encode_error(format_args!("{what} has {n} items or bytes")))
}

#[inline]
fn put_string(out: &mut Vec<u8>, s: &str, what: &str) -> Result<(), PayloadError> {
    let n = i16::try_from(s.len()).map_err(|_| {
        encode_error(format_args!(
            "{what} is {} bytes, longer than {}",
            s.len(),
            i16::MAX
        ))
    })?;
    put_i16(out, n);
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

fn put_nullable_string(out: &mut Vec<u8>, s: Option<&str>, what: &str) -> Result<(), PayloadError> {
    match s {
        None => {
            put_i16(out, -1);
            Ok(())
        }
        Some(s) => put_string(out, s, what),
    }
}

fn put_nullable_bytes(out: &mut Vec<u8>, b: Option<&[u8]>, what: &str) -> Result<(), PayloadError> {
    match b {
        None => put_i32(out, -1),
        Some(b) => {
            put_i32(out, len_i32(b.len(), what)?);
            out.extend_from_slice(b);
        }
    }
    Ok(())
}

/// An int32 count placeholder, patched once the items are written.
fn put_count_placeholder(out: &mut Vec<u8>) -> usize {
    let at = out.len();
    put_i32(out, 0);
    at
}

fn patch_count(out: &mut [u8], at: usize, n: usize, what: &str) -> Result<(), PayloadError> {
    out[at..at + 4].copy_from_slice(&len_i32(n, what)?.to_be_bytes());
    Ok(())
}

#[inline]
fn put_partitions(out: &mut Vec<u8>, partitions: &[i32]) -> Result<(), PayloadError> {
    put_i32(out, len_i32(partitions.len(), "a partition array")?);
    // Zero-fill then byte-swap in place: this form vectorizes, a push per element does not.
    let start = out.len();
    out.resize(start + 4 * partitions.len(), 0);
    for (dst, p) in out[start..].chunks_exact_mut(4).zip(partitions) {
        dst.copy_from_slice(&p.to_be_bytes());
    }
    Ok(())
}

fn put_topic_partitions<'t>(
    out: &mut Vec<u8>,
    groups: impl IntoIterator<Item = (&'t str, &'t [i32])>,
    what: &str,
) -> Result<(), PayloadError> {
    let at = put_count_placeholder(out);
    let mut n = 0usize;
    for (topic, partitions) in groups {
        put_string(out, topic, "a topic name")?;
        put_partitions(out, partitions)?;
        n += 1;
    }
    patch_count(out, at, n, what)
}

/// Run `write`, and on error put `out` back as it was.
fn atomically(
    out: &mut Vec<u8>,
    write: impl FnOnce(&mut Vec<u8>) -> Result<(), PayloadError>,
) -> Result<(), PayloadError> {
    let start = out.len();
    let result = write(out);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

/// Append ConsumerProtocolSubscription bytes at `version` (0-3); fields the version lacks
/// (owned partitions before v1, generation before v2, rack before v3) are left out.
/// Topic groups are written in the order given.
pub fn encode_subscription_into<'t>(
    out: &mut Vec<u8>,
    version: i16,
    topics: impl IntoIterator<Item = &'t str>,
    user_data: Option<&[u8]>,
    owned_partitions: impl IntoIterator<Item = (&'t str, &'t [i32])>,
    generation_id: i32,
    rack_id: Option<&str>,
) -> Result<(), PayloadError> {
    check_version(version, SUBSCRIPTION_MAX_VERSION, "subscription")?;
    atomically(out, |out| {
        put_i16(out, version);
        let at = put_count_placeholder(out);
        let mut n = 0usize;
        for topic in topics {
            put_string(out, topic, "a topic name")?;
            n += 1;
        }
        patch_count(out, at, n, "topics")?;
        put_nullable_bytes(out, user_data, "user_data")?;
        if version >= 1 {
            put_topic_partitions(out, owned_partitions, "owned_partitions")?;
        }
        if version >= 2 {
            put_i32(out, generation_id);
        }
        if version >= 3 {
            put_nullable_string(out, rack_id, "rack_id")?;
        }
        Ok(())
    })
}

/// Append ConsumerProtocolAssignment bytes at `version` (0-3, all the same layout), with the
/// topic groups in the order given. Reserve `out` up front to encode without reallocating.
pub fn encode_assignment_into<'t>(
    out: &mut Vec<u8>,
    version: i16,
    topics: impl IntoIterator<Item = (&'t str, &'t [i32])>,
    user_data: Option<&[u8]>,
) -> Result<(), PayloadError> {
    check_version(version, ASSIGNMENT_MAX_VERSION, "assignment")?;
    atomically(out, |out| {
        put_i16(out, version);
        put_topic_partitions(out, topics, "assigned_partitions")?;
        put_nullable_bytes(out, user_data, "user_data")
    })
}

/// Append StickyAssignor user data: V1 with `Some(generation)`, V0 with `None`.
pub fn encode_sticky_user_data_into<'t>(
    out: &mut Vec<u8>,
    partitions: impl IntoIterator<Item = (&'t str, &'t [i32])>,
    generation: Option<i32>,
) -> Result<(), PayloadError> {
    atomically(out, |out| {
        put_topic_partitions(out, partitions, "previous_assignment")?;
        if let Some(generation) = generation {
            put_i32(out, generation);
        }
        Ok(())
    })
}

/// Append CooperativeStickyAssignor user data (the generation as an int32).
pub fn encode_cooperative_user_data_into(out: &mut Vec<u8>, generation: i32) {
    put_i32(out, generation);
}

/// The exact encoded size of an assignment, for presizing buffers.
pub fn assignment_size<'t>(
    topics: impl IntoIterator<Item = (&'t str, &'t [i32])>,
    user_data: Option<&[u8]>,
) -> usize {
    let groups: usize = topics
        .into_iter()
        .map(|(t, p)| 2 + t.len() + 4 + 4 * p.len())
        .sum();
    2 + 4 + groups + 4 + user_data.map_or(0, <[u8]>::len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::collection::vec;
    use proptest::option;
    use proptest::prelude::*;

    type Groups = Vec<(String, Vec<i32>)>;

    fn as_pairs(groups: &Groups) -> impl Iterator<Item = (&str, &[i32])> {
        groups.iter().map(|(t, p)| (t.as_str(), p.as_slice()))
    }

    fn owned(views: &[TopicPartitionsView<'_>]) -> Groups {
        views
            .iter()
            .map(|v| (v.topic.to_owned(), v.partitions.to_vec()))
            .collect()
    }

    fn subscription(
        version: i16,
        topics: &[&str],
        user_data: Option<&[u8]>,
        groups: &Groups,
        generation_id: i32,
        rack_id: Option<&str>,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        encode_subscription_into(
            &mut out,
            version,
            topics.iter().copied(),
            user_data,
            as_pairs(groups),
            generation_id,
            rack_id,
        )
        .unwrap();
        out
    }

    /// Re-encode a decoded subscription at its own version.
    fn reencode_subscription(v: &SubscriptionView<'_>) -> Vec<u8> {
        subscription(
            v.version,
            &v.topics,
            v.user_data,
            &owned(&v.owned_partitions),
            v.generation_id,
            v.rack_id,
        )
    }

    fn assignment(version: i16, groups: &Groups, user_data: Option<&[u8]>) -> Vec<u8> {
        let mut out = Vec::new();
        encode_assignment_into(&mut out, version, as_pairs(groups), user_data).unwrap();
        out
    }

    fn sticky(groups: &Groups, generation: Option<i32>) -> Vec<u8> {
        let mut out = Vec::new();
        encode_sticky_user_data_into(&mut out, as_pairs(groups), generation).unwrap();
        out
    }

    // ------------------------------------------------------------------ golden vectors

    #[test]
    fn golden_subscription_v0() {
        let bytes = subscription(0, &["t"], None, &vec![], -1, None);
        assert_eq!(bytes, b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff");
        let v = decode_subscription(&bytes).unwrap();
        assert_eq!(v.version, 0);
        assert_eq!(v.topics, ["t"]);
        assert_eq!(v.topics_bytes, b"\x00\x00\x00\x01\x00\x01t");
        assert_eq!(v.user_data, None);
        assert!(v.owned_partitions.is_empty());
        assert_eq!(v.generation_id, -1);
        assert_eq!(v.rack_id, None);
    }

    #[test]
    fn golden_subscription_v3() {
        let groups = vec![("a".to_owned(), vec![1, 2])];
        let bytes = subscription(3, &["t"], Some(b"x"), &groups, 5, Some("r"));
        let expected: &[u8] = b"\x00\x03\
            \x00\x00\x00\x01\x00\x01t\
            \x00\x00\x00\x01x\
            \x00\x00\x00\x01\x00\x01a\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x02\
            \x00\x00\x00\x05\
            \x00\x01r";
        assert_eq!(bytes, expected);
        let v = decode_subscription(&bytes).unwrap();
        assert_eq!(owned(&v.owned_partitions), groups);
        assert_eq!((v.generation_id, v.rack_id), (5, Some("r")));
        assert_eq!(v.user_data, Some(&b"x"[..]));
    }

    #[test]
    fn golden_subscription_versions_omit_fields() {
        let groups = vec![("a".to_owned(), vec![7])];
        let lens: Vec<usize> = (0..=3)
            .map(|v| subscription(v, &["t"], None, &groups, 9, None).len())
            .collect();
        // v1 adds 4+2+1+4+4 owned bytes, v2 a 4-byte generation, v3 a 2-byte null rack.
        assert_eq!(lens, [13, 28, 32, 34]);
    }

    #[test]
    fn golden_assignment() {
        let groups = vec![("a".to_owned(), vec![1])];
        for version in 0..=3 {
            let bytes = assignment(version, &groups, None);
            let mut expected = vec![0, version as u8];
            expected.extend_from_slice(
                b"\x00\x00\x00\x01\x00\x01a\x00\x00\x00\x01\x00\x00\x00\x01\xff\xff\xff\xff",
            );
            assert_eq!(bytes, expected);
        }
        let bytes = assignment(3, &vec![], Some(b""));
        assert_eq!(bytes, b"\x00\x03\x00\x00\x00\x00\x00\x00\x00\x00");
        let v = decode_assignment(&bytes).unwrap();
        assert_eq!(v.user_data, Some(&b""[..]));
    }

    #[test]
    fn golden_sticky_and_cooperative() {
        let groups = vec![("a".to_owned(), vec![1, 2])];
        let v0: &[u8] =
            b"\x00\x00\x00\x01\x00\x01a\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x02";
        assert_eq!(sticky(&groups, None), v0);
        let mut v1 = v0.to_vec();
        v1.extend_from_slice(b"\x00\x00\x00\x07");
        assert_eq!(sticky(&groups, Some(7)), v1);
        assert_eq!(decode_sticky_user_data(v0).unwrap().generation, None);
        let d = decode_sticky_user_data(&v1).unwrap();
        assert_eq!((owned(&d.partitions), d.generation), (groups, Some(7)));

        let mut out = Vec::new();
        encode_cooperative_user_data_into(&mut out, -1);
        assert_eq!(out, b"\xff\xff\xff\xff");
        assert_eq!(decode_cooperative_user_data(&out), Ok(-1));
    }

    // ------------------------------------------------------------------ malformed input

    fn err_sub(bytes: &[u8]) -> String {
        decode_subscription(bytes).unwrap_err().to_string()
    }

    #[test]
    fn rejects_malformed_subscriptions() {
        assert!(err_sub(b"").contains("truncated version"));
        assert!(
            err_sub(b"\xff\xff\x00\x00\x00\x00\xff\xff\xff\xff").contains("unsupported version -1")
        );
        // null topics array
        assert!(err_sub(b"\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff").contains("not nullable"));
        // null topic string
        assert!(
            err_sub(b"\x00\x00\x00\x00\x00\x01\xff\xff\xff\xff\xff\xff").contains("not nullable")
        );
        // user_data length -2
        assert!(err_sub(b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xfe").contains("length is -2"));
        // a huge count in a short buffer: an error, not an allocation
        assert!(err_sub(b"\x00\x00\x7f\xff\xff\xff").contains("count 2147483647"));
        // invalid UTF-8
        assert!(
            err_sub(b"\x00\x00\x00\x00\x00\x01\x00\x02\xff\xfe\xff\xff\xff\xff").contains("UTF-8")
        );
        // trailing bytes at a known version
        assert!(err_sub(b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\x00").contains("trailing"));
        // v3 without its rack
        assert!(err_sub(
            b"\x00\x03\x00\x00\x00\x00\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x07"
        )
        .contains("truncated rack_id"));
        // owned partitions count -1
        assert!(
            err_sub(b"\x00\x01\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff")
                .contains("not nullable")
        );
    }

    #[test]
    fn ascii_fast_path_agrees_with_std() {
        for len in 0..40 {
            let mut bytes = vec![b'a'; len];
            assert!(is_ascii_short(&bytes));
            for i in 0..len {
                bytes[i] = 0x80;
                assert!(!is_ascii_short(&bytes), "len {len}, high byte at {i}");
                bytes[i] = b'a';
            }
        }
    }

    /// Subscription bytes (v3) with `raw` as the topic, the owned topic and the rack, or
    /// only in one of those slots (0, 1, 2), the others holding "ok".
    fn with_raw_strings(raw: &[u8], slot: Option<usize>) -> Vec<u8> {
        let put = |out: &mut Vec<u8>, i: usize| {
            let s = if slot.is_none_or(|slot| slot == i) {
                raw
            } else {
                b"ok"
            };
            out.extend_from_slice(&(s.len() as i16).to_be_bytes());
            out.extend_from_slice(s);
        };
        let mut out = b"\x00\x03\x00\x00\x00\x01".to_vec();
        put(&mut out, 0);
        out.extend_from_slice(b"\xff\xff\xff\xff\x00\x00\x00\x01");
        put(&mut out, 1);
        out.extend_from_slice(b"\x00\x00\x00\x00\x00\x00\x00\x01");
        put(&mut out, 2);
        out
    }

    #[test]
    fn strings_are_validated_at_every_length() {
        for len in 1..40 {
            for i in 0..len {
                let mut raw = vec![b't'; len];
                raw[i] = 0xff;
                for slot in 0..3 {
                    let err = decode_subscription(&with_raw_strings(&raw, Some(slot))).unwrap_err();
                    assert!(err.to_string().contains("UTF-8"), "{err}");
                }
                // valid multi-byte UTF-8 takes the slow path and is accepted
                let text = format!("{}é{}", "t".repeat(i), "t".repeat(len - i));
                let bytes = with_raw_strings(text.as_bytes(), None);
                let v = decode_subscription(&bytes).unwrap();
                assert_eq!(v.topics, [text.as_str()]);
                assert_eq!(v.owned_partitions[0].topic, text);
                assert_eq!(v.rack_id, Some(text.as_str()));
            }
        }
    }

    #[test]
    fn newer_versions_ignore_trailing_fields() {
        let mut bytes = subscription(3, &["t"], None, &vec![], 7, Some("r"));
        bytes[1] = 9;
        bytes.extend_from_slice(b"future fields");
        let v = decode_subscription(&bytes).unwrap();
        assert_eq!((v.version, v.generation_id, v.rack_id), (9, 7, Some("r")));
        // but the version-3 fields must all be there
        assert!(decode_subscription(&bytes[..13]).is_err());

        let mut bytes = assignment(3, &vec![("a".to_owned(), vec![1])], None);
        bytes[1] = 4;
        bytes.push(0);
        assert_eq!(decode_assignment(&bytes).unwrap().version, 4);
    }

    #[test]
    fn rejects_malformed_user_data() {
        assert!(decode_sticky_user_data(b"").is_err());
        let mut v1 = sticky(&vec![("a".to_owned(), vec![1])], Some(3));
        v1.push(0); // 5 trailing bytes: neither V0 nor V1
        assert!(decode_sticky_user_data(&v1).is_err());
        assert!(decode_cooperative_user_data(b"\x00\x00\x00").is_err());
        assert!(decode_cooperative_user_data(b"\x00\x00\x00\x00\x00").is_err());
    }

    #[test]
    fn encoders_reject_unencodable_values_and_leave_out_untouched() {
        let mut out = b"keep".to_vec();
        let long = "x".repeat(40_000);
        let err = encode_subscription_into(&mut out, 3, ["ok", long.as_str()], None, [], -1, None)
            .unwrap_err();
        assert!(err.to_string().contains("longer than 32767"));
        assert_eq!(out, b"keep");
        assert!(encode_assignment_into(&mut out, 4, [], None).is_err());
        assert!(encode_assignment_into(&mut out, -1, [], None).is_err());
        assert!(encode_subscription_into(&mut out, 4, [], None, [], -1, None).is_err());
        assert_eq!(out, b"keep");
        encode_assignment_into(&mut out, 0, [("a", &[1][..])], None).unwrap();
        assert_eq!(&out[..4], b"keep");
        assert_eq!(decode_assignment(&out[4..]).unwrap().partitions.len(), 1);
    }

    #[test]
    fn i32_array_accessors() {
        let raw = b"\x00\x00\x00\x01\xff\xff\xff\xff";
        let a = I32Array::from_bytes(raw).unwrap();
        assert_eq!(
            (a.len(), a.get(0), a.get(1), a.get(2)),
            (2, Some(1), Some(-1), None)
        );
        assert_eq!(a.iter().rev().collect::<Vec<_>>(), [-1, 1]);
        assert_eq!(format!("{a:?}"), "[1, -1]");
        assert!(I32Array::from_bytes(&raw[..3]).is_none());
        assert_eq!(a.get(usize::MAX), None);
    }

    #[test]
    fn assignment_size_is_exact() {
        let groups = vec![("abc".to_owned(), vec![1, 2, 3]), ("é".to_owned(), vec![])];
        let bytes = assignment(3, &groups, Some(b"ud"));
        assert_eq!(assignment_size(as_pairs(&groups), Some(b"ud")), bytes.len());
    }

    // ------------------------------------------------------------------ properties

    fn topic() -> impl Strategy<Value = String> {
        prop_oneof![".{0,6}", "[a-z._-]{1,20}"]
    }

    fn groups() -> impl Strategy<Value = Groups> {
        vec((topic(), vec(any::<i32>(), 0..6)), 0..5)
    }

    #[derive(Debug, Clone)]
    struct Fields {
        version: i16,
        topics: Vec<String>,
        user_data: Option<Vec<u8>>,
        groups: Groups,
        generation_id: i32,
        rack_id: Option<String>,
    }

    prop_compose! {
        fn subscription_fields()(
            version in 0i16..=3,
            topics in vec(topic(), 0..6),
            user_data in option::of(vec(any::<u8>(), 0..24)),
            groups in groups(),
            generation_id in any::<i32>(),
            rack_id in option::of(topic()),
        ) -> Fields {
            Fields { version, topics, user_data, groups, generation_id, rack_id }
        }
    }

    fn encode_fields(f: &Fields) -> Vec<u8> {
        let topics: Vec<&str> = f.topics.iter().map(String::as_str).collect();
        subscription(
            f.version,
            &topics,
            f.user_data.as_deref(),
            &f.groups,
            f.generation_id,
            f.rack_id.as_deref(),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn subscription_round_trip(f in subscription_fields()) {
            let bytes = encode_fields(&f);
            let Fields { version, topics, user_data, groups, generation_id, rack_id } = f;
            let v = decode_subscription(&bytes).unwrap();
            prop_assert_eq!(v.version, version);
            prop_assert_eq!(&v.topics, &topics);
            prop_assert_eq!(v.user_data, user_data.as_deref());
            let want_groups = if version >= 1 { groups } else { vec![] };
            prop_assert_eq!(owned(&v.owned_partitions), want_groups);
            prop_assert_eq!(v.generation_id, if version >= 2 { generation_id } else { -1 });
            prop_assert_eq!(v.rack_id, if version >= 3 { rack_id.as_deref() } else { None });
            prop_assert_eq!(reencode_subscription(&v), bytes);
        }

        #[test]
        fn assignment_round_trip(
            version in 0i16..=3,
            groups in groups(),
            user_data in option::of(vec(any::<u8>(), 0..24)),
        ) {
            let bytes = assignment(version, &groups, user_data.as_deref());
            prop_assert_eq!(assignment_size(as_pairs(&groups), user_data.as_deref()), bytes.len());
            let v = decode_assignment(&bytes).unwrap();
            prop_assert_eq!(v.version, version);
            prop_assert_eq!(owned(&v.partitions), groups);
            prop_assert_eq!(v.user_data, user_data.as_deref());
        }

        #[test]
        fn sticky_round_trip(groups in groups(), generation in option::of(any::<i32>())) {
            let bytes = sticky(&groups, generation);
            let v = decode_sticky_user_data(&bytes).unwrap();
            prop_assert_eq!(owned(&v.partitions), groups);
            prop_assert_eq!(v.generation, generation);
        }

        #[test]
        fn cooperative_round_trip(generation in any::<i32>()) {
            let mut out = Vec::new();
            encode_cooperative_user_data_into(&mut out, generation);
            prop_assert_eq!(decode_cooperative_user_data(&out), Ok(generation));
        }

        #[test]
        fn string_bytes_accepted_iff_utf8(raw in vec(any::<u8>(), 0..40)) {
            let bytes = with_raw_strings(&raw, None);
            let ok = std::str::from_utf8(&raw).is_ok();
            prop_assert_eq!(decode_subscription(&bytes).is_ok(), ok);
            let mut sticky = b"\x00\x00\x00\x01".to_vec();
            sticky.extend_from_slice(&(raw.len() as i16).to_be_bytes());
            sticky.extend_from_slice(&raw);
            sticky.extend_from_slice(b"\x00\x00\x00\x00");
            prop_assert_eq!(decode_sticky_user_data(&sticky).is_ok(), ok);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..96)) {
            let _ = decode_subscription(&bytes);
            let _ = decode_assignment(&bytes);
            let _ = decode_sticky_user_data(&bytes);
            let _ = decode_cooperative_user_data(&bytes);
        }

        #[test]
        fn truncated_payloads_are_errors(f in subscription_fields(), generation in option::of(any::<i32>())) {
            let bytes = encode_fields(&f);
            for end in 0..bytes.len() {
                prop_assert!(decode_subscription(&bytes[..end]).is_err());
            }
            let a = assignment(f.version, &f.groups, f.user_data.as_deref());
            for end in 0..a.len() {
                prop_assert!(decode_assignment(&a[..end]).is_err());
            }
            let s = sticky(&f.groups, generation);
            let v0_len = sticky(&f.groups, None).len();
            for end in 0..s.len() {
                // the V0 body of a V1 payload is itself valid V0
                prop_assert_eq!(decode_sticky_user_data(&s[..end]).is_ok(), end == v0_len);
            }
        }

        /// Mutated valid payloads never panic, and whatever a known version accepts
        /// re-encodes to the very same bytes (decoding is injective).
        #[test]
        fn mutated_payloads(f in subscription_fields(), at in any::<prop::sample::Index>(), byte in any::<u8>()) {
            let mut bytes = encode_fields(&f);
            let i = at.index(bytes.len());
            bytes[i] = byte;
            if let Ok(v) = decode_subscription(&bytes) {
                if v.version <= SUBSCRIPTION_MAX_VERSION {
                    prop_assert_eq!(reencode_subscription(&v), bytes.clone());
                }
            }
            let mut a = assignment(f.version, &f.groups, f.user_data.as_deref());
            let i = at.index(a.len());
            a[i] = byte;
            if let Ok(v) = decode_assignment(&a) {
                if v.version <= ASSIGNMENT_MAX_VERSION {
                    let groups = owned(&v.partitions);
                    prop_assert_eq!(assignment(v.version, &groups, v.user_data), a.clone());
                }
            }
            let mut s = sticky(&f.groups, Some(f.generation_id));
            let i = at.index(s.len());
            s[i] = byte;
            if let Ok(v) = decode_sticky_user_data(&s) {
                prop_assert_eq!(sticky(&owned(&v.partitions), v.generation), s);
            }
        }
    }

    // ------------------------------------------------------------------ timing (not asserted)

    /// `cargo test --release consumer_protocol::tests::timing -- --ignored --nocapture`
    #[test]
    #[ignore = "prints timings; run explicitly in release mode"]
    fn timing() {
        use std::hint::black_box;
        use std::time::Instant;

        const MEMBERS: usize = 2000;
        let topic_names: Vec<String> = (0..500).map(|i| format!("orders.events-{i:04}")).collect();
        let topics: Vec<&str> = topic_names.iter().map(String::as_str).collect();
        // 500 owned partitions per member: 100 topics x 5 partitions.
        let owned_groups: Vec<(&str, Vec<i32>)> = (0..100)
            .map(|t| (topics[t], (0..5).map(|p| p * 7 + t as i32).collect()))
            .collect();
        let payloads: Vec<Vec<u8>> = (0..MEMBERS)
            .map(|m| {
                let mut out = Vec::new();
                encode_subscription_into(
                    &mut out,
                    3,
                    topics.iter().copied(),
                    Some(b"user-data"),
                    owned_groups.iter().map(|(t, p)| (*t, p.as_slice())),
                    m as i32,
                    Some("rack-a"),
                )
                .unwrap();
                out
            })
            .collect();
        let total: usize = payloads.iter().map(Vec::len).sum();

        let mut best = f64::MAX;
        for _ in 0..10 {
            let t = Instant::now();
            let mut n = 0;
            for p in &payloads {
                let v = decode_subscription(black_box(p)).unwrap();
                n += v.topics.len() + v.owned_partitions.len();
                black_box(&v);
            }
            assert_eq!(n, MEMBERS * 600);
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!(
            "decode {MEMBERS} subscriptions x (500 topics + 500 owned partitions), {:.1} MB: {:.2} ms",
            total as f64 / 1e6,
            best * 1e3
        );

        // 1M partitions over 2000 assignments: 500 each, 50 topics x 10 partitions.
        let assignments: Vec<Vec<(&str, Vec<i32>)>> = (0..MEMBERS)
            .map(|m| {
                (0..50)
                    .map(|t| {
                        (
                            topics[(m + t) % 500],
                            (0..10).map(|p| (m * 10 + p) as i32).collect(),
                        )
                    })
                    .collect()
            })
            .collect();
        let mut best_fresh = f64::MAX;
        let mut best_reused = f64::MAX;
        let mut buf = Vec::new();
        for _ in 0..10 {
            let t = Instant::now();
            let mut out: Vec<Vec<u8>> = Vec::with_capacity(MEMBERS);
            for a in &assignments {
                let pairs = || a.iter().map(|(t, p)| (*t, p.as_slice()));
                let mut v = Vec::with_capacity(assignment_size(pairs(), None));
                encode_assignment_into(&mut v, 3, pairs(), None).unwrap();
                out.push(v);
            }
            black_box(&out);
            best_fresh = best_fresh.min(t.elapsed().as_secs_f64());

            let t = Instant::now();
            for a in &assignments {
                buf.clear();
                encode_assignment_into(
                    &mut buf,
                    3,
                    a.iter().map(|(t, p)| (*t, p.as_slice())),
                    None,
                )
                .unwrap();
                black_box(&buf);
            }
            best_reused = best_reused.min(t.elapsed().as_secs_f64());
        }
        println!(
            "encode 1M partitions in {MEMBERS} assignments: {:.2} ms into presized Vecs, {:.2} ms into one reused Vec",
            best_fresh * 1e3,
            best_reused * 1e3
        );
    }
}
