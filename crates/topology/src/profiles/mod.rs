//! The built-in hardware profiles, built once and looked up by name.
//!
//! Bandwidths follow spec/gpu.md's table. Where no public per-pair figure
//! exists (HCCS, UB, A3 dies, PCIe levels) the figure is a documented nominal
//! value: the Ascend allocators follow ring rules and never read it, and the
//! GPU allocator only needs the order of the levels to be right.

mod ascend;
mod build;
mod nvidia;

pub use ascend::{vnpu_910b_chip, VNPU_910B_CHIPS};
pub use nvidia::card_memory_gib;

use crate::profile::Profile;
use std::sync::OnceLock;

/// Every built-in profile, in a fixed order (Ascend first, then NVIDIA).
pub fn builtins() -> &'static [Profile] {
    static ALL: OnceLock<Vec<Profile>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut v = ascend::profiles();
        v.extend(nvidia::profiles());
        v
    })
}

/// The built-in profile of this name.
pub fn builtin(name: &str) -> Option<&'static Profile> {
    builtins().iter().find(|p| p.name == name)
}

/// Names of all built-in profiles.
pub fn builtin_names() -> Vec<&'static str> {
    builtins().iter().map(|p| p.name.as_str()).collect()
}
