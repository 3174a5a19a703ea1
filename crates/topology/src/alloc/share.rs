//! Fractional GPU sharing: a best-fit choice of one GPU for a pod asking for
//! `gpu_milli` < 1000, or of GPUs with enough free memory for a memory
//! request (ACK gpushare, HAMi). Fragmentation-aware node scoring (FGD)
//! lives in the scheduler; this only picks the GPUs inside a node.

use super::{Allocation, DeviceState, MemRequest, NoFit, NodeScore, ShareRequest, ShareScore};
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

/// Memory of each GPU of the profile, MiB, from its card model.
pub fn gpu_memory_mib(profile: &Profile) -> Option<u32> {
    crate::profiles::card_memory_gib(&profile.chip).map(|gib| gib * 1024)
}

/// Picks `req.gpus` healthy GPUs, not allocated whole, each with `req.mib`
/// memory and `req.milli` cores free: those with the least memory left
/// afterwards (best fit, as gpushare's binpack and HAMi's default), lowest
/// index on ties. The score is the memory the chosen GPUs keep free.
pub fn allocate_memory(profile: &Profile, state: &DeviceState, req: &MemRequest) -> Result<Allocation, NoFit> {
    if profile.vendor != Vendor::Nvidia {
        return Err(NoFit::Unsupported { what: "GPU memory sharing".into(), profile: profile.name.clone() });
    }
    let Some(card) = gpu_memory_mib(profile) else {
        return Err(NoFit::Unsupported {
            what: format!("GPU memory sharing (memory of {:?} unknown)", profile.chip),
            profile: profile.name.clone(),
        });
    };
    let bad = |count: u32, allowed: String| NoFit::InvalidCount {
        resource: "GPU memory (MiB per GPU)".into(),
        count,
        machine: profile.name.clone(),
        allowed,
    };
    if req.mib == 0 || req.mib > card {
        return Err(bad(req.mib, format!("1–{card} ({} GiB cards)", card / 1024)));
    }
    if req.gpus == 0 || req.gpus as usize > profile.len() {
        return Err(NoFit::InvalidCount {
            resource: "GPUs for GPU memory".into(),
            count: req.gpus,
            machine: profile.name.clone(),
            allowed: format!("1–{}", profile.len()),
        });
    }
    let mut fitting: Vec<(u32, usize)> = profile
        .all()
        .minus(state.allocated)
        .minus(state.unhealthy)
        .iter()
        .filter_map(|i| {
            let used = state.usage(i);
            let mem_left = card.saturating_sub(used.gpu_mem_mib);
            let cores_left = 1000u32.saturating_sub(used.gpu_milli);
            (mem_left >= req.mib && cores_left >= req.milli).then(|| (mem_left - req.mib, i))
        })
        .collect();
    if fitting.len() < req.gpus as usize {
        return Err(NoFit::NoMemoryGpu { gpus: req.gpus, mib: req.mib });
    }
    fitting.sort_unstable();
    fitting.truncate(req.gpus as usize);
    let kept: u32 = fitting.iter().map(|&(left, _)| left).sum();
    let score = ShareScore { gpu_free_after: kept };
    Ok(Allocation::new(profile, DeviceSet::from_indices(fitting.iter().map(|&(_, i)| i)), NodeScore::Share(score)))
}
