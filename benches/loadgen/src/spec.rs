//! What the bench hands the load generator: the pacing, where the error codes sit in the
//! answers, and per member the socket it was set up on and its pre-encoded frames.
//!
//! A text file, one item per line (`name value`, frames in hex), so the Python side needs
//! nothing but `bytes.hex()`:
//!
//! ```text
//! seconds 10
//! heartbeat_every_ms 1000
//! commit_every_ms 100
//! heartbeat_error_at 9
//! commit_error_at 17
//! member <fd> <Heartbeat frame> <OffsetCommit frame, or - for a member that does not commit>
//! ```
//!
//! Frames are whole requests, size prefix included. Members that share an fd share its
//! connection (answers come back in request order on it).

use std::os::fd::RawFd;
use std::time::Duration;

pub struct Member {
    pub fd: RawFd,
    pub heartbeat: Vec<u8>,
    pub commit: Option<Vec<u8>>,
}

pub struct Spec {
    pub seconds: Duration,
    pub heartbeat_every: Duration,
    pub commit_every: Duration,
    /// where the 2-byte error code sits in a Heartbeat answer's body (after its size)
    pub heartbeat_error_at: usize,
    /// the same for the one partition of an OffsetCommit answer
    pub commit_error_at: usize,
    pub members: Vec<Member>,
}

pub fn parse(text: &str) -> Result<Spec, String> {
    let mut seconds = None;
    let mut heartbeat_every = None;
    let mut commit_every = None;
    let mut heartbeat_error_at = None;
    let mut commit_error_at = None;
    let mut members = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let at = |what: &str| format!("spec line {}: {what}", n + 1);
        let mut words = line.split_ascii_whitespace();
        let Some(name) = words.next() else { continue };
        let mut value = || {
            words
                .next()
                .ok_or_else(|| at(&format!("{name} needs a value")))
        };
        match name {
            "seconds" => seconds = Some(Duration::from_secs_f64(number(value()?, &at)?)),
            "heartbeat_every_ms" => heartbeat_every = Some(millis(value()?, &at)?),
            "commit_every_ms" => commit_every = Some(millis(value()?, &at)?),
            "heartbeat_error_at" => heartbeat_error_at = Some(index(value()?, &at)?),
            "commit_error_at" => commit_error_at = Some(index(value()?, &at)?),
            "member" => {
                let fd = value()?
                    .parse()
                    .map_err(|_| at("member fd is not an integer"))?;
                let heartbeat = frame(value()?, &at)?;
                let commit = match value()? {
                    "-" => None,
                    hex => Some(frame(hex, &at)?),
                };
                members.push(Member {
                    fd,
                    heartbeat,
                    commit,
                });
            }
            other => return Err(at(&format!("unknown item {other:?}"))),
        }
    }
    let missing = |what: &str| format!("spec: {what} is missing");
    if members.is_empty() {
        return Err(missing("member"));
    }
    Ok(Spec {
        seconds: seconds.ok_or_else(|| missing("seconds"))?,
        heartbeat_every: heartbeat_every.ok_or_else(|| missing("heartbeat_every_ms"))?,
        commit_every: commit_every.ok_or_else(|| missing("commit_every_ms"))?,
        heartbeat_error_at: heartbeat_error_at.ok_or_else(|| missing("heartbeat_error_at"))?,
        commit_error_at: commit_error_at.ok_or_else(|| missing("commit_error_at"))?,
        members,
    })
}

fn number(word: &str, at: &dyn Fn(&str) -> String) -> Result<f64, String> {
    match word.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(at(&format!("{word:?} is not a positive number"))),
    }
}

fn millis(word: &str, at: &dyn Fn(&str) -> String) -> Result<Duration, String> {
    Ok(Duration::from_secs_f64(number(word, at)? / 1000.0))
}

fn index(word: &str, at: &dyn Fn(&str) -> String) -> Result<usize, String> {
    word.parse()
        .map_err(|_| at(&format!("{word:?} is not a byte offset")))
}

/// A request frame from hex: its size prefix must match what follows it, or the server
/// would read the rest of the run out of step.
fn frame(hex: &str, at: &dyn Fn(&str) -> String) -> Result<Vec<u8>, String> {
    if !hex.len().is_multiple_of(2) {
        return Err(at("a frame has an odd number of hex digits"));
    }
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16))
        .collect::<Result<Vec<u8>, _>>()
        .map_err(|_| at("a frame is not hex"))?;
    let size = bytes
        .get(..4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize);
    if size != Some(bytes.len().saturating_sub(4)) {
        return Err(at("a frame's size prefix does not match its length"));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "seconds 1\nheartbeat_every_ms 1000\ncommit_every_ms 100\n\
                        heartbeat_error_at 9\ncommit_error_at 17\n";

    #[test]
    fn reads_members_with_and_without_commits() {
        let spec = parse(&format!(
            "{HEAD}member 7 00000001ff -\nmember 8 0000000100 0000000101\n"
        ))
        .unwrap();
        assert_eq!(spec.seconds, Duration::from_secs(1));
        assert_eq!(spec.commit_every, Duration::from_millis(100));
        assert_eq!(spec.members.len(), 2);
        assert_eq!(spec.members[0].fd, 7);
        assert_eq!(spec.members[0].heartbeat, vec![0, 0, 0, 1, 0xff]);
        assert!(spec.members[0].commit.is_none());
        assert_eq!(
            spec.members[1].commit.as_deref(),
            Some(&[0, 0, 0, 1, 1][..])
        );
    }

    #[test]
    fn names_what_is_wrong() {
        let err = |text: &str| parse(text).err().unwrap();
        assert_eq!(err(HEAD), "spec: member is missing");
        assert_eq!(err("member 7 00000000 -\n"), "spec: seconds is missing");
        assert!(err(&format!("{HEAD}member 7 00000002ff -\n")).contains("size prefix"));
        assert!(err(&format!("{HEAD}member 7 0000000 -\n")).contains("odd number"));
        assert!(err(&format!("{HEAD}member x 00000000 -\n")).contains("line 6: member fd"));
        assert!(err("seconds -1\n").contains("not a positive number"));
        assert!(err("bogus 1\n").contains("unknown item \"bogus\""));
        assert!(err("seconds\n").contains("seconds needs a value"));
    }
}
