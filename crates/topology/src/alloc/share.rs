//! Fractional GPU sharing: a best-fit choice of one GPU for a pod asking for
//! `gpu_milli` < 1000. Fragmentation-aware node scoring (FGD) lives in the
//! scheduler; this only picks the GPU inside a node.

use super::{Allocation, DeviceState, NoFit, NodeScore, ShareRequest, ShareScore};
use crate::devset::DeviceSet;
use crate::profile::{Profile, Vendor};

/// Picks the healthy, not wholly allocated GPU with the least room that still
/// fits `milli` (lowest index on ties).
pub fn allocate(profile: &Profile, state: &DeviceState, req: &ShareRequest) -> Result<Allocation, NoFit> {
    if profile.vendor != Vendor::Nvidia {
        return Err(NoFit::Unsupported { what: "GPU sharing".into(), profile: profile.name.clone() });
    }
    if req.milli == 0 || req.milli >= 1000 {
        return Err(NoFit::InvalidCount {
            resource: "gpu_milli".into(),
            count: req.milli,
            machine: profile.name.clone(),
            allowed: "1–999 (whole GPUs are requested by count)".into(),
        });
    }
    let best = profile
        .all()
        .minus(state.allocated)
        .minus(state.unhealthy)
        .iter()
        .map(|i| (1000u32.saturating_sub(state.usage(i).gpu_milli), i))
        .filter(|&(room, _)| room >= req.milli)
        .min();
    let (room, gpu) = best.ok_or(NoFit::NoShareGpu { milli: req.milli })?;
    let score = ShareScore { gpu_free_after: room - req.milli };
    Ok(Allocation::new(profile, DeviceSet::from_indices([gpu]), NodeScore::Share(score)))
}
