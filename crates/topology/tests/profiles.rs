//! The built-in profiles: all present, valid, and labelled as the spec says.

use ringleader_topology::profile::{LinkKind, Profile};
use ringleader_topology::{builtin, builtin_names, builtins, SchedulePolicy, Vendor};

#[test]
fn all_builtins_are_valid() {
    let names = builtin_names();
    let expected = [
        "atlas-800-910",
        "atlas-800-910-half",
        "atlas-300t",
        "atlas-800t-a2",
        "atlas-200t-a2-box16",
        "atlas-800t-a3",
        "atlas-900-a3-superpod",
        "atlas-350-8",
        "atlas-350-16",
        "atlas-350-8-pcie",
        "atlas-350-16-pcie",
        "atlas-300i",
        "atlas-300i-duo",
        "atlas-inference-310p",
        "dgx-1-v100",
        "hgx-a100-8",
        "hgx-h100-8",
        "a800-8",
        "pcie-4090-8",
        "pcie-l40s-8",
    ];
    assert_eq!(names, expected);
    for p in builtins() {
        p.validate().unwrap_or_else(|e| panic!("{e}"));
        let json = serde_json::to_string(p).unwrap();
        let back: Profile = serde_json::from_str(&json).unwrap();
        assert_eq!(&back, p);
        let yaml = serde_yaml_ng::to_string(p).unwrap();
        assert_eq!(&Profile::from_yaml(&yaml).unwrap(), p);
    }
    assert!(builtin("no-such").is_none());
}

#[test]
fn labels_follow_the_spec() {
    let cases = [
        ("atlas-800-910", "huawei.com/Ascend910", Some(SchedulePolicy::Chip4Node8), Some("module")),
        ("atlas-800-910-half", "huawei.com/Ascend910", Some(SchedulePolicy::Chip4Node4), Some("half")),
        ("atlas-300t", "huawei.com/Ascend910", Some(SchedulePolicy::Chip1Node2), Some("card")),
        ("atlas-800t-a2", "huawei.com/Ascend910", Some(SchedulePolicy::Chip8Node8), Some("module-910b-8")),
        ("atlas-200t-a2-box16", "huawei.com/Ascend910", Some(SchedulePolicy::Chip8Node16), Some("module-910b-16")),
        ("atlas-800t-a3", "huawei.com/Ascend910", Some(SchedulePolicy::Chip2Node16), Some("module-a3-16")),
        (
            "atlas-900-a3-superpod",
            "huawei.com/Ascend910",
            Some(SchedulePolicy::Chip2Node16Sp),
            Some("module-a3-16-super-pod"),
        ),
        ("atlas-300i", "huawei.com/Ascend310", None, None),
        ("atlas-300i-duo", "huawei.com/Ascend310P", None, None),
        ("hgx-h100-8", "nvidia.com/gpu", None, None),
    ];
    for (name, res, policy, accel) in cases {
        let p = builtin(name).unwrap();
        assert_eq!(p.resource_name, res, "{name}");
        assert_eq!(p.schedule_policy, policy, "{name}");
        assert_eq!(p.accelerator_type.as_deref(), accel, "{name}");
    }
    for policy in SchedulePolicy::ALL {
        assert_eq!(policy.as_str().parse::<SchedulePolicy>().unwrap(), policy);
    }
    assert!("chip3-node9".parse::<SchedulePolicy>().unwrap_err().to_string().contains("allowed"));
}

#[test]
fn gpu_bandwidths() {
    let nv = |p: &str, i: usize, j: usize| builtin(p).unwrap().links[i][j];
    assert_eq!(nv("hgx-a100-8", 0, 7).kind, LinkKind::NvLink(12));
    assert_eq!(nv("hgx-a100-8", 0, 7).mbps, 300_000);
    assert_eq!(nv("hgx-h100-8", 3, 4).mbps, 450_000);
    assert_eq!(nv("a800-8", 1, 2).mbps, 200_000);
    assert_eq!(nv("dgx-1-v100", 0, 3).mbps, 50_000);
    assert_eq!(nv("dgx-1-v100", 0, 1).mbps, 25_000);
    // No P2P: every level is slower than with P2P, and the order PIX > NODE > SYS holds.
    let (pix, node, sys) = (nv("pcie-4090-8", 0, 1).mbps, nv("pcie-4090-8", 0, 2).mbps, nv("pcie-4090-8", 0, 4).mbps);
    assert!(pix > node && node > sys);
    assert!(nv("pcie-l40s-8", 0, 1).mbps > pix);
    // Every DGX-1 GPU has exactly 6 NVLinks.
    let d = builtin("dgx-1-v100").unwrap();
    for i in 0..8 {
        let links: u32 =
            d.links[i].iter().map(|l| if let LinkKind::NvLink(n) = l.kind { u32::from(n) } else { 0 }).sum();
        assert_eq!(links, 6, "GPU{i}");
    }
    assert!(builtins().iter().all(|p| (p.vendor == Vendor::Huawei) == p.resource_name.starts_with("huawei.com/")));
}
