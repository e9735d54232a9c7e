//! The native network shell: a listener's sockets served by a Rust thread off the GIL.
//!
//! Python keeps the protocol (its dispatcher answers every frame but two kinds); this
//! thread does the I/O, answers the heartbeats of members Python admitted
//! ([`fast_heartbeats`]), the one request that is most of a coordinator's traffic and
//! whose answer needs no Python once the coordinator has said the member is current, and
//! takes their common commits ([`fast_commits`]), whose answer is known as soon as they
//! are read and needs only their write. Only [`io_loop`] does I/O; the other modules are
//! pure and tested on their own. [`connection_limits`] is the server's one table of open
//! connections, which every listener of either shell counts in.

pub mod commit_wire;
pub mod connection_limits;
pub mod fast_commits;
pub mod fast_heartbeats;
pub mod frames;
pub mod heartbeat_wire;
pub mod io_loop;
pub mod latencies;
pub mod member;
pub mod reply_order;
mod wire_cursor;
