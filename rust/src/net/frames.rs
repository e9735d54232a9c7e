//! Kafka's framing: every request is an `int32` size followed by that many bytes. This
//! splits a connection's byte stream into frame bodies in place (sans-IO): the reader
//! appends what the socket gave to [`FrameReader::buffer`], and [`FrameReader::next_frame`]
//! hands out complete bodies until one is incomplete.
//!
//! A size below 0 or above the listener's limit (Kafka's `socket.request.max.bytes`) is a
//! [`FrameSizeError`]: the stream cannot be resynchronised, so the connection closes, as
//! the Python shell's `FrameBuffer` and Kafka do.

use std::fmt;

/// A frame size prefix outside `0..=max`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameSizeError {
    pub size: i32,
    pub max: usize,
}

impl fmt::Display for FrameSizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.size < 0 {
            write!(f, "frame size {} is negative", self.size)
        } else {
            write!(
                f,
                "frame size {} exceeds the limit of {} bytes (socket.request.max.bytes)",
                self.size, self.max
            )
        }
    }
}

/// The unread bytes of one connection and where the next frame starts.
#[derive(Debug, Default)]
pub struct FrameReader {
    buf: Vec<u8>,
    /// bytes before this were handed out as frames already
    start: usize,
    max: usize,
}

impl FrameReader {
    pub fn new(max_frame_bytes: usize) -> Self {
        FrameReader {
            buf: Vec::new(),
            start: 0,
            max: max_frame_bytes,
        }
    }

    /// Where the socket's bytes go: drops what was handed out (so the buffer does not
    /// grow with the stream) and returns the buffer to append to.
    pub fn buffer(&mut self) -> &mut Vec<u8> {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        &mut self.buf
    }

    /// The next complete frame body, `Ok(None)` when the rest is incomplete.
    pub fn next_frame(&mut self) -> Result<Option<&[u8]>, FrameSizeError> {
        let rest = &self.buf[self.start..];
        if rest.len() < 4 {
            return Ok(None);
        }
        let size = i32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
        if size < 0 || size as usize > self.max {
            return Err(FrameSizeError {
                size,
                max: self.max,
            });
        }
        let end = 4 + size as usize;
        if rest.len() < end {
            return Ok(None);
        }
        let body = self.start + 4..self.start + end;
        self.start += end;
        Ok(Some(&self.buf[body]))
    }

    /// Bytes of an incomplete frame held back.
    pub fn pending_bytes(&self) -> usize {
        self.buf.len() - self.start
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn framed(bodies: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        for b in bodies {
            out.extend_from_slice(&(b.len() as i32).to_be_bytes());
            out.extend_from_slice(b);
        }
        out
    }

    fn drain(r: &mut FrameReader) -> Result<Vec<Vec<u8>>, FrameSizeError> {
        let mut got = Vec::new();
        while let Some(f) = r.next_frame()? {
            got.push(f.to_vec());
        }
        Ok(got)
    }

    #[test]
    fn a_bad_size_names_the_limit() {
        let mut r = FrameReader::new(10);
        r.buffer().extend_from_slice(&11i32.to_be_bytes());
        let e = r.next_frame().unwrap_err();
        assert_eq!(e, FrameSizeError { size: 11, max: 10 });
        assert!(e.to_string().contains("socket.request.max.bytes"), "{e}");
        let mut r = FrameReader::new(10);
        r.buffer().extend_from_slice(&(-1i32).to_be_bytes());
        assert!(r.next_frame().unwrap_err().to_string().contains("negative"));
    }

    #[test]
    fn an_empty_frame_is_a_frame() {
        let mut r = FrameReader::new(10);
        r.buffer().extend_from_slice(&[0, 0, 0, 0, 0, 0]);
        assert_eq!(drain(&mut r).unwrap(), vec![Vec::<u8>::new()]);
        assert_eq!(r.pending_bytes(), 2);
    }

    proptest! {
        /// However the stream is cut into reads, the same frames come out in order and
        /// only an incomplete tail stays behind.
        #[test]
        fn any_cut_gives_the_same_frames(
            bodies in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..12),
            cuts in prop::collection::vec(1usize..30, 1..20),
            tail in 0usize..4,
        ) {
            let mut stream = framed(&bodies);
            stream.extend_from_slice(&[0, 0, 0, 9][..tail]);
            let mut r = FrameReader::new(64);
            let mut got = Vec::new();
            let mut pos = 0;
            let mut k = 0;
            while pos < stream.len() {
                let n = cuts[k % cuts.len()].min(stream.len() - pos);
                k += 1;
                r.buffer().extend_from_slice(&stream[pos..pos + n]);
                pos += n;
                got.extend(drain(&mut r).unwrap());
            }
            prop_assert_eq!(got, bodies);
            prop_assert_eq!(r.pending_bytes(), tail);
        }
    }
}
