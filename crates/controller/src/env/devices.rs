//! Visible devices: the allocated device IDs, for GPUs
//! (`CUDA_VISIBLE_DEVICES`, `NVIDIA_VISIBLE_DEVICES`) and whole NPUs
//! (`ASCEND_VISIBLE_DEVICES`, `ASCEND_RT_VISIBLE_DEVICES`).
//!
//! Ringleader's node agent runs pods as processes, not in containers that
//! renumber devices, so the runtime-side `ASCEND_RT_VISIBLE_DEVICES` carries
//! the same physical IDs as `ASCEND_VISIBLE_DEVICES`. vNPUs get neither: the
//! runtime creates them when the pod starts (as the Ascend Operator skips
//! `ASCEND_VISIBLE_DEVICES` for virtual resources).

use super::context::{Ctx, PodEnv};
use crate::expand::PodPlan;
use ringleader_api::devices::{classify, Family};
use ringleader_api::DeviceKind;

pub(crate) fn placed(ctx: &Ctx<'_>, pod: &PodPlan, env: &mut PodEnv) {
    let Some(placement) = ctx.placement else { return };
    let Some(list) = placement.device_list(&pod.name) else { return };
    let Some(req) = ctx.role(pod).and_then(|r| r.device.as_ref()) else { return };
    match classify(&req.resource) {
        Some((Family::Gpu, _)) => {
            env.set("CUDA_VISIBLE_DEVICES", list.clone());
            env.set("NVIDIA_VISIBLE_DEVICES", list);
        }
        Some((Family::Ascend, DeviceKind::Whole)) => {
            env.set("ASCEND_VISIBLE_DEVICES", list.clone());
            env.set("ASCEND_RT_VISIBLE_DEVICES", list);
        }
        _ => {}
    }
}
