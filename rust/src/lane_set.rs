//! The simulator's processing lane with its events (`groupcoord.sim.engine`, "The
//! processing lane"): the lane's members, and the queue of their heartbeats' and
//! auto-commits' arrivals at the coordinator and their auto-commit checks, handled here
//! with no Python frame per event. The engine's own queue holds everything else; it runs
//! this queue's events whose keys come before its next one ([`LaneSet::run`]). The
//! coordinator is reached through [`Coordinator`] (the real one, in Python, behind it).
//!
//! Each handler is `Engine._plane_heartbeat_arrives`, `_plane_check` or
//! `_plane_commit_arrives` written again, step for step, with the same arithmetic (the
//! engine's Python handlers stay the reference, `Engine(native=False)`, and what the
//! engine runs for a member whose state it took back, [`LaneSet::take`]). The member's
//! metadata refreshes (`Engine._refresh_metadata`) are taken here too, where the refresh
//! only runs the member's loop once (see [`LaneSet::metadata`]); the Python lane leaves
//! for them, so their reference is the eager engine's handler itself.
//!
//! This module has no PyO3: `crate::bindings::lane_set` adapts it to Python.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::app_loop::{AppLoop, Constant, Tally};
use crate::lane_loop::{self, Broken, Read, Settings, Timers};
use crate::whole_ms;

/// The engine's ranks of simultaneous events (`_REQUEST`, `_ANSWER`, `_WAKE`).
pub const REQUEST: i64 = 6;
pub const ANSWER: i64 = 7;
pub const WAKE: i64 = 9;
/// `_METADATA`
pub const METADATA: i64 = 10;

/// A queued event's key: (time, rank, process, sub-order), as the engine orders events.
pub type Key = (i64, i64, i64, i64);

/// An auto-commit the lane decided on (`_CommitPlan`).
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// the first poll at or after the commit's due time: (time, rank, place)
    pub key: (i64, i64, i64),
    /// (partition index, offset) in the member's order; `None`: nothing consumed
    pub offsets: Option<Vec<(usize, i64)>>,
    pub arrival: i64,
    pub up_seq: i64,
    /// (arrival at the member, place on the connection, persisted)
    pub answer: Option<(i64, i64, bool)>,
    pub read: bool,
    pub poll_before: i64,
    pub applied: bool,
}

/// One member in the lane (`_ProcessingLane` and the process's fields the lane reads).
#[derive(Clone, Debug)]
pub struct Lane {
    /// the process's place in the order of simultaneous events
    pub pkey: i64,
    pub app: AppLoop,
    pub timers: Timers,
    pub wake_at: i64,
    pub reads: Vec<Read>,
    pub next_sent: i64,
    pub next_arrival: i64,
    pub next_up_seq: i64,
    pub up_seq: i64,
    pub down_seq: i64,
    pub down_last_ms: f64,
    pub commit: Option<Plan>,
    pub check_at: i64,
    pub last_commit_send: Option<i64>,
    pub next_auto_commit_ms: i64,
    /// per partition (the member's order): the offset last committed
    pub committed: Vec<Option<i64>>,
    /// per partition the application does not process: its position (`None` until
    /// OffsetFetch answers)
    pub idle_positions: Vec<Option<i64>>,
    pub hb_token: u64,
    pub check_token: u64,
    pub commit_token: u64,
    /// the next metadata refresh (`None`: none queued)
    pub metadata_at: Option<i64>,
    pub metadata_token: u64,
    /// the [`LaneSet::metadata_epoch`] of the metadata the member's machine last saw
    pub metadata_seen: u64,
    /// what the recorder counts of the records it processed
    pub tally: Tally,
}

/// The lane's settings (milliseconds).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// the connection's constant one-way latency
    pub latency_ms: f64,
    pub auto_commit_interval_ms: i64,
    pub record_ms: f64,
    pub settings: Settings,
    /// `metadata.max.age.ms`
    pub metadata_max_age_ms: i64,
}

/// The coordinator as the lane reaches it. Each call is what the engine's handler asks.
pub trait Coordinator {
    /// `quiet_heartbeat` of the member in `slot` at `now`: taken (its session refreshed)
    /// or not (nothing changed).
    fn heartbeat(&mut self, slot: usize, now: i64) -> bool;
    /// `SyncShell.quiet_commit_offsets` of the member's `offsets`: `None` not taken
    /// (nothing changed), else whether its record was persisted.
    fn commit(&mut self, slot: usize, offsets: &[(usize, i64)], now: i64) -> Option<bool>;
    /// Whether the engine must (re)schedule the coordinator's timers at `now` after a
    /// heartbeat (`after_commit` false: only if none is scheduled) or a commit.
    fn schedule_needed(&mut self, now: i64, after_commit: bool) -> bool;
}

/// Why [`LaneSet::run`] returned before its limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// the next event is at or after the limit
    Done,
    /// the coordinator did not take the event at `key` of the member in `slot`: the event
    /// is queued again; the engine takes the member back and runs it
    Declined { slot: usize, key: Key },
    /// after the event at `key`, the engine schedules the coordinator's timers
    Schedule { key: Key },
    /// a commit's record was not persisted at `key`: the member leaves the lane there
    Leave { slot: usize, key: Key },
}

/// The kinds of lane events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Heartbeat,
    Check,
    Commit,
    Metadata,
}

/// A queued event: its key, a counter that breaks ties, and what it is.
type Entry = (Key, u64, Kind, usize, u64);

/// What the engine counts, since it last asked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub heartbeats: u64,
    pub commits: u64,
    pub steps: u64,
    pub events: u64,
}

/// The members in the lane and their queued events.
#[derive(Debug)]
pub struct LaneSet {
    pub config: Config,
    lanes: Vec<Option<Lane>>,
    free: Vec<usize>,
    queue: BinaryHeap<Reverse<Entry>>,
    seq: u64,
    /// the last token given to a queued event: unique across members, so an event queued
    /// for a member that left is never live for one that takes its slot
    tokens: u64,
    pub counters: Counters,
    /// the engine's count of partition count changes: a member whose machine saw an
    /// older one refreshes its metadata in the engine (the refresh may start a rebalance)
    pub metadata_epoch: u64,
}

/// A failed lane condition, with the member's place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaneBroken {
    pub pkey: i64,
    pub broken: Broken,
}

impl LaneSet {
    pub fn new(config: Config) -> Self {
        Self {
            config,
            lanes: Vec::new(),
            free: Vec::new(),
            queue: BinaryHeap::new(),
            seq: 0,
            tokens: 0,
            counters: Counters::default(),
            metadata_epoch: 0,
        }
    }

    /// Put a member in the lane (`Engine._plane_enter`): its first heartbeat, sent at
    /// `hb_due`, and its auto-commit's check at `check_at` are queued. Returns its slot.
    pub fn enter(&mut self, lane: Lane, hb_due: i64, check_at: i64) -> usize {
        let slot = match self.free.pop() {
            Some(slot) => {
                self.lanes[slot] = Some(lane);
                slot
            }
            None => {
                self.lanes.push(Some(lane));
                self.lanes.len() - 1
            }
        };
        self.queue_heartbeat(slot, hb_due);
        self.queue_check(slot, check_at);
        if let Some(at) = self.lane_mut(slot).metadata_at {
            self.queue_metadata(slot, at);
        }
        slot
    }

    /// Take a member out: its state, whose queued events are dropped (the engine queues
    /// them again, `Engine._plane_native_take`).
    pub fn take(&mut self, slot: usize) -> Option<Lane> {
        let lane = self.lanes.get_mut(slot)?.take()?;
        self.free.push(slot);
        Some(lane)
    }

    pub fn lane(&self, slot: usize) -> Option<&Lane> {
        self.lanes.get(slot).and_then(Option::as_ref)
    }

    /// The key of the next live event, dropping stale ones.
    pub fn next_key(&mut self) -> Option<Key> {
        while let Some(Reverse((key, _, kind, slot, token))) = self.queue.peek().copied() {
            if self.live(kind, slot, token) {
                return Some(key);
            }
            self.queue.pop();
        }
        None
    }

    fn live(&self, kind: Kind, slot: usize, token: u64) -> bool {
        match self.lane(slot) {
            None => false,
            Some(lane) => {
                token
                    == match kind {
                        Kind::Heartbeat => lane.hb_token,
                        Kind::Check => lane.check_token,
                        Kind::Commit => lane.commit_token,
                        Kind::Metadata => lane.metadata_token,
                    }
            }
        }
    }

    fn push(&mut self, key: Key, kind: Kind, slot: usize, token: u64) {
        self.seq += 1;
        self.queue.push(Reverse((key, self.seq, kind, slot, token)));
    }

    fn lane_mut(&mut self, slot: usize) -> &mut Lane {
        self.lanes[slot]
            .as_mut()
            .expect("a live event names a member in the lane")
    }

    /// `_plane_queue_heartbeat`: the arrival of the heartbeat sent at `sent`.
    fn queue_heartbeat(&mut self, slot: usize, sent: i64) {
        let latency = self.config.latency_ms;
        self.tokens += 1;
        let token = self.tokens;
        let lane = self.lane_mut(slot);
        lane.up_seq += 1;
        lane.next_sent = sent;
        lane.next_arrival = whole_ms::ceil(sent as f64 + latency);
        lane.next_up_seq = lane.up_seq;
        lane.hb_token = token;
        let (key, token) = (
            (lane.next_arrival, REQUEST, lane.pkey, lane.up_seq),
            lane.hb_token,
        );
        self.push(key, Kind::Heartbeat, slot, token);
    }

    /// `_plane_queue_check`: the auto-commit's check at `at`.
    fn queue_check(&mut self, slot: usize, at: i64) {
        self.tokens += 1;
        let token = self.tokens;
        let lane = self.lane_mut(slot);
        lane.check_at = at;
        lane.check_token = token;
        let (key, token) = ((at, ANSWER, lane.pkey, -1), lane.check_token);
        self.push(key, Kind::Check, slot, token);
    }

    /// The member's next metadata refresh, at `at`.
    fn queue_metadata(&mut self, slot: usize, at: i64) {
        self.tokens += 1;
        let token = self.tokens;
        let lane = self.lane_mut(slot);
        lane.metadata_at = Some(at);
        lane.metadata_token = token;
        let key = (at, METADATA, lane.pkey, 0);
        self.push(key, Kind::Metadata, slot, token);
    }

    /// Run the events whose keys come before `limit` (and whose times are at most `end`).
    pub fn run(
        &mut self,
        limit: Key,
        end: i64,
        coordinator: &mut impl Coordinator,
    ) -> Result<Stop, LaneBroken> {
        loop {
            let Some(Reverse(entry)) = self.queue.peek().copied() else {
                return Ok(Stop::Done);
            };
            let (key, _, kind, slot, token) = entry;
            if !self.live(kind, slot, token) {
                self.queue.pop();
                continue;
            }
            if key >= limit || key.0 > end {
                return Ok(Stop::Done);
            }
            self.queue.pop();
            self.counters.events += 1;
            let stop = match kind {
                Kind::Heartbeat => self.heartbeat_arrives(slot, key, coordinator),
                Kind::Check => self.check(slot, key)?,
                Kind::Commit => self.commit_arrives(slot, key, coordinator),
                Kind::Metadata => self.metadata(slot, key)?,
            };
            if let Some(stop) = stop {
                if let Stop::Declined { .. } = stop {
                    // queued again as it was: the engine runs it
                    self.seq += 1;
                    self.queue.push(Reverse((key, self.seq, kind, slot, token)));
                }
                return Ok(stop);
            }
        }
    }

    /// `_plane_answer`: the coordinator answers now; the answer's arrival at the member.
    fn answer(&mut self, slot: usize, now: i64, heartbeat: bool) -> i64 {
        let latency = self.config.latency_ms;
        let lane = self.lane_mut(slot);
        let arrival = (now as f64 + latency).max(lane.down_last_ms);
        lane.down_last_ms = arrival;
        lane.down_seq += 1;
        let answered = whole_ms::ceil(arrival);
        lane.reads.push((answered, lane.down_seq, heartbeat));
        answered
    }

    /// `_plane_heartbeat_arrives`.
    fn heartbeat_arrives(
        &mut self,
        slot: usize,
        key: Key,
        coordinator: &mut impl Coordinator,
    ) -> Option<Stop> {
        let now = key.0;
        if !coordinator.heartbeat(slot, now) {
            return Some(Stop::Declined { slot, key });
        }
        self.counters.heartbeats += 1;
        let answered = self.answer(slot, now, true);
        let interval = self.config.settings.heartbeat_interval;
        let sent = self.lane_mut(slot).next_sent + interval;
        debug_assert!(answered < sent, "answered {answered} sent {sent}");
        self.queue_heartbeat(slot, sent);
        coordinator
            .schedule_needed(now, false)
            .then_some(Stop::Schedule { key })
    }

    /// The steps of the member before the event at `key` (`_plane_catch_up`).
    fn catch_up(&mut self, slot: usize, key: Key) -> Result<(), LaneBroken> {
        let (t, rank, proc, _) = key;
        let record_ms = self.config.record_ms;
        let settings = self.config.settings;
        let lane = self.lane_mut(slot);
        let pkey = lane.pkey;
        let limit = if (WAKE, pkey) < (rank, proc) {
            t + 1
        } else {
            t
        };
        let read_limit = if (ANSWER, pkey) < (rank, proc) {
            t + 1
        } else {
            t
        };
        if lane.wake_at >= limit && lane.reads.first().is_none_or(|r| r.0 >= read_limit) {
            return Ok(());
        }
        let ran = lane_loop::run(
            &mut lane.app,
            &mut lane.timers,
            settings,
            lane.wake_at,
            limit,
            read_limit,
            &lane.reads,
            &mut Constant(record_ms),
            &mut lane.tally,
        )
        .map_err(|broken| LaneBroken { pkey, broken })?;
        lane.wake_at = ran.wake_at;
        lane.reads.drain(..ran.reads_done);
        if ran.commit_read {
            if let Some(plan) = lane.commit.as_mut() {
                plan.read = true;
            }
        }
        self.counters.steps += ran.steps;
        Ok(())
    }

    /// `_plane_commit_passed`: the planned commit's step came before the event at `key`.
    fn commit_passed(&mut self, slot: usize, key: Key) {
        let interval = self.config.auto_commit_interval_ms;
        let lane = self.lane_mut(slot);
        let pkey = lane.pkey;
        let Some(plan) = lane.commit.as_mut() else {
            return;
        };
        if plan.applied || (plan.key.0, plan.key.1, pkey, plan.key.2) >= key {
            return;
        }
        plan.applied = true;
        let at = plan.key.0;
        lane.next_auto_commit_ms = at + interval;
        if let Some(offsets) = &plan.offsets {
            for &(i, offset) in offsets {
                lane.committed[i] = Some(offset);
            }
            lane.last_commit_send = Some(at);
        }
    }

    /// `_plane_check`: the auto-commit falls due now.
    fn check(&mut self, slot: usize, key: Key) -> Result<Option<Stop>, LaneBroken> {
        self.catch_up(slot, key)?;
        self.commit_passed(slot, key);
        let now = key.0;
        let (latency, interval) = (self.config.latency_ms, self.config.auto_commit_interval_ms);
        let lane = self.lane_mut(slot);
        let poll = match lane.app.busy_until {
            Some(busy) => {
                // (answers read before the batch's end are read inside it: no poll)
                let mut poll = (busy, WAKE, 0);
                for read in &lane.reads {
                    if read.0 >= busy {
                        if read.0 == busy {
                            poll = (busy, ANSWER, read.1);
                        }
                        break;
                    }
                }
                poll
            }
            None => match lane.reads.first() {
                Some(read) if read.0 <= lane.wake_at => (read.0, ANSWER, read.1),
                _ => (lane.wake_at, WAKE, 0),
            },
        };
        let at = poll.0;
        // a request on its way whose answer might be read by then
        let mut pending = None;
        if lane.next_sent < at && lane.next_arrival <= at {
            pending = Some(lane.next_arrival);
        }
        if let Some(plan) = &lane.commit {
            if plan.offsets.is_some() && plan.answer.is_none() && plan.arrival <= at {
                pending = Some(pending.map_or(plan.arrival, |p: i64| p.min(plan.arrival)));
            }
        }
        if let Some(pending) = pending {
            debug_assert!(pending > now, "pending {pending} now {now}");
            self.queue_check(slot, pending);
            return Ok(None);
        }
        debug_assert!(lane
            .commit
            .as_ref()
            .is_none_or(|old| old.applied && (old.offsets.is_none() || old.read)));
        let mut offsets = Vec::new();
        for (i, p) in lane.app.partitions.iter().enumerate() {
            let position = if p.active {
                p.position
            } else {
                match lane.idle_positions[i] {
                    Some(position) => position,
                    None => continue,
                }
            };
            if lane.committed[i] != Some(position) {
                offsets.push((i, position));
            }
        }
        let mut plan = Plan {
            key: poll,
            offsets: None,
            arrival: 0,
            up_seq: 0,
            answer: None,
            read: false,
            poll_before: lane.timers.last_poll,
            applied: false,
        };
        if !offsets.is_empty() {
            plan.offsets = Some(offsets);
            plan.arrival = whole_ms::ceil(at as f64 + latency);
            let same_poll = lane.timers.hb_sent.is_none() && lane.next_sent == at;
            if same_poll {
                // the heartbeat due at the same poll is sent after the commit
                // (poll_idle_commit): the commit takes its place on the connection
                plan.up_seq = lane.next_up_seq;
            } else {
                lane.up_seq += 1;
                plan.up_seq = lane.up_seq;
            }
            let (arrival, up_seq, pkey) = (plan.arrival, plan.up_seq, lane.pkey);
            lane.commit = Some(plan);
            if same_poll {
                self.queue_heartbeat(slot, at);
            }
            self.tokens += 1;
            let token = self.tokens;
            self.lane_mut(slot).commit_token = token;
            self.push((arrival, REQUEST, pkey, up_seq), Kind::Commit, slot, token);
        } else {
            lane.commit = Some(plan);
        }
        self.queue_check(slot, at + interval);
        Ok(None)
    }

    /// `Engine._refresh_metadata` of a member in the lane: with no partition count changed
    /// since its machine last looked, `set_metadata` changes nothing, and the refresh only
    /// runs the member's loop once now (`_step`) and queues the next refresh. That step
    /// is the lane's own (its steps before now run first): inside a batch the heartbeat
    /// thread finds nothing due; idle, the application polls (the poll timer restarts and
    /// the turn moves on) and the earlier wake-up stays. Declined (the engine takes the
    /// member back and runs the refresh) when a partition count changed, or when this
    /// poll would be the one that sends the due auto-commit (an unapplied plan, or one
    /// due with no check run yet): the lane decided on another poll for it.
    fn metadata(&mut self, slot: usize, key: Key) -> Result<Option<Stop>, LaneBroken> {
        let now = key.0;
        if self.lane_mut(slot).metadata_seen != self.metadata_epoch {
            return Ok(Some(Stop::Declined { slot, key }));
        }
        self.catch_up(slot, key)?;
        self.commit_passed(slot, key);
        let (record_ms, settings) = (self.config.record_ms, self.config.settings);
        let lane = self.lane_mut(slot);
        if lane.commit.as_ref().is_some_and(|plan| !plan.applied) || lane.next_auto_commit_ms <= now
        {
            return Ok(Some(Stop::Declined { slot, key }));
        }
        let pkey = lane.pkey;
        lane.wake_at = lane_loop::extra_step(
            &mut lane.app,
            &mut lane.timers,
            settings,
            now,
            lane.wake_at,
            &mut Constant(record_ms),
            &mut lane.tally,
        )
        .map_err(|broken| LaneBroken { pkey, broken })?;
        self.counters.steps += 1;
        let age = self.config.metadata_max_age_ms;
        self.queue_metadata(slot, now + age);
        Ok(None)
    }

    /// `_plane_commit_arrives`.
    fn commit_arrives(
        &mut self,
        slot: usize,
        key: Key,
        coordinator: &mut impl Coordinator,
    ) -> Option<Stop> {
        let now = key.0;
        let lane = self.lane_mut(slot);
        let offsets = lane
            .commit
            .as_ref()
            .and_then(|plan| plan.offsets.as_deref())
            .expect("a commit's arrival has its plan");
        let Some(taken) = coordinator.commit(slot, offsets, now) else {
            return Some(Stop::Declined { slot, key });
        };
        self.counters.commits += 1;
        let answered = self.answer(slot, now, false);
        let lane = self.lane_mut(slot);
        let down_seq = lane.down_seq;
        if let Some(plan) = lane.commit.as_mut() {
            plan.answer = Some((answered, down_seq, taken));
        }
        let schedule = coordinator.schedule_needed(now, true);
        if !taken {
            // an answer with errors is no quiet step: the engine reads it as the eager
            // engine does (the timers are scheduled on the way out)
            return Some(Stop::Leave { slot, key });
        }
        schedule.then_some(Stop::Schedule { key })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app_loop::Partition;

    const SETTINGS: Settings = Settings {
        session_timeout: 45_000,
        max_poll_interval: 300_000,
        heartbeat_interval: 3_000,
    };

    /// A commit as the coordinator saw it: (slot, offsets, time).
    type SeenCommit = (usize, Vec<(usize, i64)>, i64);

    /// A coordinator that takes everything, or declines from `decline_from` on, and
    /// remembers what reached it.
    #[derive(Default)]
    struct Recorded {
        heartbeats: Vec<(usize, i64)>,
        commits: Vec<SeenCommit>,
        decline_from: Option<i64>,
    }

    impl Coordinator for Recorded {
        fn heartbeat(&mut self, slot: usize, now: i64) -> bool {
            if self.decline_from.is_some_and(|t| now >= t) {
                return false;
            }
            self.heartbeats.push((slot, now));
            true
        }
        fn commit(&mut self, slot: usize, offsets: &[(usize, i64)], now: i64) -> Option<bool> {
            if self.decline_from.is_some_and(|t| now >= t) {
                return None;
            }
            self.commits.push((slot, offsets.to_vec(), now));
            Some(true)
        }
        fn schedule_needed(&mut self, _now: i64, _after_commit: bool) -> bool {
            false
        }
    }

    fn config(latency_ms: f64, record_ms: f64) -> Config {
        Config {
            latency_ms,
            auto_commit_interval_ms: 5_000,
            record_ms,
            settings: SETTINGS,
            metadata_max_age_ms: 300_000,
        }
    }

    /// A member of one partition receiving `rate` records/s from 0, in the lane from 0.
    fn member(pkey: i64, rate: f64) -> Lane {
        Lane {
            pkey,
            app: AppLoop {
                partitions: vec![Partition {
                    active: true,
                    position: 0,
                    start_ms: 0,
                    rate,
                    processed_end: 0,
                }],
                rr: 0,
                busy_until: None,
                batch: Vec::new(),
                max_poll_records: 500,
                poll_deadline: None,
                spare: Default::default(),
            },
            timers: Timers {
                hb_due: 3_000,
                ..Timers::default()
            },
            wake_at: 1,
            reads: Vec::new(),
            next_sent: 0,
            next_arrival: 0,
            next_up_seq: 0,
            up_seq: 0,
            down_seq: 0,
            down_last_ms: 0.0,
            commit: None,
            check_at: 0,
            last_commit_send: None,
            next_auto_commit_ms: 5_000,
            committed: vec![None],
            idle_positions: vec![None],
            hb_token: 0,
            check_token: 0,
            commit_token: 0,
            metadata_at: None,
            metadata_token: 0,
            metadata_seen: 0,
            tally: Tally::default(),
        }
    }

    fn end_key(t: i64) -> Key {
        (t + 1, 0, 0, 0)
    }

    #[test]
    fn a_metadata_refresh_polls_once_in_the_lane_unless_counts_changed_or_a_commit_waits() {
        // 10 records/s, 1 ms each: idle at 2,500 (record 24 arrives at 2,500: its batch
        // ended at 2,501), so the refresh at 2,550 is a poll of its own
        let mut lane = member(1 << 16, 10.0);
        lane.metadata_at = Some(2_550);
        let mut set = LaneSet::new(config(2.0, 1.0));
        let slot = set.enter(lane, 3_000, 5_000);
        let mut coordinator = Recorded::default();
        let stop = set.run(end_key(2_560), 2_560, &mut coordinator).unwrap();
        assert_eq!(stop, Stop::Done);
        let lane = set.lane(slot).unwrap();
        assert_eq!(lane.timers.last_poll, 2_550, "the refresh's loop polled");
        assert_eq!(lane.wake_at, 2_600, "the next record's wake-up stays");
        assert_eq!(
            lane.metadata_at,
            Some(302_550),
            "the next refresh is queued"
        );
        // the next one, after a partition count changed: the engine's
        set.metadata_epoch = 1;
        let stop = set.run(end_key(400_000), 400_000, &mut coordinator);
        let key = (302_550, METADATA, 1 << 16, 0);
        assert_eq!(stop, Ok(Stop::Declined { slot, key }));

        // a refresh between an auto-commit's check (due at 150, inside the batch of record
        // 0, 100-160) and the poll it planned for the commit (the batch's end): the
        // engine's, which gives the commit to the refresh's poll
        let mut lane = member(1 << 16, 10.0);
        lane.metadata_at = Some(155);
        lane.next_auto_commit_ms = 150;
        let mut set = LaneSet::new(config(2.0, 60.0));
        let slot = set.enter(lane, 3_000, 150);
        let stop = set.run(end_key(10_000), 10_000, &mut Recorded::default());
        let key = (155, METADATA, 1 << 16, 0);
        assert_eq!(stop, Ok(Stop::Declined { slot, key }));
        let lane = set.take(slot).unwrap();
        assert_eq!(
            lane.metadata_at,
            Some(155),
            "given back with the refresh due"
        );
        assert_eq!(lane.app.busy_until, Some(160));
        assert!(lane
            .commit
            .is_some_and(|plan| !plan.applied && plan.key == (160, WAKE, 0)));
    }

    #[test]
    fn heartbeats_arrive_an_interval_apart_and_commits_carry_what_was_processed() {
        let mut set = LaneSet::new(config(2.0, 1.0));
        let slot = set.enter(member(1 << 16, 10.0), 3_000, 5_000);
        let mut coordinator = Recorded::default();
        let stop = set.run(end_key(20_000), 20_000, &mut coordinator).unwrap();
        assert_eq!(stop, Stop::Done);
        // sent at 3000, 6000, ...; each arrives 2 ms later
        let arrivals: Vec<i64> = coordinator.heartbeats.iter().map(|h| h.1).collect();
        assert_eq!(arrivals, vec![3_002, 6_002, 9_002, 12_002, 15_002, 18_002]);
        // a commit every 5 s, of the records consumed by the first poll at or after its
        // due time (10 records/s: record k arrives at (k + 1) * 100 ms)
        let commits: Vec<(i64, i64)> = coordinator
            .commits
            .iter()
            .map(|(_, offsets, at)| (*at, offsets[0].1))
            .collect();
        assert_eq!(commits, vec![(5_002, 49), (10_002, 99), (15_002, 149)]);
        assert_eq!(set.counters.heartbeats, 6);
        assert_eq!(set.counters.commits, 3);
        let lane = set.take(slot).unwrap();
        assert_eq!(lane.committed, vec![Some(149)]);
        assert!(
            set.next_key().is_none(),
            "a member taken out leaves no live event"
        );
    }

    #[test]
    fn a_declined_heartbeat_stays_queued_and_changes_nothing() {
        let mut set = LaneSet::new(config(2.0, 1.0));
        let slot = set.enter(member(7, 10.0), 3_000, 5_000);
        let mut coordinator = Recorded {
            decline_from: Some(6_000),
            ..Recorded::default()
        };
        let stop = set.run(end_key(20_000), 20_000, &mut coordinator).unwrap();
        let key = (6_002, REQUEST, 7, 2);
        assert_eq!(stop, Stop::Declined { slot, key });
        assert_eq!(set.next_key(), Some(key));
        let lane = set.lane(slot).unwrap();
        assert_eq!((lane.next_sent, lane.next_arrival), (6_000, 6_002));
        assert_eq!(lane.reads.len(), 1, "only the first heartbeat was answered");
    }

    #[test]
    fn a_slot_reused_after_a_member_left_ignores_the_old_members_events() {
        let mut set = LaneSet::new(config(2.0, 1.0));
        let first = set.enter(member(1, 10.0), 3_000, 5_000);
        set.take(first).unwrap();
        // the new member's events are later than the old one's would have been
        let second = set.enter(member(2, 10.0), 9_000, 11_000);
        assert_eq!(first, second);
        let mut coordinator = Recorded::default();
        set.run(end_key(9_500), 9_500, &mut coordinator).unwrap();
        assert_eq!(coordinator.heartbeats, vec![(second, 9_002)]);
    }

    use proptest::prelude::*;

    proptest! {
        /// The engine runs the lane up to whatever event of its own comes next: running
        /// up to any limits in between gives the same events, state and counts as one
        /// run to the end.
        #[test]
        fn running_in_pieces_is_running_once(
            members in prop::collection::vec((1.0f64..200.0, 1i64..3_000, 1i64..5_000, 1i64..20_000), 1..4),
            latency in 0.5f64..40.0,
            record_ms in 0.0f64..20.0,
            cuts in prop::collection::vec(0i64..30_000, 0..6),
        ) {
            let build = || {
                let mut set = LaneSet::new(config(latency, record_ms));
                set.config.metadata_max_age_ms = 2_000;
                for (i, &(rate, hb_due, check_at, metadata_at)) in members.iter().enumerate() {
                    let mut lane = member(i as i64, rate);
                    lane.timers.hb_due = hb_due;
                    lane.metadata_at = Some(metadata_at);
                    set.enter(lane, hb_due, check_at);
                }
                set
            };
            let mut once = build();
            let mut whole = Recorded::default();
            // (a metadata refresh the lane declines stops both at the same event)
            let whole_stop = once.run(end_key(30_000), 30_000, &mut whole).unwrap();
            let mut pieces = build();
            let mut parts = Recorded::default();
            let mut cuts = cuts.clone();
            cuts.sort_unstable();
            let mut stop = Stop::Done;
            for cut in cuts {
                stop = pieces.run((cut, 0, 0, 0), 30_000, &mut parts).unwrap();
                if stop != Stop::Done {
                    break;
                }
            }
            if stop == Stop::Done {
                stop = pieces.run(end_key(30_000), 30_000, &mut parts).unwrap();
            }
            prop_assert_eq!(stop, whole_stop);
            prop_assert_eq!(&parts.heartbeats, &whole.heartbeats);
            prop_assert_eq!(&parts.commits, &whole.commits);
            prop_assert_eq!(pieces.counters, once.counters);
            for slot in 0..members.len() {
                let (a, b) = (pieces.take(slot).unwrap(), once.take(slot).unwrap());
                prop_assert_eq!(&a.app, &b.app);
                prop_assert_eq!(&a.timers, &b.timers);
                prop_assert_eq!(&a.reads, &b.reads);
                prop_assert_eq!(&a.commit, &b.commit);
                prop_assert_eq!(&a.committed, &b.committed);
                prop_assert_eq!(&a.tally, &b.tally);
            }
        }
    }
}
