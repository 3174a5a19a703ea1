//! Hardware profiles (chip layout, links, vNPU templates), parsers of `nvidia-smi topo -m` and `npu-smi info`, and the device allocators that pick exact devices for a pod.
//!
//! * [`profiles::builtins`] / [`profiles::builtin`]: the machine types ringleader knows.
//! * [`parse::nvidia_smi`], [`parse::npu_smi`]: turn tool output into a [`Profile`].
//! * [`allocate`]: one pod's devices on one node, with a [`NodeScore`] to order nodes
//!   and a [`NoFit`] reason when the node cannot take it. Pure functions: no I/O, no clock.
//!
//! ```
//! use ringleader_topology::{allocate, builtin, DeviceRequest, DeviceSet, DeviceState};
//!
//! let atlas = builtin("atlas-800-910").unwrap();
//! // Chips 0, 1 and 4 are taken: ring 0–3 has 2 free, ring 4–7 has 3 free.
//! let state = DeviceState::new().with_allocated(DeviceSet::from_indices([0, 1, 4]));
//! // Request 1 prefers a ring with 3 free over one with 2 free.
//! let a = allocate(atlas, &state, &DeviceRequest::whole(1)).unwrap();
//! assert_eq!(a.ids, vec![5]);
//! // Request 4 needs a whole ring.
//! let e = allocate(atlas, &state, &DeviceRequest::whole(4)).unwrap_err();
//! assert_eq!(e.to_string(), "no HCCS ring with 4 free chips");
//! ```

#![warn(missing_docs)]

pub mod alloc;
pub mod devset;
pub mod parse;
pub mod profile;
pub mod profiles;

pub use alloc::{
    allocate, Allocation, AscendScore, CardStrategy, DeviceRequest, DeviceState, DeviceUse, GpuScore, MemRequest,
    NoFit, NodeScore, ShareRequest, ShareScore, VnpuDvpp, VnpuLevel, VnpuPlacement, VnpuRequest, VnpuScore,
    WholeRequest,
};
pub use devset::DeviceSet;
pub use parse::ParseError;
pub use profile::{AllocatorKind, Device, Link, LinkKind, LinkSpeeds, Profile, SchedulePolicy, Vendor};
pub use profiles::{builtin, builtin_names, builtins};
