//! Hardware profiles (chip layout, links, vNPU templates), parsers of `nvidia-smi topo -m` and `npu-smi info`, and the device allocators that pick exact devices for a pod.
//!
//! * [`profiles::builtins`] / [`profiles::builtin`]: the machine types ringleader knows.
//! * [`parse::nvidia_smi`], [`parse::npu_smi`]: turn tool output into a [`Profile`].
//! * [`allocate`]: one pod's devices on one node, with a [`NodeScore`] to order nodes
//!   and a [`NoFit`] reason when the node cannot take it. Pure functions: no I/O, no clock.

pub mod alloc;
pub mod devset;
pub mod parse;
pub mod profile;
pub mod profiles;

pub use alloc::{
    allocate, Allocation, AscendScore, CardStrategy, DeviceRequest, DeviceState, DeviceUse, GpuScore, NoFit, NodeScore,
    ShareRequest, ShareScore, VnpuDvpp, VnpuLevel, VnpuPlacement, VnpuRequest, VnpuScore, WholeRequest,
};
pub use devset::DeviceSet;
pub use parse::ParseError;
pub use profile::{AllocatorKind, Device, Link, LinkKind, LinkSpeeds, Profile, SchedulePolicy, Vendor};
pub use profiles::{builtin, builtin_names, builtins};
