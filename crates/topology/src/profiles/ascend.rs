//! Built-in Ascend profiles (spec/ascend.md `schedule_policy` table and
//! accelerator-type labels).

use super::build::{devices, matrix};
use crate::devset::DeviceSet;
use crate::profile::{
    AllocatorKind, DvppShare, GroupKind, Link, LinkKind, LinkSpeeds, Profile, SchedulePolicy, Vendor, VnpuFamily,
    VnpuSpec, VnpuTemplate,
};

// Nominal per-direction figures (MB/s); see the module doc of `profiles`.
const HCCS_910: u32 = 30_000;
const HCCS_910B: u32 = 56_000;
const HCCS_A3: u32 = 196_000;
const DIE_A3: u32 = 392_000;
const UB_350: u32 = 100_000;

const PCIE3: LinkSpeeds = LinkSpeeds { nvlink_mbps: 0, pcie_mbps: 16_000, p2p: true };
const PCIE4: LinkSpeeds = LinkSpeeds { nvlink_mbps: 0, pcie_mbps: 32_000, p2p: true };
const PCIE5: LinkSpeeds = LinkSpeeds { nvlink_mbps: 0, pcie_mbps: 64_000, p2p: true };

fn link(kind: LinkKind, mbps: u32) -> Link {
    Link { kind, mbps }
}

fn pcie(speeds: LinkSpeeds, kind: LinkKind) -> Link {
    Link { kind, mbps: speeds.bandwidth(kind) }
}

fn tmpl(name: &str, aicore: u32, aicpu: u32, mem_gib: u32, dvpp: DvppShare) -> VnpuTemplate {
    VnpuTemplate { name: name.to_string(), aicore, aicpu, mem_gib, dvpp }
}

/// 310P: 8 AI cores, 7 AI CPUs, 24 GiB; templates of spec/ascend.md "vNPU".
pub(crate) fn vnpu_310p() -> VnpuSpec {
    use DvppShare::*;
    VnpuSpec {
        family: VnpuFamily::Ascend310P,
        aicore: 8,
        aicpu: 7,
        mem_gib: 24,
        templates: vec![
            tmpl("vir01", 1, 1, 3, Proportional),
            tmpl("vir02", 2, 2, 6, Proportional),
            tmpl("vir02_1c", 2, 1, 6, Proportional),
            tmpl("vir04", 4, 4, 12, Proportional),
            tmpl("vir04_3c", 4, 3, 12, Proportional),
            tmpl("vir04_4c_dvpp", 4, 4, 12, All),
            tmpl("vir04_3c_ndvpp", 4, 3, 12, NoDvpp),
        ],
    }
}

/// 910: 32 AI cores, 14 AI CPUs, 32 GiB. The templates `npu-smi` creates on a
/// 910 (its DCMI table) and ascend-for-volcano's job table: no `vir01`.
pub(crate) fn vnpu_910() -> VnpuSpec {
    use DvppShare::*;
    VnpuSpec {
        family: VnpuFamily::Ascend910,
        aicore: 32,
        aicpu: 14,
        mem_gib: 32,
        templates: vec![
            tmpl("vir02", 2, 1, 2, Proportional),
            tmpl("vir04", 4, 1, 4, Proportional),
            tmpl("vir08", 8, 3, 8, Proportional),
            tmpl("vir16", 16, 7, 16, Proportional),
        ],
    }
}

/// 910B chip types whose vNPU templates MindCluster knows (the
/// `node.kubernetes.io/npu.chip.name` label values).
pub const VNPU_910B_CHIPS: &[&str] = &["910B1", "910B2", "910B2C", "910B3", "910B4"];

/// One 910B chip type: its AI cores and memory, and the templates `npu-smi`
/// can cut it into (a template's AI cores are the `npu-core` counts a dynamic
/// vNPU may request on it, beside whole chips). AI CPUs are 6 per chip, as
/// ascend-for-volcano counts them. `None` for other names.
pub fn vnpu_910b_chip(chip: &str) -> Option<VnpuSpec> {
    use DvppShare::*;
    let (aicore, mem_gib, templates) = match chip {
        // 910B1 has 25 AI cores, 910B2 / 910B2C 24; all three take the "bin0" templates.
        "910B1" | "910B2" | "910B2C" => (
            if chip == "910B1" { 25 } else { 24 },
            64,
            vec![tmpl("vir06_1c_16g", 6, 1, 16, Proportional), tmpl("vir12_3c_32g", 12, 3, 32, Proportional)],
        ),
        "910B3" => (20, 64, templates_910b3()),
        "910B4" => (
            20,
            32,
            vec![
                tmpl("vir05_1c_8g", 5, 1, 8, Proportional),
                tmpl("vir10_3c_16g", 10, 3, 16, Proportional),
                tmpl("vir10_3c_16g_nm", 10, 3, 16, NoDvpp),
                tmpl("vir10_4c_16g_m", 10, 4, 16, All),
            ],
        ),
        _ => return None,
    };
    Some(spec_910b(aicore, mem_gib, templates))
}

fn spec_910b(aicore: u32, mem_gib: u32, templates: Vec<VnpuTemplate>) -> VnpuSpec {
    VnpuSpec { family: VnpuFamily::Ascend910B, aicore, aicpu: 6, mem_gib, templates }
}

fn templates_910b3() -> Vec<VnpuTemplate> {
    vec![
        tmpl("vir05_1c_16g", 5, 1, 16, DvppShare::Proportional),
        tmpl("vir10_3c_32g", 10, 3, 32, DvppShare::Proportional),
    ]
}

/// 910B3 (the chip of the built-in A2 profiles).
pub(crate) fn vnpu_910b() -> VnpuSpec {
    spec_910b(20, 64, templates_910b3())
}

struct Spec<'a> {
    name: &'a str,
    description: &'a str,
    chip: &'a str,
    resource: &'a str,
    policy: Option<SchedulePolicy>,
    accel: Option<&'a str>,
    n: usize,
    prefix: &'a str,
    group_kind: GroupKind,
    group_size: usize,
    links: Vec<Vec<Link>>,
    vnpu: Option<VnpuSpec>,
    allocator: AllocatorKind,
    sockets: usize,
}

fn build(s: Spec<'_>) -> Profile {
    let per_socket = s.n.div_ceil(s.sockets.max(1));
    let groups = match s.n.checked_div(s.group_size) {
        Some(count) => (0..count).map(|g| DeviceSet::range(g * s.group_size, (g + 1) * s.group_size)).collect(),
        None => Vec::new(),
    };
    Profile {
        name: s.name.into(),
        description: s.description.into(),
        vendor: Vendor::Huawei,
        chip: s.chip.into(),
        resource_name: s.resource.into(),
        schedule_policy: s.policy,
        accelerator_type: s.accel.map(str::to_string),
        devices: devices(s.n, s.prefix, |i| Some((i / per_socket) as u32)),
        group_kind: s.group_kind,
        groups,
        links: s.links,
        nics: Vec::new(),
        vnpu: s.vnpu,
        allocator: s.allocator,
    }
}

/// Same group of `size` → `inside`, else `outside`.
fn grouped(n: usize, size: usize, inside: Link, outside: Link) -> Vec<Vec<Link>> {
    matrix(n, |i, j| if i / size == j / size { inside } else { outside })
}

pub(crate) fn profiles() -> Vec<Profile> {
    use AllocatorKind as A;
    use SchedulePolicy as P;
    let hccs910 = link(LinkKind::Hccs, HCCS_910);
    let hccs910b = link(LinkKind::Hccs, HCCS_910B);
    vec![
        build(Spec {
            name: "atlas-800-910",
            description: "Atlas 800 training server (9000/9010), full: 8× Ascend 910, HCCS rings 0–3 and 4–7",
            chip: "Ascend 910",
            resource: "huawei.com/Ascend910",
            policy: Some(P::Chip4Node8),
            accel: Some("module"),
            n: 8,
            prefix: "Ascend910-",
            group_kind: GroupKind::HccsRing,
            group_size: 4,
            links: grouped(8, 4, hccs910, pcie(PCIE4, LinkKind::Sys)),
            vnpu: Some(vnpu_910()),
            allocator: A::AscendRing4,
            sockets: 2,
        }),
        build(Spec {
            name: "atlas-800-910-half",
            description: "Atlas 800 training server (9000/9010), half: 4× Ascend 910 in one HCCS ring",
            chip: "Ascend 910",
            resource: "huawei.com/Ascend910",
            policy: Some(P::Chip4Node4),
            accel: Some("half"),
            n: 4,
            prefix: "Ascend910-",
            group_kind: GroupKind::HccsRing,
            group_size: 4,
            links: grouped(4, 4, hccs910, hccs910),
            vnpu: Some(vnpu_910()),
            allocator: A::AscendRing4,
            sockets: 1,
        }),
        build(Spec {
            name: "atlas-300t",
            description: "Server with 2 Atlas 300T training cards (1 Ascend 910 each), no HCCS ring",
            chip: "Ascend 910",
            resource: "huawei.com/Ascend910",
            policy: Some(P::Chip1Node2),
            accel: Some("card"),
            n: 2,
            prefix: "Ascend910-",
            group_kind: GroupKind::Card,
            group_size: 1,
            links: matrix(2, |_, _| pcie(PCIE4, LinkKind::Node)),
            vnpu: Some(vnpu_910()),
            allocator: A::Ascend300T,
            sockets: 1,
        }),
        build(Spec {
            name: "atlas-800t-a2",
            description: "Atlas 800T A2 training server: 8× Ascend 910B3, HCCS full mesh",
            chip: "Ascend 910B3",
            resource: "huawei.com/Ascend910",
            policy: Some(P::Chip8Node8),
            accel: Some("module-910b-8"),
            n: 8,
            prefix: "Ascend910-",
            group_kind: GroupKind::HccsRing,
            group_size: 8,
            links: grouped(8, 8, hccs910b, hccs910b),
            vnpu: Some(vnpu_910b()),
            allocator: A::AscendMesh,
            sockets: 2,
        }),
        build(Spec {
            name: "atlas-200t-a2-box16",
            description: "Atlas 200T A2 Box16: 16× Ascend 910B, HCCS rings 0–7 and 8–15, cross-ring pairs (i, i+8)",
            chip: "Ascend 910B3",
            resource: "huawei.com/Ascend910",
            policy: Some(P::Chip8Node16),
            accel: Some("module-910b-16"),
            n: 16,
            prefix: "Ascend910-",
            group_kind: GroupKind::HccsRing,
            group_size: 8,
            links: matrix(
                16,
                |i, j| {
                    if i / 8 == j / 8 || i % 8 == j % 8 {
                        hccs910b
                    } else {
                        pcie(PCIE5, LinkKind::Sys)
                    }
                },
            ),
            vnpu: Some(vnpu_910b()),
            allocator: A::AscendBox16,
            sockets: 2,
        }),
        build(Spec {
            name: "atlas-800t-a3",
            description: "Atlas 800T A3 superpod server: 8 cards × 2 dies = 16 dies, cards (2i, 2i+1)",
            chip: "Ascend 910 (A3, 2 dies per card)",
            resource: "huawei.com/Ascend910",
            policy: Some(P::Chip2Node16),
            accel: Some("module-a3-16"),
            n: 16,
            prefix: "Ascend910-",
            group_kind: GroupKind::Card,
            group_size: 2,
            links: grouped(16, 2, link(LinkKind::Die, DIE_A3), link(LinkKind::Hccs, HCCS_A3)),
            vnpu: None,
            allocator: A::AscendA3,
            sockets: 2,
        }),
        build(Spec {
            name: "atlas-900-a3-superpod",
            description: "Atlas 900 A3 SuperPoD node: 16 dies in 8 cards, nodes grouped into SuperPoDs",
            chip: "Ascend 910 (A3, 2 dies per card)",
            resource: "huawei.com/Ascend910",
            policy: Some(P::Chip2Node16Sp),
            accel: Some("module-a3-16-super-pod"),
            n: 16,
            prefix: "Ascend910-",
            group_kind: GroupKind::Card,
            group_size: 2,
            links: grouped(16, 2, link(LinkKind::Die, DIE_A3), link(LinkKind::Hccs, HCCS_A3)),
            vnpu: None,
            allocator: A::AscendA3,
            sockets: 2,
        }),
        build(Spec {
            name: "atlas-350-8",
            description: "Atlas 350 inference server, 8 cards, every 4 joined by a UB board (chip4-node8)",
            chip: "Ascend 950PR",
            resource: "huawei.com/npu",
            policy: Some(P::Chip4Node8),
            accel: None,
            n: 8,
            prefix: "npu-",
            group_kind: GroupKind::UbRing,
            group_size: 4,
            links: grouped(8, 4, link(LinkKind::Ub, UB_350), pcie(PCIE5, LinkKind::Sys)),
            vnpu: None,
            allocator: A::AscendUbMesh4,
            sockets: 2,
        }),
        build(Spec {
            name: "atlas-350-16",
            description: "Atlas 350 inference server, 16 cards, every 4 joined by a UB board (chip4-node16)",
            chip: "Ascend 950PR",
            resource: "huawei.com/npu",
            policy: Some(P::Chip4Node16),
            accel: None,
            n: 16,
            prefix: "npu-",
            group_kind: GroupKind::UbRing,
            group_size: 4,
            links: matrix(16, |i, j| {
                if i / 4 == j / 4 {
                    link(LinkKind::Ub, UB_350)
                } else if i / 8 == j / 8 {
                    pcie(PCIE5, LinkKind::Node)
                } else {
                    pcie(PCIE5, LinkKind::Sys)
                }
            }),
            vnpu: None,
            allocator: A::AscendUbMesh4,
            sockets: 2,
        }),
        build(Spec {
            name: "atlas-350-8-pcie",
            description: "Atlas 350 inference server, 8 cards without interconnect (chip1-node8)",
            chip: "Ascend 950PR",
            resource: "huawei.com/npu",
            policy: Some(P::Chip1Node8),
            accel: None,
            n: 8,
            prefix: "npu-",
            group_kind: GroupKind::None,
            group_size: 0,
            links: grouped(8, 4, pcie(PCIE5, LinkKind::Node), pcie(PCIE5, LinkKind::Sys)),
            vnpu: None,
            allocator: A::AscendNoLink,
            sockets: 2,
        }),
        build(Spec {
            name: "atlas-350-16-pcie",
            description: "Atlas 350 inference server, 16 cards without interconnect (chip1-node16)",
            chip: "Ascend 950PR",
            resource: "huawei.com/npu",
            policy: Some(P::Chip1Node16),
            accel: None,
            n: 16,
            prefix: "npu-",
            group_kind: GroupKind::None,
            group_size: 0,
            links: grouped(16, 8, pcie(PCIE5, LinkKind::Node), pcie(PCIE5, LinkKind::Sys)),
            vnpu: None,
            allocator: A::AscendNoLink,
            sockets: 2,
        }),
        build(Spec {
            name: "atlas-300i",
            description: "Inference server with 4 Atlas 300I cards, 4 Ascend 310 chips per card",
            chip: "Ascend 310",
            resource: "huawei.com/Ascend310",
            policy: None,
            accel: None,
            n: 16,
            prefix: "Ascend310-",
            group_kind: GroupKind::Card,
            group_size: 4,
            links: matrix(16, |i, j| {
                if i / 4 == j / 4 {
                    pcie(PCIE3, LinkKind::Pix)
                } else if i / 8 == j / 8 {
                    pcie(PCIE3, LinkKind::Node)
                } else {
                    pcie(PCIE3, LinkKind::Sys)
                }
            }),
            vnpu: None,
            allocator: A::Ascend310Cards,
            sockets: 2,
        }),
        build(Spec {
            name: "atlas-300i-duo",
            description: "Inference server with 4 Atlas 300I Duo cards, 2 Ascend 310P chips per card",
            chip: "Ascend 310P3",
            resource: "huawei.com/Ascend310P",
            policy: None,
            accel: None,
            n: 8,
            prefix: "Ascend310P-",
            group_kind: GroupKind::Card,
            group_size: 2,
            links: matrix(8, |i, j| {
                if i / 2 == j / 2 {
                    pcie(PCIE4, LinkKind::Pix)
                } else if i / 4 == j / 4 {
                    pcie(PCIE4, LinkKind::Node)
                } else {
                    pcie(PCIE4, LinkKind::Sys)
                }
            }),
            vnpu: Some(vnpu_310p()),
            allocator: A::Ascend310Cards,
            sockets: 2,
        }),
        build(Spec {
            name: "atlas-inference-310p",
            description: "Atlas inference server with 8 single-chip Ascend 310P cards (e.g. Atlas 300I Pro)",
            chip: "Ascend 310P3",
            resource: "huawei.com/Ascend310P",
            policy: None,
            accel: None,
            n: 8,
            prefix: "Ascend310P-",
            group_kind: GroupKind::Card,
            group_size: 1,
            links: grouped(8, 4, pcie(PCIE4, LinkKind::Node), pcie(PCIE4, LinkKind::Sys)),
            vnpu: Some(vnpu_310p()),
            allocator: A::Ascend310Cards,
            sockets: 2,
        }),
    ]
}
