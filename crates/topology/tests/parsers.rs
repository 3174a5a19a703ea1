//! Parsers on realistic fixtures (tests/data) and on malformed input.

use ringleader_topology::parse::npu_smi::{parse_info, profile_from_info};
use ringleader_topology::parse::nvidia_smi::{parse_topo, profile_from_topo};
use ringleader_topology::profiles::builtin;
use ringleader_topology::{allocate, DeviceRequest, DeviceSet, DeviceState, LinkKind, LinkSpeeds};

const DGX1: &str = include_str!("data/dgx1-v100.topo");
const H100: &str = include_str!("data/hgx-h100.topo");
const PCIE: &str = include_str!("data/pcie-4090.topo");
/// Captured verbatim from `nvidia-smi topo -m` on a 1×H100 80GB HBM3 machine, driver 580.159.04.
const REAL_H100_X1: &str = include_str!("data/h100-x1-driver580.topo");
const NPU_910B: &str = include_str!("data/npu-smi-910b-8.txt");
const NPU_DUO: &str = include_str!("data/npu-smi-300i-duo.txt");

#[test]
fn dgx1_topo_matches_builtin() {
    let m = parse_topo(DGX1).unwrap();
    assert_eq!(m.gpus.len(), 8);
    assert_eq!(m.nics, vec!["mlx5_0", "mlx5_2", "mlx5_1", "mlx5_3"]);
    assert_eq!(m.gpu_links[0][3], LinkKind::NvLink(2));
    assert_eq!(m.gpu_links[2][6], LinkKind::NvLink(1));
    assert_eq!(
        m.nic_links[2],
        vec![
            LinkKind::Phb,
            LinkKind::Phb,
            LinkKind::Pix,
            LinkKind::Pix,
            LinkKind::Sys,
            LinkKind::Sys,
            LinkKind::Sys,
            LinkKind::Sys
        ]
    );
    assert_eq!(m.cpu_affinity[4].as_deref(), Some("20-39,60-79"));
    assert_eq!(m.numa_affinity[0], None);
    let speeds = LinkSpeeds { nvlink_mbps: 25_000, pcie_mbps: 16_000, p2p: true };
    let p = profile_from_topo("parsed-dgx1", DGX1, speeds, "V100").unwrap();
    let b = builtin("dgx-1-v100").unwrap();
    assert_eq!(p.links, b.links, "parsed DGX-1 equals the built-in profile");
}

#[test]
fn h100_topo_with_nic_legend_and_ansi_header() {
    let m = parse_topo(H100).unwrap();
    assert_eq!(m.gpus, (0..8).map(|i| format!("GPU{i}")).collect::<Vec<_>>());
    assert_eq!(m.nics, (0..8).map(|i| format!("mlx5_{i}")).collect::<Vec<_>>());
    assert!(m.gpu_links.iter().enumerate().all(|(i, r)| r
        .iter()
        .enumerate()
        .all(|(j, &k)| (i == j) == (k == LinkKind::SelfLink) && (i == j || k == LinkKind::NvLink(18)))));
    assert_eq!(m.numa_affinity, vec![Some(0), Some(0), Some(0), Some(0), Some(1), Some(1), Some(1), Some(1)]);
    assert_eq!(m.nic_links[5][5], LinkKind::Pix);
    assert_eq!(m.nic_links[5][1], LinkKind::Sys);
    let p = profile_from_topo("h100", H100, LinkSpeeds { pcie_mbps: 64_000, ..LinkSpeeds::default() }, "H100").unwrap();
    assert_eq!(p.bandwidth(0, 7), 450_000);
    assert_eq!(p.groups, vec![DeviceSet::range(0, 4), DeviceSet::range(4, 8)]);
    assert_eq!(p.nics.len(), 8);
}

#[test]
fn real_driver_580_output() {
    let m = parse_topo(REAL_H100_X1).unwrap();
    assert_eq!(m.gpus, vec!["GPU0"]);
    assert_eq!(m.gpu_links, vec![vec![LinkKind::SelfLink]]);
    assert_eq!(m.cpu_affinity, vec![Some("0-15".to_string())]);
    assert_eq!(m.numa_affinity, vec![Some(0)]);
    let p = profile_from_topo("h100-x1", REAL_H100_X1, LinkSpeeds::default(), "H100 80GB HBM3").unwrap();
    assert_eq!(allocate(&p, &DeviceState::new(), &DeviceRequest::whole(1)).unwrap().ids, vec![0]);
}

#[test]
fn pcie_topo_space_separated() {
    let m = parse_topo(PCIE).unwrap();
    assert_eq!(m.nics.len(), 0);
    assert_eq!(m.gpu_links[0][1], LinkKind::Pix);
    assert_eq!(m.gpu_links[0][2], LinkKind::Node);
    assert_eq!(m.gpu_links[0][4], LinkKind::Sys);
    assert_eq!(m.numa_affinity[6], Some(1));
    let p = profile_from_topo("4090", PCIE, LinkSpeeds { nvlink_mbps: 0, pcie_mbps: 32_000, p2p: false }, "RTX 4090")
        .unwrap();
    assert_eq!(p.links, builtin("pcie-4090-8").unwrap().links);
    assert_eq!(allocate(&p, &DeviceState::new(), &DeviceRequest::whole(2)).unwrap().ids, vec![0, 1]);
}

#[test]
fn topo_errors_name_line_and_token() {
    let bad_code = DGX1.replacen("NV2\tNV2\tSYS", "NV2\tNVX\tSYS", 1);
    let e = parse_topo(&bad_code).unwrap_err();
    assert_eq!(e.line, 2);
    assert_eq!(e.token, "NVX");
    assert!(e.to_string().contains("allowed: X, SYS, NODE, PHB, PXB, PIX, NV#"), "{e}");

    let asym = DGX1.replacen("GPU0\t X \tNV1", "GPU0\t X \tNV2", 1);
    assert!(parse_topo(&asym).unwrap_err().message.contains("not symmetric"));

    let short: String = DGX1.lines().take(3).collect::<Vec<_>>().join("\n");
    let e = parse_topo(&short).unwrap_err();
    assert!(e.message.contains("no row"), "{e}");

    let e = parse_topo("hello world\n").unwrap_err();
    assert!(e.message.contains("no header"), "{e}");
    assert!(parse_topo("").is_err());
    let e = parse_topo("\tGPU0\tGPU1\nGPU0\t X \tNV1\nGPU9\tNV1\t X \n").unwrap_err();
    assert_eq!((e.line, e.token.as_str()), (3, "GPU9"));
    let e = parse_topo("\tGPU0\tGPU1\nGPU0\t X\n").unwrap_err();
    assert!(e.message.contains("1 link entries"), "{e}");
}

#[test]
fn npu_smi_910b_table() {
    let info = parse_info(NPU_910B).unwrap();
    assert_eq!(info.version.as_deref(), Some("23.0.rc3"));
    assert_eq!(info.chips.len(), 8);
    let c = &info.chips[2];
    assert_eq!((c.npu, c.chip, c.name.as_str(), c.health.as_str()), (2, 0, "910B3", "OK"));
    assert_eq!(c.bus_id, "0000:81:00.0");
    assert_eq!(c.hbm_total_mb, Some(65_536));
    assert_eq!(c.memory_total_mb, Some(0));
    assert_eq!(info.chips[5].health, "Alarm");
    let (p, unhealthy) = profile_from_info(&info).unwrap();
    assert_eq!(p.name, "atlas-800t-a2");
    assert_eq!(unhealthy, DeviceSet::from_indices([5]));
    assert_eq!(p.devices[7].bus_id.as_deref(), Some("0000:02:00.0"));
    let st = DeviceState::new().with_unhealthy(unhealthy);
    assert_eq!(
        allocate(&p, &st, &DeviceRequest::whole(8)).unwrap_err().to_string(),
        "Insufficient huawei.com/Ascend910"
    );
}

#[test]
fn npu_smi_duo_table() {
    let info = parse_info(NPU_DUO).unwrap();
    assert_eq!(info.chips.len(), 8);
    assert_eq!(info.chips[3].device, Some(3));
    assert_eq!(info.chips[3].npu, 2);
    assert_eq!(info.chips[3].memory_total_mb, Some(44_280));
    assert_eq!(info.chips[3].hbm_total_mb, None);
    let (p, unhealthy) = profile_from_info(&info).unwrap();
    assert_eq!(p.name, "atlas-300i-duo");
    assert_eq!(unhealthy, DeviceSet::from_indices([5]));
    assert_eq!(p.devices.iter().map(|d| d.id).collect::<Vec<_>>(), (0..8).collect::<Vec<u32>>());
}

#[test]
fn npu_smi_errors() {
    let e = parse_info("nothing here").unwrap_err();
    assert!(e.message.contains("no NPU rows"), "{e}");
    let bad_id = NPU_910B.replacen("| 0     910B3", "| x     910B3", 1);
    let e = parse_info(&bad_id).unwrap_err();
    assert_eq!((e.line, e.token.as_str()), (7, "x"));
    // Drop the first Chip row: the NPU row is left without its chip.
    let lines: Vec<&str> = NPU_910B.lines().collect();
    let missing: String =
        lines.iter().enumerate().filter(|(i, _)| *i != 7).map(|(_, l)| *l).collect::<Vec<_>>().join("\n");
    let e = parse_info(&missing).unwrap_err();
    assert!(e.message.contains("without its Chip row"), "{e}");
    let orphan = "| 0                         | 0000:C1:00.0  | 0           0    / 0          3161 / 65536         |\n";
    assert!(parse_info(orphan).unwrap_err().message.contains("without a preceding NPU row"));
    let unknown = NPU_910B.replace("910B3", "999Z");
    let info = parse_info(&unknown).unwrap();
    assert!(profile_from_info(&info).unwrap_err().message.contains("unknown chip name"));
    let four: String = lines[..6 + 3 * 4].join("\n");
    let info = parse_info(&four).unwrap();
    assert!(profile_from_info(&info).unwrap_err().message.contains("no built-in layout"));
}

#[test]
fn arbitrary_text_never_panics() {
    let samples = [DGX1, H100, PCIE, REAL_H100_X1, NPU_910B, NPU_DUO];
    for s in samples {
        for cut in (0..s.len()).step_by(37) {
            let Some(prefix) = s.get(..cut) else { continue };
            let _ = parse_topo(prefix);
            let _ = parse_info(prefix).map(|i| profile_from_info(&i));
        }
    }
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    /// Lines built from the tokens both formats use, so the parsers get past their first checks.
    fn line() -> impl Strategy<Value = String> {
        let token = prop_oneof![
            Just("GPU0".to_string()),
            Just("GPU1".to_string()),
            Just("NIC0".to_string()),
            Just(" X ".to_string()),
            Just("NV2".to_string()),
            Just("SYS".to_string()),
            Just("CPU Affinity".to_string()),
            Just("Legend:".to_string()),
            Just("|".to_string()),
            Just("/".to_string()),
            Just("910B3".to_string()),
            Just("OK".to_string()),
            Just("0000:C1:00.0".to_string()),
            "[0-9]{1,3}",
            "\\PC{0,6}",
        ];
        proptest::collection::vec(token, 0..12).prop_map(|t| t.join("\t"))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn parsers_never_panic(lines in proptest::collection::vec(line(), 0..12)) {
            let text = lines.join("\n");
            let _ = parse_topo(&text).map(|_| profile_from_topo("fuzz", &text, LinkSpeeds::default(), "GPU"));
            let _ = parse_info(&text).map(|i| profile_from_info(&i));
        }
    }
}
