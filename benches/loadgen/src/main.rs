//! The paced load of `benches/bench_durable.py` (heartbeats every second from every member,
//! OffsetCommits every 100 ms from some of them, one of each kind in flight per member),
//! run natively so that the generator's own loop is not part of what it measures.
//!
//! The Python bench forms the groups, encodes every member's frames and starts this program
//! with the members' sockets inherited (`pass_fds`) and a spec file (see `spec.rs`). It
//! prints `ready`, waits for a line on stdin, runs, and prints one JSON line: the counts,
//! its CPU time, and every latency in microseconds (the bench computes the percentiles, as
//! for its Python generator). Latency is from the `write` of a request to the `read` that
//! completed its answer, on the monotonic clock; and, as *arrival* latency, to the moment
//! the kernel received the answer's last bytes on the member's socket (`SO_TIMESTAMPNS`,
//! on the real-time clock, as the send is stamped too). One thread serves every member
//! here, so an answer that arrives while it is busy with the others (sending a burst of
//! due requests, reading other sockets) waits to be read: the read latency counts that
//! wait, the arrival latency does not. A client has its own heartbeat thread (KIP-62) and
//! reads its answer as it arrives, so arrival is the latency one member sees.
//!
//! Usage: `groupcoord-loadgen SPEC_FILE`

mod spec;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::io::{self, BufRead, ErrorKind, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::time::{Duration, Instant};

use spec::Spec;

/// What a member sends; also the index into its per-kind flags.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Heartbeat = 0,
    Commit = 1,
}

struct Conn {
    stream: TcpStream,
    /// what the socket did not take yet (sent as soon as it does)
    wbuf: Vec<u8>,
    rbuf: Vec<u8>,
    /// requests in flight in send order: (written at, on the monotonic clock and in
    /// real-time nanoseconds, member, kind)
    sent: VecDeque<(Instant, i64, usize, Kind)>,
}

#[derive(Default)]
struct Tally {
    heartbeats: u64,
    commits: u64,
    errors: u64,
    heartbeat_committer_us: Vec<u64>,
    heartbeat_other_us: Vec<u64>,
    commit_us: Vec<u64>,
    /// the same, to the answers' arrival on the socket (see the module docs)
    heartbeat_committer_arrival_us: Vec<u64>,
    heartbeat_other_arrival_us: Vec<u64>,
    commit_arrival_us: Vec<u64>,
    /// answers read with no kernel timestamp (their arrival latency is their read latency)
    unstamped: u64,
    /// how late each send was against its due time (the generator's own health)
    send_lag_us: Vec<u64>,
}

struct Load {
    spec: Spec,
    conns: Vec<Conn>,
    /// member -> its connection
    conn_of: Vec<usize>,
    in_flight: Vec<[bool; 2]>,
    /// due while its previous one was in flight: sent when that one is answered
    owed: Vec<[bool; 2]>,
    in_flight_count: usize,
    /// connections with unsent bytes
    dirty: Vec<usize>,
    tally: Tally,
}

fn main() {
    if let Err(err) = run() {
        eprintln!("groupcoord-loadgen: {err}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: groupcoord-loadgen SPEC_FILE")?;
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let spec = spec::parse(&text)?;
    let mut load = Load::new(spec)?;
    let epoll = Epoll::new(&load.conns)?;
    println!("ready");
    io::stdout().flush().map_err(|e| e.to_string())?;
    let mut go = String::new();
    io::stdin()
        .lock()
        .read_line(&mut go)
        .map_err(|e| e.to_string())?;
    let cpu_before = cpu_seconds();
    load.run(&epoll)?;
    let report = load
        .tally
        .to_json(cpu_seconds() - cpu_before, load.spec.seconds);
    println!("{report}");
    Ok(())
}

impl Load {
    fn new(spec: Spec) -> Result<Self, String> {
        let mut conns: Vec<Conn> = Vec::new();
        let mut conn_by_fd: HashMap<RawFd, usize> = HashMap::new();
        let mut conn_of = Vec::with_capacity(spec.members.len());
        for member in &spec.members {
            let i = match conn_by_fd.get(&member.fd) {
                Some(&i) => i,
                None => {
                    // SAFETY: the fd was inherited for this program's use alone (pass_fds);
                    // the parent does not touch its socket while this runs.
                    let stream = unsafe { TcpStream::from_raw_fd(member.fd) };
                    stream
                        .set_nonblocking(true)
                        .map_err(|e| format!("fd {} is not a usable socket: {e}", member.fd))?;
                    stamp_arrivals(&stream)?;
                    conns.push(Conn {
                        stream,
                        wbuf: Vec::new(),
                        rbuf: Vec::new(),
                        sent: VecDeque::new(),
                    });
                    conn_by_fd.insert(member.fd, conns.len() - 1);
                    conns.len() - 1
                }
            };
            conn_of.push(i);
        }
        let n = spec.members.len();
        Ok(Load {
            spec,
            conns,
            conn_of,
            in_flight: vec![[false; 2]; n],
            owed: vec![[false; 2]; n],
            in_flight_count: 0,
            dirty: Vec::new(),
            tally: Tally::default(),
        })
    }

    fn run(&mut self, epoll: &Epoll) -> Result<(), String> {
        let start = Instant::now();
        let end = start + self.spec.seconds;
        // what is in flight at the end is collected (closing on requests in flight would
        // only make the server log broken connections), for at most this long
        let give_up = end + Duration::from_secs(60);
        let mut due = self.first_dues(start);
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 1024];
        loop {
            let now = Instant::now();
            if (now >= end && self.in_flight_count == 0) || now >= give_up {
                return Ok(());
            }
            while let Some(&Reverse((at, m, kind))) = due.peek() {
                if at > now || now >= end {
                    break;
                }
                due.pop();
                if self.in_flight[m][kind as usize] {
                    self.owed[m][kind as usize] = true;
                } else {
                    self.tally.send_lag_us.push(micros(now - at));
                    self.send(m, kind)?;
                }
                due.push(Reverse((at + self.every(kind), m, kind)));
            }
            self.flush()?;
            let timeout_ms = if !self.dirty.is_empty() {
                1
            } else if now < end {
                due.peek().map_or(10, |Reverse((at, _, _))| {
                    (at.saturating_duration_since(now).as_micros().div_ceil(1000) as i32).min(10)
                })
            } else {
                10
            };
            let ready = epoll.wait(&mut events, timeout_ms)?;
            for event in &events[..ready] {
                self.receive(event.u64 as usize, end)?;
            }
        }
    }

    /// Heartbeats staggered over the first heartbeat interval, commits over the first
    /// commit interval, as the Python generator does.
    fn first_dues(&self, start: Instant) -> BinaryHeap<Reverse<(Instant, usize, Kind)>> {
        let n = self.spec.members.len() as u32;
        let committers: Vec<usize> = (0..self.spec.members.len())
            .filter(|&m| self.spec.members[m].commit.is_some())
            .collect();
        let mut due = BinaryHeap::new();
        for m in 0..self.spec.members.len() {
            let at = start + self.spec.heartbeat_every * m as u32 / n;
            due.push(Reverse((at, m, Kind::Heartbeat)));
        }
        for (j, &m) in committers.iter().enumerate() {
            let at = start + self.spec.commit_every * j as u32 / committers.len() as u32;
            due.push(Reverse((at, m, Kind::Commit)));
        }
        due
    }

    fn every(&self, kind: Kind) -> Duration {
        match kind {
            Kind::Heartbeat => self.spec.heartbeat_every,
            Kind::Commit => self.spec.commit_every,
        }
    }

    /// Writes the member's frame at once (the latency clock starts at the write); what the
    /// socket does not take waits in the connection's buffer.
    fn send(&mut self, m: usize, kind: Kind) -> Result<(), String> {
        let member = &self.spec.members[m];
        let frame = match kind {
            Kind::Heartbeat => &member.heartbeat,
            Kind::Commit => member
                .commit
                .as_ref()
                .expect("only committers are due to commit"),
        };
        let i = self.conn_of[m];
        let conn = &mut self.conns[i];
        conn.sent
            .push_back((Instant::now(), realtime_ns(), m, kind));
        if conn.wbuf.is_empty() {
            let written = write_some(&mut conn.stream, frame)?;
            if written < frame.len() {
                conn.wbuf.extend_from_slice(&frame[written..]);
                self.dirty.push(i);
            }
        } else {
            conn.wbuf.extend_from_slice(frame);
        }
        self.in_flight[m][kind as usize] = true;
        self.in_flight_count += 1;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), String> {
        let mut still = Vec::new();
        for &i in &self.dirty {
            let conn = &mut self.conns[i];
            let written = write_some(&mut conn.stream, &conn.wbuf)?;
            conn.wbuf.drain(..written);
            if !conn.wbuf.is_empty() {
                still.push(i);
            }
        }
        self.dirty = still;
        Ok(())
    }

    fn receive(&mut self, i: usize, end: Instant) -> Result<(), String> {
        let conn = &mut self.conns[i];
        let mut chunk = [0u8; 1 << 16];
        // the latest arrival of the bytes read: every answer completed by this call arrived
        // by then (an earlier one is counted a little late, never early)
        let mut arrived_ns: Option<i64> = None;
        loop {
            match read_stamped(&conn.stream, &mut chunk) {
                Ok((0, _)) => return Err(format!("the server closed connection {i}")),
                Ok((n, stamp)) => {
                    conn.rbuf.extend_from_slice(&chunk[..n]);
                    arrived_ns = arrived_ns.max(stamp);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("reading connection {i}: {e}")),
            }
        }
        let now = Instant::now();
        // no stamp (stamping not on yet): the read is the arrival
        let stamped = arrived_ns.is_some();
        let arrived_ns = arrived_ns.unwrap_or_else(realtime_ns);
        let mut answered = Vec::new();
        let mut offset = 0;
        while let Some(size) = conn.rbuf.get(offset..offset + 4) {
            let size = u32::from_be_bytes([size[0], size[1], size[2], size[3]]) as usize;
            let Some(body) = conn.rbuf.get(offset + 4..offset + 4 + size) else {
                break;
            };
            let (at, at_ns, m, kind) = conn
                .sent
                .pop_front()
                .ok_or_else(|| format!("connection {i} answered a request never sent"))?;
            let error_at = match kind {
                Kind::Heartbeat => self.spec.heartbeat_error_at,
                Kind::Commit => self.spec.commit_error_at,
            };
            let error = body.get(error_at..error_at + 2).is_none_or(|e| e != [0, 0]);
            // a real-time clock stepped back during the run shows as a negative span: 0
            let arrival_us = ((arrived_ns - at_ns).max(0) / 1000) as u64;
            answered.push((m, kind, micros(now - at), arrival_us, error));
            offset += 4 + size;
        }
        conn.rbuf.drain(..offset);
        if !stamped {
            self.tally.unstamped += answered.len() as u64;
        }
        for (m, kind, us, arrival_us, error) in answered {
            self.in_flight[m][kind as usize] = false;
            self.in_flight_count -= 1;
            self.tally.errors += u64::from(error);
            match kind {
                Kind::Commit => {
                    self.tally.commits += 1;
                    self.tally.commit_us.push(us);
                    self.tally.commit_arrival_us.push(arrival_us);
                }
                Kind::Heartbeat => {
                    self.tally.heartbeats += 1;
                    if self.spec.members[m].commit.is_some() {
                        self.tally.heartbeat_committer_us.push(us);
                        self.tally.heartbeat_committer_arrival_us.push(arrival_us);
                    } else {
                        self.tally.heartbeat_other_us.push(us);
                        self.tally.heartbeat_other_arrival_us.push(arrival_us);
                    }
                }
            }
            if self.owed[m][kind as usize] && now < end {
                self.owed[m][kind as usize] = false;
                self.send(m, kind)?;
            }
        }
        Ok(())
    }
}

fn write_some(stream: &mut TcpStream, bytes: &[u8]) -> Result<usize, String> {
    loop {
        match stream.write(bytes) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(0),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("writing a request: {e}")),
        }
    }
}

/// Ask the kernel to stamp each received segment with its arrival time (`SO_TIMESTAMPNS`;
/// read back by [`read_stamped`]).
fn stamp_arrivals(stream: &TcpStream) -> Result<(), String> {
    let on: libc::c_int = 1;
    // SAFETY: a plain setsockopt on a socket this process owns; `on` outlives the call.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(format!("SO_TIMESTAMPNS: {}", io::Error::last_os_error()));
    }
    Ok(())
}

/// `read` that also returns when the kernel received the last segment read (real-time
/// nanoseconds; `None` if the kernel gave no stamp).
fn read_stamped(stream: &TcpStream, buf: &mut [u8]) -> io::Result<(usize, Option<i64>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // u64s: aligned for the cmsghdr the kernel writes at its start
    let mut control = [0u64; 16];
    // SAFETY: msghdr is plain data; zeroed is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: every pointer in `msg` points at a live buffer of the length given.
    let n = unsafe { libc::recvmsg(stream.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp = None;
    // SAFETY: the CMSG_* walk stays within msg_controllen, as the kernel filled it.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS
            {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::timespec>());
                stamp = Some(ts.tv_sec as i64 * 1_000_000_000 + ts.tv_nsec as i64);
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok((n as usize, stamp))
}

/// Now on the real-time clock (the clock the kernel stamps arrivals with), in nanoseconds.
fn realtime_ns() -> i64 {
    // SAFETY: clock_gettime only writes the struct it is given.
    let ts = unsafe {
        let mut ts = std::mem::zeroed::<libc::timespec>();
        libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts);
        ts
    };
    ts.tv_sec as i64 * 1_000_000_000 + ts.tv_nsec as i64
}

fn micros(d: Duration) -> u64 {
    d.as_micros() as u64
}

impl Tally {
    fn to_json(&self, cpu_s: f64, elapsed: Duration) -> String {
        let list = |xs: &[u64]| {
            let items: Vec<String> = xs.iter().map(u64::to_string).collect();
            format!("[{}]", items.join(","))
        };
        format!(
            "{{\"heartbeats\":{},\"commits\":{},\"errors\":{},\"elapsed_s\":{},\
             \"generator_cpu_s\":{cpu_s},\"heartbeat_committer_us\":{},\
             \"heartbeat_other_us\":{},\"commit_us\":{},\"send_lag_us\":{},\
             \"heartbeat_committer_arrival_us\":{},\"heartbeat_other_arrival_us\":{},\
             \"commit_arrival_us\":{},\"unstamped\":{}}}",
            self.heartbeats,
            self.commits,
            self.errors,
            elapsed.as_secs_f64(),
            list(&self.heartbeat_committer_us),
            list(&self.heartbeat_other_us),
            list(&self.commit_us),
            list(&self.send_lag_us),
            list(&self.heartbeat_committer_arrival_us),
            list(&self.heartbeat_other_arrival_us),
            list(&self.commit_arrival_us),
            self.unstamped,
        )
    }
}

/// User + system CPU time of this process.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// Level-triggered read readiness of every connection (std has no poller; mio would be a
/// dependency for four calls).
struct Epoll {
    fd: libc::c_int,
}

impl Epoll {
    fn new(conns: &[Conn]) -> Result<Self, String> {
        // SAFETY: plain syscalls on descriptors this process owns.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(format!("epoll_create1: {}", io::Error::last_os_error()));
        }
        let epoll = Epoll { fd };
        for (i, conn) in conns.iter().enumerate() {
            let mut event = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: i as u64,
            };
            let sock = conn.stream.as_raw_fd();
            // SAFETY: as above; `event` outlives the call.
            if unsafe { libc::epoll_ctl(fd, libc::EPOLL_CTL_ADD, sock, &mut event) } < 0 {
                return Err(format!(
                    "epoll_ctl(fd {sock}): {}",
                    io::Error::last_os_error()
                ));
            }
        }
        Ok(epoll)
    }

    /// How many connections are readable now (their indexes in the first `events`),
    /// waiting at most `timeout_ms`.
    fn wait(&self, events: &mut [libc::epoll_event], timeout_ms: i32) -> Result<usize, String> {
        // SAFETY: the kernel writes at most `events.len()` entries.
        let n = unsafe {
            libc::epoll_wait(
                self.fd,
                events.as_mut_ptr(),
                events.len() as i32,
                timeout_ms,
            )
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == ErrorKind::Interrupted {
                return Ok(0);
            }
            return Err(format!("epoll_wait: {err}"));
        }
        Ok(n as usize)
    }
}

impl Drop for Epoll {
    fn drop(&mut self) {
        // SAFETY: the descriptor is this struct's alone.
        unsafe { libc::close(self.fd) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn a_read_is_stamped_with_when_its_bytes_arrived_not_when_they_were_read() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let reader = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut writer, _) = listener.accept().unwrap();
        stamp_arrivals(&reader).unwrap();
        // the first socket to ask makes the kernel turn stamping on, asynchronously (a
        // work item flips a static key): segments that arrive before then carry no stamp,
        // so probe until one does (the generator asks on every socket before its run)
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            writer.write_all(b"p").unwrap();
            let mut probe = [0u8; 1];
            if read_stamped(&reader, &mut probe).unwrap().1.is_some() {
                break;
            }
            assert!(Instant::now() < deadline, "no segment stamped within 5 s");
            std::thread::sleep(Duration::from_millis(10));
        }
        let before = realtime_ns();
        writer.write_all(b"answer").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let read_at = realtime_ns();
        let mut buf = [0u8; 64];
        let (n, stamp) = read_stamped(&reader, &mut buf).unwrap();
        assert_eq!(&buf[..n], b"answer");
        let stamp = stamp.expect("the kernel stamps segments once SO_TIMESTAMPNS is on");
        // it arrived right after the write, ~50 ms before the read
        assert!(
            before <= stamp && stamp < read_at - 40_000_000,
            "{before} {stamp} {read_at}"
        );
    }

    #[test]
    fn an_unstamped_socket_reads_with_no_stamp() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let reader = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut writer, _) = listener.accept().unwrap();
        writer.write_all(b"x").unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(read_stamped(&reader, &mut buf).unwrap(), (1, None));
    }
}
