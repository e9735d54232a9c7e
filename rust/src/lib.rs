//! groupcoord's Rust core: assignors (and, later, the heartbeat timer wheel and
//! member expiry). The algorithm modules never touch PyO3; `bindings` adapts them.

pub mod app_loop;
pub mod assign;
mod bindings;
pub mod consumer_protocol;
pub mod expiry;
pub mod lane_loop;
pub mod lane_set;
pub mod net;
mod prefetch;
pub mod timer;
pub mod whole_ms;

use pyo3::prelude::*;

/// The extension module `groupcoord._core`: registers the bindings, nothing else.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    bindings::register(m)
}
