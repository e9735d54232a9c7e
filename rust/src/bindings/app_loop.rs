//! `_core.app_loop`: the simulator's application loop for one member
//! ([`crate::app_loop`]), on plain tuples and lists the engine builds from its process.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::app_loop::{AppLoop, Partition, PollDeadline, Segment, Stop, Tally};

/// A partition as the engine passes it: (active, position, start_ms, rate, processed_end).
pub(crate) type PartitionIn = (bool, i64, i64, f64, i64);
/// A batch segment: (partition index, first offset, completion times).
pub(crate) type SegmentInOut = (usize, i64, Vec<f64>);
/// (positions and processed ends, rr, busy_until, batch)
pub(crate) type AppState = (Vec<(i64, i64)>, i64, Option<i64>, Vec<SegmentInOut>);
/// (wake_at, polled, steps, the step to ask the machine about: (t, at))
type Steps = (i64, Option<i64>, u64, Option<(i64, Option<i64>)>);
/// (records, duplicates, max_lag_ms, [(lag ms, records)])
pub(crate) type Counts = (i64, i64, f64, Vec<(i64, i64)>);

/// `app_loop(partitions, batch, rr, busy_until, wake_at, until, limit, max_poll_records,
/// record_ms, sample, max_lag_ms, deadline_base=None, max_poll_interval_ms=0)`: run the
/// process's application steps from `wake_at` while they are before `until` and `limit`
/// (see `Engine._catch_up`). `record_ms` is the constant processing time of a record, or
/// `None`: `sample()` draws each. `deadline_base`: the machine's deadline after a poll is
/// the earlier of it and the poll plus `max_poll_interval_ms` (`PollDeadline`); without
/// it a step whose next wake-up is not before `until` stops the loop for the caller.
#[pyfunction]
#[pyo3(signature = (partitions, batch, rr, busy_until, wake_at, until, limit, max_poll_records, record_ms, sample, max_lag_ms, deadline_base=None, max_poll_interval_ms=0))]
#[allow(clippy::too_many_arguments)]
pub fn app_loop(
    partitions: Vec<PartitionIn>,
    batch: Vec<SegmentInOut>,
    rr: i64,
    busy_until: Option<i64>,
    wake_at: i64,
    until: i64,
    limit: i64,
    max_poll_records: i64,
    record_ms: Option<f64>,
    sample: &Bound<'_, PyAny>,
    max_lag_ms: f64,
    deadline_base: Option<i64>,
    max_poll_interval_ms: i64,
) -> PyResult<(AppState, Steps, Counts)> {
    let mut app = build_app(partitions, batch, rr, busy_until, max_poll_records)?;
    app.poll_deadline = deadline_base.map(|base| PollDeadline {
        base,
        max_poll_interval_ms,
    });
    let mut tally = Tally {
        max_lag_ms,
        ..Tally::default()
    };
    let mut failed: Option<PyErr> = None;
    let ran = match record_ms {
        Some(value) => app.run(wake_at, until, limit, &mut || value, &mut tally),
        None => {
            let mut draw = || match sample.call0().and_then(|v| v.extract::<f64>()) {
                Ok(v) => v,
                Err(e) => {
                    failed.get_or_insert(e);
                    0.0
                }
            };
            app.run(wake_at, until, limit, &mut draw, &mut tally)
        }
    };
    if let Some(e) = failed {
        return Err(e);
    }
    let state = app_state(app);
    let poll = match ran.stop {
        Stop::Done => None,
        Stop::Poll { t, at } => Some((t, at)),
    };
    Ok((
        state,
        (ran.wake_at, ran.polled, ran.steps, poll),
        counts(tally),
    ))
}

/// The process's application state from the engine's tuples (see [`app_loop`]).
pub(crate) fn build_app(
    partitions: Vec<PartitionIn>,
    batch: Vec<SegmentInOut>,
    rr: i64,
    busy_until: Option<i64>,
    max_poll_records: i64,
) -> PyResult<AppLoop> {
    if max_poll_records < 1 {
        return Err(PyValueError::new_err(format!(
            "max_poll_records must be >= 1, got {max_poll_records}"
        )));
    }
    let count = partitions.len();
    let mut app = AppLoop {
        partitions: partitions
            .into_iter()
            .map(
                |(active, position, start_ms, rate, processed_end)| Partition {
                    active,
                    position,
                    start_ms,
                    rate,
                    processed_end,
                },
            )
            .collect(),
        rr,
        busy_until,
        batch: Vec::with_capacity(batch.len()),
        max_poll_records,
        poll_deadline: None,
        spare: Default::default(),
    };
    for (partition, first_offset, completions) in batch {
        if partition >= count {
            return Err(PyValueError::new_err(format!(
                "batch names partition {partition} of {count}"
            )));
        }
        app.batch.push(Segment {
            partition,
            first_offset,
            completions,
        });
    }
    Ok(app)
}

/// The application state back as the engine's tuples.
pub(crate) fn app_state(app: AppLoop) -> AppState {
    (
        app.partitions
            .iter()
            .map(|p| (p.position, p.processed_end))
            .collect(),
        app.rr,
        app.busy_until,
        app.batch
            .into_iter()
            .map(|s| (s.partition, s.first_offset, s.completions))
            .collect(),
    )
}

/// The recorder's counts, lags in ascending order.
pub(crate) fn counts(tally: Tally) -> Counts {
    (
        tally.records,
        tally.duplicates,
        tally.max_lag_ms,
        tally.lags.sorted(),
    )
}
