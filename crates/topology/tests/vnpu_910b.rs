//! 910B dynamic vNPU as ascend-for-volcano decides it: per chip type the
//! templates (name, AI cores, AI CPUs, memory, DVPP), the `npu-core` counts
//! they allow, the template each count gets, and how vNPUs pack onto chips.

use ringleader_topology::alloc::vnpu::{
    add, dynamic_core_counts, dynamic_cores_allowed, dynamic_cores_text, dynamic_templates,
};
use ringleader_topology::profile::{DvppShare, VnpuSpec};
use ringleader_topology::profiles::{builtin, vnpu_910b_chip, VNPU_910B_CHIPS};
use ringleader_topology::{allocate, DeviceRequest, DeviceState, DeviceUse, NoFit, VnpuDvpp, VnpuLevel, VnpuRequest};

fn spec(chip: &str) -> VnpuSpec {
    vnpu_910b_chip(chip).unwrap_or_else(|| panic!("{chip} has no table"))
}

fn dynamic(cores: u32, dvpp: VnpuDvpp, level: VnpuLevel) -> DeviceRequest {
    DeviceRequest::Vnpu(VnpuRequest::Dynamic { cores, dvpp, level })
}

type Row = (&'static str, u32, u32, u32, DvppShare);

#[test]
fn template_tables_per_chip() {
    use DvppShare::*;
    let bin0: &[Row] = &[("vir06_1c_16g", 6, 1, 16, Proportional), ("vir12_3c_32g", 12, 3, 32, Proportional)];
    let expected: &[(&str, u32, u32, &[Row])] = &[
        ("910B1", 25, 64, bin0),
        ("910B2", 24, 64, bin0),
        ("910B2C", 24, 64, bin0),
        ("910B3", 20, 64, &[("vir05_1c_16g", 5, 1, 16, Proportional), ("vir10_3c_32g", 10, 3, 32, Proportional)]),
        (
            "910B4",
            20,
            32,
            &[
                ("vir05_1c_8g", 5, 1, 8, Proportional),
                ("vir10_3c_16g", 10, 3, 16, Proportional),
                ("vir10_3c_16g_nm", 10, 3, 16, NoDvpp),
                ("vir10_4c_16g_m", 10, 4, 16, All),
            ],
        ),
    ];
    assert_eq!(expected.iter().map(|e| e.0).collect::<Vec<_>>(), VNPU_910B_CHIPS);
    for (chip, aicore, mem, rows) in expected {
        let s = spec(chip);
        assert_eq!((s.aicore, s.aicpu, s.mem_gib), (*aicore, 6, *mem), "{chip}");
        let got: Vec<Row> = s
            .templates
            .iter()
            .map(|t| {
                let name: &'static str = rows.iter().find(|r| r.0 == t.name).map_or("?", |r| r.0);
                (name, t.aicore, t.aicpu, t.mem_gib, t.dvpp)
            })
            .collect();
        assert_eq!(got, rows.to_vec(), "{chip}");
    }
    assert!(vnpu_910b_chip("910B").is_none());
    assert!(vnpu_910b_chip("310P3").is_none());
    // The built-in A2 servers carry 910B3.
    for name in ["atlas-800t-a2", "atlas-200t-a2-box16"] {
        assert_eq!(builtin(name).unwrap().vnpu.as_ref(), Some(&spec("910B3")), "{name}");
    }
}

#[test]
fn allowed_npu_core_counts_exhaustive() {
    // checkB*DyJobRequire of ascend-for-volcano: template cores, or whole chips.
    let rule = |chip: &str, c: u32| match chip {
        "910B1" => c == 6 || c == 12 || (c > 0 && c.is_multiple_of(25)),
        "910B2" | "910B2C" => c == 6 || c == 12 || (c > 0 && c.is_multiple_of(24)),
        _ => c == 5 || c == 10 || (c > 0 && c.is_multiple_of(20)),
    };
    for chip in VNPU_910B_CHIPS {
        let s = spec(chip);
        for cores in 0..=200 {
            assert_eq!(dynamic_cores_allowed(&s, cores), rule(chip, cores), "{chip} npu-core {cores}");
        }
    }
    assert_eq!(dynamic_core_counts(&spec("910B3")), vec![5, 10]);
    assert_eq!(dynamic_core_counts(&spec("910B1")), vec![6, 12]);
    assert_eq!(
        dynamic_cores_text(&spec("910B3")),
        "5 (vir05_1c_16g), 10 (vir10_3c_32g) or a multiple of 20 (whole chips)"
    );
    assert_eq!(
        dynamic_cores_text(&spec("910B4")),
        "5 (vir05_1c_8g), 10 (vir10_3c_16g / vir10_3c_16g_nm / vir10_4c_16g_m) or a multiple of 20 (whole chips)"
    );
    // The 310P rule is unchanged: 1, 2, 4 or multiples of 8.
    let s310 = builtin("atlas-300i-duo").unwrap().vnpu.clone().unwrap();
    for cores in 0..=64 {
        let want = matches!(cores, 1 | 2 | 4) || (cores > 0 && cores % 8 == 0);
        assert_eq!(dynamic_cores_allowed(&s310, cores), want, "310P npu-core {cores}");
    }
    let s910 = builtin("atlas-800-910").unwrap().vnpu.clone().unwrap();
    assert_eq!(dynamic_core_counts(&s910), vec![2, 4, 8, 16]);
}

#[test]
fn template_choice_per_chip_and_labels() {
    use VnpuDvpp::*;
    use VnpuLevel::*;
    let pick = |chip: &str, cores, dvpp, level| -> Vec<String> {
        dynamic_templates(&spec(chip), cores, dvpp, level).iter().map(|t| t.name.clone()).collect()
    };
    // (chip, cores, vnpu-dvpp) → template; vnpu-level never changes a 910B choice.
    let table: &[(&str, u32, VnpuDvpp, &[&str])] = &[
        ("910B3", 5, Null, &["vir05_1c_16g"]),
        ("910B3", 10, Null, &["vir10_3c_32g"]),
        ("910B3", 10, Yes, &[]),
        ("910B3", 10, No, &[]),
        ("910B3", 6, Null, &[]),
        ("910B4", 5, Null, &["vir05_1c_8g"]),
        ("910B4", 10, Null, &["vir10_3c_16g"]),
        ("910B4", 10, Yes, &["vir10_4c_16g_m"]),
        ("910B4", 10, No, &["vir10_3c_16g_nm"]),
        ("910B4", 5, Yes, &[]),
        ("910B1", 6, Null, &["vir06_1c_16g"]),
        ("910B1", 12, Null, &["vir12_3c_32g"]),
        ("910B2C", 12, Null, &["vir12_3c_32g"]),
        ("910B1", 3, Null, &[]),
        ("910B1", 5, Null, &[]),
    ];
    for (chip, cores, dvpp, want) in table {
        for level in [Low, High] {
            assert_eq!(pick(chip, *cores, *dvpp, level), want.to_vec(), "{chip} {cores} {dvpp:?} {level:?}");
        }
    }
}

#[test]
fn packing_on_a_910b3_node() {
    let p = builtin("atlas-800t-a2").unwrap();
    let s = p.vnpu.as_ref().unwrap();
    let mut st = DeviceState::new();
    let five = dynamic(5, VnpuDvpp::Null, VnpuLevel::Low);
    let ten = dynamic(10, VnpuDvpp::Null, VnpuLevel::Low);
    // Four 5-core vNPUs fill chip 0 (least free chip that fits), the fifth opens chip 1.
    for expected in [0, 0, 0, 0, 1] {
        let a = allocate(p, &st, &five).unwrap();
        let v = a.vnpu.as_ref().unwrap();
        assert_eq!((v.chip, v.template.as_str(), v.downgraded), (expected, "vir05_1c_16g", false));
        st.apply(p, &five, &a);
    }
    assert_eq!(
        st.partial[0],
        DeviceUse { aicore: 20, aicpu: 4, mem_gib: 64, dvpp: 20, groups: 4, gpu_milli: 0, gpu_mem_mib: 0 }
    );
    // A 10-core vNPU goes on chip 1 (5 used), the least free chip with room.
    let a = allocate(p, &st, &ten).unwrap();
    assert_eq!((a.vnpu.as_ref().unwrap().chip, a.vnpu.as_ref().unwrap().template.as_str()), (1, "vir10_3c_32g"));
    st.apply(p, &ten, &a);
    // Whole chips through npu-core 40: two chips with nothing cut from them.
    let whole = allocate(p, &st, &dynamic(40, VnpuDvpp::Null, VnpuLevel::Low)).unwrap();
    assert_eq!(whole.ids, vec![2, 3]);
    assert!(whole.vnpu.is_none());
    // Memory bounds a chip as well: two vir10_3c_32g take all 64 GiB.
    let full = add(
        s,
        &add(s, &DeviceUse::default(), s.template("vir10_3c_32g").unwrap()),
        s.template("vir10_3c_32g").unwrap(),
    );
    assert_eq!((full.aicore, full.mem_gib, full.aicpu), (20, 64, 6));
}

#[test]
fn b4_dvpp_templates_share_a_chip_within_6_ai_cpus() {
    let s = spec("910B4");
    let m = s.template("vir10_4c_16g_m").unwrap();
    let nm = s.template("vir10_3c_16g_nm").unwrap();
    let used = add(&s, &DeviceUse::default(), m);
    // 4 + 3 AI CPUs exceed the 6 ascend-for-volcano counts per chip.
    assert!(!ringleader_topology::alloc::vnpu::fits(&s, &used, nm));
    let plain = s.template("vir05_1c_8g").unwrap();
    // The _m template owns all DVPP: a proportional template no longer fits, though cores and CPUs would.
    assert!(!ringleader_topology::alloc::vnpu::fits(&s, &used, plain));
}

#[test]
fn invalid_counts_name_the_chip_and_the_allowed_values() {
    let p = builtin("atlas-800t-a2").unwrap();
    let e = allocate(p, &DeviceState::new(), &dynamic(4, VnpuDvpp::Null, VnpuLevel::Low)).unwrap_err();
    assert!(matches!(e, NoFit::NoTemplate { .. }));
    assert_eq!(
        e.to_string(),
        "no vNPU template for npu-core 4 (vnpu-dvpp null, vnpu-level low) on Ascend 910B3 \
         (allowed: npu-core 5 (vir05_1c_16g), 10 (vir10_3c_32g) or a multiple of 20 (whole chips))"
    );
}

#[test]
fn validation_table_matches_the_chip_specs() {
    // ringleader-api validates jobs without the topology crate; its table must say what the specs say.
    use ringleader_api::validate::vnpu::DYNAMIC_VNPU_CHIPS;
    let mut specs: Vec<(String, VnpuSpec)> = VNPU_910B_CHIPS.iter().map(|c| (c.to_string(), spec(c))).collect();
    specs.push(("310P".into(), builtin("atlas-300i-duo").unwrap().vnpu.clone().unwrap()));
    specs.push(("910".into(), builtin("atlas-800-910").unwrap().vnpu.clone().unwrap()));
    assert_eq!(DYNAMIC_VNPU_CHIPS.len(), specs.len());
    for (chip, s) in &specs {
        let row = DYNAMIC_VNPU_CHIPS.iter().find(|r| r.chip == chip).unwrap_or_else(|| panic!("{chip} missing"));
        assert_eq!(row.aicore, s.aicore, "{chip}");
        let mut names: Vec<(u32, Vec<String>)> = dynamic_core_counts(s)
            .into_iter()
            .map(|c| {
                let mut n: Vec<String> = s.templates.iter().filter(|t| t.aicore == c).map(|t| t.name.clone()).collect();
                n.sort();
                (c, n)
            })
            .collect();
        names.sort();
        let mut got: Vec<(u32, Vec<String>)> = row
            .templates
            .iter()
            .map(|(c, n)| {
                let mut n: Vec<String> = n.iter().map(|x| x.to_string()).collect();
                n.sort();
                (*c, n)
            })
            .collect();
        got.sort();
        assert_eq!(got, names, "{chip}");
        for cores in 0..=100 {
            assert_eq!(row.allows(cores), dynamic_cores_allowed(s, cores), "{chip} {cores}");
        }
    }
}
