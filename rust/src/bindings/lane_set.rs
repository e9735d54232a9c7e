//! `_core.LaneSet`: the simulator's processing lane with its events
//! ([`crate::lane_set`]). The coordinator it reaches is the engine's, in Python: its
//! `quiet_heartbeat`, the shell's `quiet_commit_offsets` and its `next_deadline`, called
//! as the engine's handlers call them.

use pyo3::exceptions::{PyKeyError, PyRuntimeError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::app_loop::{app_state, build_app, counts, AppState, Counts, PartitionIn, SegmentInOut};
use super::lane_loop::{from_timers, lane_error, to_timers, TimersInOut};
use super::offset_records::OffsetRecords;
use super::timer::MemberExpiryPy;
use crate::lane_loop::{Read, Settings};
use crate::lane_set::{Config, Coordinator, Key, Lane, LaneSet, Plan, Stop};

/// (next_sent, next_arrival, next_up_seq, up_seq, down_seq, down_last_ms)
type Connection = (i64, i64, i64, i64, i64, f64);
/// (key, offsets, arrival, up_seq, answer, read, poll_before, applied)
type PlanOut = (
    (i64, i64, i64),
    Option<Vec<(usize, i64)>>,
    i64,
    i64,
    Option<(i64, i64, bool)>,
    bool,
    i64,
    bool,
);
/// What `take` returns (see `LaneSet.take` in `_core.pyi`).
type TakenOut = (
    AppState,
    Counts,
    i64,
    TimersInOut,
    Vec<Read>,
    Connection,
    Option<PlanOut>,
    (i64, Option<i64>, i64),
    Vec<Option<i64>>,
    Option<Py<PyAny>>,
    Option<i64>,
);

/// What the coordinator's quiet calls name of one member.
struct Member {
    member_id: Py<PyAny>,
    generation: i64,
    instance_id: Py<PyAny>,
    /// the member's partitions (`TopicPartition`s), in its order
    tps: Vec<Py<PyAny>>,
    /// each partition's place when they are sorted (a commit stores them sorted)
    rank: Vec<usize>,
    /// the request its commits are like, made at the first commit (`make_like(offsets)`)
    like: Option<Py<PyAny>>,
    make_like: Py<PyAny>,
    /// the coordinator's state version (`run`'s `version`) in which `quiet_heartbeat` last
    /// took the member's heartbeat, with the member's expiry handle and session timeout:
    /// until the version moves, its heartbeats go straight to the expiry table
    known_in: Option<i64>,
    /// the version in which `quiet_commit_offsets` last took the member's commit: until it
    /// moves, its commits are taken here (see [`Taken`])
    commit_known_in: Option<i64>,
    handle: u64,
    session_timeout_ms: i64,
}

/// Commits taken in the lane and not yet handed to the coordinator, in order.
///
/// Why: a known member's auto-commit (`quiet_commit_offsets` took one of its commits in
/// the same coordinator state version) is taken without a call into Python: its session
/// is refreshed at once through the expiry table, by handle, as the coordinator's own
/// commit path does, and its record waits here. Every record is handed over
/// (`SyncShell.store_taken_commits`) before any Python code runs again (before each call
/// out of the lane and at the end of `run`), so nothing that reads the coordinator or
/// its store can see the difference. About 12 µs of Python per commit became well under
/// one.
#[derive(Default)]
struct Taken {
    /// (time, slot, the partitions' range in `parts`)
    commits: Vec<(i64, usize, usize, usize)>,
    /// (the partition's index in the member's `tps`, offset)
    parts: Vec<(usize, i64)>,
}

/// The members in the simulator's processing lane and their queued events.
#[pyclass(name = "LaneSet", module = "groupcoord._core", unsendable)]
pub struct LaneSetPy {
    set: LaneSet,
    members: Vec<Option<Member>>,
    /// how many of `members` are `Some`
    count: usize,
    group_id: Py<PyAny>,
    max_poll_records: i64,
    /// empty between calls of `run`; kept for its capacity
    taken: Taken,
    records: OffsetRecords,
}

/// The engine's coordinator behind [`Coordinator`]: the first Python error is kept (the
/// call then declines) and raised by `run`.
struct PyCoordinator<'a, 'py> {
    py: Python<'py>,
    engine: &'a Bound<'py, PyAny>,
    coordinator: &'a Bound<'py, PyAny>,
    shell: &'a Bound<'py, PyAny>,
    members: &'a mut [Option<Member>],
    group_id: &'a Py<PyAny>,
    taken: &'a mut Taken,
    records: &'a OffsetRecords,
    /// the last commit was taken here: it moved no deadline but its member's session
    last_commit_taken_here: bool,
    /// the coordinator's member expiry table, and the version of the coordinator's state
    expiry: Option<Bound<'py, MemberExpiryPy>>,
    version: i64,
    error: Option<PyErr>,
}

impl PyCoordinator<'_, '_> {
    fn keep<T>(&mut self, result: PyResult<T>, otherwise: T) -> T {
        match result {
            Ok(value) => value,
            Err(e) => {
                self.error.get_or_insert(e);
                otherwise
            }
        }
    }

    fn member(&mut self, slot: usize) -> &mut Member {
        self.members[slot]
            .as_mut()
            .expect("a lane event names a member in the lane")
    }

    /// Hand the commits taken here to the coordinator (`SyncShell.store_taken_commits`):
    /// before any call out of the lane, and at the end of `run`.
    fn hand_over(&mut self) -> PyResult<()> {
        if self.taken.commits.is_empty() {
            return Ok(());
        }
        let py = self.py;
        let group_id = self.group_id.bind(py);
        let records = PyList::empty(py);
        for &(now, slot, start, end) in &self.taken.commits {
            let member = self.members[slot]
                .as_ref()
                .expect("a taken commit's member is in the lane");
            let parts = &mut self.taken.parts[start..end];
            if parts.len() > 1 {
                parts.sort_unstable_by_key(|&(i, _)| member.rank[i]);
            }
            let offsets = parts
                .iter()
                .map(|&(i, offset)| (member.tps[i].bind(py).clone(), offset));
            records.append(self.records.record(group_id, offsets, now)?)?;
        }
        self.taken.commits.clear();
        self.taken.parts.clear();
        self.shell
            .call_method1(intern!(py, "store_taken_commits"), (group_id, records))?;
        Ok(())
    }

    /// [`Self::hand_over`] before a call out of the lane: `false` (with the error kept) if
    /// it failed.
    fn handed_over(&mut self) -> bool {
        let result = self.hand_over();
        self.keep(result.map(|()| true), false)
    }

    /// A member `known` current in this version has its session refreshed at `now` by its
    /// expiry handle, as the coordinator's quiet calls refresh it (`false`: not known, or a
    /// deadline is due first; nothing changed).
    fn refreshed_by_handle(&self, member: &Member, known: Option<i64>, now: i64) -> bool {
        match (&self.expiry, known) {
            (Some(expiry), Some(known)) if known == self.version => expiry
                .borrow_mut()
                .lane_heartbeat(member.handle, now, member.session_timeout_ms),
            _ => false,
        }
    }

    /// The member's expiry handle and session timeout, as the coordinator just set them.
    fn learn(&mut self, slot: usize, now: i64, expiry: &Bound<'_, MemberExpiryPy>) -> PyResult<()> {
        let py = self.py;
        let group_id = self.group_id.bind(py);
        let member_id = self.member(slot).member_id.clone_ref(py);
        let handle: u64 = expiry
            .call_method1(intern!(py, "handle"), (group_id, &member_id))?
            .extract()?;
        let deadline: i64 = expiry
            .call_method1(intern!(py, "deadline"), (group_id, &member_id, "session"))?
            .extract()?;
        let member = self.member(slot);
        member.handle = handle;
        member.session_timeout_ms = deadline - now;
        Ok(())
    }
}

impl Coordinator for PyCoordinator<'_, '_> {
    fn heartbeat(&mut self, slot: usize, now: i64) -> bool {
        if self.error.is_some() || self.coordinator.is_none() {
            return false;
        }
        let py = self.py;
        let version = self.version;
        let member = self.members[slot]
            .as_ref()
            .expect("a lane event names a member in the lane");
        if self.refreshed_by_handle(member, member.known_in, now) {
            return true;
        }
        if !self.handed_over() {
            return false;
        }
        let member = self.member(slot);
        let args = (
            member.member_id.clone_ref(py),
            member.generation,
            member.instance_id.clone_ref(py),
            now,
        );
        let result = (|| -> PyResult<bool> {
            let taken = self
                .coordinator
                .call_method1(
                    intern!(py, "quiet_heartbeat"),
                    (self.group_id.bind(py), args.0, args.1, args.2, args.3),
                )?
                .extract::<bool>()?;
            if let (true, Some(expiry)) = (taken, self.expiry.clone()) {
                // what the next heartbeats need
                self.learn(slot, now, &expiry)?;
                self.member(slot).known_in = Some(version);
            }
            Ok(taken)
        })();
        self.keep(result, false)
    }

    fn commit(&mut self, slot: usize, offsets: &[(usize, i64)], now: i64) -> Option<bool> {
        if self.error.is_some() || self.coordinator.is_none() {
            return None;
        }
        let py = self.py;
        let version = self.version;
        self.last_commit_taken_here = false;
        let member = self.members[slot]
            .as_ref()
            .expect("a lane event names a member in the lane");
        // as quiet_commit_offsets takes it: the session refreshed (declined if a deadline
        // is due), the record stored (here: handed over before Python runs)
        if !offsets.is_empty() && self.refreshed_by_handle(member, member.commit_known_in, now) {
            let start = self.taken.parts.len();
            self.taken.parts.extend_from_slice(offsets);
            let end = self.taken.parts.len();
            self.taken.commits.push((now, slot, start, end));
            self.last_commit_taken_here = true;
            return Some(true);
        }
        if !self.handed_over() {
            return None;
        }
        let shell = self.shell.clone();
        let result = (|| -> PyResult<Option<bool>> {
            let member = self.member(slot);
            let dict = PyDict::new(py);
            for &(i, offset) in offsets {
                dict.set_item(member.tps[i].bind(py), offset)?;
            }
            let like = match &member.like {
                Some(like) => like.clone_ref(py),
                None => {
                    let like = member
                        .make_like
                        .bind(py)
                        .call1((&dict, py.None()))?
                        .unbind();
                    member.like = Some(like.clone_ref(py));
                    like
                }
            };
            let taken = shell
                .call_method1(intern!(py, "quiet_commit_offsets"), (like, dict, now))?
                .extract::<Option<bool>>()?;
            if let (Some(true), Some(expiry)) = (taken, self.expiry.clone()) {
                // what the next commits need
                self.learn(slot, now, &expiry)?;
                self.member(slot).commit_known_in = Some(version);
            }
            Ok(taken)
        })();
        self.keep(result, None)
    }

    fn schedule_needed(&mut self, now: i64, after_commit: bool) -> bool {
        if self.error.is_some() || self.coordinator.is_none() {
            return false;
        }
        // a commit taken here moved no deadline but its member's session, as a heartbeat
        let after_commit = after_commit && !self.last_commit_taken_here;
        let py = self.py;
        let result = (|| -> PyResult<bool> {
            let wake: Option<i64> = self
                .engine
                .getattr(intern!(py, "_coordinator_wake"))?
                .extract()?;
            let Some(wake) = wake else {
                return Ok(true);
            };
            if !after_commit {
                return Ok(false);
            }
            let deadline: Option<i64> = self
                .coordinator
                .call_method0(intern!(py, "next_deadline"))?
                .extract()?;
            Ok(deadline.is_some_and(|d| d.max(now) < wake))
        })();
        self.keep(result, false)
    }
}

#[pymethods]
impl LaneSetPy {
    /// `LaneSet(group_id, latency_ms, auto_commit_interval_ms, record_ms, settings,
    /// max_poll_records)`: `settings` is (session.timeout.ms, max.poll.interval.ms,
    /// heartbeat.interval.ms); `record_ms` the constant record time.
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        group_id: Py<PyAny>,
        latency_ms: f64,
        auto_commit_interval_ms: i64,
        record_ms: f64,
        settings: (i64, i64, i64),
        max_poll_records: i64,
        metadata_max_age_ms: i64,
    ) -> PyResult<Self> {
        Ok(Self {
            set: LaneSet::new(Config {
                latency_ms,
                auto_commit_interval_ms,
                record_ms,
                settings: Settings {
                    session_timeout: settings.0,
                    max_poll_interval: settings.1,
                    heartbeat_interval: settings.2,
                },
                metadata_max_age_ms,
            }),
            members: Vec::new(),
            count: 0,
            group_id,
            max_poll_records,
            taken: Taken::default(),
            records: OffsetRecords::new(py)?,
        })
    }

    /// Put a member in the lane; its first heartbeat (sent at `hb_due`) and its
    /// auto-commit's check (at `check_at`) are queued. Returns its slot.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (pkey, partitions, batch, rr, busy_until, wake_at, timers, connection, next_auto_commit_ms, committed, idle_positions, hb_due, check_at, member_id, generation, instance_id, tps, make_like, metadata_at, metadata_seen))]
    fn enter(
        &mut self,
        py: Python<'_>,
        pkey: i64,
        partitions: Vec<PartitionIn>,
        batch: Vec<SegmentInOut>,
        rr: i64,
        busy_until: Option<i64>,
        wake_at: i64,
        timers: TimersInOut,
        connection: (i64, i64, f64),
        next_auto_commit_ms: i64,
        committed: Vec<Option<i64>>,
        idle_positions: Vec<Option<i64>>,
        hb_due: i64,
        check_at: i64,
        member_id: Py<PyAny>,
        generation: i64,
        instance_id: Py<PyAny>,
        tps: Vec<Py<PyAny>>,
        make_like: Py<PyAny>,
        metadata_at: Option<i64>,
        metadata_seen: u64,
    ) -> PyResult<usize> {
        let count = partitions.len();
        if committed.len() != count || idle_positions.len() != count || tps.len() != count {
            return Err(PyRuntimeError::new_err(
                "LaneSet.enter: committed, idle_positions and tps need one entry per partition",
            ));
        }
        let app = build_app(partitions, batch, rr, busy_until, self.max_poll_records)?;
        let (up_seq, down_seq, down_last_ms) = connection;
        let lane = Lane {
            pkey,
            app,
            timers: from_timers(timers),
            wake_at,
            reads: Vec::new(),
            next_sent: 0,
            next_arrival: 0,
            next_up_seq: 0,
            up_seq,
            down_seq,
            down_last_ms,
            commit: None,
            check_at: 0,
            last_commit_send: None,
            next_auto_commit_ms,
            committed,
            idle_positions,
            hb_token: 0,
            check_token: 0,
            commit_token: 0,
            metadata_at,
            metadata_token: 0,
            metadata_seen,
            tally: Default::default(),
        };
        let rank = sorted_places(py, &tps)?;
        let slot = self.set.enter(lane, hb_due, check_at);
        let member = Member {
            member_id,
            generation,
            instance_id,
            tps,
            rank,
            like: None,
            make_like,
            known_in: None,
            commit_known_in: None,
            handle: 0,
            session_timeout_ms: 0,
        };
        if slot == self.members.len() {
            self.members.push(Some(member));
        } else {
            self.members[slot] = Some(member);
        }
        self.count += 1;
        Ok(slot)
    }

    /// `run(limit, end, engine, coordinator, shell, expiry, version)`: the lane's events
    /// whose keys ((time, rank, process, sub-order)) come before `limit` and whose times
    /// are at most `end`. `expiry` is the coordinator's `member_expiry` (or `None`) and
    /// `version` the engine's count of the calls that may change its groups (`handle`,
    /// `tick`, a new coordinator): a member whose heartbeat `quiet_heartbeat` took in the
    /// same version is current still, and its next ones go straight to the table. Returns (stop, slot, key, (heartbeats, commits, steps, events)): stop 0 (the
    /// limit reached), 1 (the coordinator did not take the event at `key` of the member in
    /// `slot`; it is queued again), 2 (schedule the coordinator's timers after the event
    /// at `key`), 3 (the commit at `key` was not persisted: the member leaves the lane).
    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    fn run<'py>(
        &mut self,
        py: Python<'py>,
        limit: Key,
        end: i64,
        engine: &Bound<'py, PyAny>,
        coordinator: &Bound<'py, PyAny>,
        shell: &Bound<'py, PyAny>,
        expiry: &Bound<'py, PyAny>,
        version: i64,
    ) -> PyResult<(u8, usize, Key, (u64, u64, u64, u64))> {
        let mut reach = PyCoordinator {
            py,
            engine,
            coordinator,
            shell,
            members: &mut self.members,
            group_id: &self.group_id,
            taken: &mut self.taken,
            records: &self.records,
            last_commit_taken_here: false,
            expiry: expiry.cast::<MemberExpiryPy>().ok().cloned(),
            version,
            error: None,
        };
        let before = self.set.counters;
        let stop = self.set.run(limit, end, &mut reach);
        // (also after an error: what was answered is stored)
        let handed = reach.hand_over();
        if let Some(e) = reach.error {
            return Err(e);
        }
        handed?;
        let stop = stop.map_err(|b| lane_error(Some(b.pkey), b.broken))?;
        let after = self.set.counters;
        let counters = (
            after.heartbeats - before.heartbeats,
            after.commits - before.commits,
            after.steps - before.steps,
            after.events - before.events,
        );
        let none = (0, 0, 0, 0);
        Ok(match stop {
            Stop::Done => (0, 0, none, counters),
            Stop::Declined { slot, key } => (1, slot, key, counters),
            Stop::Schedule { key } => (2, 0, key, counters),
            Stop::Leave { slot, key } => (3, slot, key, counters),
        })
    }

    /// The member's state, out of the lane (its queued events dropped): (application
    /// state, counts, wake_at, timers, reads, (next_sent, next_arrival, next_up_seq,
    /// up_seq, down_seq, down_last_ms), plan, (check_at, last_commit_send,
    /// next_auto_commit_ms), committed, like). `KeyError` for a slot not in the lane.
    fn take(&mut self, slot: usize) -> PyResult<TakenOut> {
        let lane = self
            .set
            .take(slot)
            .ok_or_else(|| PyKeyError::new_err(format!("no member in lane slot {slot}")))?;
        let member = self.members[slot].take();
        self.count -= usize::from(member.is_some());
        let plan = lane.commit.map(|p: Plan| {
            (
                p.key,
                p.offsets,
                p.arrival,
                p.up_seq,
                p.answer,
                p.read,
                p.poll_before,
                p.applied,
            )
        });
        Ok((
            app_state(lane.app),
            counts(lane.tally),
            lane.wake_at,
            to_timers(&lane.timers),
            lane.reads,
            (
                lane.next_sent,
                lane.next_arrival,
                lane.next_up_seq,
                lane.up_seq,
                lane.down_seq,
                lane.down_last_ms,
            ),
            plan,
            (
                lane.check_at,
                lane.last_commit_send,
                lane.next_auto_commit_ms,
            ),
            lane.committed,
            member.and_then(|m| m.like),
            lane.metadata_at,
        ))
    }

    /// The engine's count of partition count changes (a member whose machine saw an older
    /// one leaves the lane for its next metadata refresh).
    #[getter]
    fn metadata_epoch(&self) -> u64 {
        self.set.metadata_epoch
    }

    #[setter]
    fn set_metadata_epoch(&mut self, epoch: u64) {
        self.set.metadata_epoch = epoch;
    }

    /// How many members are in the lane.
    fn __len__(&self) -> usize {
        self.count
    }
}

/// Each item's place in `items` sorted with Python's `<` (an insertion sort: a member
/// holds a few partitions).
fn sorted_places(py: Python<'_>, items: &[Py<PyAny>]) -> PyResult<Vec<usize>> {
    let mut order: Vec<usize> = Vec::with_capacity(items.len());
    for i in 0..items.len() {
        let item = items[i].bind(py);
        let mut at = order.len();
        while at > 0 && item.lt(items[order[at - 1]].bind(py))? {
            at -= 1;
        }
        order.insert(at, i);
    }
    let mut rank = vec![0; items.len()];
    for (place, &i) in order.iter().enumerate() {
        rank[i] = place;
    }
    Ok(rank)
}
