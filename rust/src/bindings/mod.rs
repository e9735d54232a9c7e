//! PyO3 conversions between Python objects and the core algorithms.

use pyo3::prelude::*;

mod timer;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    timer::register(m)?;
    Ok(())
}
