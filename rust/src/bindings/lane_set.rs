//! `_core.LaneSet`: the simulator's processing lane with its events
//! ([`crate::lane_set`]). The coordinator it reaches is the engine's, in Python: its
//! `quiet_heartbeat`, the shell's `quiet_commit_offsets` and its `next_deadline`, called
//! as the engine's handlers call them.

use pyo3::exceptions::{PyKeyError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::app_loop::{app_state, build_app, counts, AppState, Counts, PartitionIn, SegmentInOut};
use super::lane_loop::{from_timers, lane_error, to_timers, TimersInOut};
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
type Taken = (
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
);

/// What the coordinator's quiet calls name of one member.
struct Member {
    member_id: Py<PyAny>,
    generation: i64,
    instance_id: Py<PyAny>,
    /// the member's partitions (`TopicPartition`s), in its order
    tps: Vec<Py<PyAny>>,
    /// the request its commits are like, made at the first commit (`make_like(offsets)`)
    like: Option<Py<PyAny>>,
    make_like: Py<PyAny>,
    /// the coordinator's state version (`run`'s `version`) in which `quiet_heartbeat` last
    /// took the member's heartbeat, with the member's expiry handle and session timeout:
    /// until the version moves, its heartbeats go straight to the expiry table
    known_in: Option<i64>,
    handle: u64,
    session_timeout_ms: i64,
}

/// The members in the simulator's processing lane and their queued events.
#[pyclass(name = "LaneSet", module = "groupcoord._core", unsendable)]
pub struct LaneSetPy {
    set: LaneSet,
    members: Vec<Option<Member>>,
    group_id: Py<PyAny>,
    max_poll_records: i64,
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
}

impl Coordinator for PyCoordinator<'_, '_> {
    fn heartbeat(&mut self, slot: usize, now: i64) -> bool {
        if self.error.is_some() || self.coordinator.is_none() {
            return false;
        }
        let py = self.py;
        let version = self.version;
        let expiry = self.expiry.clone();
        let group_id = self.group_id.clone_ref(py);
        let member = self.member(slot);
        if let (Some(expiry), Some(known)) = (&expiry, member.known_in) {
            if known == version
                && expiry
                    .borrow_mut()
                    .lane_heartbeat(member.handle, now, member.session_timeout_ms)
            {
                return true;
            }
        }
        let member_id = member.member_id.clone_ref(py);
        let args = (
            group_id.clone_ref(py),
            member_id.clone_ref(py),
            member.generation,
            member.instance_id.clone_ref(py),
            now,
        );
        let result = (|| -> PyResult<bool> {
            let taken = self
                .coordinator
                .call_method1("quiet_heartbeat", args)?
                .extract::<bool>()?;
            if let (true, Some(expiry)) = (taken, &expiry) {
                // what the next heartbeats need, as the coordinator just set it
                let handle: u64 = expiry
                    .call_method1("handle", (&group_id, &member_id))?
                    .extract()?;
                let deadline: i64 = expiry
                    .call_method1("deadline", (&group_id, &member_id, "session"))?
                    .extract()?;
                let member = self.member(slot);
                member.known_in = Some(version);
                member.handle = handle;
                member.session_timeout_ms = deadline - now;
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
        let shell = self.shell.clone();
        let member = self.member(slot);
        let result = (|| -> PyResult<Option<bool>> {
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
            shell
                .call_method1("quiet_commit_offsets", (like, dict, now))?
                .extract::<Option<bool>>()
        })();
        self.keep(result, None)
    }

    fn schedule_needed(&mut self, now: i64, after_commit: bool) -> bool {
        if self.error.is_some() || self.coordinator.is_none() {
            return false;
        }
        let result = (|| -> PyResult<bool> {
            let wake: Option<i64> = self.engine.getattr("_coordinator_wake")?.extract()?;
            let Some(wake) = wake else {
                return Ok(true);
            };
            if !after_commit {
                return Ok(false);
            }
            let deadline: Option<i64> =
                self.coordinator.call_method0("next_deadline")?.extract()?;
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
    fn new(
        group_id: Py<PyAny>,
        latency_ms: f64,
        auto_commit_interval_ms: i64,
        record_ms: f64,
        settings: (i64, i64, i64),
        max_poll_records: i64,
    ) -> Self {
        Self {
            set: LaneSet::new(Config {
                latency_ms,
                auto_commit_interval_ms,
                record_ms,
                settings: Settings {
                    session_timeout: settings.0,
                    max_poll_interval: settings.1,
                    heartbeat_interval: settings.2,
                },
            }),
            members: Vec::new(),
            group_id,
            max_poll_records,
        }
    }

    /// Put a member in the lane; its first heartbeat (sent at `hb_due`) and its
    /// auto-commit's check (at `check_at`) are queued. Returns its slot.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (pkey, partitions, batch, rr, busy_until, wake_at, timers, connection, next_auto_commit_ms, committed, idle_positions, hb_due, check_at, member_id, generation, instance_id, tps, make_like))]
    fn enter(
        &mut self,
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
            tally: Default::default(),
        };
        let slot = self.set.enter(lane, hb_due, check_at);
        let member = Member {
            member_id,
            generation,
            instance_id,
            tps,
            like: None,
            make_like,
            known_in: None,
            handle: 0,
            session_timeout_ms: 0,
        };
        if slot == self.members.len() {
            self.members.push(Some(member));
        } else {
            self.members[slot] = Some(member);
        }
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
            expiry: expiry.cast::<MemberExpiryPy>().ok().cloned(),
            version,
            error: None,
        };
        let before = self.set.counters;
        let stop = self.set.run(limit, end, &mut reach);
        if let Some(e) = reach.error {
            return Err(e);
        }
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
    fn take(&mut self, slot: usize) -> PyResult<Taken> {
        let lane = self
            .set
            .take(slot)
            .ok_or_else(|| PyKeyError::new_err(format!("no member in lane slot {slot}")))?;
        let member = self.members[slot].take();
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
        ))
    }

    /// How many members are in the lane.
    fn __len__(&self) -> usize {
        self.members.iter().filter(|m| m.is_some()).count()
    }
}
