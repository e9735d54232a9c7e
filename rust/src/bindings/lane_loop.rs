//! `_core.lane_loop`: the simulator's processing lane for one member
//! ([`crate::lane_loop`]), on the tuples the engine builds from its process and lane.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use super::app_loop::{app_state, build_app, counts, AppState, Counts, PartitionIn, SegmentInOut};
use crate::app_loop::Tally;
use crate::lane_loop::{run, Broken, Read, Settings, Timers};

/// The lane's timers as the engine keeps them: (hb_due, last_ack, last_poll, hb_sent,
/// hb_sent_poll, hb_poll_before, told_sent, told_answered, last_hb_send).
type TimersInOut = (
    i64,
    i64,
    i64,
    Option<i64>,
    bool,
    i64,
    Option<i64>,
    i64,
    Option<i64>,
);
/// (wake_at, steps, reads read, a commit's answer among them)
type Steps = (i64, u64, usize, bool);

/// `lane_loop(partitions, batch, rr, busy_until, wake_at, limit, read_limit,
/// max_poll_records, record_ms, sample, max_lag_ms, timers, reads, settings)`: run the
/// steps of a process in the processing lane from `wake_at`: wake-ups before `limit`,
/// the answers in `reads` ((arrival, place, a heartbeat's), in order) before `read_limit`
/// (see `Engine._plane_steps`). `settings`: (session.timeout.ms, max.poll.interval.ms,
/// heartbeat.interval.ms). Raises `RuntimeError` where the lane's conditions do not hold
/// (a timeout due, a heartbeat not sent at its due time).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn lane_loop(
    partitions: Vec<PartitionIn>,
    batch: Vec<SegmentInOut>,
    rr: i64,
    busy_until: Option<i64>,
    wake_at: i64,
    limit: i64,
    read_limit: i64,
    max_poll_records: i64,
    record_ms: Option<f64>,
    sample: &Bound<'_, PyAny>,
    max_lag_ms: f64,
    timers: TimersInOut,
    reads: Vec<Read>,
    settings: (i64, i64, i64),
) -> PyResult<(AppState, Steps, Counts, TimersInOut)> {
    let mut app = build_app(partitions, batch, rr, busy_until, max_poll_records)?;
    let (hb_due, last_ack, last_poll, hb_sent, hb_sent_poll, hb_poll_before, told, told_at, last) =
        timers;
    let mut timers = Timers {
        hb_due,
        last_ack,
        last_poll,
        hb_sent,
        hb_sent_poll,
        hb_poll_before,
        told: told.map(|sent| (sent, told_at)),
        last_hb_send: last,
    };
    let settings = Settings {
        session_timeout: settings.0,
        max_poll_interval: settings.1,
        heartbeat_interval: settings.2,
    };
    let mut tally = Tally {
        max_lag_ms,
        ..Tally::default()
    };
    let mut failed: Option<PyErr> = None;
    let ran = match record_ms {
        Some(value) => run(
            &mut app,
            &mut timers,
            settings,
            wake_at,
            limit,
            read_limit,
            &reads,
            &mut || value,
            &mut tally,
        ),
        None => {
            let mut draw = || match sample.call0().and_then(|v| v.extract::<f64>()) {
                Ok(v) => v,
                Err(e) => {
                    failed.get_or_insert(e);
                    0.0
                }
            };
            run(
                &mut app,
                &mut timers,
                settings,
                wake_at,
                limit,
                read_limit,
                &reads,
                &mut draw,
                &mut tally,
            )
        }
    };
    if let Some(e) = failed {
        return Err(e);
    }
    let ran = ran.map_err(|broken| {
        PyRuntimeError::new_err(match broken {
            Broken::Timeout { t } => format!("processing lane: a timeout is due at {t}"),
            Broken::MissedHeartbeat { t, due } => {
                format!("processing lane: a heartbeat due at {due} was first seen at {t}")
            }
            Broken::NoHeartbeat { t } => {
                format!("processing lane: a heartbeat answer read at {t} with none in flight")
            }
        })
    })?;
    let (told, told_at) = match timers.told {
        Some((sent, at)) => (Some(sent), at),
        None => (None, 0),
    };
    Ok((
        app_state(app),
        (ran.wake_at, ran.steps, ran.reads_done, ran.commit_read),
        counts(tally),
        (
            timers.hb_due,
            timers.last_ack,
            timers.last_poll,
            timers.hb_sent,
            timers.hb_sent_poll,
            timers.hb_poll_before,
            told,
            told_at,
            timers.last_hb_send,
        ),
    ))
}
