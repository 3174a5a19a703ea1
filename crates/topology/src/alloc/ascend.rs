//! Ascend whole-chip allocators: the chip-affinity rules of spec/ascend.md,
//! one function per `schedule_policy` family.
//!
//! Where the spec is silent, these choices hold (and are tested):
//! * Atlas 350 (`huawei.com/npu`: chip4-node8/16, chip1-node8/16) follows
//!   MindCluster's current code instead, in [`super::atlas350`].
//! * chip8-node8, 300T: any usable chips, lowest IDs; nodes by best fit
//!   (fewest free chips after).
//! * Box16 ties between rings with the same free count: ring 0–7 first; a
//!   request over 8 takes the lowest free pairs (i, i+8), and its best-fit
//!   rank is the number of spare free pairs.
//! * A3 single die: the card with the fewest usable dies (a partner die that
//!   is allocated or unhealthy both count as used), then the lowest card.
//! * 310 card mode: the card preference of [`card_preference`] (MindCluster's
//!   `card310x4` / `card310px2`); the node score is the chosen card's rank.
//! * [`AscendScore::healthy_chips`] is filled only where the spec's node order
//!   starts with health (Atlas 800 rings and Box16), 0 elsewhere.

use super::{atlas350, Allocation, AscendScore, CardStrategy, DeviceState, NoFit, NodeScore, WholeRequest};
use crate::devset::DeviceSet;
use crate::profile::{AllocatorKind, GroupKind, Profile};

/// Ring preference of the Atlas 800 rules: for a request of 1, 2 or 4 chips,
/// the ring free counts in order of preference (most preferred first).
pub fn ring4_preference(count: u32) -> &'static [u32] {
    match count {
        1 => &[1, 3, 2, 4],
        2 => &[2, 4, 3],
        4 => &[4],
        _ => &[],
    }
}

/// Card-mode (`npu-310-strategy: card`) preference: for a request of `count`
/// chips on cards of `card_size`, the card free counts in order of preference.
/// MindCluster's 4-chip 300I card takes a single chip from a card with 1 free,
/// then 3, then 2, then 4 (a card with exactly 2 free stays whole for a later
/// 2-chip request); every other case is best fit (`count`, …, `card_size`).
pub fn card_preference(card_size: u32, count: u32) -> Vec<u32> {
    if card_size == 4 && count == 1 {
        vec![1, 3, 2, 4]
    } else {
        (count.max(1)..=card_size).collect()
    }
}

/// Counts a pod may request on this profile, as (list, text for errors).
pub fn allowed_counts(profile: &Profile, multi_pod: bool, strategy: CardStrategy) -> (Vec<u32>, String) {
    let n = profile.len() as u32;
    let list: Vec<u32> = match profile.allocator {
        AllocatorKind::AscendRing4 => [1, 2, 4, 8, 16].into_iter().filter(|&c| c <= n).collect(),
        // MindCluster's chip1-node2 handler checks only 1 ≤ n ≤ node size, for
        // single and distributed jobs alike.
        AllocatorKind::Ascend300T => (1..=n).collect(),
        AllocatorKind::AscendBox16 => (1..=8).chain([10, 12, 14, 16]).collect(),
        AllocatorKind::AscendA3 => {
            let even = (2..=n).step_by(2);
            if multi_pod {
                even.collect()
            } else {
                std::iter::once(1).chain(even).collect()
            }
        }
        AllocatorKind::Ascend310Cards if strategy == CardStrategy::Card => (1..=card_size(profile) as u32).collect(),
        _ => (1..=n).collect(),
    };
    let text = describe(&list);
    (list, text)
}

fn describe(list: &[u32]) -> String {
    let contiguous = list.windows(2).all(|w| w[1] == w[0] + 1);
    match (list.first(), list.last()) {
        (Some(a), Some(b)) if contiguous && list.len() > 2 => format!("{a}–{b}"),
        _ => list.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
    }
}

fn card_size(profile: &Profile) -> usize {
    profile.groups.first().map_or(1, |g| g.len() as usize).max(1)
}

fn ring_word(profile: &Profile) -> &'static str {
    if profile.group_kind == GroupKind::UbRing {
        "UB"
    } else {
        "HCCS"
    }
}

/// Chooses whole chips on an Ascend node.
pub fn allocate(profile: &Profile, state: &DeviceState, req: &WholeRequest) -> Result<Allocation, NoFit> {
    let count = req.count;
    let (allowed, text) = allowed_counts(profile, req.multi_pod, req.card_strategy);
    if !allowed.contains(&count) {
        if profile.allocator == AllocatorKind::AscendA3 && count == 1 && req.multi_pod {
            return Err(NoFit::SingleDieMultiPod);
        }
        let machine = profile.schedule_policy.map_or_else(|| profile.name.clone(), |p| p.as_str().to_string());
        let allowed = if profile.allocator == AllocatorKind::AscendRing4 && profile.len() == 8 {
            format!("{text}; more than 8 as 8×N with one pod per 8 chips")
        } else {
            text
        };
        return Err(NoFit::InvalidCount { resource: profile.resource_name.clone(), count, machine, allowed });
    }
    // MindCluster's base handler (chip1-node8/16) does not watch network faults.
    let network_faults = req.multi_pod && profile.allocator != AllocatorKind::AscendNoLink;
    let usable = state.whole_free(profile, network_faults);
    if usable.len() < count {
        return Err(NoFit::Insufficient { resource: profile.resource_name.clone() });
    }
    let healthy = state.healthy(profile).len();
    let (chosen, mut score) = match profile.allocator {
        AllocatorKind::AscendRing4 => ring4(profile, usable, count, healthy)?,
        AllocatorKind::AscendBox16 => box16(usable, count, healthy)?,
        AllocatorKind::AscendA3 => a3(profile, usable, count)?,
        AllocatorKind::AscendUbMesh4 => atlas350::ub_mesh4(profile, usable, count)?,
        AllocatorKind::AscendNoLink => atlas350::no_link(profile, usable, count, healthy)?,
        AllocatorKind::Ascend310Cards => cards310(profile, usable, count, req.card_strategy)?,
        // chip8-node8 full mesh and the 300T: any chips, lowest IDs; nodes by best fit.
        _ => (usable.lowest(count).unwrap_or_default(), AscendScore::default()),
    };
    score.free_after = usable.len() - count;
    Ok(Allocation::new(profile, chosen, NodeScore::Ascend(score)))
}

/// Atlas 800 (chip4-node8), half (chip4-node4): HCCS rings of 4.
fn ring4(profile: &Profile, usable: DeviceSet, count: u32, healthy: u32) -> Result<(DeviceSet, AscendScore), NoFit> {
    let rings = &profile.groups;
    if count <= 4 {
        let pref = ring4_preference(count);
        // Lowest rank wins; on equal rank the earlier ring (0–3 first).
        let best = rings
            .iter()
            .map(|r| r.and(usable))
            .filter_map(|free| pref.iter().position(|&c| c == free.len()).map(|rank| (rank, free)))
            .min_by_key(|(rank, _)| *rank);
        let (rank, free) = best.ok_or(NoFit::NoRing { ring: ring_word(profile), count })?;
        let chosen = free.lowest(count).unwrap_or_default();
        let score = AscendScore {
            healthy_chips: healthy,
            affinity_rank: rank as u32,
            free_after: 0,
            even_remainder: (free.len() - count) & 1 == 0,
        };
        return Ok((chosen, score));
    }
    // 8 or 16: whole rings, all fully free.
    let whole: Vec<DeviceSet> = rings.iter().copied().filter(|r| r.and(usable) == *r).collect();
    let need = (count / 4) as usize;
    if whole.len() < need {
        return Err(NoFit::NoRing { ring: ring_word(profile), count });
    }
    let chosen = whole.iter().take(need).fold(DeviceSet::EMPTY, |a, r| a.or(*r));
    Ok((chosen, AscendScore { healthy_chips: healthy, affinity_rank: 0, free_after: 0, even_remainder: true }))
}

/// Atlas 200T A2 Box16 (chip8-node16): rings 0–7 and 8–15.
fn box16(usable: DeviceSet, count: u32, healthy: u32) -> Result<(DeviceSet, AscendScore), NoFit> {
    if count <= 8 {
        let rings = [DeviceSet::range(0, 8), DeviceSet::range(8, 16)];
        for target in count..=8 {
            if let Some(free) = rings.iter().map(|r| r.and(usable)).find(|f| f.len() == target) {
                let chosen = free.lowest(count).unwrap_or_default();
                let score = AscendScore {
                    healthy_chips: healthy,
                    affinity_rank: target - count,
                    free_after: 0,
                    even_remainder: false,
                };
                return Ok((chosen, score));
            }
        }
        return Err(NoFit::NoRing { ring: "HCCS", count });
    }
    let pairs: Vec<usize> = (0..8).filter(|&i| usable.contains(i) && usable.contains(i + 8)).collect();
    let need = count / 2;
    if (pairs.len() as u32) < need {
        return Err(NoFit::NoCrossRingPairs { pairs: need });
    }
    let chosen = DeviceSet::from_indices(pairs.iter().take(need as usize).flat_map(|&i| [i, i + 8]));
    let score = AscendScore {
        healthy_chips: healthy,
        affinity_rank: pairs.len() as u32 - need,
        free_after: 0,
        even_remainder: false,
    };
    Ok((chosen, score))
}

/// A3 (chip2-node16, chip2-node16-sp): cards of 2 dies.
fn a3(profile: &Profile, usable: DeviceSet, count: u32) -> Result<(DeviceSet, AscendScore), NoFit> {
    if count == 1 {
        // Most-used card first: a card with one usable die beats a whole free one; then the lowest card.
        let (rank, free) = profile
            .groups
            .iter()
            .map(|c| c.and(usable))
            .filter(|f| !f.is_empty())
            .map(|f| (f.len() - 1, f))
            .min_by_key(|(rank, _)| *rank)
            .ok_or(NoFit::Insufficient { resource: profile.resource_name.clone() })?;
        let chosen = free.lowest(1).unwrap_or_default();
        return Ok((chosen, AscendScore { affinity_rank: rank, ..AscendScore::default() }));
    }
    let whole: Vec<DeviceSet> = profile.groups.iter().copied().filter(|c| c.and(usable) == *c).collect();
    let need = count / 2;
    if (whole.len() as u32) < need {
        return Err(NoFit::NoWholeCards { cards: need });
    }
    let chosen = whole.iter().take(need as usize).fold(DeviceSet::EMPTY, |a, c| a.or(*c));
    Ok((chosen, AscendScore::default()))
}

/// Atlas 300I / 300I Duo / 310P cards.
fn cards310(
    profile: &Profile,
    usable: DeviceSet,
    count: u32,
    strategy: CardStrategy,
) -> Result<(DeviceSet, AscendScore), NoFit> {
    let cards = &profile.groups;
    if strategy == CardStrategy::Card {
        // The card whose free count comes first in the preference list, then the lowest card.
        let pref = card_preference(card_size(profile) as u32, count);
        let (rank, free) = cards
            .iter()
            .map(|c| c.and(usable))
            .filter_map(|f| pref.iter().position(|&want| want == f.len()).map(|rank| (rank as u32, f)))
            .min_by_key(|(rank, _)| *rank)
            .ok_or(NoFit::NoCard { count })?;
        return Ok((
            free.lowest(count).unwrap_or_default(),
            AscendScore { affinity_rank: rank, ..AscendScore::default() },
        ));
    }
    if card_size(profile) != 2 {
        return Ok((usable.lowest(count).unwrap_or_default(), AscendScore::default()));
    }
    // Duo: pairs as whole cards, the odd chip on a card with exactly one free
    // chip so that whole cards stay whole for later pairs.
    let whole: Vec<DeviceSet> = cards.iter().copied().filter(|c| c.and(usable) == *c).collect();
    let halves: Vec<DeviceSet> = cards.iter().map(|c| c.and(usable)).filter(|f| f.len() == 1).collect();
    let pairs = (count / 2) as usize;
    let mut chosen = DeviceSet::EMPTY;
    for c in whole.iter().take(pairs) {
        chosen = chosen.or(*c);
    }
    let mut halves_left = halves.iter().copied();
    let mut missing = count - chosen.len();
    let mut rank = 0;
    if count % 2 == 1 {
        if let Some(h) = halves_left.next() {
            chosen = chosen.or(h);
            missing -= 1;
        } else {
            rank = 1;
        }
    }
    // Short of whole cards or half cards: any remaining usable chips, lowest first.
    for h in halves_left.take(missing as usize) {
        chosen = chosen.or(h);
    }
    let rest = count - chosen.len();
    if rest > 0 {
        let extra =
            usable.minus(chosen).lowest(rest).ok_or(NoFit::Insufficient { resource: profile.resource_name.clone() })?;
        chosen = chosen.or(extra);
    }
    Ok((chosen, AscendScore { affinity_rank: rank, ..AscendScore::default() }))
}
