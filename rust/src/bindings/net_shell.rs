//! `groupcoord._core.NetShell`: the native network shell (`crate::net`) for Python. Only
//! conversions; what the shell does is in `crate::net::io_loop`.

use std::collections::HashMap;
use std::net::TcpListener;
use std::os::fd::FromRawFd;
use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use super::connection_limits::ConnectionLimitsPy;
use super::timer::MemberExpiryPy;
use crate::net::connection_limits::ConnectionLimits;
use crate::net::io_loop::{Shell, ShellConfig};

#[pyclass(name = "NetShell", module = "groupcoord._core")]
pub struct NetShellPy {
    shell: Shell,
}

#[pymethods]
impl NetShellPy {
    /// Serve the listening socket `fd` (this takes it over) on a new thread; see
    /// groupcoord._core.pyi.
    #[new]
    #[pyo3(signature = (
        fd, *, now_ms, max_frame_bytes, heartbeat_versions = None, commit_versions = None,
        offset_metadata_max_bytes = 4096, latency_bounds_s = Vec::new(), max_queued_replies = 1024,
        max_buffered_bytes = 4_194_304, write_timeout_ms = 60_000, idle_ms = None,
        limits = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        fd: i32,
        now_ms: i64,
        max_frame_bytes: usize,
        heartbeat_versions: Option<(i16, i16)>,
        commit_versions: Option<(i16, i16)>,
        offset_metadata_max_bytes: usize,
        latency_bounds_s: Vec<f64>,
        max_queued_replies: usize,
        max_buffered_bytes: usize,
        write_timeout_ms: u64,
        idle_ms: Option<u64>,
        limits: Option<PyRef<'_, ConnectionLimitsPy>>,
    ) -> PyResult<Self> {
        if fd < 0 {
            return Err(PyValueError::new_err(format!(
                "fd must be a listening socket's descriptor, got {fd}"
            )));
        }
        if latency_bounds_s.windows(2).any(|w| w[0] >= w[1]) {
            return Err(PyValueError::new_err(
                "latency_bounds_s must be in ascending order",
            ));
        }
        if max_queued_replies == 0 {
            return Err(PyValueError::new_err(
                "max_queued_replies must be at least 1",
            ));
        }
        // SAFETY: the caller hands the descriptor over (socket.detach()); nothing else
        // closes it from here on.
        let listener = unsafe { TcpListener::from_raw_fd(fd) };
        let config = ShellConfig {
            max_frame_bytes,
            heartbeat_versions,
            commit_versions,
            offset_metadata_max_bytes,
            latency_bounds_s,
            max_queued_replies,
            max_buffered_bytes,
            write_timeout_ms,
            idle_ms,
            // without a table of its own server's, a shell counts alone and limits nothing
            limits: limits.map_or_else(
                || Arc::new(Mutex::new(ConnectionLimits::default())),
                |l| Arc::clone(&l.inner),
            ),
        };
        let shell = Shell::start(listener, now_ms, config)
            .map_err(|e| PyOSError::new_err(format!("cannot start the native shell: {e}")))?;
        Ok(NetShellPy { shell })
    }

    /// The descriptor to watch for readability: `take()` then has something.
    #[getter]
    fn notify_fd(&self) -> i32 {
        self.shell.notify_fd()
    }

    /// Why the I/O thread stopped serving on its own (its poll failed: every connection
    /// was closed), or `None` while it serves.
    #[getter]
    fn failure(&self) -> Option<String> {
        self.shell.with_shared(|s| s.failure.clone())
    }

    /// `(opened, frames, closed)`: new connections `(conn, peer_ip, peer_port)`, frames to dispatch
    /// `(conn, seq, body)`, connections gone `(conn, reason)`.
    fn take<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let batch = self.shell.take();
        let opened = PyList::new(py, batch.opened)?;
        let frames = PyList::empty(py);
        for (conn, seq, body) in batch.frames {
            frames.append((conn, seq, PyBytes::new(py, &body)))?;
        }
        let closed = PyList::new(py, batch.closed)?;
        PyTuple::new(
            py,
            [opened.into_any(), frames.into_any(), closed.into_any()],
        )
    }

    /// Many `(conn, seq, frame)` replies at once, and the `(conn, seq)` of requests
    /// parked (their replies come later). Checked in full before anything is handed over.
    #[pyo3(signature = (replies, parked = None))]
    fn reply_many(
        &self,
        replies: &Bound<'_, PyList>,
        parked: Option<&Bound<'_, PyList>>,
    ) -> PyResult<()> {
        let mut items = Vec::with_capacity(replies.len());
        for item in replies.iter() {
            let (conn, seq, frame): (u64, u64, Option<Bound<'_, PyBytes>>) = item.extract()?;
            items.push((conn, seq, frame.map(|b| b.as_bytes().to_vec())));
        }
        let mut held = Vec::new();
        for item in parked.into_iter().flat_map(|p| p.iter()) {
            held.push(item.extract::<(u64, u64)>()?);
        }
        self.shell.reply(items, held);
        Ok(())
    }

    /// Close `conn` now (a frame Python cannot read): nothing more is read or sent.
    fn close_connection(&self, conn: u64, reason: String) {
        self.shell.close(conn, reason);
    }

    /// Answer this member's heartbeats natively while its session lasts (see
    /// `crate::net::fast_heartbeats`).
    #[pyo3(signature = (group_id, member_id, generation_id, group_instance_id, session_timeout_ms, handle, session_deadline_ms, takes_commits = false))]
    #[allow(clippy::too_many_arguments)]
    fn admit(
        &self,
        group_id: &str,
        member_id: &str,
        generation_id: i32,
        group_instance_id: Option<&str>,
        session_timeout_ms: i64,
        handle: u64,
        session_deadline_ms: i64,
        takes_commits: bool,
    ) {
        self.shell.with_shared(|s| {
            s.fast.admit(
                group_id.as_bytes(),
                member_id.as_bytes(),
                generation_id,
                group_instance_id.map(str::as_bytes),
                session_timeout_ms,
                handle,
                session_deadline_ms,
                takes_commits,
            )
        });
    }

    /// The topics the coordinator's OffsetCommit check knows, with their partition
    /// counts (`None`: take no commit natively); see `crate::net::fast_commits`.
    fn set_commit_topics(&self, topics: Option<HashMap<String, i32>>) {
        let topics = topics.map(|t| {
            t.into_iter()
                .map(|(name, count)| (name.into_bytes().into_boxed_slice(), count))
                .collect()
        });
        self.shell
            .with_shared(|s| s.commit_rules.set_topics(topics));
    }

    /// The commits taken natively since the last call, in the order taken, as
    /// `(slots, commits)`: each one's `(conn, seq)`, and each one `(group_id, at_ms,
    /// topics)`, each topic `(name, partitions)`, each partition `(index, offset,
    /// leader_epoch, metadata or None)` (`GroupCoordinator.store_shell_commits`' input).
    fn take_commits<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let taken = self.shell.take_commits();
        let slots = PyList::empty(py);
        let commits = PyList::empty(py);
        for c in taken {
            let topics = PyList::empty(py);
            for (name, partitions) in &c.topics {
                let ps = PyList::empty(py);
                for (index, offset, epoch, metadata) in partitions {
                    ps.append((*index, *offset, *epoch, metadata.as_deref().map(utf8)))?;
                }
                topics.append((utf8(name), ps))?;
            }
            slots.append((c.conn, c.seq))?;
            commits.append((utf8(&c.group_id), c.at_ms, topics))?;
        }
        PyTuple::new(py, [slots.into_any(), commits.into_any()])
    }

    /// The writer started a transaction and takes the held commits when it ends: until
    /// the next `take_commits`, commits taken do not wake Python.
    fn defer_commit_wakes(&self) {
        self.shell.defer_commit_wakes();
    }

    /// Taken commits `(conn, seq)` stored (`ok`) or not: their held answers go out.
    fn release_commits(&self, commits: Vec<(u64, u64)>, ok: bool) {
        self.shell.release(commits, ok);
    }

    /// The group may change: its members' heartbeats go to Python until admitted again.
    fn invalidate_group(&self, group_id: &str) -> bool {
        self.shell
            .with_shared(|s| s.fast.invalidate_group(group_id.as_bytes()))
    }

    /// Anything may change: every member's heartbeats go to Python until admitted again.
    fn invalidate_all(&self) {
        self.shell.with_shared(|s| s.fast.invalidate_all());
    }

    /// Apply the sessions refreshed natively to `expiry` and raise the floor to `now_ms`
    /// (call before every coordinator call at `now_ms`). Returns the refreshes applied.
    fn sync_expiry(&self, mut expiry: PyRefMut<'_, MemberExpiryPy>, now_ms: i64) -> usize {
        let refreshes = self.shell.with_shared(|s| s.fast.take_refreshed(now_ms));
        expiry.apply_refreshes(&refreshes)
    }

    /// Running totals: bytes in and out, connections accepted, refused (by limit) and open, the most
    /// reply bytes one connection held unsent, heartbeats answered natively, members
    /// admitted, commits taken natively and their latencies (per bucket of
    /// `latency_bounds_s`, the last +Inf, and their sum), wake-ups sent to Python.
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (c, answered, admitted, latencies) = self.shell.with_shared(|s| {
            (
                s.counters,
                s.fast.answered(),
                s.fast.len(),
                s.commit_latencies.clone(),
            )
        });
        let d = PyDict::new(py);
        d.set_item("bytes_in", c.bytes_in)?;
        d.set_item("bytes_out", c.bytes_out)?;
        d.set_item("accepted", c.accepted)?;
        d.set_item("refused", c.refused)?;
        d.set_item("refused_per_ip", c.refused_per_ip)?;
        d.set_item("open", c.open)?;
        d.set_item("peak_unsent", c.peak_unsent)?;
        d.set_item("heartbeats_answered", answered)?;
        d.set_item("commits_taken", c.commits_taken)?;
        d.set_item("python_wakes", c.python_wakes)?;
        d.set_item("commit_latency_counts", latencies.counts)?;
        d.set_item("commit_latency_total_s", latencies.total_s)?;
        d.set_item("admitted", admitted)?;
        Ok(d)
    }

    /// Stop accepting, send what is ready, close every connection, end the thread.
    fn stop(&mut self, py: Python<'_>) {
        let shell = &mut self.shell;
        py.detach(|| shell.stop());
    }
}

/// Bytes the wire readers checked as UTF-8.
fn utf8(b: &[u8]) -> &str {
    std::str::from_utf8(b).expect("the wire readers accept valid UTF-8 only")
}
