//! PyO3 conversions between Python objects and the core algorithms. Nothing here
//! decides anything an algorithm decides; it only reads input and builds output.

mod app_loop;
mod assign;
mod assign_input;
mod assign_server;
mod connection_limits;
mod current_input;
mod errors;
mod group_memo;
mod lane_loop;
mod lane_set;
mod net_shell;
mod offset_records;
mod tuple_maker;

use pyo3::prelude::*;

mod timer;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(app_loop::app_loop, m)?)?;
    m.add_class::<lane_loop::LaneAppPy>()?;
    m.add_class::<lane_set::LaneSetPy>()?;
    m.add_function(wrap_pyfunction!(assign::assign, m)?)?;
    m.add_function(wrap_pyfunction!(assign::assign_encoded, m)?)?;
    m.add_function(wrap_pyfunction!(assign_server::assign_server, m)?)?;
    m.add_function(wrap_pyfunction!(assign_server::plain_current, m)?)?;
    m.add_class::<assign_server::ServerTargetPy>()?;
    m.add_class::<net_shell::NetShellPy>()?;
    m.add_class::<connection_limits::ConnectionLimitsPy>()?;
    timer::register(m)?;
    Ok(())
}
