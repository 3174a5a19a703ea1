//! Atlas 350 (`huawei.com/npu`) allocators, after MindCluster's
//! ascend-for-volcano: its `chip4nodex` policy for the servers whose cards sit
//! in UB meshes of 4 (chip4-node8, chip4-node16), and its base handler for the
//! servers without interconnect (chip1-node8, chip1-node16). docs/atlas-350.md
//! lists the rules and where they differ from the seeds' text.

use super::{AscendScore, NoFit};
use crate::devset::DeviceSet;
use crate::profile::Profile;

/// Cards per UB mesh.
pub const MESH_SIZE: u32 = 4;

/// Whether `count` cards per pod get mesh affinity: fewer than a mesh, or
/// whole meshes. Other counts (5, 6, 7, 9, …) take any free cards.
pub fn mesh_affinity(count: u32) -> bool {
    count <= MESH_SIZE || count.is_multiple_of(MESH_SIZE)
}

/// chip4-node8 / chip4-node16. The score's `affinity_rank` is the number of
/// meshes that could serve the request beyond those it takes (fewer is better:
/// MindCluster scores the spare meshes before the spare cards).
pub(super) fn ub_mesh4(profile: &Profile, usable: DeviceSet, count: u32) -> Result<(DeviceSet, AscendScore), NoFit> {
    let meshes: Vec<DeviceSet> = profile.groups.iter().map(|m| m.and(usable)).collect();
    if !mesh_affinity(count) {
        let chosen = usable.lowest(count).ok_or(NoFit::Insufficient { resource: profile.resource_name.clone() })?;
        return Ok((chosen, AscendScore::default()));
    }
    if count < MESH_SIZE {
        // Best fit: the mesh with the fewest free cards that still fits; the lowest mesh on ties.
        let fitting = meshes.iter().filter(|m| m.len() >= count).count() as u32;
        let free = meshes
            .iter()
            .filter(|m| m.len() >= count)
            .min_by_key(|m| m.len())
            .ok_or(NoFit::NoRing { ring: "UB", count })?;
        let chosen = free.lowest(count).unwrap_or_default();
        return Ok((chosen, AscendScore { affinity_rank: fitting - 1, ..AscendScore::default() }));
    }
    let whole: Vec<DeviceSet> =
        profile.groups.iter().copied().filter(|m| m.len() == MESH_SIZE && m.and(usable) == *m).collect();
    let need = count / MESH_SIZE;
    if (whole.len() as u32) < need {
        return Err(NoFit::NoWholeRings { ring: "UB", rings: need });
    }
    let chosen = whole.iter().take(need as usize).fold(DeviceSet::EMPTY, |a, m| a.or(*m));
    Ok((chosen, AscendScore { affinity_rank: whole.len() as u32 - need, ..AscendScore::default() }))
}

/// chip1-node8 / chip1-node16: the lowest free cards. MindCluster's base
/// handler scores a node `healthy × 10 − free` (allocatable is counted in
/// thousandths and divided by 100); the rank below is that score negated and
/// shifted to stay non-negative, so more healthy cards and then fewer free
/// cards win, and 1 healthy card outweighs up to 9 free ones, as there.
pub(super) fn no_link(
    profile: &Profile,
    usable: DeviceSet,
    count: u32,
    healthy: u32,
) -> Result<(DeviceSet, AscendScore), NoFit> {
    let chosen = usable.lowest(count).ok_or(NoFit::Insufficient { resource: profile.resource_name.clone() })?;
    let total = profile.len() as u32;
    let rank = 10 * total.saturating_sub(healthy) + usable.len();
    Ok((chosen, AscendScore { affinity_rank: rank, ..AscendScore::default() }))
}
