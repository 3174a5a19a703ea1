//! The hardware profile model: what one node of a machine type has (chips,
//! interconnect groups, a link bandwidth matrix, NICs, vNPU capability) and
//! which allocator chooses its devices.

use crate::devset::DeviceSet;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Who makes the accelerator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Vendor {
    /// Huawei Ascend NPUs.
    Huawei,
    /// NVIDIA GPUs.
    Nvidia,
}

impl fmt::Display for Vendor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Vendor::Huawei => "huawei",
            Vendor::Nvidia => "nvidia",
        })
    }
}

/// Values of the `huawei.com/schedule_policy` annotation (seed 000 L1458–1518).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SchedulePolicy {
    /// 8 chips, HCCS rings 0–3 and 4–7 (Atlas 800 full; Atlas 350 8 cards on UB boards).
    #[serde(rename = "chip4-node8")]
    Chip4Node8,
    /// 4 chips, one ring (Atlas 800 half).
    #[serde(rename = "chip4-node4")]
    Chip4Node4,
    /// 2 chips, no ring (300T training cards).
    #[serde(rename = "chip1-node2")]
    Chip1Node2,
    /// 8 chips, one full-mesh ring (Atlas 800T A2).
    #[serde(rename = "chip8-node8")]
    Chip8Node8,
    /// 16 chips, rings 0–7 and 8–15 (Atlas 200T A2 Box16).
    #[serde(rename = "chip8-node16")]
    Chip8Node16,
    /// 16 dies in cards of 2 (Atlas 800T A3).
    #[serde(rename = "chip2-node16")]
    Chip2Node16,
    /// As `chip2-node16`, servers forming a SuperPoD (Atlas 900 A3 SuperPoD).
    #[serde(rename = "chip2-node16-sp")]
    Chip2Node16Sp,
    /// 16 chips, rings of 4 (Atlas 350, 16 cards on UB boards).
    #[serde(rename = "chip4-node16")]
    Chip4Node16,
    /// 8 chips, no interconnect (Atlas 350).
    #[serde(rename = "chip1-node8")]
    Chip1Node8,
    /// 16 chips, no interconnect (Atlas 350).
    #[serde(rename = "chip1-node16")]
    Chip1Node16,
}

impl SchedulePolicy {
    /// Every policy, in the seed's table order.
    pub const ALL: [SchedulePolicy; 10] = [
        SchedulePolicy::Chip4Node8,
        SchedulePolicy::Chip1Node2,
        SchedulePolicy::Chip4Node4,
        SchedulePolicy::Chip8Node8,
        SchedulePolicy::Chip8Node16,
        SchedulePolicy::Chip2Node16,
        SchedulePolicy::Chip2Node16Sp,
        SchedulePolicy::Chip4Node16,
        SchedulePolicy::Chip1Node8,
        SchedulePolicy::Chip1Node16,
    ];

    /// The annotation value, e.g. `chip4-node8`.
    pub fn as_str(self) -> &'static str {
        match self {
            SchedulePolicy::Chip4Node8 => "chip4-node8",
            SchedulePolicy::Chip4Node4 => "chip4-node4",
            SchedulePolicy::Chip1Node2 => "chip1-node2",
            SchedulePolicy::Chip8Node8 => "chip8-node8",
            SchedulePolicy::Chip8Node16 => "chip8-node16",
            SchedulePolicy::Chip2Node16 => "chip2-node16",
            SchedulePolicy::Chip2Node16Sp => "chip2-node16-sp",
            SchedulePolicy::Chip4Node16 => "chip4-node16",
            SchedulePolicy::Chip1Node8 => "chip1-node8",
            SchedulePolicy::Chip1Node16 => "chip1-node16",
        }
    }
}

impl fmt::Display for SchedulePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error of [`SchedulePolicy::from_str`]: the value is not one of the policies.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown huawei.com/schedule_policy {0:?} (allowed: chip4-node8, chip1-node2, chip4-node4, chip8-node8, chip8-node16, chip2-node16, chip2-node16-sp, chip4-node16, chip1-node8, chip1-node16)")]
pub struct UnknownPolicy(pub String);

impl FromStr for SchedulePolicy {
    type Err = UnknownPolicy;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SchedulePolicy::ALL.into_iter().find(|p| p.as_str() == s).ok_or_else(|| UnknownPolicy(s.to_string()))
    }
}

/// How two devices are connected; the codes are those of `nvidia-smi topo -m`
/// plus the Ascend interconnects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkKind {
    /// The device itself (`X`).
    SelfLink,
    /// A bonded set of this many NVLinks (`NV#`).
    NvLink(u8),
    /// Huawei HCCS chip-to-chip link.
    Hccs,
    /// The two dies of one A3 card.
    Die,
    /// Huawei UB board link (Atlas 350).
    Ub,
    /// At most one PCIe bridge (`PIX`).
    Pix,
    /// Several PCIe bridges, no host bridge (`PXB`).
    Pxb,
    /// Through a PCIe host bridge (`PHB`).
    Phb,
    /// Between host bridges of one NUMA node (`NODE`).
    Node,
    /// Across the SMP interconnect between NUMA nodes (`SYS`).
    Sys,
}

impl LinkKind {
    /// The code as `nvidia-smi topo -m` prints it (`X`, `NV12`, `PIX` …; `HCCS`, `DIE`, `UB` for Ascend).
    pub fn code(self) -> String {
        match self {
            LinkKind::SelfLink => "X".into(),
            LinkKind::NvLink(n) => format!("NV{n}"),
            LinkKind::Hccs => "HCCS".into(),
            LinkKind::Die => "DIE".into(),
            LinkKind::Ub => "UB".into(),
            LinkKind::Pix => "PIX".into(),
            LinkKind::Pxb => "PXB".into(),
            LinkKind::Phb => "PHB".into(),
            LinkKind::Node => "NODE".into(),
            LinkKind::Sys => "SYS".into(),
        }
    }

    /// Parses a code; `SOC` (older drivers) reads as `SYS`. `None` when unknown.
    pub fn from_code(code: &str) -> Option<LinkKind> {
        Some(match code {
            "X" => LinkKind::SelfLink,
            "HCCS" => LinkKind::Hccs,
            "DIE" => LinkKind::Die,
            "UB" => LinkKind::Ub,
            "PIX" => LinkKind::Pix,
            "PXB" => LinkKind::Pxb,
            "PHB" => LinkKind::Phb,
            "NODE" => LinkKind::Node,
            "SYS" | "SOC" => LinkKind::Sys,
            _ => {
                let n = code.strip_prefix("NV")?.parse::<u8>().ok()?;
                if n == 0 {
                    return None;
                }
                LinkKind::NvLink(n)
            }
        })
    }
}

impl fmt::Display for LinkKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.code())
    }
}

impl Serialize for LinkKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.code())
    }
}

impl<'de> Deserialize<'de> for LinkKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        LinkKind::from_code(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown link code {s:?} (allowed: X, NV#, HCCS, DIE, UB, PIX, PXB, PHB, NODE, SYS)"
            ))
        })
    }
}

/// One entry of the link matrix: the connection and its per-direction
/// bandwidth used for scoring.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    /// How the pair is connected.
    pub kind: LinkKind,
    /// Bandwidth per direction in MB/s (integer so sums and comparisons are exact).
    pub mbps: u32,
}

/// Per-generation link speeds that turn link codes into bandwidth
/// (spec/gpu.md "Link bandwidth").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkSpeeds {
    /// Bandwidth of one NVLink per direction, MB/s (25,000 for NVLink 2, 3 and 4).
    pub nvlink_mbps: u32,
    /// PCIe x16 bandwidth per direction, MB/s (16,000 Gen3, 32,000 Gen4, 64,000 Gen5).
    pub pcie_mbps: u32,
    /// Whether the GPUs support PCIe peer-to-peer; without it every transfer is staged through host memory.
    pub p2p: bool,
}

impl Default for LinkSpeeds {
    fn default() -> Self {
        LinkSpeeds { nvlink_mbps: 25_000, pcie_mbps: 32_000, p2p: true }
    }
}

impl LinkSpeeds {
    /// The scoring bandwidth of a PCIe or NVLink connection.
    ///
    /// PCIe levels have no published per-level figure; the factors (PIX 100 %,
    /// PXB 90 %, PHB 80 %, NODE 70 %, SYS 50 %, halved again without P2P
    /// because the data crosses host memory twice) exist only to keep the
    /// spec's order PIX > PXB > PHB > NODE > SYS strict.
    pub fn bandwidth(self, kind: LinkKind) -> u32 {
        let pct = match kind {
            LinkKind::SelfLink => return 0,
            LinkKind::NvLink(n) => return self.nvlink_mbps.saturating_mul(u32::from(n)),
            LinkKind::Pix | LinkKind::Hccs | LinkKind::Die | LinkKind::Ub => 100,
            LinkKind::Pxb => 90,
            LinkKind::Phb => 80,
            LinkKind::Node => 70,
            LinkKind::Sys => 50,
        };
        let base = self.pcie_mbps / 100 * pct;
        if self.p2p {
            base
        } else {
            base / 2
        }
    }
}

/// One accelerator of a node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Device {
    /// Physical ID the runtime uses (`ASCEND_VISIBLE_DEVICES`, `CUDA_VISIBLE_DEVICES`); index in the profile is separate.
    pub id: u32,
    /// Display name, e.g. `GPU3` or `Ascend910-3`.
    pub name: String,
    /// NUMA node / CPU socket the device hangs off, when known.
    pub numa: Option<u32>,
    /// Bus ID when known (parsed inventories).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bus_id: Option<String>,
}

/// An RDMA NIC and how each device reaches it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Nic {
    /// Name, e.g. `mlx5_0` (or `NIC0` when no legend names it).
    pub name: String,
    /// Connection from each device (by index) to this NIC.
    pub links: Vec<LinkKind>,
}

/// Which interconnect the profile's groups are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GroupKind {
    /// No groups.
    None,
    /// HCCS rings (910, 910B).
    HccsRing,
    /// UB-board rings (Atlas 350).
    UbRing,
    /// Cards holding several chips or dies (A3 die pairs, 300I, 300I Duo).
    Card,
    /// NUMA nodes / CPU sockets (GPU boxes).
    Socket,
}

/// Which allocator picks the devices of this profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum AllocatorKind {
    /// Rings of 4 with the Atlas 800 preference order (Atlas 800 chip4-node8, chip4-node4).
    AscendRing4,
    /// Any free chips, best fit (chip8-node8).
    AscendMesh,
    /// Atlas 350 UB meshes of 4 (chip4-node8, chip4-node16): MindCluster's `chip4nodex` rules.
    AscendUbMesh4,
    /// Atlas 350 without interconnect (chip1-node8, chip1-node16): MindCluster's base handler.
    AscendNoLink,
    /// 300T card server, two single-chip cards (chip1-node2).
    Ascend300T,
    /// Box16 rings of 8 with cross-ring pairs (chip8-node16).
    AscendBox16,
    /// A3 die pairs (chip2-node16, chip2-node16-sp).
    AscendA3,
    /// Atlas 300I / 300I Duo / inference cards: chips grouped on cards, `npu-310-strategy`.
    Ascend310Cards,
    /// The GPU bandwidth objective (spec/gpu.md).
    Gpu,
}

/// How a vNPU template uses the chip's DVPP (media) engines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DvppShare {
    /// A share proportional to its AI cores.
    Proportional,
    /// All of the chip's DVPP (`_dvpp`, `_m` templates).
    All,
    /// None (`_ndvpp`, `_nm` templates).
    NoDvpp,
}

/// One vNPU template.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VnpuTemplate {
    /// Name as `npu-smi` knows it, e.g. `vir04_3c`.
    pub name: String,
    /// AI cores.
    pub aicore: u32,
    /// AI CPUs.
    pub aicpu: u32,
    /// Memory, GiB.
    pub mem_gib: u32,
    /// DVPP use.
    pub dvpp: DvppShare,
}

/// Chip family for vNPU rules (template tables differ).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum VnpuFamily {
    /// Ascend 310P (dynamic-template table with `vnpu-dvpp` / `vnpu-level`, group rule).
    #[serde(rename = "Ascend310P")]
    Ascend310P,
    /// Ascend 910.
    #[serde(rename = "Ascend910")]
    Ascend910,
    /// Ascend 910B.
    #[serde(rename = "Ascend910B")]
    Ascend910B,
}

/// What one chip offers to vNPUs and which templates it can be cut into.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VnpuSpec {
    /// Chip family.
    pub family: VnpuFamily,
    /// AI cores per chip.
    pub aicore: u32,
    /// AI CPUs per chip.
    pub aicpu: u32,
    /// Memory per chip, GiB.
    pub mem_gib: u32,
    /// Templates, lowest spec first.
    pub templates: Vec<VnpuTemplate>,
}

impl VnpuSpec {
    /// The template of this name.
    pub fn template(&self, name: &str) -> Option<&VnpuTemplate> {
        self.templates.iter().find(|t| t.name == name)
    }
}

/// A machine type: everything the allocators and `ringleader profiles` need.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// Profile name, e.g. `atlas-800-910`.
    pub name: String,
    /// One line describing the machine.
    pub description: String,
    /// Vendor.
    pub vendor: Vendor,
    /// Chip model, e.g. `Ascend 910B3`, `H100 SXM5 80GB`.
    pub chip: String,
    /// Extended resource name pods request, e.g. `huawei.com/Ascend910`.
    pub resource_name: String,
    /// `huawei.com/schedule_policy` value (Ascend training/inference servers with a ring policy).
    pub schedule_policy: Option<SchedulePolicy>,
    /// `accelerator-type` node label value, where the seed defines one.
    pub accelerator_type: Option<String>,
    /// The devices, by index.
    pub devices: Vec<Device>,
    /// What `groups` are.
    pub group_kind: GroupKind,
    /// Interconnect groups: HCCS / UB rings, cards, sockets.
    pub groups: Vec<DeviceSet>,
    /// Link matrix, `links[i][j]` between device indices `i` and `j`.
    pub links: Vec<Vec<Link>>,
    /// RDMA NICs, when known.
    #[serde(default)]
    pub nics: Vec<Nic>,
    /// vNPU capability (Ascend chips that can be split).
    pub vnpu: Option<VnpuSpec>,
    /// Which allocator picks devices.
    pub allocator: AllocatorKind,
}

/// A profile whose parts do not fit together.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileError {
    /// No devices, or more than the allocators handle.
    #[error("profile {name}: {count} devices (allowed: 1 to {max})")]
    DeviceCount {
        /// Profile name.
        name: String,
        /// Devices declared.
        count: usize,
        /// Most allowed.
        max: usize,
    },
    /// The link matrix is not n×n, not symmetric, or its diagonal is not `X`.
    #[error("profile {name}: link matrix {detail}")]
    Links {
        /// Profile name.
        name: String,
        /// What is wrong.
        detail: String,
    },
    /// A group names a device that does not exist.
    #[error("profile {name}: group {group} names device indices outside 0..{count}")]
    Group {
        /// Profile name.
        name: String,
        /// Group index.
        group: usize,
        /// Device count.
        count: usize,
    },
}

impl Profile {
    /// Number of devices.
    pub fn len(&self) -> usize {
        self.devices.len()
    }

    /// Whether the profile has no devices (never true for a valid profile).
    pub fn is_empty(&self) -> bool {
        self.devices.is_empty()
    }

    /// All device indices.
    pub fn all(&self) -> DeviceSet {
        DeviceSet::first(self.devices.len())
    }

    /// Scoring bandwidth between device indices `i` and `j`, MB/s (0 on the diagonal or out of range).
    pub fn bandwidth(&self, i: usize, j: usize) -> u32 {
        self.links.get(i).and_then(|r| r.get(j)).map_or(0, |l| l.mbps)
    }

    /// Checks that devices, groups and the link matrix agree.
    pub fn validate(&self) -> Result<(), ProfileError> {
        let n = self.devices.len();
        let max =
            if self.allocator == AllocatorKind::Gpu { crate::devset::MAX_GPUS } else { crate::devset::MAX_DEVICES };
        if n == 0 || n > max {
            return Err(ProfileError::DeviceCount { name: self.name.clone(), count: n, max });
        }
        let links_err = |detail: String| ProfileError::Links { name: self.name.clone(), detail };
        if self.links.len() != n {
            return Err(links_err(format!("has {} rows for {n} devices", self.links.len())));
        }
        for (i, row) in self.links.iter().enumerate() {
            if row.len() != n {
                return Err(links_err(format!("row {i} has {} entries for {n} devices", row.len())));
            }
            if row[i].kind != LinkKind::SelfLink {
                return Err(links_err(format!("entry ({i},{i}) is {} (must be X)", row[i].kind)));
            }
            for (j, l) in row.iter().enumerate() {
                if i != j && l.kind == LinkKind::SelfLink {
                    return Err(links_err(format!("entry ({i},{j}) is X off the diagonal")));
                }
                if self.links[j][i] != *l {
                    return Err(links_err(format!("is not symmetric at ({i},{j})")));
                }
            }
        }
        let all = self.all();
        for (g, set) in self.groups.iter().enumerate() {
            if !set.minus(all).is_empty() {
                return Err(ProfileError::Group { name: self.name.clone(), group: g, count: n });
            }
        }
        Ok(())
    }

    /// Reads a declared profile (YAML or JSON) and validates it.
    pub fn from_yaml(text: &str) -> Result<Profile, crate::parse::ParseError> {
        let p: Profile = serde_yaml_ng::from_str(text).map_err(|e| crate::parse::ParseError {
            line: e.location().map_or(0, |l| l.line()),
            token: String::new(),
            message: format!("invalid profile: {e}"),
        })?;
        p.validate().map_err(|e| crate::parse::ParseError { line: 0, token: String::new(), message: e.to_string() })?;
        Ok(p)
    }
}
