//! Helpers the built-in profiles are written with: link matrices and
//! numbered device lists.

use crate::profile::{Device, Link, LinkKind};

/// An n×n link matrix from a function of the pair (called for `i != j` only).
pub(crate) fn matrix(n: usize, f: impl Fn(usize, usize) -> Link) -> Vec<Vec<Link>> {
    (0..n)
        .map(|i| (0..n).map(|j| if i == j { Link { kind: LinkKind::SelfLink, mbps: 0 } } else { f(i, j) }).collect())
        .collect()
}

/// Devices `0..n` named `{prefix}{i}`, NUMA node from `numa(i)`.
pub(crate) fn devices(n: usize, prefix: &str, numa: impl Fn(usize) -> Option<u32>) -> Vec<Device> {
    (0..n).map(|i| Device { id: i as u32, name: format!("{prefix}{i}"), numa: numa(i), bus_id: None }).collect()
}
