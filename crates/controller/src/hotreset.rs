//! Hot reset (`-hotReset`): once the job has moved off a faulty chip, the
//! chip is reset when idle; on a server with HCCS rings the whole ring is
//! reset together once every chip of it is idle. A reset takes
//! `reset_secs`; afterwards the chips report healthy again.

use crate::fault::DeviceRef;
use std::collections::{BTreeMap, BTreeSet};

/// Default duration of one reset.
pub const DEFAULT_RESET_SECS: u64 = 60;

/// Start resetting these chips of one node together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResetAction {
    /// Node name.
    pub node: String,
    /// Chips, ascending.
    pub chips: Vec<u32>,
}

/// What one [`HotReset::step`] decided.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HotResetStep {
    /// Resets to start now.
    pub start: Vec<ResetAction>,
    /// Chips whose reset finished: healthy again.
    pub recovered: Vec<DeviceRef>,
}

/// Hot-reset planner: remembers resets in progress.
#[derive(Debug, Clone)]
pub struct HotReset {
    /// Seconds a reset takes.
    pub reset_secs: u64,
    resetting: BTreeMap<DeviceRef, u64>,
}

impl Default for HotReset {
    fn default() -> Self {
        HotReset { reset_secs: DEFAULT_RESET_SECS, resetting: BTreeMap::new() }
    }
}

impl HotReset {
    /// A planner whose resets take `reset_secs`.
    pub fn new(reset_secs: u64) -> HotReset {
        HotReset { reset_secs, resetting: BTreeMap::new() }
    }

    /// A planner resuming resets already in progress (chip → start time),
    /// as a caller that keeps them across restarts recorded them.
    pub fn resume(reset_secs: u64, resetting: BTreeMap<DeviceRef, u64>) -> HotReset {
        HotReset { reset_secs, resetting }
    }

    /// Resets in progress: chip → start time.
    pub fn in_progress(&self) -> &BTreeMap<DeviceRef, u64> {
        &self.resetting
    }

    /// Chips being reset now (busy: give them to nobody).
    pub fn resetting(&self) -> BTreeSet<DeviceRef> {
        self.resetting.keys().cloned().collect()
    }

    /// Decides resets: `faulty` chips needing a reset, `busy` chips a pod
    /// holds, `rings` per node (chips without a ring reset alone).
    pub fn step(
        &mut self,
        faulty: &BTreeSet<DeviceRef>,
        busy: &BTreeSet<DeviceRef>,
        rings: &BTreeMap<String, Vec<Vec<u32>>>,
        now: u64,
    ) -> HotResetStep {
        let mut step = HotResetStep::default();
        let done: Vec<DeviceRef> = self
            .resetting
            .iter()
            .filter(|(_, started)| now.saturating_sub(**started) >= self.reset_secs)
            .map(|(d, _)| d.clone())
            .collect();
        for d in done {
            self.resetting.remove(&d);
            if faulty.contains(&d) {
                step.recovered.push(d);
            }
        }
        let recovered: BTreeSet<DeviceRef> = step.recovered.iter().cloned().collect();
        let mut planned: BTreeSet<DeviceRef> = BTreeSet::new();
        for chip in faulty {
            if recovered.contains(chip) || self.resetting.contains_key(chip) || planned.contains(chip) {
                continue;
            }
            let group: Vec<u32> = rings
                .get(&chip.node)
                .and_then(|rs| rs.iter().find(|r| r.contains(&chip.device)).cloned())
                .unwrap_or_else(|| vec![chip.device]);
            let refs: Vec<DeviceRef> =
                group.iter().map(|d| DeviceRef { node: chip.node.clone(), device: *d }).collect();
            if refs.iter().any(|r| busy.contains(r) || self.resetting.contains_key(r)) {
                continue;
            }
            let mut chips = group.clone();
            chips.sort_unstable();
            for r in refs {
                self.resetting.insert(r.clone(), now);
                planned.insert(r);
            }
            step.start.push(ResetAction { node: chip.node.clone(), chips });
        }
        step
    }
}
