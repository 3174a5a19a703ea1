//! What allocation works on and answers: a node's device state, the
//! requests (whole devices, vNPU templates, GPU shares and memory), the
//! scores that order nodes, the allocation and why a node cannot take it.

use crate::devset::DeviceSet;
use crate::profile::Profile;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt;

/// What is already taken from one device by vNPUs or GPU shares.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DeviceUse {
    /// AI cores held by vNPUs.
    pub aicore: u32,
    /// AI CPUs held by vNPUs.
    pub aicpu: u32,
    /// Memory held by vNPUs, GiB.
    pub mem_gib: u32,
    /// DVPP units held by vNPUs (a chip has as many units as AI cores).
    pub dvpp: u32,
    /// Number of vNPUs cut from the chip (the 310P group rule reads it).
    pub groups: u32,
    /// Thousandths of the GPU held by shared pods.
    pub gpu_milli: u32,
    /// GPU memory held by memory-sharing pods (ACK gpushare, HAMi), MiB.
    #[serde(default)]
    pub gpu_mem_mib: u32,
}

impl DeviceUse {
    /// Whether nothing is taken.
    pub fn is_idle(&self) -> bool {
        *self == DeviceUse::default()
    }

    /// Both uses together (a pod's use added to a chip's).
    pub fn plus(&self, other: &DeviceUse) -> DeviceUse {
        self.zip(other, u32::saturating_add)
    }

    /// This use without `other` (a pod's use taken off a chip's; never below idle).
    pub fn minus(&self, other: &DeviceUse) -> DeviceUse {
        self.zip(other, u32::saturating_sub)
    }

    fn zip(&self, o: &DeviceUse, f: fn(u32, u32) -> u32) -> DeviceUse {
        DeviceUse {
            aicore: f(self.aicore, o.aicore),
            aicpu: f(self.aicpu, o.aicpu),
            mem_gib: f(self.mem_gib, o.mem_gib),
            dvpp: f(self.dvpp, o.dvpp),
            groups: f(self.groups, o.groups),
            gpu_milli: f(self.gpu_milli, o.gpu_milli),
            gpu_mem_mib: f(self.gpu_mem_mib, o.gpu_mem_mib),
        }
    }
}

/// What is in use on one node, by device index.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DeviceState {
    /// Devices allocated whole to pods.
    pub allocated: DeviceSet,
    /// Devices that must never be used.
    pub unhealthy: DeviceSet,
    /// Devices whose network is unhealthy (`huawei.com/Ascend910-NetworkUnhealthy`): unusable for multi-pod jobs.
    pub network_unhealthy: DeviceSet,
    /// Partial use per device index (vNPUs, GPU shares); missing entries are idle.
    pub partial: Vec<DeviceUse>,
}

impl DeviceState {
    /// Every device free and healthy.
    pub fn new() -> DeviceState {
        DeviceState::default()
    }

    /// The same state with `devices` allocated whole.
    pub fn with_allocated(mut self, devices: DeviceSet) -> DeviceState {
        self.allocated = self.allocated.or(devices);
        self
    }

    /// The same state with `devices` unhealthy.
    pub fn with_unhealthy(mut self, devices: DeviceSet) -> DeviceState {
        self.unhealthy = self.unhealthy.or(devices);
        self
    }

    /// The same state with `devices` network-unhealthy.
    pub fn with_network_unhealthy(mut self, devices: DeviceSet) -> DeviceState {
        self.network_unhealthy = self.network_unhealthy.or(devices);
        self
    }

    /// Partial use of device `i` (idle when not recorded).
    pub fn usage(&self, i: usize) -> DeviceUse {
        self.partial.get(i).copied().unwrap_or_default()
    }

    /// Devices free for a whole-device allocation: not allocated, healthy,
    /// not partly used, and network-healthy when the job has several pods.
    pub fn whole_free(&self, profile: &Profile, multi_pod: bool) -> DeviceSet {
        let mut free = profile.all().minus(self.allocated).minus(self.unhealthy);
        if multi_pod {
            free = free.minus(self.network_unhealthy);
        }
        for i in free.iter() {
            if !self.usage(i).is_idle() {
                free.remove(i);
            }
        }
        free
    }

    /// Healthy devices of the profile.
    pub fn healthy(&self, profile: &Profile) -> DeviceSet {
        profile.all().minus(self.unhealthy)
    }
}

/// `npu-310-strategy` label: how 310 / 310P chips of a pod spread over cards.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CardStrategy {
    /// Any chips (default).
    #[default]
    Chip,
    /// All chips on one card (300I: ≤ 4, Duo: ≤ 2).
    Card,
}

/// A request for whole devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WholeRequest {
    /// Devices (chips, dies, GPUs) for this pod.
    pub count: u32,
    /// Whether the job has more than one pod (network-unhealthy chips excluded; some counts differ).
    pub multi_pod: bool,
    /// `npu-310-strategy` (310 / 310P profiles only).
    pub card_strategy: CardStrategy,
}

/// `vnpu-dvpp` label.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VnpuDvpp {
    /// `yes`: the template must own the DVPP.
    Yes,
    /// `no`: the template must not use DVPP.
    No,
    /// `null` (default): no preference.
    #[default]
    Null,
}

/// `vnpu-level` label.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VnpuLevel {
    /// `low` (default): lowest-spec template.
    #[default]
    Low,
    /// `high`: highest-spec template, downgraded when it does not fit.
    High,
}

/// A vNPU request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum VnpuRequest {
    /// Dynamic vNPU: `huawei.com/npu-core: cores`.
    Dynamic {
        /// AI cores; a multiple of the chip's cores means whole chips.
        cores: u32,
        /// `vnpu-dvpp`.
        dvpp: VnpuDvpp,
        /// `vnpu-level`.
        level: VnpuLevel,
    },
    /// Static vNPU: `huawei.com/Ascend310P-4c.3cpu: 1` → `4c.3cpu`, or a template name such as `vir04_3c`.
    Static {
        /// Resource-name suffix or template name.
        template: String,
    },
}

/// A fraction of one GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareRequest {
    /// Thousandths of a GPU, 1–999.
    pub milli: u32,
}

/// GPU memory on each of `gpus` GPUs (ACK gpushare, HAMi vGPUs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemRequest {
    /// GPUs, each taking `mib` (and `milli`).
    pub gpus: u32,
    /// Memory per GPU, MiB.
    pub mib: u32,
    /// Thousandths of each GPU's cores; 0 when cores are not limited.
    pub milli: u32,
}

/// One pod's device request on one node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeviceRequest {
    /// Whole devices.
    Whole(WholeRequest),
    /// A vNPU.
    Vnpu(VnpuRequest),
    /// A share of one GPU.
    Share(ShareRequest),
    /// GPU memory slices.
    Memory(MemRequest),
}

impl DeviceRequest {
    /// `count` whole devices for a single-pod job.
    pub fn whole(count: u32) -> DeviceRequest {
        DeviceRequest::Whole(WholeRequest { count, multi_pod: false, card_strategy: CardStrategy::Chip })
    }

    /// `count` whole devices for one pod of a multi-pod job.
    pub fn whole_multi_pod(count: u32) -> DeviceRequest {
        DeviceRequest::Whole(WholeRequest { count, multi_pod: true, card_strategy: CardStrategy::Chip })
    }
}

/// Node score of the Ascend whole-chip allocators. Greater is better; the
/// fields compare in declaration order (spec/ascend.md node order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AscendScore {
    /// Healthy chips on the node (more is better). 0 for policies whose node order does not start with health (chip8-node8, A3, 300T, 310, no-interconnect).
    pub healthy_chips: u32,
    /// Rank of the chosen ring's free count in the preference list, or how far from a best fit it is (0 is best).
    pub affinity_rank: u32,
    /// Usable chips left on the node after the allocation (fewer is better: fill used servers first).
    pub free_after: u32,
    /// Whether the chosen ring keeps an even number of free chips (Atlas 800 rings; false elsewhere).
    pub even_remainder: bool,
}

impl Ord for AscendScore {
    fn cmp(&self, o: &Self) -> Ordering {
        self.healthy_chips
            .cmp(&o.healthy_chips)
            .then(o.affinity_rank.cmp(&self.affinity_rank))
            .then(o.free_after.cmp(&self.free_after))
            .then(self.even_remainder.cmp(&o.even_remainder))
    }
}

impl PartialOrd for AscendScore {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// Node score of the GPU allocator (spec/gpu.md objective). Greater is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GpuScore {
    /// Minimum pairwise bandwidth inside the chosen set, MB/s (0 for one GPU: no pairs).
    pub bottleneck_mbps: u32,
    /// Sum of pairwise bandwidths inside the chosen set, MB/s.
    pub total_mbps: u64,
    /// Keep-free measure: sum of pairwise bandwidths among the GPUs still free afterwards, MB/s (more is better).
    pub keep_free_mbps: u64,
    /// Usable GPUs left after the allocation (fewer is better: bin-pack).
    pub free_after: u32,
}

impl Ord for GpuScore {
    fn cmp(&self, o: &Self) -> Ordering {
        self.bottleneck_mbps
            .cmp(&o.bottleneck_mbps)
            .then(self.total_mbps.cmp(&o.total_mbps))
            .then(self.keep_free_mbps.cmp(&o.keep_free_mbps))
            .then(o.free_after.cmp(&self.free_after))
    }
}

impl PartialOrd for GpuScore {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// Node score of vNPU allocations. Greater is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct VnpuScore {
    /// Whether the node needed a downgraded template (a downgrade scores lower).
    pub downgraded: bool,
    /// AI cores left free on the node afterwards (fewer is better: least free resource first).
    pub free_cores_after: u32,
}

impl Ord for VnpuScore {
    fn cmp(&self, o: &Self) -> Ordering {
        o.downgraded.cmp(&self.downgraded).then(o.free_cores_after.cmp(&self.free_cores_after))
    }
}

impl PartialOrd for VnpuScore {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// Node score of a GPU share. Greater is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ShareScore {
    /// Milli-GPU left free on the chosen GPU afterwards (fewer is better: best fit).
    pub gpu_free_after: u32,
}

impl Ord for ShareScore {
    fn cmp(&self, o: &Self) -> Ordering {
        o.gpu_free_after.cmp(&self.gpu_free_after)
    }
}

impl PartialOrd for ShareScore {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// How good a node is for a pod; compare scores of the same request across
/// nodes (greater is better). Scores of different kinds order by kind only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum NodeScore {
    /// Ascend whole chips.
    Ascend(AscendScore),
    /// Whole GPUs.
    Gpu(GpuScore),
    /// A vNPU.
    Vnpu(VnpuScore),
    /// A GPU share.
    Share(ShareScore),
}

/// A vNPU placed on a chip.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VnpuPlacement {
    /// Chip index.
    pub chip: usize,
    /// Template chosen.
    pub template: String,
    /// Whether it is the downgrade of the requested level's template.
    pub downgraded: bool,
    /// How many vNPUs the chip held before this one: the vNPU's slot, from
    /// which its ID follows (`100 + 16 × chip ID + slot`, npu-smi's range).
    #[serde(default)]
    pub slot: u32,
}

/// The devices chosen for one pod on one node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allocation {
    /// Device indices chosen (for a vNPU or share: the one chip/GPU).
    pub devices: DeviceSet,
    /// Physical IDs of those devices, ascending (what goes into `huawei.com/Ascend910` / `CUDA_VISIBLE_DEVICES`).
    pub ids: Vec<u32>,
    /// The vNPU, when the request was one (dynamic whole-chip requests have none).
    pub vnpu: Option<VnpuPlacement>,
    /// Score of this node for ordering nodes.
    pub score: NodeScore,
}

impl Allocation {
    pub(crate) fn new(profile: &Profile, devices: DeviceSet, score: NodeScore) -> Allocation {
        let ids = devices.iter().filter_map(|i| profile.devices.get(i).map(|d| d.id)).collect();
        Allocation { devices, ids, vnpu: None, score }
    }
}

/// Why a node cannot take the pod. The Display text depends only on the
/// request and the machine type, so equal reasons from many nodes group.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum NoFit {
    /// Fewer usable devices than requested.
    #[error("Insufficient {resource}")]
    Insufficient {
        /// Resource name.
        resource: String,
    },
    /// The count is not allowed on this machine type.
    #[error("{count} {resource} not allowed on {machine} (allowed: {allowed})")]
    InvalidCount {
        /// Resource name.
        resource: String,
        /// Requested count.
        count: u32,
        /// Schedule policy or profile name.
        machine: String,
        /// Allowed counts, in words.
        allowed: String,
    },
    /// No ring has the free chips the preference rules need.
    #[error("no {ring} ring with {count} free chips")]
    NoRing {
        /// `HCCS` or `UB`.
        ring: &'static str,
        /// Chips requested.
        count: u32,
    },
    /// Not enough wholly free rings (Atlas 350 UB meshes of 4).
    #[error("no {rings} wholly free {ring} rings of 4")]
    NoWholeRings {
        /// `UB`.
        ring: &'static str,
        /// Rings needed.
        rings: u32,
    },
    /// Box16: not enough cross-ring pairs (i, i+8) free.
    #[error("no {pairs} free cross-ring chip pairs (i, i+8)")]
    NoCrossRingPairs {
        /// Pairs needed.
        pairs: u32,
    },
    /// Not enough whole free cards.
    #[error("no {cards} whole free cards")]
    NoWholeCards {
        /// Cards needed.
        cards: u32,
    },
    /// A3: one die requested by a multi-pod job.
    #[error("1 die is allowed only for a single-pod job")]
    SingleDieMultiPod,
    /// 310 card strategy: no card with enough free chips.
    #[error("no card with {count} free chips (npu-310-strategy: card)")]
    NoCard {
        /// Chips requested.
        count: u32,
    },
    /// The request kind is not supported by the machine type.
    #[error("{what} not supported on {profile}")]
    Unsupported {
        /// What was asked.
        what: String,
        /// Profile name.
        profile: String,
    },
    /// No vNPU template matches the request.
    #[error("no vNPU template for {request} (allowed: {allowed})")]
    NoTemplate {
        /// The request, in words.
        request: String,
        /// Templates the chip has.
        allowed: String,
    },
    /// No chip has room for the template.
    #[error("no chip with room for vNPU template {template}")]
    NoVnpuChip {
        /// Template name.
        template: String,
    },
    /// Fewer GPUs than asked have the memory (and cores) free.
    #[error("no {gpus} GPUs with {mib} MiB free GPU memory")]
    NoMemoryGpu {
        /// GPUs requested.
        gpus: u32,
        /// MiB per GPU requested.
        mib: u32,
    },
    /// No GPU has the share free.
    #[error("no GPU with {milli} free milli-GPU")]
    NoShareGpu {
        /// Milli-GPU requested.
        milli: u32,
    },
}

impl fmt::Display for DeviceRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceRequest::Whole(w) => {
                write!(f, "{} whole", w.count)?;
                if w.multi_pod {
                    f.write_str(" (multi-pod)")?;
                }
                Ok(())
            }
            DeviceRequest::Vnpu(VnpuRequest::Dynamic { cores, .. }) => write!(f, "npu-core {cores}"),
            DeviceRequest::Vnpu(VnpuRequest::Static { template }) => write!(f, "vNPU {template}"),
            DeviceRequest::Share(s) => write!(f, "{} milli-GPU", s.milli),
            DeviceRequest::Memory(m) => write!(f, "{} × {} MiB GPU memory", m.gpus, m.mib),
        }
    }
}
