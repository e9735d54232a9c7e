//! The simulator's processing lane (`groupcoord.sim.engine`, "The processing lane"): the
//! steps of a member that processes records while its heartbeats and auto-commits reach
//! the coordinator without its machine. Each step is a wake-up (the application's, or the
//! heartbeat thread's when the next heartbeat falls due) or the read of an answer, which
//! comes before a wake-up of the same millisecond; the loop keeps the machine's timers as
//! the machine would. Python keeps the same loop (`Engine._plane_steps` with
//! `native=False`) as the reference; both must give the same state and floats.
//!
//! This module has no PyO3: `crate::bindings::lane_loop` adapts it to Python.

use crate::app_loop::{AppLoop, PollDeadline, RecordTime, Tally};

/// The member machine's timers as the lane keeps them (`_ProcessingLane` in the engine).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timers {
    /// when the next heartbeat falls due (it is sent then if none is in flight)
    pub hb_due: i64,
    /// the last heartbeat answer read
    pub last_ack: i64,
    /// the application's last poll
    pub last_poll: i64,
    /// the heartbeat in flight: when it was sent, whether that step polled, and the last
    /// poll before that step
    pub hb_sent: Option<i64>,
    pub hb_sent_poll: bool,
    pub hb_poll_before: i64,
    /// the last heartbeat read in the lane: (sent, answered)
    pub told: Option<(i64, i64)>,
    pub last_hb_send: Option<i64>,
}

/// The machine's settings the timers run by (milliseconds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    pub session_timeout: i64,
    pub max_poll_interval: i64,
    pub heartbeat_interval: i64,
}

/// An answer to read: (arrival at the member, place on the connection, a heartbeat's).
pub type Read = (i64, i64, bool);

/// What [`run`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ran {
    pub wake_at: i64,
    pub steps: u64,
    /// how many of `reads` (from the front) were read
    pub reads_done: usize,
    /// a commit's answer was among them
    pub commit_read: bool,
}

/// Why the loop could not go on: the lane's conditions did not hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Broken {
    /// a timeout of the machine would be due at `t` (the lane takes only members whose
    /// batches and round trips keep them clear of their timeouts)
    Timeout { t: i64 },
    /// a heartbeat fell due at `t` with none in flight but no step came at its due time
    MissedHeartbeat { t: i64, due: i64 },
    /// a heartbeat's answer was read with no heartbeat in flight
    NoHeartbeat { t: i64 },
}

/// The machine's checks before a step at `t` (`MemberMachine._advance`): no timeout due.
fn clear_of_timeouts(timers: &Timers, settings: Settings, t: i64) -> Result<(), Broken> {
    if t < timers.last_ack + settings.session_timeout
        && t < timers.last_poll + settings.max_poll_interval
    {
        Ok(())
    } else {
        Err(Broken::Timeout { t })
    }
}

/// The machine's next deadline (`MemberMachine.next_deadline`, `poll_idle`): the session's
/// end, or the next heartbeat when none is in flight and it comes first; the poll timer's
/// end if earlier.
fn deadline(timers: &Timers, settings: Settings) -> i64 {
    poll_deadline(timers, settings).after_poll(timers.last_poll)
}

/// [`deadline`] as a function of the last poll: fixed while no heartbeat is sent or read.
fn poll_deadline(timers: &Timers, settings: Settings) -> PollDeadline {
    let mut base = timers.last_ack + settings.session_timeout;
    if timers.hb_sent.is_none() && timers.hb_due < base {
        base = timers.hb_due;
    }
    PollDeadline {
        base,
        max_poll_interval_ms: settings.max_poll_interval,
    }
}

/// Run the steps from `wake_at` whose keys come before the current event: wake-ups before
/// `limit`, reads (in `reads`' order) before `read_limit`.
#[allow(clippy::too_many_arguments)]
pub fn run(
    app: &mut AppLoop,
    timers: &mut Timers,
    settings: Settings,
    mut wake_at: i64,
    limit: i64,
    read_limit: i64,
    reads: &[Read],
    record_time: &mut impl RecordTime,
    tally: &mut Tally,
) -> Result<Ran, Broken> {
    let mut done = 0;
    let mut commit_read = false;
    let mut steps = 0;
    // (partitions do not change inside the loop)
    let sole = record_time
        .constant()
        .and_then(|record_ms| app.sole_source().map(|j| (j, record_ms)));
    loop {
        if let Some((j, record_ms)) = sole {
            // the wake-ups before the next read, heartbeat or timeout, in one go
            let next_read = reads.get(done).map(|r| r.0).filter(|&at| at < read_limit);
            if next_read.is_none_or(|at| at > wake_at) {
                let (w, s) = quiet_steps(
                    app, timers, settings, j, record_ms, wake_at, limit, next_read, tally,
                );
                wake_at = w;
                steps += s;
            }
        }
        let (t, read) = match reads.get(done) {
            Some(&(at, _, heartbeat)) if at < read_limit && at <= wake_at => {
                // (the machine checks its timers before it reads the answer)
                clear_of_timeouts(timers, settings, at)?;
                done += 1;
                if heartbeat {
                    let sent = timers.hb_sent.ok_or(Broken::NoHeartbeat { t: at })?;
                    timers.told = Some((sent, at));
                    timers.hb_sent = None;
                    timers.last_ack = at;
                } else {
                    commit_read = true;
                }
                (at, true)
            }
            _ if wake_at < limit => {
                clear_of_timeouts(timers, settings, wake_at)?;
                (wake_at, false)
            }
            _ => break,
        };
        wake_at = step(app, timers, settings, t, read, wake_at, record_time, tally)?;
        steps += 1;
    }
    Ok(Ran {
        wake_at,
        steps,
        reads_done: done,
        commit_read,
    })
}

/// [`AppLoop::sole_steps`] for the lane: the wake-ups from `wake_at` before `limit` and
/// `next_read`, while the machine only moves its poll timer (before the next heartbeat
/// falls due with none in flight, and before the session's end).
#[allow(clippy::too_many_arguments)]
fn quiet_steps(
    app: &mut AppLoop,
    timers: &mut Timers,
    settings: Settings,
    j: usize,
    record_ms: f64,
    wake_at: i64,
    limit: i64,
    next_read: Option<i64>,
    tally: &mut Tally,
) -> (i64, u64) {
    // (before the next heartbeat falls due with none in flight, and the session's end)
    let deadline = poll_deadline(timers, settings);
    let horizon = next_read
        .map_or(limit, |at| at.min(limit))
        .min(deadline.base);
    app.sole_steps(
        j,
        record_ms,
        wake_at,
        horizon,
        deadline,
        &mut timers.last_poll,
        tally,
    )
}

/// One step at `t`: finish the batch in hand if it is done, send the heartbeat that falls
/// due now, poll (or, inside a batch, only the heartbeat thread wakes), and return the
/// next wake-up. `read`: the step is an answer's read (or another event's, see
/// [`extra_step`]), which leaves an earlier wake-up `wake_at` in place (`_set_wake`).
#[allow(clippy::too_many_arguments)]
fn step(
    app: &mut AppLoop,
    timers: &mut Timers,
    settings: Settings,
    t: i64,
    read: bool,
    mut wake_at: i64,
    record_time: &mut impl RecordTime,
    tally: &mut Tally,
) -> Result<i64, Broken> {
    if let Some(busy) = app.busy_until {
        if t >= busy {
            app.apply_batch(tally);
            app.busy_until = None;
        }
    }
    let due = timers.hb_sent.is_none() && t >= timers.hb_due;
    if due && t != timers.hb_due {
        return Err(Broken::MissedHeartbeat {
            t,
            due: timers.hb_due,
        });
    }
    if due {
        // sent with the application's poll, or by the heartbeat thread inside a batch
        timers.hb_sent = Some(t);
        timers.hb_sent_poll = app.busy_until.is_none();
        timers.hb_poll_before = timers.last_poll;
        timers.hb_due = t + settings.heartbeat_interval;
        timers.last_hb_send = Some(t);
    }
    let at = match app.busy_until {
        None => {
            // the application polls
            timers.last_poll = t;
            app.poll_records(t, record_time)
        }
        Some(busy) => Some(busy),
    };
    let machine = deadline(timers, settings);
    // `if at is None or deadline < at: at = deadline` (the Python loop)
    let mut at = match at {
        Some(at) if at <= machine => at,
        _ => machine,
    };
    if at <= t {
        at = t + 1; // as _set_wake does
    }
    // an answer's step leaves an earlier wake-up in place; one due now runs after it,
    // and inside the batch it just started it only wakes at `at`
    if !read || at < wake_at || (wake_at == t && app.busy_until.is_some()) {
        wake_at = at;
    }
    Ok(wake_at)
}

/// A step at `t` that is no wake-up of the member's own (`Engine._refresh_metadata`'s
/// `_step`: the member refreshed its metadata and its loop runs once), between its
/// earlier steps and its next wake-up `wake_at` (`wake_at > t`). Returns the next
/// wake-up: the earlier of `wake_at` and the one this step asks for (`_set_wake`).
#[allow(clippy::too_many_arguments)]
pub fn extra_step(
    app: &mut AppLoop,
    timers: &mut Timers,
    settings: Settings,
    t: i64,
    wake_at: i64,
    record_time: &mut impl RecordTime,
    tally: &mut Tally,
) -> Result<i64, Broken> {
    debug_assert!(wake_at > t, "wake_at {wake_at} t {t}");
    clear_of_timeouts(timers, settings, t)?;
    step(app, timers, settings, t, true, wake_at, record_time, tally)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app_loop::{Constant, Partition};

    const SETTINGS: Settings = Settings {
        session_timeout: 45_000,
        max_poll_interval: 300_000,
        heartbeat_interval: 3_000,
    };

    fn one(rate: f64) -> AppLoop {
        AppLoop {
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
        }
    }

    #[test]
    fn the_heartbeat_goes_with_the_poll_at_its_due_time() {
        // 10 records/s, 1 ms each; the heartbeat is due at 300 (an idle moment)
        let mut app = one(10.0);
        let mut timers = Timers {
            hb_due: 300,
            ..Timers::default()
        };
        let mut tally = Tally::default();
        let ran = run(
            &mut app,
            &mut timers,
            SETTINGS,
            0,
            350,
            350,
            &[],
            &mut || 1.0,
            &mut tally,
        )
        .unwrap();
        assert_eq!(timers.hb_sent, Some(300));
        assert!(timers.hb_sent_poll);
        assert_eq!(timers.hb_due, 3_300);
        assert_eq!(timers.last_poll, 301); // the batch of record 2 ended at 301
        assert_eq!(ran.wake_at, 400);
        // its answer, read at 303 (idle: a poll), refreshes the session
        let reads = [(303, 1, true)];
        let ran = run(
            &mut app,
            &mut timers,
            SETTINGS,
            ran.wake_at,
            1_000,
            1_000,
            &reads,
            &mut || 1.0,
            &mut tally,
        )
        .unwrap();
        assert_eq!(ran.reads_done, 1);
        assert_eq!(timers.told, Some((300, 303)));
        assert_eq!((timers.hb_sent, timers.last_ack), (None, 303));
        assert_eq!(tally.records, 9);
    }

    #[test]
    fn inside_a_batch_the_heartbeat_thread_sends_without_a_poll() {
        // one record of 100 ms arrives at 100: the batch runs 100..200, the heartbeat is
        // due at 150
        let mut app = one(10.0);
        let mut timers = Timers {
            hb_due: 150,
            ..Timers::default()
        };
        let mut tally = Tally::default();
        let ran = run(
            &mut app,
            &mut timers,
            SETTINGS,
            0,
            180,
            180,
            &[],
            &mut || 100.0,
            &mut tally,
        )
        .unwrap();
        assert_eq!(timers.hb_sent, Some(150));
        assert!(!timers.hb_sent_poll);
        assert_eq!(timers.hb_poll_before, 100);
        assert_eq!(timers.last_poll, 100);
        assert_eq!(ran.wake_at, 200);
    }

    #[test]
    fn a_timeout_breaks_the_lane() {
        let mut app = one(0.0);
        let mut timers = Timers {
            hb_due: 1_000_000,
            ..Timers::default()
        };
        let mut tally = Tally::default();
        let broken = run(
            &mut app,
            &mut timers,
            SETTINGS,
            0,
            i64::MAX,
            i64::MAX,
            &[],
            &mut || 1.0,
            &mut tally,
        );
        assert_eq!(broken, Err(Broken::Timeout { t: 45_000 }));
    }

    use proptest::prelude::*;

    proptest! {
        /// The engine runs the lane's steps in pieces, up to whatever event comes next:
        /// stopping at any limit and resuming gives the same state, timers and counts as
        /// one run.
        #[test]
        fn running_in_pieces_is_running_once(
            rate in 1.0f64..200.0,
            record_ms in 0.0f64..30.0,
            hb_due in 1i64..3_000,
            split in 1i64..5_000,
            read_at in 0i64..3_000,
        ) {
            let app = one(rate);
            let timers = Timers { hb_due, ..Timers::default() };
            // a commit's answer to read somewhere
            let reads = [(read_at, 1, false)];
            let (mut a, mut ta, mut whole) = (app.clone(), timers.clone(), Tally::default());
            let once = run(&mut a, &mut ta, SETTINGS, 0, 6_000, 6_000, &reads, &mut || record_ms, &mut whole);
            let (mut b, mut tb, mut tally) = (app, timers, Tally::default());
            let first = run(&mut b, &mut tb, SETTINGS, 0, split, split, &reads, &mut || record_ms, &mut tally);
            if let (Ok(once), Ok(first)) = (once, first) {
                let rest = run(&mut b, &mut tb, SETTINGS, first.wake_at, 6_000, 6_000, &reads[first.reads_done..], &mut || record_ms, &mut tally).unwrap();
                prop_assert_eq!(rest.wake_at, once.wake_at);
                prop_assert_eq!(first.steps + rest.steps, once.steps);
                prop_assert_eq!(first.reads_done + rest.reads_done, once.reads_done);
                prop_assert_eq!(&b, &a);
                prop_assert_eq!(&tb, &ta);
                prop_assert_eq!(&tally, &whole);
            }
        }

        /// With a constant record time and one partition polled, the lane runs its quiet
        /// stretches in one go (`AppLoop::sole_steps`): the same steps, state, floats and
        /// breaks as the general steps, run in pieces up to any limits, with heartbeats
        /// falling due, answers to read, batches in hand at a piece's end, duplicates, and
        /// timeouts.
        #[test]
        fn quiet_stretches_are_the_general_steps(
            parts in prop::collection::vec(
                (any::<bool>(), prop_oneof![Just(0.0), 0.5f64..300.0, Just(10.0)], 0i64..2_000, 0i64..4),
                1..4,
            ),
            record_ms in prop_oneof![Just(0.0), Just(1.0), 0.0f64..40.0],
            max_poll_records in 1i64..20,
            hb_due in 0i64..5_000,
            in_flight in any::<bool>(),
            session_timeout in 100i64..50_000,
            max_poll_interval in 50i64..10_000,
            heartbeat_interval in 10i64..5_000,
            mut reads in prop::collection::vec((0i64..20_000, any::<bool>()), 0..6),
            mut limits in prop::collection::vec(1i64..20_000, 0..3),
        ) {
            let mut app = one(0.0);
            app.max_poll_records = max_poll_records;
            app.partitions = parts
                .iter()
                .map(|&(active, rate, start_ms, seen)| Partition {
                    active,
                    position: 0,
                    start_ms,
                    rate,
                    processed_end: seen,
                })
                .collect();
            let timers = Timers {
                hb_due,
                hb_sent: in_flight.then_some(0),
                ..Timers::default()
            };
            let settings = Settings { session_timeout, max_poll_interval, heartbeat_interval };
            reads.sort_unstable();
            let reads: Vec<Read> = reads.iter().enumerate().map(|(i, &(at, hb))| (at, i as i64, hb)).collect();
            limits.sort_unstable();
            limits.push(20_000);
            let (mut a, mut ta, mut tally_a) = (app.clone(), timers.clone(), Tally::default());
            let (mut b, mut tb, mut tally_b) = (app, timers, Tally::default());
            let (mut wake_a, mut wake_b, mut done) = (0, 0, 0);
            for limit in limits {
                let general = run(&mut a, &mut ta, settings, wake_a, limit, limit, &reads[done..], &mut || record_ms, &mut tally_a);
                let quiet = run(&mut b, &mut tb, settings, wake_b, limit, limit, &reads[done..], &mut Constant(record_ms), &mut tally_b);
                prop_assert_eq!(&quiet, &general);
                prop_assert_eq!(&b, &a);
                prop_assert_eq!(&tb, &ta);
                prop_assert_eq!(&tally_b, &tally_a);
                let Ok(ran) = general else { break };
                (wake_a, wake_b) = (ran.wake_at, ran.wake_at);
                done += ran.reads_done;
            }
        }
    }
}
