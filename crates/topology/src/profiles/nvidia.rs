//! Built-in NVIDIA profiles (spec/gpu.md "Built-in profiles worth shipping").

use super::build::{devices, matrix};
use crate::devset::DeviceSet;
use crate::profile::{AllocatorKind, GroupKind, Link, LinkKind, LinkSpeeds, Nic, Profile, Vendor};

/// DGX-1 V100 hybrid cube mesh exactly as `nvidia-smi topo -m` prints it on
/// the machine: two quads fully linked inside, plus one link of each GPU to
/// its mirror in the other quad; 6 NVLinks per GPU.
pub(crate) const DGX1_V100: [[&str; 8]; 8] = [
    ["X", "NV1", "NV1", "NV2", "NV2", "SYS", "SYS", "SYS"],
    ["NV1", "X", "NV2", "NV1", "SYS", "NV2", "SYS", "SYS"],
    ["NV1", "NV2", "X", "NV2", "SYS", "SYS", "NV1", "SYS"],
    ["NV2", "NV1", "NV2", "X", "SYS", "SYS", "SYS", "NV1"],
    ["NV2", "SYS", "SYS", "SYS", "X", "NV1", "NV1", "NV2"],
    ["SYS", "NV2", "SYS", "SYS", "NV1", "X", "NV2", "NV1"],
    ["SYS", "SYS", "NV1", "SYS", "NV1", "NV2", "X", "NV2"],
    ["SYS", "SYS", "SYS", "NV1", "NV2", "NV1", "NV2", "X"],
];

struct Spec<'a> {
    name: &'a str,
    description: &'a str,
    chip: &'a str,
    speeds: LinkSpeeds,
    kinds: Vec<Vec<LinkKind>>,
    /// GPU indices per NIC, PIX to those GPUs.
    nics: Vec<(&'a str, Vec<usize>)>,
}

fn socket(i: usize) -> usize {
    i / 4
}

fn build(s: Spec<'_>) -> Profile {
    let n = s.kinds.len();
    let links = matrix(n, |i, j| Link { kind: s.kinds[i][j], mbps: s.speeds.bandwidth(s.kinds[i][j]) });
    let nics = s
        .nics
        .iter()
        .map(|(name, near)| {
            let home = near.first().map_or(0, |&g| socket(g));
            Nic {
                name: (*name).to_string(),
                links: (0..n)
                    .map(|g| {
                        if near.contains(&g) {
                            LinkKind::Pix
                        } else if socket(g) == home {
                            LinkKind::Node
                        } else {
                            LinkKind::Sys
                        }
                    })
                    .collect(),
            }
        })
        .collect();
    Profile {
        name: s.name.into(),
        description: s.description.into(),
        vendor: Vendor::Nvidia,
        chip: s.chip.into(),
        resource_name: "nvidia.com/gpu".into(),
        schedule_policy: None,
        accelerator_type: None,
        devices: devices(n, "GPU", |i| Some(socket(i) as u32)),
        group_kind: GroupKind::Socket,
        groups: vec![DeviceSet::range(0, n / 2), DeviceSet::range(n / 2, n)],
        links,
        nics,
        vnpu: None,
        allocator: AllocatorKind::Gpu,
    }
}

fn kinds(n: usize, f: impl Fn(usize, usize) -> LinkKind) -> Vec<Vec<LinkKind>> {
    (0..n).map(|i| (0..n).map(|j| if i == j { LinkKind::SelfLink } else { f(i, j) }).collect()).collect()
}

/// PCIe box: GPU pairs (0,1), (2,3)… share a switch (`pair`), a socket holds 4 (`socket_level`), SYS across.
fn pcie_box(pair: LinkKind, socket_level: LinkKind) -> Vec<Vec<LinkKind>> {
    kinds(8, |i, j| {
        if i / 2 == j / 2 {
            pair
        } else if socket(i) == socket(j) {
            socket_level
        } else {
            LinkKind::Sys
        }
    })
}

fn one_nic_per_pair() -> Vec<(&'static str, Vec<usize>)> {
    vec![("mlx5_0", vec![0, 1]), ("mlx5_1", vec![2, 3]), ("mlx5_2", vec![4, 5]), ("mlx5_3", vec![6, 7])]
}

fn one_nic_per_gpu() -> Vec<(&'static str, Vec<usize>)> {
    ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"]
        .into_iter()
        .enumerate()
        .map(|(g, name)| (name, vec![g]))
        .collect()
}

/// Memory of one GPU of a card model, GiB: a size written in the name wins
/// (`A100-SXM4-80GB`, `H100 80GB HBM3`), else the model's only or smallest
/// size (A100 → 40, V100 → 16), so a card is never promised more than it has.
pub fn card_memory_gib(chip: &str) -> Option<u32> {
    let upper = chip.to_ascii_uppercase();
    let written = upper.split(|c: char| !c.is_ascii_alphanumeric()).find_map(|w| {
        let digits = w.strip_suffix("GB").or_else(|| w.strip_suffix('G'))?;
        digits.parse::<u32>().ok().filter(|&n| (8..=1024).contains(&n))
    });
    if written.is_some() {
        return written;
    }
    const MODELS: [(&str, u32); 8] = [
        ("H200", 141),
        ("H100", 80),
        ("H800", 80),
        ("A800", 80),
        ("A100", 40),
        ("L40S", 48),
        ("4090", 24),
        ("V100", 16),
    ];
    MODELS.iter().find(|(model, _)| upper.contains(model)).map(|&(_, gib)| gib)
}

pub(crate) fn profiles() -> Vec<Profile> {
    let nvswitch = |n: u8| kinds(8, move |_, _| LinkKind::NvLink(n));
    vec![
        build(Spec {
            name: "dgx-1-v100",
            description: "DGX-1 with 8× V100 SXM2: NVLink 2 hybrid cube mesh (NV1/NV2), PCIe Gen3, 4 EDR NICs",
            chip: "Tesla V100-SXM2",
            speeds: LinkSpeeds { nvlink_mbps: 25_000, pcie_mbps: 16_000, p2p: true },
            kinds: kinds(8, |i, j| LinkKind::from_code(DGX1_V100[i][j]).unwrap_or(LinkKind::Sys)),
            nics: one_nic_per_pair(),
        }),
        build(Spec {
            name: "hgx-a100-8",
            description: "HGX/DGX A100 8-GPU: NVSwitch, every pair NV12 (300 GB/s per direction), PCIe Gen4",
            chip: "A100-SXM4",
            speeds: LinkSpeeds { nvlink_mbps: 25_000, pcie_mbps: 32_000, p2p: true },
            kinds: nvswitch(12),
            nics: one_nic_per_gpu(),
        }),
        build(Spec {
            name: "hgx-h100-8",
            description: "HGX/DGX H100 8-GPU: NVSwitch, every pair NV18 (450 GB/s per direction), PCIe Gen5",
            chip: "H100-SXM5",
            speeds: LinkSpeeds { nvlink_mbps: 25_000, pcie_mbps: 64_000, p2p: true },
            kinds: nvswitch(18),
            nics: one_nic_per_gpu(),
        }),
        build(Spec {
            name: "a800-8",
            description: "A800 SXM4 8-GPU: NVSwitch limited to NV8 (400 GB/s bidirectional, 200 per direction)",
            chip: "A800-SXM4",
            speeds: LinkSpeeds { nvlink_mbps: 25_000, pcie_mbps: 32_000, p2p: true },
            kinds: nvswitch(8),
            nics: one_nic_per_pair(),
        }),
        build(Spec {
            name: "pcie-4090-8",
            description: "8× RTX 4090 on PCIe Gen4, two sockets, no P2P: PIX pairs, NODE within a socket, SYS across",
            chip: "GeForce RTX 4090",
            speeds: LinkSpeeds { nvlink_mbps: 0, pcie_mbps: 32_000, p2p: false },
            kinds: pcie_box(LinkKind::Pix, LinkKind::Node),
            nics: vec![("mlx5_0", vec![0, 1]), ("mlx5_1", vec![4, 5])],
        }),
        build(Spec {
            name: "pcie-l40s-8",
            description:
                "8× L40S on PCIe Gen4 with P2P, two sockets: PIX pairs, PXB within a socket's switch, SYS across",
            chip: "L40S",
            speeds: LinkSpeeds { nvlink_mbps: 0, pcie_mbps: 32_000, p2p: true },
            kinds: pcie_box(LinkKind::Pix, LinkKind::Pxb),
            nics: one_nic_per_pair(),
        }),
    ]
}
