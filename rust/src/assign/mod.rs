//! Partition assignors. Algorithms work on [`model::GroupModel`] (dense integers)
//! and return a [`model::Plan`]; none of these modules knows about Python.

pub mod cooperative;
pub mod fresh_chains;
pub mod give_back;
pub mod model;
pub mod rack;
pub mod range;
pub mod roundrobin;
pub mod sticky;
pub mod uniform;

#[cfg(test)]
mod invariants;
#[cfg(test)]
mod rack_properties;

use model::{GroupModel, Plan};

/// The algorithms, under the protocol names Java members announce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    Range,
    RoundRobin,
    Sticky,
    CooperativeSticky,
}

impl Algorithm {
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "range" => Some(Self::Range),
            "roundrobin" => Some(Self::RoundRobin),
            "sticky" => Some(Self::Sticky),
            "cooperative-sticky" => Some(Self::CooperativeSticky),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Range => "range",
            Self::RoundRobin => "roundrobin",
            Self::Sticky => "sticky",
            Self::CooperativeSticky => "cooperative-sticky",
        }
    }

    pub fn run(self, model: &GroupModel) -> Plan {
        match self {
            Self::Range => range::assign(model),
            Self::RoundRobin => roundrobin::assign(model),
            Self::Sticky => sticky::assign(model),
            Self::CooperativeSticky => cooperative::assign(model),
        }
    }
}

/// KIP-848 server-side assignors, under the names `group.consumer.assignors` uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerAlgorithm {
    Uniform,
    /// Kafka's server-side range is the classic range's output (co-partitioned,
    /// static members first) and, like it, ignores the current assignment.
    Range,
}

impl ServerAlgorithm {
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "uniform" => Some(Self::Uniform),
            "range" => Some(Self::Range),
            _ => None,
        }
    }

    pub fn run(self, model: &GroupModel) -> Plan {
        match self {
            Self::Uniform => uniform::assign(model),
            Self::Range => range::assign(model),
        }
    }
}
