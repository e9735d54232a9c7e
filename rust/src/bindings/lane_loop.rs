//! `_core.LaneApp`: the simulator's processing lane for one member
//! ([`crate::lane_loop`]). The application's state (partitions, the batch in hand, the
//! turn) and the recorder's counts stay in Rust from one call to the next while the member
//! is in the lane, so a call converts only the timers and the answers to read; the engine
//! takes the state back (`take`) when anything else needs it.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use super::app_loop::{app_state, build_app, counts, AppState, Counts, PartitionIn, SegmentInOut};
use crate::app_loop::{AppLoop, Tally};
use crate::lane_loop::{run, Broken, Read, Settings, Timers};

/// The lane's timers as the engine keeps them: (hb_due, last_ack, last_poll, hb_sent,
/// hb_sent_poll, hb_poll_before, told_sent, told_answered, last_hb_send).
pub(super) type TimersInOut = (
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
/// (wake_at, steps, reads read, a commit's answer among them, busy_until)
type Steps = (i64, u64, usize, bool, Option<i64>);

/// One member's application in the processing lane (see `Engine._plane_steps`).
#[pyclass(name = "LaneApp", module = "groupcoord._core")]
pub struct LaneAppPy {
    /// `None` once taken back
    app: Option<AppLoop>,
    /// the constant record time, or `None`: `sample()` draws each
    record_ms: Option<f64>,
    sample: Py<PyAny>,
    settings: Settings,
    /// what the recorder counts, since the state was handed over
    tally: Tally,
}

impl LaneAppPy {
    fn app(&mut self) -> PyResult<&mut AppLoop> {
        self.app
            .as_mut()
            .ok_or_else(|| PyValueError::new_err("LaneApp: the state was taken back"))
    }
}

pub(super) fn from_timers(timers: TimersInOut) -> Timers {
    let (hb_due, last_ack, last_poll, hb_sent, hb_sent_poll, hb_poll_before, told, told_at, last) =
        timers;
    Timers {
        hb_due,
        last_ack,
        last_poll,
        hb_sent,
        hb_sent_poll,
        hb_poll_before,
        told: told.map(|sent| (sent, told_at)),
        last_hb_send: last,
    }
}

pub(super) fn to_timers(timers: &Timers) -> TimersInOut {
    let (told, told_at) = match timers.told {
        Some((sent, at)) => (Some(sent), at),
        None => (None, 0),
    };
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
    )
}

/// The lane's conditions did not hold (for the member `pkey`, when known).
pub(super) fn lane_error(pkey: Option<i64>, broken: Broken) -> PyErr {
    let lane = match pkey {
        Some(pkey) => format!("processing lane (process {pkey})"),
        None => "processing lane".to_string(),
    };
    PyRuntimeError::new_err(match broken {
        Broken::Timeout { t } => format!("{lane}: a timeout is due at {t}"),
        Broken::MissedHeartbeat { t, due } => {
            format!("{lane}: a heartbeat due at {due} was first seen at {t}")
        }
        Broken::NoHeartbeat { t } => {
            format!("{lane}: a heartbeat answer read at {t} with none in flight")
        }
    })
}

#[pymethods]
impl LaneAppPy {
    /// `LaneApp(partitions, batch, rr, busy_until, max_poll_records, record_ms, sample,
    /// settings)`: the application state as `app_loop` takes it; `settings`:
    /// (session.timeout.ms, max.poll.interval.ms, heartbeat.interval.ms).
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        partitions: Vec<PartitionIn>,
        batch: Vec<SegmentInOut>,
        rr: i64,
        busy_until: Option<i64>,
        max_poll_records: i64,
        record_ms: Option<f64>,
        sample: Py<PyAny>,
        settings: (i64, i64, i64),
    ) -> PyResult<Self> {
        Ok(Self {
            app: Some(build_app(
                partitions,
                batch,
                rr,
                busy_until,
                max_poll_records,
            )?),
            record_ms,
            sample,
            settings: Settings {
                session_timeout: settings.0,
                max_poll_interval: settings.1,
                heartbeat_interval: settings.2,
            },
            tally: Tally::default(),
        })
    }

    /// `run(wake_at, limit, read_limit, timers, reads)`: the steps from `wake_at`:
    /// wake-ups before `limit`, the answers in `reads` ((arrival, place, a heartbeat's),
    /// in order) before `read_limit`. Returns (wake_at, steps, answers read, a commit's
    /// answer among them, busy_until) and the timers. `RuntimeError` where the lane's
    /// conditions do not hold (a timeout due, a heartbeat not sent at its due time).
    fn run(
        &mut self,
        py: Python<'_>,
        wake_at: i64,
        limit: i64,
        read_limit: i64,
        timers: TimersInOut,
        reads: Vec<Read>,
    ) -> PyResult<(Steps, TimersInOut)> {
        let settings = self.settings;
        let record_ms = self.record_ms;
        let mut timers = from_timers(timers);
        let mut tally = std::mem::take(&mut self.tally);
        let sample = self.sample.bind(py).clone();
        let app = self.app()?;
        let mut failed: Option<PyErr> = None;
        let ran = match record_ms {
            Some(value) => run(
                app,
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
                    app,
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
        let busy_until = app.busy_until;
        self.tally = tally;
        if let Some(e) = failed {
            return Err(e);
        }
        let ran = ran.map_err(|b| lane_error(None, b))?;
        Ok((
            (
                ran.wake_at,
                ran.steps,
                ran.reads_done,
                ran.commit_read,
                busy_until,
            ),
            to_timers(&timers),
        ))
    }

    /// The next offset to hand to the application, per partition (in the member's order).
    fn positions(&mut self) -> PyResult<Vec<i64>> {
        Ok(self.app()?.partitions.iter().map(|p| p.position).collect())
    }

    /// The application state as `app_loop` returns it, and the recorder's counts since the
    /// state was handed over (the lags in ascending order); the object is spent.
    fn take(&mut self) -> PyResult<(AppState, Counts)> {
        let app = self
            .app
            .take()
            .ok_or_else(|| PyValueError::new_err("LaneApp: the state was taken back"))?;
        Ok((app_state(app), counts(std::mem::take(&mut self.tally))))
    }
}
