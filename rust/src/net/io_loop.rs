//! The native shell's I/O thread: one listener's connections, read and written off the
//! GIL with `mio` (epoll, edge-triggered), frames split here, heartbeats of admitted
//! members answered here ([`FastHeartbeats`]), their common commits taken here and held
//! until Python stored them ([`super::fast_commits`]), every other frame handed to Python
//! in batches ([`ToPython`]), Python's replies sent back in each connection's request
//! order ([`ReplyOrder`]).
//!
//! Python and this thread meet in one [`Shared`] behind a mutex, each holding it only to
//! move batches in or out (never across a system call). Python is woken through a
//! socketpair byte when its batch goes from empty to not empty; this thread through a
//! `mio::Waker` when Python leaves replies.
//!
//! Bounds, as the asyncio shell's: a connection stops being read while
//! `max_queued_replies` requests wait for their replies or `max_buffered_bytes` of replies
//! wait to be sent (a client pipelining without reading fills only its own socket); a
//! client that takes no reply bytes for `write_timeout_ms` is closed, as is one idle for
//! `idle_ms` (Kafka's `connections.max.idle.ms`); a bad frame size closes the connection.
//! A new connection beyond `max.connections` or `max.connections.per.ip` (counted over
//! every listener: [`ConnectionLimits`]) is closed at accept.

use std::collections::HashMap;
use std::io::{self, ErrorKind, Read, Write};
use std::net::IpAddr;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};

use rustc_hash::FxHashMap;

use super::commit_wire;
use super::connection_limits::{ConnectionLimits, Limit};
use super::fast_commits::{CommitRules, TakenCommit};
use super::fast_heartbeats::FastHeartbeats;
use super::frames::FrameReader;
use super::heartbeat_wire;
use super::latencies::Latencies;
use super::reply_order::ReplyOrder;

const LISTENER: Token = Token(0);
const WAKER: Token = Token(1);
const FIRST_CONN: usize = 2;
const READ_CHUNK: usize = 64 * 1024;
/// Frames of one connection with Python at once, not counting those it parked (a
/// JoinGroup in its join phase): a reply's size is known only once Python made it, so
/// this bounds the bytes one connection's pipelined requests can make Python produce
/// beyond `max_buffered_bytes` (Kafka's broker has one request of a connection at once).
pub const MAX_AT_PYTHON: usize = 32;
/// how often idle and stalled connections are looked for
const SCAN_EVERY: Duration = Duration::from_millis(500);
/// Kafka's COORDINATOR_NOT_AVAILABLE: a taken commit's answer when its write failed
const COORDINATOR_NOT_AVAILABLE: i16 = 15;

#[derive(Debug, Clone)]
pub struct ShellConfig {
    /// Kafka's `socket.request.max.bytes`
    pub max_frame_bytes: usize,
    /// Heartbeat versions the fast path may answer (those the dispatcher serves); `None`:
    /// every heartbeat goes to Python (an authorizer must see them)
    pub heartbeat_versions: Option<(i16, i16)>,
    /// OffsetCommit versions admitted members' commits may be taken in; `None`: every
    /// commit goes to Python
    pub commit_versions: Option<(i16, i16)>,
    /// Kafka's `offset.metadata.max.bytes`
    pub offset_metadata_max_bytes: usize,
    /// the upper bounds (seconds) of the buckets taken commits' latencies are counted in
    /// (read to answer ready, as Python times the requests it answers)
    pub latency_bounds_s: Vec<f64>,
    pub max_queued_replies: usize,
    pub max_buffered_bytes: usize,
    pub write_timeout_ms: u64,
    /// Kafka's `connections.max.idle.ms`; `None`: never
    pub idle_ms: Option<u64>,
    /// the server's connection quotas, shared with every other listener (see
    /// [`ConnectionLimits`])
    pub limits: Arc<Mutex<ConnectionLimits>>,
}

/// What this thread hands to Python, in arrival order within each list.
#[derive(Debug, Default)]
pub struct ToPython {
    /// new connections: id and the peer's address and port
    pub opened: Vec<(u64, String, u16)>,
    /// frames to dispatch: connection, sequence number, frame body
    pub frames: Vec<(u64, u64, Vec<u8>)>,
    /// connections gone, with why (Python forgets their pending replies)
    pub closed: Vec<(u64, String)>,
}

impl ToPython {
    fn is_empty(&self) -> bool {
        self.opened.is_empty() && self.frames.is_empty() && self.closed.is_empty()
    }
}

#[derive(Debug, Default)]
struct FromPython {
    replies: Vec<(u64, u64, Option<Vec<u8>>)>,
    /// requests Python parked: no longer counted as with Python
    parked: Vec<(u64, u64)>,
    /// taken commits Python stored (`true`) or failed to (`false`): their answers go out
    released: Vec<(u64, u64, bool)>,
    closes: Vec<(u64, String)>,
    stop: bool,
}

/// Running totals (Python adds them to its server statistics).
#[derive(Debug, Default, Clone, Copy)]
pub struct Counters {
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub accepted: u64,
    /// connections closed at accept: `max.connections` reached
    pub refused: u64,
    /// connections closed at accept: `max.connections.per.ip` reached
    pub refused_per_ip: u64,
    pub open: u64,
    /// the most reply bytes one connection held unsent (queued or behind a late reply)
    pub peak_unsent: u64,
    /// OffsetCommits taken here
    pub commits_taken: u64,
    /// wake-ups sent to Python (a byte on the socketpair)
    pub python_wakes: u64,
}

#[derive(Debug, Default)]
pub struct Shared {
    pub fast: FastHeartbeats,
    pub commit_rules: CommitRules,
    /// commits taken since Python last took them (in the order taken); only
    /// [`Shell::take_commits`] empties it, so `commits_signalled` stays true to it
    taken: Vec<TakenCommit>,
    /// taken commits' latencies, counted as their answers are released
    pub commit_latencies: Latencies,
    to_python: ToPython,
    python_woken: bool,
    /// Python was woken (or a wake-up is pending) since the commits in `taken` came, or
    /// said it will come for them ([`Shell::defer_commit_wakes`]): it takes them when its
    /// writer is free, so more commits do not wake it again until it has taken these
    commits_signalled: bool,
    from_python: FromPython,
    pub counters: Counters,
    /// why the thread stopped serving on its own (its poll failed); `None` while it serves
    pub failure: Option<String>,
}

/// The running shell: Python's handle on the I/O thread.
pub struct Shell {
    shared: Arc<Mutex<Shared>>,
    waker: Arc<Waker>,
    thread: Option<JoinHandle<()>>,
    /// Python's end of the wake-up socketpair (it polls its fd)
    notify: UnixStream,
}

/// The server's clock (milliseconds, Python's `now_ms` at the start, then monotonic).
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start: Instant,
    start_ms: i64,
}

impl Clock {
    pub fn new(start_ms: i64) -> Self {
        Clock {
            start: Instant::now(),
            start_ms,
        }
    }
    pub fn now_ms(&self) -> i64 {
        self.start_ms
            .saturating_add(i64::try_from(self.start.elapsed().as_millis()).unwrap_or(i64::MAX))
    }
}

/// A connection id's token: ids are their tokens, never reused (the counter only grows).
fn token(conn: u64) -> usize {
    usize::try_from(conn).unwrap_or(usize::MAX)
}

/// What this thread shares (with Python, and the connection limits with other
/// listeners' threads), locked: a panic on the other side must not wedge this one; the
/// data stays consistent because every critical section only moves whole items or
/// changes one count.
pub fn lock<T>(shared: &Mutex<T>) -> MutexGuard<'_, T> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shell {
    /// Serve `listener` (bound, listening) on a new thread.
    pub fn start(
        listener: std::net::TcpListener,
        now_ms: i64,
        config: ShellConfig,
    ) -> io::Result<Shell> {
        let (io, waker, notify) = IoThread::new(listener, now_ms, config)?;
        let shared = Arc::clone(&io.shared);
        let thread = std::thread::Builder::new()
            .name("groupcoord-net".into())
            .spawn(move || io.run())?;
        Ok(Shell {
            shared,
            waker,
            thread: Some(thread),
            notify,
        })
    }

    /// The fd Python watches: readable when [`Shell::take`] has something.
    pub fn notify_fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.notify.as_raw_fd()
    }

    /// Everything waiting for Python (and re-arm the wake-up).
    pub fn take(&self) -> ToPython {
        let mut sink = [0u8; 256];
        while matches!((&self.notify).read(&mut sink), Ok(n) if n > 0) {}
        let mut s = lock(&self.shared);
        s.python_woken = false;
        std::mem::take(&mut s.to_python)
    }

    /// The commits taken here since the last call, in the order taken (and re-arm the
    /// wake-up for the next ones).
    pub fn take_commits(&self) -> Vec<TakenCommit> {
        let mut s = lock(&self.shared);
        s.commits_signalled = false;
        std::mem::take(&mut s.taken)
    }

    /// Python's writer started a transaction, and takes the commits held here when it
    /// ends: until it next takes them, commits taken here do not wake it (one wake-up
    /// fewer per transaction, and it would find the writer busy and leave them here).
    pub fn defer_commit_wakes(&self) {
        lock(&self.shared).commits_signalled = true;
    }

    /// Replies ready: `(connection, sequence number, frame or None for no reply)`, and
    /// requests Python parked `(connection, sequence number)` (their replies come later).
    pub fn reply(
        &self,
        replies: impl IntoIterator<Item = (u64, u64, Option<Vec<u8>>)>,
        parked: impl IntoIterator<Item = (u64, u64)>,
    ) {
        let mut s = lock(&self.shared);
        s.from_python.parked.extend(parked);
        s.from_python.replies.extend(replies);
        drop(s);
        let _ = self.waker.wake();
    }

    /// Taken commits stored (`ok`) or not: each `(connection, sequence number)`'s held
    /// answer goes out (no error, or COORDINATOR_NOT_AVAILABLE for each partition).
    pub fn release(&self, commits: impl IntoIterator<Item = (u64, u64)>, ok: bool) {
        let mut s = lock(&self.shared);
        s.from_python
            .released
            .extend(commits.into_iter().map(|(conn, seq)| (conn, seq, ok)));
        drop(s);
        let _ = self.waker.wake();
    }

    /// Close a connection (Python found a frame it cannot read): nothing more is read or
    /// sent on it.
    pub fn close(&self, conn: u64, reason: String) {
        lock(&self.shared).from_python.closes.push((conn, reason));
        let _ = self.waker.wake();
    }

    /// Run `f` on the shared state (the fast-heartbeat table, the counters).
    pub fn with_shared<R>(&self, f: impl FnOnce(&mut Shared) -> R) -> R {
        f(&mut lock(&self.shared))
    }

    /// Stop accepting, send what is ready, close every connection, end the thread.
    pub fn stop(&mut self) {
        lock(&self.shared).from_python.stop = true;
        let _ = self.waker.wake();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A taken commit's answers, held until Python reports its write.
struct Held {
    stored: Vec<u8>,
    failed: Vec<u8>,
    read_at: Instant,
}

struct Conn {
    id: u64,
    stream: TcpStream,
    /// the client's address, as counted in the connection limits
    ip: IpAddr,
    frames: FrameReader,
    order: ReplyOrder,
    wbuf: Vec<u8>,
    wpos: usize,
    /// false while held back (too much waiting to be sent, or with Python)
    reading: bool,
    /// frames handed to Python whose replies have not come back
    at_python: usize,
    /// each commit taken here by sequence number: its two answers (stored, not stored)
    /// and when it was read
    held: FxHashMap<u64, Held>,
    last_active: Instant,
    /// since when the client takes no bytes though some wait
    stalled_since: Option<Instant>,
}

impl Conn {
    fn unsent(&self) -> usize {
        self.wbuf.len() - self.wpos + self.order.held_bytes()
    }

    /// Too much waits on it to read another frame (the bounds in the module docs).
    fn full(&self, config: &ShellConfig) -> bool {
        self.order.len() >= config.max_queued_replies
            || self.at_python >= MAX_AT_PYTHON
            || self.unsent() >= config.max_buffered_bytes
    }
}

struct IoThread {
    poll: Poll,
    listener: TcpListener,
    conns: HashMap<usize, Conn>,
    next_token: usize,
    shared: Arc<Mutex<Shared>>,
    notify_tx: UnixStream,
    config: ShellConfig,
    clock: Clock,
    chunk: Vec<u8>,
}

impl IoThread {
    /// The thread's state around `listener`, its waker (for Python's replies) and Python's
    /// end of the wake-up socketpair; nothing runs until [`IoThread::run`].
    fn new(
        listener: std::net::TcpListener,
        now_ms: i64,
        config: ShellConfig,
    ) -> io::Result<(IoThread, Arc<Waker>, UnixStream)> {
        listener.set_nonblocking(true)?;
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        let (notify, notify_tx) = UnixStream::pair()?;
        notify.set_nonblocking(true)?;
        notify_tx.set_nonblocking(true)?;
        let shared = Arc::new(Mutex::new(Shared {
            commit_rules: CommitRules::new(config.offset_metadata_max_bytes),
            commit_latencies: Latencies::new(config.latency_bounds_s.clone()),
            ..Shared::default()
        }));
        let mut io = IoThread {
            poll,
            listener: TcpListener::from_std(listener),
            conns: HashMap::new(),
            next_token: FIRST_CONN,
            shared,
            notify_tx,
            config,
            clock: Clock::new(now_ms),
            chunk: vec![0; READ_CHUNK],
        };
        io.poll
            .registry()
            .register(&mut io.listener, LISTENER, Interest::READABLE)?;
        Ok((io, waker, notify))
    }

    fn run(mut self) {
        let mut events = Events::with_capacity(1024);
        let mut last_scan = Instant::now();
        loop {
            if let Err(e) = self.poll.poll(&mut events, Some(SCAN_EVERY)) {
                if e.kind() == ErrorKind::Interrupted {
                    continue;
                }
                self.fail(format!("polling its sockets failed: {e}"));
                return;
            }
            let mut flush: Vec<usize> = Vec::new();
            for ev in events.iter() {
                match ev.token() {
                    LISTENER => self.accept(),
                    WAKER => {}
                    Token(t) => {
                        if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                            self.read(t);
                        }
                        if ev.is_writable() {
                            flush.push(t);
                        }
                    }
                }
            }
            let from = std::mem::take(&mut lock(&self.shared).from_python);
            // a connection gone by now (closed, or a client that left) is skipped
            for (conn, reason) in from.closes {
                self.drop_conn(token(conn), reason);
            }
            // parked before replied: a reply in the same batch may be a parked one's
            for (conn, seq) in from.parked {
                if let Some(c) = self.conns.get_mut(&token(conn)) {
                    if c.order.park(seq) {
                        c.at_python -= 1;
                    }
                }
            }
            if !from.released.is_empty() {
                let mut s = lock(&self.shared);
                for (conn, seq, ok) in from.released {
                    let t = token(conn);
                    let Some(c) = self.conns.get_mut(&t) else {
                        continue;
                    };
                    if let Some(held) = c.held.remove(&seq) {
                        let answer = if ok { held.stored } else { held.failed };
                        c.order.fill(seq, Some(answer));
                        s.commit_latencies
                            .observe(held.read_at.elapsed().as_secs_f64());
                        flush.push(t);
                    }
                }
            }
            for (conn, seq, reply) in from.replies {
                let t = token(conn);
                if let Some(c) = self.conns.get_mut(&t) {
                    if c.order.fill(seq, reply) == Some(false) {
                        c.at_python -= 1;
                    }
                    flush.push(t);
                }
            }
            flush.sort_unstable();
            flush.dedup();
            for t in flush {
                self.flush(t);
            }
            if from.stop {
                self.shut_down();
                return;
            }
            if last_scan.elapsed() >= SCAN_EVERY {
                last_scan = Instant::now();
                self.scan();
            }
            self.wake_python();
        }
    }

    fn wake_python(&mut self) {
        let mut s = lock(&self.shared);
        let new_commits = !s.taken.is_empty() && !s.commits_signalled;
        if s.to_python.is_empty() && !new_commits && s.failure.is_none() {
            return;
        }
        // a wake-up sent now or still pending shows Python every commit taken so far
        s.commits_signalled |= !s.taken.is_empty();
        if !s.python_woken {
            s.python_woken = true;
            s.counters.python_wakes += 1;
            drop(s);
            // WouldBlock: the socket already holds unread wake-ups, which is as good
            let _ = (&self.notify_tx).write(&[1]);
        }
    }

    fn accept(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((mut stream, peer)) => {
                    let counted = lock(&self.config.limits).open(peer.ip());
                    let mut s = lock(&self.shared);
                    match counted {
                        Ok(()) => {}
                        // dropped: closed at once, as Kafka's acceptor does
                        Err(Limit::MaxConnections) => {
                            s.counters.refused += 1;
                            continue;
                        }
                        Err(Limit::MaxConnectionsPerIp) => {
                            s.counters.refused_per_ip += 1;
                            continue;
                        }
                    }
                    let t = self.next_token;
                    self.next_token += 1;
                    if self
                        .poll
                        .registry()
                        .register(
                            &mut stream,
                            Token(t),
                            Interest::READABLE | Interest::WRITABLE,
                        )
                        .is_err()
                    {
                        lock(&self.config.limits).close(peer.ip());
                        continue;
                    }
                    let _ = stream.set_nodelay(true);
                    s.counters.accepted += 1;
                    s.counters.open += 1;
                    s.to_python
                        .opened
                        .push((t as u64, peer.ip().to_string(), peer.port()));
                    self.conns.insert(
                        t,
                        Conn {
                            id: t as u64,
                            stream,
                            ip: peer.ip(),
                            frames: FrameReader::new(self.config.max_frame_bytes),
                            order: ReplyOrder::default(),
                            wbuf: Vec::new(),
                            wpos: 0,
                            reading: true,
                            at_python: 0,
                            held: FxHashMap::default(),
                            last_active: Instant::now(),
                            stalled_since: None,
                        },
                    );
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // out of descriptors and the like: retried at the next connection
                Err(_) => return,
            }
        }
    }

    /// Read what the socket has (edge-triggered: until it would block), hand the frames
    /// on, send what is ready. A connection held back is read again when it drains (a
    /// loop, not recursion: a client pipelining far ahead drains and refills many times).
    fn read(&mut self, t: usize) {
        loop {
            if let Some(reason) = self.read_frames(t) {
                self.drop_conn(t, reason);
                return;
            }
            if !self.send(t) {
                return;
            }
        }
    }

    /// Send what is ready on `t`; read on if that let a held-back connection go again.
    fn flush(&mut self, t: usize) {
        if self.send(t) {
            self.read(t);
        }
    }

    /// Reads into `t`'s buffer and splits it; `Some(reason)`: the connection must close.
    fn read_frames(&mut self, t: usize) -> Option<String> {
        let mut got = 0u64;
        let mut outcome = None;
        // frames left buffered while it was held back come first
        if let Some(reason) = self.split(t) {
            return Some(reason);
        }
        loop {
            let c = self.conns.get_mut(&t)?; // gone: nothing to close
            if !c.reading {
                break;
            }
            match c.stream.read(&mut self.chunk) {
                Ok(0) => {
                    outcome = Some("the client closed the connection".into());
                    break;
                }
                Ok(n) => {
                    got += n as u64;
                    c.frames.buffer().extend_from_slice(&self.chunk[..n]);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    outcome = Some(format!("read failed: {e}"));
                    break;
                }
            }
            // split chunk by chunk, so the bound on queued replies holds as we read
            if let Some(reason) = self.split(t) {
                outcome = Some(reason);
                break;
            }
            if self.conns.get(&t).is_some_and(|c| !c.reading) {
                break; // held back by split: read again once it drains (flush)
            }
        }
        if got > 0 {
            if let Some(c) = self.conns.get_mut(&t) {
                c.last_active = Instant::now();
            }
            lock(&self.shared).counters.bytes_in += got;
        }
        outcome
    }

    /// The complete frames buffered on `t`, up to the connection's bounds (then it is
    /// held back: `reading` false): a slot each, answered here or handed on.
    /// `Some(reason)`: a bad frame size (the connection must close).
    fn split(&mut self, t: usize) -> Option<String> {
        let versions = self.config.heartbeat_versions;
        let commit_versions = self.config.commit_versions;
        let config = &self.config;
        let c = self.conns.get_mut(&t)?;
        let mut shared = lock(&self.shared);
        let shared = &mut *shared;
        let now = self.clock.now_ms();
        loop {
            if c.full(config) {
                c.reading = false;
                return None;
            }
            let frame = match c.frames.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => return None,
                Err(e) => return Some(e.to_string()),
            };
            let seq = c.order.open();
            if let Some(hb) = versions.and_then(|v| heartbeat_wire::read_common(frame, v)) {
                if shared.fast.answer(&hb, now) {
                    let reply = heartbeat_wire::response(hb.correlation_id, hb.version, 0);
                    c.order.fill(seq, Some(reply));
                    continue;
                }
            }
            if let Some(cf) = commit_versions.and_then(|v| commit_wire::read_common(frame, v)) {
                if shared.commit_rules.accepts(&cf) {
                    if let Some(at) = shared.fast.take_commit(&cf.member, now) {
                        c.order.park(seq);
                        let held = Held {
                            stored: cf.response(0),
                            failed: cf.response(COORDINATOR_NOT_AVAILABLE),
                            read_at: Instant::now(),
                        };
                        c.held.insert(seq, held);
                        shared.taken.push(TakenCommit::new(c.id, seq, &cf, at));
                        shared.counters.commits_taken += 1;
                        continue;
                    }
                }
            }
            c.at_python += 1;
            shared.to_python.frames.push((c.id, seq, frame.to_vec()));
        }
    }

    /// Send what is ready on `t`, in order. `true`: it was held back and may be read
    /// again now (it drained).
    fn send(&mut self, t: usize) -> bool {
        let Some(c) = self.conns.get_mut(&t) else {
            return false;
        };
        if c.wpos == c.wbuf.len() {
            c.wbuf.clear();
            c.wpos = 0;
        }
        c.order.take_ready(&mut c.wbuf);
        let unsent = c.unsent() as u64;
        let mut sent = 0u64;
        let mut failed = None;
        while c.wpos < c.wbuf.len() {
            match c.stream.write(&c.wbuf[c.wpos..]) {
                Ok(0) => {
                    failed = Some("write failed: the socket took no bytes".to_string());
                    break;
                }
                Ok(n) => {
                    c.wpos += n;
                    sent += n as u64;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    failed = Some(format!("write failed: {e}"));
                    break;
                }
            }
        }
        if sent > 0 || unsent > 0 {
            let mut s = lock(&self.shared);
            s.counters.bytes_out += sent;
            s.counters.peak_unsent = s.counters.peak_unsent.max(unsent);
        }
        if sent > 0 {
            c.stalled_since = None;
        }
        if c.wpos < c.wbuf.len() {
            c.stalled_since.get_or_insert_with(Instant::now);
        } else {
            c.wbuf.clear();
            c.wpos = 0;
            c.stalled_since = None;
        }
        if let Some(reason) = failed {
            self.drop_conn(t, reason);
            return false;
        }
        let c = self.conns.get(&t).expect("still here");
        if !c.reading && !c.full(&self.config) {
            // read again: the edge may have passed while it was held back
            self.conns.get_mut(&t).expect("still here").reading = true;
            return true;
        }
        false
    }

    fn drop_conn(&mut self, t: usize, reason: String) {
        if let Some(mut c) = self.conns.remove(&t) {
            let _ = self.poll.registry().deregister(&mut c.stream);
            lock(&self.config.limits).close(c.ip);
            let mut s = lock(&self.shared);
            s.counters.open -= 1;
            s.to_python.closed.push((c.id, reason));
        }
    }

    /// Close the connections idle for `idle_ms` and those whose client took nothing for
    /// `write_timeout_ms`.
    fn scan(&mut self) {
        let idle = self.config.idle_ms.map(Duration::from_millis);
        let stall = Duration::from_millis(self.config.write_timeout_ms);
        let mut closing = Vec::new();
        for (&t, c) in &self.conns {
            if c.stalled_since.is_some_and(|s| s.elapsed() >= stall) {
                closing.push((
                    t,
                    format!(
                        "write_timeout: the client took no reply bytes for {} ms",
                        self.config.write_timeout_ms
                    ),
                ));
            } else if idle.is_some_and(|i| {
                c.order.is_empty() && c.wbuf.len() == c.wpos && c.last_active.elapsed() >= i
            }) {
                closing.push((t, "idle (connections.max.idle.ms)".to_string()));
            }
        }
        for (t, reason) in closing {
            self.drop_conn(t, reason);
        }
    }

    /// The thread cannot go on: every connection is closed (the connection limits stop
    /// counting them, Python forgets them), the listener too once the thread ends, and
    /// Python is woken to report `why` (a listener that silently stopped answering would
    /// leave clients waiting out their request timeouts and its connections counted
    /// against `max.connections` forever).
    fn fail(&mut self, why: String) {
        let reason = format!("the I/O thread stopped: {why}");
        self.close_everything(&reason);
        lock(&self.shared).failure = Some(reason);
        self.wake_python();
    }

    fn shut_down(&mut self) {
        self.close_everything("the server is shutting down");
    }

    /// Stop accepting, send what is ready on each connection, close them all (`reason`).
    fn close_everything(&mut self, reason: &str) {
        let _ = self.poll.registry().deregister(&mut self.listener);
        let tokens: Vec<usize> = self.conns.keys().copied().collect();
        for t in tokens {
            self.send(t);
            self.drop_conn(t, reason.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener as StdListener, TcpStream as StdStream};

    fn config(limits: &Arc<Mutex<ConnectionLimits>>) -> ShellConfig {
        ShellConfig {
            max_frame_bytes: 1 << 20,
            heartbeat_versions: None,
            commit_versions: None,
            offset_metadata_max_bytes: 4096,
            latency_bounds_s: vec![0.001, 1.0],
            max_queued_replies: 16,
            max_buffered_bytes: 1 << 20,
            write_timeout_ms: 60_000,
            idle_ms: None,
            limits: Arc::clone(limits),
        }
    }

    #[test]
    fn a_failed_poll_closes_every_connection_and_tells_python_why() {
        let listener = StdListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let limits = Arc::new(Mutex::new(ConnectionLimits::new(Some(10), None)));
        let (mut io, _waker, notify) = IoThread::new(listener, 0, config(&limits)).unwrap();
        let mut clients = [
            StdStream::connect(address).unwrap(),
            StdStream::connect(address).unwrap(),
        ];
        // connect() returned: both wait in the accept queue
        io.accept();
        assert_eq!(lock(&limits).open_connections(), 2);
        assert!(!take_wake_up(&notify));

        io.fail("polling its sockets failed: test".into());

        assert_eq!(
            lock(&limits).open_connections(),
            0,
            "the quota is given back"
        );
        {
            let s = lock(&io.shared);
            let why = "the I/O thread stopped: polling its sockets failed: test";
            assert_eq!(s.failure.as_deref(), Some(why));
            assert_eq!(s.counters.open, 0);
            assert_eq!(s.to_python.closed.len(), 2);
            assert!(s.to_python.closed.iter().all(|(_, reason)| reason == why));
        }
        assert!(take_wake_up(&notify), "Python is woken to report it");
        for client in &mut clients {
            let mut byte = [0u8; 1];
            assert_eq!(
                client.read(&mut byte).unwrap(),
                0,
                "the client sees the close"
            );
        }
        // the thread ends with run(): its end of the wake-up socketpair closes, so Python's
        // end reads EOF, readable for good (native_listener stops watching it)
        drop(io);
        let mut byte = [0u8; 1];
        assert_eq!((&notify).read(&mut byte).unwrap(), 0);
    }

    /// Whether a wake-up byte was waiting (and consume it).
    fn take_wake_up(notify: &UnixStream) -> bool {
        let mut sink = [0u8; 16];
        matches!((&*notify).read(&mut sink), Ok(n) if n > 0)
    }
}
