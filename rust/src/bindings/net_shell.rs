//! `groupcoord._core.NetShell`: the native network shell (`crate::net`) for Python. Only
//! conversions; what the shell does is in `crate::net::io_loop`.

use std::net::TcpListener;
use std::os::fd::FromRawFd;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use super::timer::MemberExpiryPy;
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
        fd, *, now_ms, max_frame_bytes, heartbeat_versions = None, max_queued_replies = 1024,
        max_buffered_bytes = 4_194_304, write_timeout_ms = 60_000, idle_ms = None,
        max_connections = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        fd: i32,
        now_ms: i64,
        max_frame_bytes: usize,
        heartbeat_versions: Option<(i16, i16)>,
        max_queued_replies: usize,
        max_buffered_bytes: usize,
        write_timeout_ms: u64,
        idle_ms: Option<u64>,
        max_connections: Option<usize>,
    ) -> PyResult<Self> {
        if fd < 0 {
            return Err(PyValueError::new_err(format!(
                "fd must be a listening socket's descriptor, got {fd}"
            )));
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
            max_queued_replies,
            max_buffered_bytes,
            write_timeout_ms,
            idle_ms,
            max_connections,
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
    #[pyo3(signature = (group_id, member_id, generation_id, group_instance_id, session_timeout_ms, handle, session_deadline_ms))]
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
            )
        });
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

    /// Running totals: bytes in and out, connections accepted, refused and open, the most
    /// reply bytes one connection held unsent, heartbeats answered natively, members
    /// admitted.
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (c, answered, admitted) = self
            .shell
            .with_shared(|s| (s.counters, s.fast.answered(), s.fast.len()));
        let d = PyDict::new(py);
        d.set_item("bytes_in", c.bytes_in)?;
        d.set_item("bytes_out", c.bytes_out)?;
        d.set_item("accepted", c.accepted)?;
        d.set_item("refused", c.refused)?;
        d.set_item("open", c.open)?;
        d.set_item("peak_unsent", c.peak_unsent)?;
        d.set_item("heartbeats_answered", answered)?;
        d.set_item("admitted", admitted)?;
        Ok(d)
    }

    /// Stop accepting, send what is ready, close every connection, end the thread.
    fn stop(&mut self, py: Python<'_>) {
        let shell = &mut self.shell;
        py.detach(|| shell.stop());
    }
}
