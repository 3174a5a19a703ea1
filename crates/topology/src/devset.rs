//! A set of device indices of one node, as a 64-bit mask.
//!
//! Hand-written rather than taken from a bitset crate: the allocators need
//! `Copy`, population count and subset enumeration on at most 64 devices,
//! and a plain `u64` gives all three at register speed.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The most devices one node may have.
pub const MAX_DEVICES: usize = 64;
/// The most GPUs the exact search handles on one node.
pub const MAX_GPUS: usize = 16;

/// A set of device indices (`0..64`) of one node.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DeviceSet(pub u64);

impl DeviceSet {
    /// The empty set.
    pub const EMPTY: DeviceSet = DeviceSet(0);

    /// The devices `0..n`.
    pub fn first(n: usize) -> DeviceSet {
        if n >= 64 {
            DeviceSet(u64::MAX)
        } else {
            DeviceSet((1u64 << n) - 1)
        }
    }

    /// The devices `start..end`.
    pub fn range(start: usize, end: usize) -> DeviceSet {
        DeviceSet(Self::first(end).0 & !Self::first(start).0)
    }

    /// The set holding the given indices; indices ≥ 64 are ignored.
    pub fn from_indices<I: IntoIterator<Item = usize>>(indices: I) -> DeviceSet {
        let mut s = DeviceSet::EMPTY;
        for i in indices {
            s.insert(i);
        }
        s
    }

    /// Whether index `i` is in the set.
    pub fn contains(self, i: usize) -> bool {
        i < 64 && self.0 & (1u64 << i) != 0
    }

    /// Adds index `i` (ignored when ≥ 64).
    pub fn insert(&mut self, i: usize) {
        if i < 64 {
            self.0 |= 1u64 << i;
        }
    }

    /// Removes index `i`.
    pub fn remove(&mut self, i: usize) {
        if i < 64 {
            self.0 &= !(1u64 << i);
        }
    }

    /// Number of devices in the set.
    pub fn len(self) -> u32 {
        self.0.count_ones()
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Devices in both sets.
    pub fn and(self, other: DeviceSet) -> DeviceSet {
        DeviceSet(self.0 & other.0)
    }

    /// Devices in either set.
    pub fn or(self, other: DeviceSet) -> DeviceSet {
        DeviceSet(self.0 | other.0)
    }

    /// Devices in `self` but not in `other`.
    pub fn minus(self, other: DeviceSet) -> DeviceSet {
        DeviceSet(self.0 & !other.0)
    }

    /// The `n` lowest indices of the set, or `None` when it has fewer.
    pub fn lowest(self, n: u32) -> Option<DeviceSet> {
        if self.len() < n {
            return None;
        }
        let mut rest = self.0;
        let mut out = 0u64;
        for _ in 0..n {
            let bit = rest & rest.wrapping_neg();
            out |= bit;
            rest &= !bit;
        }
        Some(DeviceSet(out))
    }

    /// The indices in increasing order.
    pub fn iter(self) -> DeviceSetIter {
        DeviceSetIter(self.0)
    }

    /// The indices in increasing order, as a vector.
    pub fn to_vec(self) -> Vec<usize> {
        self.iter().collect()
    }
}

/// Iterator over the indices of a [`DeviceSet`], lowest first.
pub struct DeviceSetIter(u64);

impl Iterator for DeviceSetIter {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let i = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        Some(i)
    }
}

impl fmt::Debug for DeviceSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl fmt::Display for DeviceSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for i in self.iter() {
            if !first {
                f.write_str(",")?;
            }
            write!(f, "{i}")?;
            first = false;
        }
        Ok(())
    }
}
