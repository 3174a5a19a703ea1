//! Device allocators: given a node's profile, what is in use on it and one
//! pod's request, choose the exact devices and score the node.
//!
//! Everything here is a pure function of its arguments (no I/O, no clock).
//! [`allocate`] dispatches on the profile's [`AllocatorKind`]; the result's
//! [`NodeScore`] orders nodes with one comparison (greater is better), and
//! [`NoFit`] says why a node cannot take the pod in words the scheduler can
//! count across nodes ("0/5 nodes are available: 3 Insufficient …").

pub mod ascend;
pub mod atlas350;
pub mod gpu;
pub mod share;
pub mod vnpu;

mod types;

use crate::profile::{AllocatorKind, Profile};
pub use types::{
    Allocation, AscendScore, CardStrategy, DeviceRequest, DeviceState, DeviceUse, GpuScore, MemRequest, NoFit,
    NodeScore, ShareRequest, ShareScore, VnpuDvpp, VnpuLevel, VnpuPlacement, VnpuRequest, VnpuScore, WholeRequest,
};

impl DeviceState {
    /// Records an allocation that [`allocate`] returned for `req`, so the next
    /// decision on this node sees it: whole devices become allocated, a vNPU
    /// adds its template to its chip, a share adds its milli-GPU.
    pub fn apply(&mut self, profile: &Profile, req: &DeviceRequest, alloc: &Allocation) {
        if self.partial.len() < profile.len() {
            self.partial.resize(profile.len(), DeviceUse::default());
        }
        match (req, &alloc.vnpu) {
            (DeviceRequest::Vnpu(_), Some(v)) => {
                let spec = profile.vnpu.as_ref();
                let template = spec.and_then(|s| s.template(&v.template).map(|t| (s, t)));
                if let (Some((spec, t)), Some(slot)) = (template, self.partial.get_mut(v.chip)) {
                    *slot = vnpu::add(spec, slot, t);
                }
            }
            (DeviceRequest::Share(s), _) => {
                for i in alloc.devices.iter() {
                    if let Some(slot) = self.partial.get_mut(i) {
                        slot.gpu_milli += s.milli;
                    }
                }
            }
            (DeviceRequest::Memory(m), _) => {
                for i in alloc.devices.iter() {
                    if let Some(slot) = self.partial.get_mut(i) {
                        slot.gpu_milli += m.milli;
                        slot.gpu_mem_mib += m.mib;
                    }
                }
            }
            _ => self.allocated = self.allocated.or(alloc.devices),
        }
    }
}

/// Chooses devices for one pod on one node of this profile.
pub fn allocate(profile: &Profile, state: &DeviceState, req: &DeviceRequest) -> Result<Allocation, NoFit> {
    match req {
        DeviceRequest::Whole(w) => {
            if w.count == 0 {
                return Err(NoFit::InvalidCount {
                    resource: profile.resource_name.clone(),
                    count: 0,
                    machine: profile.name.clone(),
                    allowed: "at least 1".into(),
                });
            }
            match profile.allocator {
                AllocatorKind::Gpu => gpu::allocate(profile, state, w),
                _ => ascend::allocate(profile, state, w),
            }
        }
        DeviceRequest::Vnpu(v) => vnpu::allocate(profile, state, v),
        DeviceRequest::Share(s) => share::allocate(profile, state, s),
        DeviceRequest::Memory(m) => share::allocate_memory(profile, state, m),
    }
}
