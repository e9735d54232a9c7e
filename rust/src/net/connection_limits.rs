//! Kafka's connection quotas, counted for the whole server: `max.connections` (open
//! connections over every listener) and `max.connections.per.ip` (open connections from
//! one client address over every listener). One table is shared by every listener,
//! whichever shell serves it (the asyncio shell through the bindings, each native shell's
//! I/O thread directly), so a client cannot get past a limit by spreading its connections
//! over listeners, as it cannot on a Kafka broker.
//!
//! A connection is counted from the accept that [`ConnectionLimits::open`] allowed until
//! its [`ConnectionLimits::close`]; a refused one is never counted (the shell closes it
//! at once, as Kafka's acceptor does).

use std::net::IpAddr;

use rustc_hash::FxHashMap;

/// The limit a new connection would exceed, by Kafka's name for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    MaxConnections,
    MaxConnectionsPerIp,
}

impl Limit {
    pub fn kafka_name(self) -> &'static str {
        match self {
            Limit::MaxConnections => "max.connections",
            Limit::MaxConnectionsPerIp => "max.connections.per.ip",
        }
    }
}

/// Open connections, in total and per client address, against the two limits.
#[derive(Debug, Default)]
pub struct ConnectionLimits {
    max_connections: Option<usize>,
    max_per_ip: Option<usize>,
    open: usize,
    /// only addresses with at least one open connection (a count never sits at zero)
    per_ip: FxHashMap<IpAddr, usize>,
}

/// An IPv4 client seen through an IPv6 socket (`::ffff:a.b.c.d`) is the same client as
/// over IPv4, and counts as one address.
fn canonical(ip: IpAddr) -> IpAddr {
    ip.to_canonical()
}

impl ConnectionLimits {
    pub fn new(max_connections: Option<usize>, max_per_ip: Option<usize>) -> Self {
        ConnectionLimits {
            max_connections,
            max_per_ip,
            ..Self::default()
        }
    }

    /// Count a new connection from `ip`, or say which limit it would exceed (then nothing
    /// is counted). `max.connections` is checked first, as Kafka's acceptor does.
    pub fn open(&mut self, ip: IpAddr) -> Result<(), Limit> {
        if self.max_connections.is_some_and(|max| self.open >= max) {
            return Err(Limit::MaxConnections);
        }
        let ip = canonical(ip);
        let from_ip = self.per_ip.get(&ip).copied().unwrap_or(0);
        if self.max_per_ip.is_some_and(|max| from_ip >= max) {
            return Err(Limit::MaxConnectionsPerIp);
        }
        self.open += 1;
        self.per_ip.insert(ip, from_ip + 1);
        Ok(())
    }

    /// A connection [`open`](Self::open) counted has closed. `false` (and nothing
    /// changes) if no connection from `ip` is open: a shell's bug, not worth a panic in a
    /// server that is still serving everyone else.
    pub fn close(&mut self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        let Some(count) = self.per_ip.get_mut(&ip) else {
            return false;
        };
        *count -= 1;
        if *count == 0 {
            self.per_ip.remove(&ip);
        }
        self.open -= 1;
        debug_assert_eq!(
            self.open,
            self.per_ip.values().sum::<usize>(),
            "open total and per-address counts disagree: {self:?}"
        );
        true
    }

    /// Connections open now, over every listener.
    pub fn open_connections(&self) -> usize {
        self.open
    }

    /// Open connections per client address (addresses with none are absent).
    pub fn per_ip(&self) -> impl Iterator<Item = (IpAddr, usize)> + '_ {
        self.per_ip.iter().map(|(ip, n)| (*ip, *n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn v4(last: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(127, 0, 0, last))
    }

    #[test]
    fn per_ip_limit_leaves_other_addresses_alone() {
        let mut limits = ConnectionLimits::new(None, Some(2));
        assert_eq!(limits.open(v4(2)), Ok(()));
        assert_eq!(limits.open(v4(2)), Ok(()));
        assert_eq!(limits.open(v4(2)), Err(Limit::MaxConnectionsPerIp));
        assert_eq!(limits.open(v4(3)), Ok(()));
        assert!(limits.close(v4(2)));
        assert_eq!(limits.open(v4(2)), Ok(()));
        assert_eq!(limits.open_connections(), 3);
    }

    #[test]
    fn the_total_is_checked_first() {
        let mut limits = ConnectionLimits::new(Some(1), Some(1));
        assert_eq!(limits.open(v4(2)), Ok(()));
        assert_eq!(limits.open(v4(2)), Err(Limit::MaxConnections));
        assert_eq!(limits.open(v4(3)), Err(Limit::MaxConnections));
    }

    #[test]
    fn an_ipv4_client_over_ipv6_is_the_same_address() {
        let mut limits = ConnectionLimits::new(None, Some(1));
        let mapped = IpAddr::V6(Ipv4Addr::new(127, 0, 0, 2).to_ipv6_mapped());
        assert_eq!(limits.open(v4(2)), Ok(()));
        assert_eq!(limits.open(mapped), Err(Limit::MaxConnectionsPerIp));
        assert_eq!(limits.open(IpAddr::V6(Ipv6Addr::LOCALHOST)), Ok(()));
        assert!(limits.close(mapped));
        assert_eq!(limits.per_ip().count(), 1);
    }

    #[test]
    fn closing_what_is_not_open_changes_nothing() {
        let mut limits = ConnectionLimits::new(None, None);
        assert!(!limits.close(v4(9)));
        assert_eq!(limits.open_connections(), 0);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Open(u8),
        Close(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![(0u8..4).prop_map(Op::Open), (0u8..4).prop_map(Op::Close)]
    }

    proptest! {
        /// Against a model that counts every address's connections: each open is allowed
        /// exactly when neither limit is reached, and the counts stay the model's.
        #[test]
        fn matches_a_counting_model(
            max_total in proptest::option::of(0usize..6),
            max_per_ip in proptest::option::of(0usize..4),
            ops in proptest::collection::vec(op(), 0..80),
        ) {
            let mut limits = ConnectionLimits::new(max_total, max_per_ip);
            let mut model = [0usize; 4];
            for op in ops {
                match op {
                    Op::Open(a) => {
                        let total: usize = model.iter().sum();
                        let expected = if max_total.is_some_and(|m| total >= m) {
                            Err(Limit::MaxConnections)
                        } else if max_per_ip.is_some_and(|m| model[a as usize] >= m) {
                            Err(Limit::MaxConnectionsPerIp)
                        } else {
                            model[a as usize] += 1;
                            Ok(())
                        };
                        prop_assert_eq!(limits.open(v4(a)), expected);
                    }
                    Op::Close(a) => {
                        let was_open = model[a as usize] > 0;
                        if was_open {
                            model[a as usize] -= 1;
                        }
                        prop_assert_eq!(limits.close(v4(a)), was_open);
                    }
                }
                prop_assert_eq!(limits.open_connections(), model.iter().sum::<usize>());
                let mut seen: Vec<(IpAddr, usize)> = limits.per_ip().collect();
                seen.sort();
                let expected: Vec<(IpAddr, usize)> = (0u8..4)
                    .filter(|a| model[*a as usize] > 0)
                    .map(|a| (v4(a), model[a as usize]))
                    .collect();
                prop_assert_eq!(seen, expected);
            }
        }
    }
}
