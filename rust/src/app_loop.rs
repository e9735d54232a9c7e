//! The simulator's application loop for one member (`groupcoord.sim.engine`): poll, process
//! the batch record by record, poll again, for a process whose steps have no effect outside
//! it until a given time (the engine's "lazy application steps"). Python keeps the same
//! loop (`Engine._catch_up` with `native=False`) as the reference; both must give the same
//! floats, so every expression below is written in the order the Python one evaluates it
//! (integers subtracted as integers, then converted; left-to-right products and sums).
//!
//! A partition receives `rate` records per second from `start_ms`: record `k` arrives at
//! `start_ms + (k + 1) * 1000 / rate` (`groupcoord.sim.workload.PartitionStream`).
//!
//! This module has no PyO3: `crate::bindings::app_loop` adapts it to Python.

use rustc_hash::FxHashMap;

use crate::whole_ms;

/// One partition the process owns, in the order the process holds them.
#[derive(Clone, Debug, PartialEq)]
pub struct Partition {
    /// the application processes it (it knows where to start)
    pub active: bool,
    /// the next offset to hand to the application
    pub position: i64,
    pub start_ms: i64,
    pub rate: f64,
    /// one past the highest offset any process has processed (shared by all owners)
    pub processed_end: i64,
}

impl Partition {
    /// `Recorder.processed` for records `first..first + n`, record `first + i` completed
    /// at the `i`-th of `completions`: each counted, those below `processed_end` (some
    /// owner processed them already) as duplicates, the others' lags.
    fn processed(
        &mut self,
        first: i64,
        n: i64,
        completions: impl Iterator<Item = f64>,
        spare: &mut Spare,
        tally: &mut Tally,
    ) {
        tally.records += n;
        let end = first + n;
        let seen_end = self.processed_end;
        if first < seen_end {
            tally.duplicates += end.min(seen_end) - first;
        }
        if end > seen_end {
            let per_record = spare.per_record_ms(self.rate);
            let start = self.start_ms as f64;
            let seen = seen_end - first;
            for (i, completion) in (0..n).zip(completions) {
                if i < seen {
                    continue;
                }
                let lag = completion - (start + ((first + i + 1) as f64) * per_record);
                tally.lags.add(lag as i64);
                if lag > tally.max_lag_ms {
                    tally.max_lag_ms = lag;
                }
            }
            self.processed_end = end;
        }
    }
}

/// Records `first_offset..` of one partition in the batch being processed, finishing at
/// `completions` (virtual milliseconds).
#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    pub partition: usize,
    pub first_offset: i64,
    pub completions: Vec<f64>,
}

/// What the recorder counts of processed records (`Recorder.processed`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    pub records: i64,
    pub duplicates: i64,
    pub max_lag_ms: f64,
    /// lag in whole milliseconds (truncated) -> records
    pub lags: LagCounts,
}

/// Records per lag in whole milliseconds. Why not one map: every processed record adds
/// one, and most lags are small, so a dense vector takes those (its length follows the
/// largest small lag seen) and a map the rest.
#[derive(Clone, Debug, Default)]
pub struct LagCounts {
    /// `dense[lag]` for `0 <= lag < DENSE_LAGS`
    dense: Vec<i64>,
    sparse: FxHashMap<i64, i64>,
}

/// Lags below this many milliseconds are counted in the dense vector (32 KiB at most).
const DENSE_LAGS: i64 = 4096;

impl LagCounts {
    pub fn add(&mut self, lag: i64) {
        if (0..DENSE_LAGS).contains(&lag) {
            let i = lag as usize;
            if i >= self.dense.len() {
                self.dense.resize(i + 1, 0);
            }
            self.dense[i] += 1;
        } else {
            *self.sparse.entry(lag).or_insert(0) += 1;
        }
    }

    /// Records with this lag.
    pub fn get(&self, lag: i64) -> i64 {
        if (0..DENSE_LAGS).contains(&lag) {
            self.dense.get(lag as usize).copied().unwrap_or(0)
        } else {
            self.sparse.get(&lag).copied().unwrap_or(0)
        }
    }

    /// All records counted.
    pub fn total(&self) -> i64 {
        self.dense.iter().sum::<i64>() + self.sparse.values().sum::<i64>()
    }

    /// (lag, records) for every lag seen, in ascending order.
    pub fn sorted(&self) -> Vec<(i64, i64)> {
        let mut out: Vec<(i64, i64)> = self.sparse.iter().map(|(&l, &n)| (l, n)).collect();
        out.extend(
            self.dense
                .iter()
                .enumerate()
                .filter(|(_, &n)| n != 0)
                .map(|(l, &n)| (l as i64, n)),
        );
        out.sort_unstable();
        out
    }
}

impl PartialEq for LagCounts {
    /// The same records per lag, however they are stored.
    fn eq(&self, other: &Self) -> bool {
        self.sorted() == other.sorted()
    }
}

/// Why the loop stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// the next step is at or after `until` or `limit`
    Done,
    /// the step at `t` wants its next wake-up at `at` (`None`: no record will come), not
    /// before `until`: the caller asks the member's machine (`poll_idle`) first
    Poll { t: i64, at: Option<i64> },
}

/// Partitions a batch's start lists on the stack; more go to the heap.
const ACTIVE_ON_STACK: usize = 16;

/// The member machine's deadline after a poll, while no heartbeat and no timeout is due:
/// the earlier of `base` (the next heartbeat, or the session's end while one is in flight:
/// `MemberMachine.quiet_deadline_base`) and the poll plus `max.poll.interval.ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PollDeadline {
    pub base: i64,
    pub max_poll_interval_ms: i64,
}

impl PollDeadline {
    pub(crate) fn after_poll(self, t: i64) -> i64 {
        self.base.min(t + self.max_poll_interval_ms)
    }
}

/// A process's application state between steps.
#[derive(Clone, Debug, PartialEq)]
pub struct AppLoop {
    pub partitions: Vec<Partition>,
    /// the turn: which active partition a batch starts with
    pub rr: i64,
    pub busy_until: Option<i64>,
    pub batch: Vec<Segment>,
    pub max_poll_records: i64,
    /// the machine's deadline after a poll, when the caller knows it: a step whose next
    /// wake-up is not before `until` then takes the earlier of the two and the loop goes
    /// on (the caller tells the machine of the last poll, `Ran::polled`); `None`: the loop
    /// stops there with [`Stop::Poll`] for the caller to ask the machine
    pub poll_deadline: Option<PollDeadline>,
    /// completion vectors of applied batches, kept for the next batches
    pub spare: Spare,
}

/// What the loop keeps to save work, not state (every two compare equal): emptied
/// vectors for reuse, and the last `1000 / rate` computed. Why: a batch is started and
/// applied for every record or few, and its allocation, and a division per batch, were a
/// good part of a step's cost.
#[derive(Clone, Debug)]
pub struct Spare {
    vectors: Vec<Vec<f64>>,
    /// (rate, 1000.0 / rate) of the last batch applied (NaN: none yet)
    per_record: (f64, f64),
}

impl Default for Spare {
    fn default() -> Self {
        Self {
            vectors: Vec::new(),
            per_record: (f64::NAN, f64::NAN),
        }
    }
}

impl Spare {
    /// `1000.0 / rate`, computed again only when the rate differs from the last one's.
    fn per_record_ms(&mut self, rate: f64) -> f64 {
        if self.per_record.0 != rate {
            self.per_record = (rate, 1000.0 / rate);
        }
        self.per_record.1
    }
}

impl PartialEq for Spare {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// The record's processing time: a constant, or drawn from the process's own stream.
pub trait RecordTime {
    fn next(&mut self) -> f64;

    /// The time every record takes, when it is known to be one constant (what lets a
    /// caller take [`AppLoop::sole_steps`]).
    fn constant(&self) -> Option<f64> {
        None
    }
}

impl<F: FnMut() -> f64> RecordTime for F {
    fn next(&mut self) -> f64 {
        self()
    }
}

/// Every record takes the same time (the simulator's processing lane takes only such
/// members).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Constant(pub f64);

impl RecordTime for Constant {
    fn next(&mut self) -> f64 {
        self.0
    }

    fn constant(&self) -> Option<f64> {
        Some(self.0)
    }
}

/// What [`AppLoop::run`] did: the next wake-up, the last step that only polled, the steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ran {
    pub wake_at: i64,
    pub polled: Option<i64>,
    pub steps: u64,
    pub stop: Stop,
}

/// When a batch's records complete, each taking `record_ms`, from `start`: the sums
/// `start + record_ms`, then `+ record_ms` again, the same additions in the same order as
/// `start_batch`'s (for [`AppLoop::sole_steps`], which keeps a batch as its start).
fn completion_times(start: f64, record_ms: f64) -> impl Iterator<Item = f64> {
    std::iter::successors(Some(start + record_ms), move |t| Some(t + record_ms))
}

/// `floor((now - start) * rate / 1000.0 + 1e-9)`: records arrived by `now` (`now > start`).
fn arrived(now: i64, start: i64, rate: f64) -> i64 {
    whole_ms::floor(((now - start) as f64) * rate / 1000.0 + 1e-9)
}

/// `ceil(start + (position + 1) * 1000.0 / rate - 1e-9)`: when record `position` has arrived.
fn next_arrival(start: i64, position: i64, rate: f64) -> i64 {
    whole_ms::ceil(start as f64 + ((position + 1) as f64) * 1000.0 / rate - 1e-9)
}

impl AppLoop {
    /// Run the steps at `wake_at`, then at each next wake-up, while it is before `until`
    /// and `limit`. Each step: finish the batch in hand if it is done, poll (start the next
    /// batch, or find when the next record arrives), wake at the batch's end or that
    /// arrival. A step whose next wake-up is not before `until` stops the loop with
    /// [`Stop::Poll`]: its poll goes to the machine, whose deadline may come first.
    pub fn run(
        &mut self,
        mut wake_at: i64,
        until: i64,
        limit: i64,
        record_time: &mut impl RecordTime,
        tally: &mut Tally,
    ) -> Ran {
        let mut polled = None;
        let mut steps = 0;
        while wake_at < until && wake_at < limit {
            let t = wake_at;
            if let Some(busy) = self.busy_until {
                if t >= busy {
                    self.apply_batch(tally);
                    self.busy_until = None;
                }
            }
            let at = self.poll_records(t, record_time);
            steps += 1;
            let at = match (at, self.poll_deadline) {
                (Some(at), _) if at < until => at,
                (_, Some(deadline)) => {
                    // `if at is None or deadline < at: at = deadline` (the Python loop)
                    let deadline = deadline.after_poll(t);
                    match at {
                        Some(at) if at <= deadline => at,
                        _ => deadline,
                    }
                }
                (_, None) => {
                    return Ran {
                        wake_at,
                        polled,
                        steps,
                        stop: Stop::Poll { t, at },
                    }
                }
            };
            polled = Some(t);
            wake_at = if at <= t { t + 1 } else { at };
        }
        Ran {
            wake_at,
            polled,
            steps,
            stop: Stop::Done,
        }
    }

    /// Start a batch if records wait (its end), else when the next record arrives
    /// (`Engine._poll_records`).
    pub(crate) fn poll_records(
        &mut self,
        now: i64,
        record_time: &mut impl RecordTime,
    ) -> Option<i64> {
        let mut best: Option<i64> = None;
        let mut any_active = false;
        for (i, p) in self.partitions.iter().enumerate() {
            if !p.active {
                continue;
            }
            any_active = true;
            if p.rate <= 0.0 {
                continue;
            }
            if now > p.start_ms {
                let available = arrived(now, p.start_ms, p.rate) - p.position;
                if available > 0 {
                    self.start_batch(now, (i, available), record_time);
                    return self.busy_until;
                }
            }
            let t = next_arrival(p.start_ms, p.position, p.rate);
            if best.is_none_or(|b| t < b) {
                best = Some(t);
            }
        }
        if any_active {
            self.rr += 1;
        }
        best
    }

    /// `poll()` returns up to max.poll.records records, partition after partition in turn
    /// (`Engine._start_batch`). `found`: the first active partition in which records wait,
    /// and how many (`poll_records` counted them: none wait in the active ones before it).
    fn start_batch(&mut self, now: i64, found: (usize, i64), record_time: &mut impl RecordTime) {
        // the active partitions and how many records wait in each; on the stack for the
        // usual few partitions (this runs for every batch)
        let mut on_stack = [(0usize, 0i64); ACTIVE_ON_STACK];
        let mut on_heap: Vec<(usize, i64)> = Vec::new();
        let spill = self.partitions.len() > ACTIVE_ON_STACK;
        let mut count = 0;
        let mut any_available = false;
        for (i, p) in self.partitions.iter().enumerate() {
            if !p.active {
                continue;
            }
            // (only whether records wait matters where none do)
            let mut available = 0;
            if i == found.0 {
                available = found.1;
                any_available = true;
            } else if i > found.0 && p.rate > 0.0 && now > p.start_ms {
                available = arrived(now, p.start_ms, p.rate) - p.position;
                if available > 0 {
                    any_available = true;
                }
            }
            if spill {
                on_heap.push((i, available));
            } else {
                on_stack[count] = (i, available);
            }
            count += 1;
        }
        let active: &[(usize, i64)] = if spill { &on_heap } else { &on_stack[..count] };
        if !any_available {
            if !active.is_empty() {
                self.rr += 1;
            }
            return;
        }
        let mut budget = self.max_poll_records;
        let first = self.rr.rem_euclid(active.len() as i64) as usize;
        self.rr += 1;
        let mut t = now as f64;
        // (the batch's vector, empty since its records were applied, keeps its capacity)
        let mut segments = std::mem::take(&mut self.batch);
        segments.clear();
        for k in 0..active.len() {
            let (i, available) = active[(first + k) % active.len()];
            if available <= 0 {
                continue;
            }
            let p = &mut self.partitions[i];
            let n = available.min(budget);
            let mut completions = self.spare.vectors.pop().unwrap_or_default();
            for _ in 0..n {
                t += record_time.next();
                completions.push(t);
            }
            segments.push(Segment {
                partition: i,
                first_offset: p.position,
                completions,
            });
            p.position += n;
            budget -= n;
            if budget == 0 {
                break;
            }
        }
        self.batch = segments;
        // the clock's resolution is 1 ms: a poll loop turn takes at least that
        let end = whole_ms::ceil(t);
        self.busy_until = Some(if end > now { end } else { now + 1 });
    }

    /// The partition every poll takes its records from when the process has one: the only
    /// active partition, with records arriving and polls that take at least one
    /// (`None` otherwise). See [`AppLoop::sole_steps`].
    pub(crate) fn sole_source(&self) -> Option<usize> {
        let mut found = None;
        for (i, p) in self.partitions.iter().enumerate() {
            if p.active {
                if found.is_some() {
                    return None;
                }
                found = Some(i);
            }
        }
        found.filter(|&i| self.partitions[i].rate > 0.0 && self.max_poll_records > 0)
    }

    /// The wake-up steps at `wake_at` and after, before `horizon`, of a process whose polls
    /// take records from partition `j` only ([`AppLoop::sole_source`]), each record taking
    /// `record_ms`, while its member's machine has nothing to do but move its poll timer:
    /// no heartbeat falls due and no answer is read before `horizon`, and the machine's
    /// deadline after a poll at `t` is `deadline.after_poll(t)`. The same steps, state and
    /// floats as the machine's loop (`crate::lane_loop`) with [`AppLoop::poll_records`] and
    /// [`AppLoop::apply_batch`]; also stops before a step at which the poll timer would
    /// have run out (`*last_poll + max.poll.interval.ms`), which the caller reports.
    /// Returns the next wake-up and the steps run.
    ///
    /// Why: in the simulator's default workload a member polls one record at a time, two
    /// steps per record, and the general steps (partitions in turn, a completion vector
    /// per batch) were most of a simulated hour. Here a batch in hand is its first offset,
    /// count and start, its completions summed again when it is applied (the same
    /// additions in the same order), and a vector only if it is still in hand at the end.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn sole_steps(
        &mut self,
        j: usize,
        record_ms: f64,
        mut wake_at: i64,
        horizon: i64,
        deadline: PollDeadline,
        last_poll: &mut i64,
        tally: &mut Tally,
    ) -> (i64, u64) {
        debug_assert_eq!(self.sole_source(), Some(j), "{self:?}");
        let mut steps = 0;
        // the batch this loop started, while it is in hand: (first offset, records, start)
        let mut in_hand: Option<(i64, i64, f64)> = None;
        while wake_at < horizon && wake_at < *last_poll + deadline.max_poll_interval_ms {
            let t = wake_at;
            let mut at = match self.busy_until {
                Some(busy) if t < busy => busy,
                busy => {
                    if busy.is_some() {
                        match in_hand.take() {
                            Some((first, n, start)) => {
                                self.apply_sole(j, first, n, start, record_ms, tally)
                            }
                            None => self.apply_batch(tally),
                        }
                        self.busy_until = None;
                    }
                    // the application polls
                    *last_poll = t;
                    self.rr += 1;
                    let p = &mut self.partitions[j];
                    let available = if t > p.start_ms {
                        arrived(t, p.start_ms, p.rate) - p.position
                    } else {
                        0
                    };
                    if available > 0 {
                        let n = available.min(self.max_poll_records);
                        let start = t as f64;
                        let end = completion_times(start, record_ms)
                            .take(n as usize)
                            .last()
                            .expect("a batch has a record");
                        in_hand = Some((p.position, n, start));
                        p.position += n;
                        // the clock's resolution is 1 ms (as `start_batch`)
                        let end = whole_ms::ceil(end);
                        let busy = if end > t { end } else { t + 1 };
                        self.busy_until = Some(busy);
                        busy
                    } else {
                        next_arrival(p.start_ms, p.position, p.rate)
                    }
                }
            };
            let machine = deadline.after_poll(*last_poll);
            if at > machine {
                at = machine;
            }
            wake_at = if at <= t { t + 1 } else { at };
            steps += 1;
        }
        if let Some((first, n, start)) = in_hand {
            // still in hand: the vector `start_batch` would have made
            let mut completions = self.spare.vectors.pop().unwrap_or_default();
            completions.extend(completion_times(start, record_ms).take(n as usize));
            self.batch.clear();
            self.batch.push(Segment {
                partition: j,
                first_offset: first,
                completions,
            });
        }
        (wake_at, steps)
    }

    /// [`AppLoop::apply_batch`] for a batch of `n` records of partition `j` from offset
    /// `first`, started at `start` (its completions `start + record_ms`, and so on).
    fn apply_sole(
        &mut self,
        j: usize,
        first: i64,
        n: i64,
        start: f64,
        record_ms: f64,
        tally: &mut Tally,
    ) {
        let completions = completion_times(start, record_ms);
        self.partitions[j].processed(first, n, completions, &mut self.spare, tally);
    }

    /// Count the batch's records as processed (`Recorder.processed` per segment).
    pub(crate) fn apply_batch(&mut self, tally: &mut Tally) {
        let mut batch = std::mem::take(&mut self.batch);
        for segment in batch.drain(..) {
            let p = &mut self.partitions[segment.partition];
            let n = segment.completions.len() as i64;
            if n == 0 {
                continue;
            }
            let completions = segment.completions.iter().copied();
            p.processed(segment.first_offset, n, completions, &mut self.spare, tally);
            let mut completions = segment.completions;
            completions.clear();
            self.spare.vectors.push(completions);
        }
        self.batch = batch;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(rate: f64, position: i64) -> AppLoop {
        AppLoop {
            partitions: vec![Partition {
                active: true,
                position,
                start_ms: 0,
                rate,
                processed_end: position,
            }],
            rr: 0,
            busy_until: None,
            batch: Vec::new(),
            max_poll_records: 500,
            poll_deadline: None,
            spare: Default::default(),
        }
    }

    #[test]
    fn arithmetic_matches_the_streams_clock() {
        // 10 records/s: record k arrives at (k + 1) * 100 ms
        assert_eq!(arrived(100, 0, 10.0), 1);
        assert_eq!(arrived(99, 0, 10.0), 0);
        assert_eq!(next_arrival(0, 0, 10.0), 100);
        assert_eq!(next_arrival(0, 4, 10.0), 500);
        // 3 records/s: 333.33.. -> 334
        assert_eq!(next_arrival(0, 0, 3.0), 334);
        assert_eq!(arrived(1000, 0, 3.0), 3);
    }

    #[test]
    fn one_record_per_poll_at_a_low_rate() {
        let mut app = one(10.0, 0);
        let mut tally = Tally::default();
        let mut constant = || 1.0;
        // the first step finds nothing: wake at the first arrival
        let ran = app.run(50, 10_000, 1_050, &mut constant, &mut tally);
        // steps at 50 (nothing), 100 (batch of 1 until 101), 101 (done; wake at 200), ...
        assert_eq!(ran.stop, Stop::Done);
        assert_eq!(ran.wake_at, 1_100);
        assert_eq!(tally.records, 10);
        assert_eq!(tally.duplicates, 0);
        // each record waits its 1 ms of processing
        assert_eq!(tally.lags.get(1), 10);
        assert_eq!(app.partitions[0].position, 10);
        assert_eq!(app.partitions[0].processed_end, 10);
    }

    #[test]
    fn a_step_whose_next_wake_up_is_past_until_asks_the_machine() {
        // record 0 (arrived at 100) already taken: the next arrives at 200
        let mut app = one(10.0, 1);
        let mut tally = Tally::default();
        let mut constant = || 1.0;
        let ran = app.run(101, 150, 10_000, &mut constant, &mut tally);
        assert_eq!(
            ran.stop,
            Stop::Poll {
                t: 101,
                at: Some(200)
            }
        );
        assert_eq!(ran.steps, 1);
    }

    #[test]
    fn a_known_machine_deadline_lets_the_loop_go_on() {
        // as above, but the machine's deadline (a heartbeat due at 180) is known: the step
        // at 101 finds the next record at 200, past `until`, and wakes at the deadline
        let mut app = one(10.0, 1);
        app.poll_deadline = Some(PollDeadline {
            base: 180,
            max_poll_interval_ms: 300_000,
        });
        let mut tally = Tally::default();
        let mut constant = || 1.0;
        let ran = app.run(101, 150, 10_000, &mut constant, &mut tally);
        assert_eq!(ran.stop, Stop::Done);
        assert_eq!((ran.wake_at, ran.polled, ran.steps), (180, Some(101), 1));
        // the poll timer comes first when it is the earlier
        let mut app = one(10.0, 1);
        app.poll_deadline = Some(PollDeadline {
            base: 10_000,
            max_poll_interval_ms: 50,
        });
        let ran = app.run(101, 120, 10_000, &mut constant, &mut tally);
        assert_eq!((ran.wake_at, ran.polled), (151, Some(101)));
    }

    #[test]
    fn duplicates_count_what_another_owner_already_processed() {
        let mut app = one(10.0, 0);
        app.partitions[0].processed_end = 3;
        let mut tally = Tally::default();
        let mut constant = || 1.0;
        app.run(0, 10_000, 500, &mut constant, &mut tally);
        assert_eq!(tally.records, 4);
        assert_eq!(tally.duplicates, 3);
        assert_eq!(tally.lags.total(), 1);
    }

    use proptest::prelude::*;

    fn partitions() -> impl Strategy<Value = Vec<Partition>> {
        prop::collection::vec((any::<bool>(), 0i64..50, 0i64..500, 1.0f64..400.0), 1..5).prop_map(
            |ps| {
                ps.into_iter()
                    .map(|(active, position, start_ms, rate)| Partition {
                        active,
                        position,
                        start_ms,
                        rate,
                        processed_end: position,
                    })
                    .collect()
            },
        )
    }

    proptest! {
        /// The engine runs the loop in pieces, up to whatever event comes next: stopping at
        /// any limit and resuming from the wake-up it returns gives the same state and counts
        /// as one run.
        #[test]
        fn running_in_pieces_is_running_once(
            parts in partitions(),
            max_poll_records in 1i64..20,
            record_ms in 0.0f64..30.0,
            start in 0i64..100,
            split in 1i64..5_000,
            end in 5_000i64..10_000,
        ) {
            let app_before = parts.clone();
            let app = AppLoop { partitions: parts, rr: 0, busy_until: None, batch: Vec::new(), max_poll_records, poll_deadline: None, spare: Spare::default() };
            let mut once = app.clone();
            let mut whole = Tally::default();
            let a = once.run(start, i64::MAX, end, &mut || record_ms, &mut whole);
            let mut pieces = app;
            let mut tally = Tally::default();
            // (the first piece stops at `end` at the latest: the whole run stops there)
            let first = pieces.run(start, i64::MAX, (start + split).min(end), &mut || record_ms, &mut tally);
            if first.stop == Stop::Done {
                let b = pieces.run(first.wake_at, i64::MAX, end, &mut || record_ms, &mut tally);
                if a.stop == Stop::Done {
                    prop_assert_eq!(b.wake_at, a.wake_at);
                    prop_assert_eq!(first.steps + b.steps, a.steps);
                    prop_assert_eq!(&pieces, &once);
                    prop_assert_eq!(&tally, &whole);
                }
            }
            // nothing is taken before it arrives, and every record taken is counted once
            // its batch is done (the batch in hand is not counted yet)
            let mut taken = 0;
            for (p, before) in once.partitions.iter().zip(&app_before) {
                if p.active && p.position > before.position {
                    prop_assert!(a.wake_at > p.start_ms);
                    prop_assert!(p.position <= arrived(a.wake_at, p.start_ms, p.rate));
                }
                taken += p.position - before.position;
            }
            let in_hand: i64 = once.batch.iter().map(|s| s.completions.len() as i64).sum();
            prop_assert_eq!(whole.records, taken - in_hand);
            prop_assert_eq!(whole.duplicates, 0);
            prop_assert_eq!(whole.lags.total(), whole.records);
        }
    }
}
