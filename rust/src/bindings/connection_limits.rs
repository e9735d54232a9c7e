//! `groupcoord._core.ConnectionLimits`: the server's connection quotas
//! (`crate::net::connection_limits`) for Python. The asyncio shell counts its connections
//! here, and every native shell given the same object counts its own in the same table.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::net::connection_limits::ConnectionLimits;
use crate::net::io_loop;

#[pyclass(name = "ConnectionLimits", module = "groupcoord._core", frozen)]
pub struct ConnectionLimitsPy {
    pub(crate) inner: Arc<Mutex<ConnectionLimits>>,
}

/// A peer address as Python's sockets give it (`"10.0.0.1"`, `"::1"`, an IPv6 address
/// with its `%scope`, which does not make it another client).
fn parse(address: &str) -> PyResult<IpAddr> {
    let bare = address.split('%').next().unwrap_or(address);
    bare.parse().map_err(|_| {
        PyValueError::new_err(format!(
            "{address:?} is not an IP address (a client's peer address)"
        ))
    })
}

impl ConnectionLimitsPy {
    fn lock(&self) -> MutexGuard<'_, ConnectionLimits> {
        io_loop::lock(&self.inner)
    }
}

#[pymethods]
impl ConnectionLimitsPy {
    #[new]
    #[pyo3(signature = (max_connections = None, max_connections_per_ip = None))]
    fn new(max_connections: Option<usize>, max_connections_per_ip: Option<usize>) -> Self {
        ConnectionLimitsPy {
            inner: Arc::new(Mutex::new(ConnectionLimits::new(
                max_connections,
                max_connections_per_ip,
            ))),
        }
    }

    /// Count a new connection from `address`; the Kafka name of the limit it would exceed
    /// instead (then it is not counted).
    fn open(&self, address: &str) -> PyResult<Option<&'static str>> {
        let ip = parse(address)?;
        Ok(self.lock().open(ip).err().map(|limit| limit.kafka_name()))
    }

    /// A connection `open` counted has closed; `False` if none from `address` was open.
    fn close(&self, address: &str) -> PyResult<bool> {
        let ip = parse(address)?;
        Ok(self.lock().close(ip))
    }

    /// Connections open now, over every listener.
    #[getter]
    fn open_connections(&self) -> usize {
        self.lock().open_connections()
    }

    /// Open connections per client address.
    fn per_ip(&self) -> HashMap<String, usize> {
        self.lock()
            .per_ip()
            .map(|(ip, n)| (ip.to_string(), n))
            .collect()
    }
}
