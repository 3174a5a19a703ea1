//! vNPU template and chip choice, and GPU sharing.

use ringleader_topology::alloc::vnpu::{add, dynamic_templates, static_template};
use ringleader_topology::profiles::{builtin, vnpu_910b_chip};
use ringleader_topology::{
    allocate, DeviceRequest, DeviceSet, DeviceState, DeviceUse, NoFit, NodeScore, ShareRequest, VnpuDvpp, VnpuLevel,
    VnpuRequest,
};

fn dynamic(cores: u32, dvpp: VnpuDvpp, level: VnpuLevel) -> DeviceRequest {
    DeviceRequest::Vnpu(VnpuRequest::Dynamic { cores, dvpp, level })
}

#[test]
fn template_table_310p() {
    use VnpuDvpp::*;
    use VnpuLevel::*;
    let spec = builtin("atlas-300i-duo").unwrap().vnpu.clone().unwrap();
    let names = |c, d, l| dynamic_templates(&spec, c, d, l).iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    for d in [Yes, No, Null] {
        for l in [Low, High] {
            assert_eq!(names(1, d, l), vec!["vir01"]);
        }
    }
    assert_eq!(names(2, Null, Low), vec!["vir02_1c"]);
    assert_eq!(names(2, Null, High), vec!["vir02", "vir02_1c"]);
    assert_eq!(names(4, Yes, Low), vec!["vir04_4c_dvpp"]);
    assert_eq!(names(4, Yes, High), vec!["vir04_4c_dvpp"]);
    assert_eq!(names(4, No, High), vec!["vir04_3c_ndvpp"]);
    assert_eq!(names(4, Null, Low), vec!["vir04_3c"]);
    assert_eq!(names(4, Null, High), vec!["vir04", "vir04_3c"]);
    assert!(names(3, Null, Low).is_empty());
}

#[test]
fn chip_choice_least_free_that_fits() {
    let p = builtin("atlas-inference-310p").unwrap();
    let spec = p.vnpu.as_ref().unwrap();
    let mut st = DeviceState::new();
    st.partial = vec![DeviceUse::default(); 8];
    // Chip 2 has 6 cores used (vir04 + vir02), chip 5 has 4 used: a 2-core vNPU goes on chip 2.
    st.partial[2] = add(
        spec,
        &add(spec, &DeviceUse::default(), spec.template("vir04_3c").unwrap()),
        spec.template("vir02_1c").unwrap(),
    );
    st.partial[5] = add(spec, &DeviceUse::default(), spec.template("vir04_3c").unwrap());
    let a = allocate(p, &st, &dynamic(2, VnpuDvpp::Null, VnpuLevel::Low)).unwrap();
    assert_eq!(a.vnpu.as_ref().unwrap().chip, 2);
    assert_eq!(a.vnpu.as_ref().unwrap().template, "vir02_1c");
    // vir04 (4 cores, 4 of 7 AI CPUs) no longer fits chip 2 (6 cores used) but fits chip 5 (3 CPUs used), the least free.
    let a = allocate(p, &st, &dynamic(4, VnpuDvpp::Null, VnpuLevel::High)).unwrap();
    assert_eq!((a.vnpu.as_ref().unwrap().chip, a.vnpu.as_ref().unwrap().downgraded), (5, false));
    // Whole chips through npu-core 8: idle chips only.
    let a = allocate(p, &st, &dynamic(16, VnpuDvpp::Null, VnpuLevel::Low)).unwrap();
    assert_eq!(a.ids, vec![0, 1]);
}

#[test]
fn downgrade_scores_lower() {
    let p = builtin("atlas-inference-310p").unwrap();
    let spec = p.vnpu.as_ref().unwrap();
    // Every chip holds two vir02 (4 cores, 4 of 7 AI CPUs): vir04 (4 CPUs) fits nowhere, vir04_3c does.
    let used =
        add(spec, &add(spec, &DeviceUse::default(), spec.template("vir02").unwrap()), spec.template("vir02").unwrap());
    let full = DeviceState { partial: vec![used; 8], ..DeviceState::new() };
    let a = allocate(p, &full, &dynamic(4, VnpuDvpp::Null, VnpuLevel::High)).unwrap();
    let v = a.vnpu.as_ref().unwrap();
    assert_eq!((v.template.as_str(), v.downgraded), ("vir04_3c", true));
    let fresh = allocate(p, &DeviceState::new(), &dynamic(4, VnpuDvpp::Null, VnpuLevel::High)).unwrap();
    assert!(fresh.score > a.score, "a node needing a downgrade scores lower");
}

#[test]
fn group_rule_310p() {
    let p = builtin("atlas-inference-310p").unwrap();
    let spec = p.vnpu.as_ref().unwrap();
    let one = spec.template("vir01").unwrap();
    let three = add(spec, &add(spec, &add(spec, &DeviceUse::default(), one), one), one);
    let four = add(spec, &three, one);
    let st = DeviceState {
        partial: vec![
            three,
            four,
            DeviceUse::default(),
            DeviceUse::default(),
            DeviceUse::default(),
            DeviceUse::default(),
            DeviceUse::default(),
            DeviceUse::default(),
        ],
        ..DeviceState::new().with_allocated(DeviceSet::range(2, 8))
    };
    // 3 groups: 2-core fits chip 0; 4 groups: only 1-core templates → chip 1 for vir01 (least free).
    assert_eq!(allocate(p, &st, &dynamic(2, VnpuDvpp::Null, VnpuLevel::Low)).unwrap().vnpu.unwrap().chip, 0);
    assert_eq!(allocate(p, &st, &dynamic(1, VnpuDvpp::Null, VnpuLevel::Low)).unwrap().vnpu.unwrap().chip, 1);
    assert_eq!(
        allocate(p, &st, &dynamic(4, VnpuDvpp::Null, VnpuLevel::Low)).unwrap_err(),
        NoFit::NoVnpuChip { template: "vir04_3c".into() }
    );
}

#[test]
fn dvpp_exclusive_templates() {
    let p = builtin("atlas-inference-310p").unwrap();
    let spec = p.vnpu.as_ref().unwrap();
    let dvpp = add(spec, &DeviceUse::default(), spec.template("vir04_4c_dvpp").unwrap());
    let st = DeviceState { partial: vec![dvpp], ..DeviceState::new().with_allocated(DeviceSet::range(1, 8)) };
    // The chip's DVPP is all taken: vir04_3c (proportional DVPP) no longer fits, vir04_3c_ndvpp does.
    assert!(allocate(p, &st, &dynamic(4, VnpuDvpp::Null, VnpuLevel::Low)).is_err());
    assert_eq!(
        allocate(p, &st, &dynamic(4, VnpuDvpp::No, VnpuLevel::Low)).unwrap().vnpu.unwrap().template,
        "vir04_3c_ndvpp"
    );
}

#[test]
fn static_names_and_910_lists() {
    let s310 = builtin("atlas-300i-duo").unwrap().vnpu.clone().unwrap();
    let s910b = builtin("atlas-800t-a2").unwrap().vnpu.clone().unwrap();
    let s910 = builtin("atlas-800-910").unwrap().vnpu.clone().unwrap();
    let name = |s: &ringleader_topology::profile::VnpuSpec, x: &str| static_template(s, x).map(|t| t.name.clone());
    assert_eq!(name(&s310, "2c").as_deref(), Some("vir02"));
    assert_eq!(name(&s310, "4c.3cpu").as_deref(), Some("vir04_3c"));
    assert_eq!(name(&s310, "4c.3cpu.ndvpp").as_deref(), Some("vir04_3c_ndvpp"));
    assert_eq!(name(&s310, "4c.4cpu.dvpp").as_deref(), Some("vir04_4c_dvpp"));
    assert_eq!(name(&s310, "vir02_1c").as_deref(), Some("vir02_1c"));
    // The built-in A2 profiles carry 910B3 chips: only the 910B3 templates exist there.
    assert_eq!(name(&s910b, "10c.3cpu.32g").as_deref(), Some("vir10_3c_32g"));
    assert_eq!(name(&s910b, "6c.1cpu.16g"), None);
    assert_eq!(name(&s910b, "10c.3cpu.16g.nm"), None);
    let s910b4 = vnpu_910b_chip("910B4").unwrap();
    assert_eq!(name(&s910b4, "10c.3cpu.16g.nm").as_deref(), Some("vir10_3c_16g_nm"));
    assert_eq!(name(&s910b4, "10c.4cpu.16g.dvpp").as_deref(), Some("vir10_4c_16g_m"));
    assert_eq!(name(&s910, "16c").as_deref(), Some("vir16"));
    assert_eq!(name(&s910, "1c"), None);
    assert_eq!(name(&s910, "3c"), None);
    assert_eq!(name(&s910, "bogus"), None);
    for level in [VnpuLevel::Low, VnpuLevel::High] {
        let got: Vec<_> = dynamic_templates(&s910b, 10, VnpuDvpp::Null, level).iter().map(|t| t.name.clone()).collect();
        assert_eq!(got, vec!["vir10_3c_32g"], "{level:?}");
    }
    let p = builtin("atlas-800t-a2").unwrap();
    let a =
        allocate(p, &DeviceState::new(), &DeviceRequest::Vnpu(VnpuRequest::Static { template: "5c.1cpu.16g".into() }))
            .unwrap();
    assert_eq!(a.vnpu.unwrap().template, "vir05_1c_16g");
    let e = allocate(builtin("hgx-h100-8").unwrap(), &DeviceState::new(), &dynamic(1, VnpuDvpp::Null, VnpuLevel::Low))
        .unwrap_err();
    assert_eq!(e.to_string(), "vNPU not supported on hgx-h100-8");
}

#[test]
fn gpu_share_best_fit() {
    let p = builtin("pcie-l40s-8").unwrap();
    let mut st = DeviceState::new().with_allocated(DeviceSet::from_indices([0]));
    st.partial = vec![DeviceUse::default(); 8];
    st.partial[1].gpu_milli = 500;
    st.partial[2].gpu_milli = 800;
    st.partial[3].gpu_milli = 300;
    let share = |milli| DeviceRequest::Share(ShareRequest { milli });
    assert_eq!(allocate(p, &st, &share(200)).unwrap().ids, vec![2]);
    let a = allocate(p, &st, &share(400)).unwrap();
    assert_eq!(a.ids, vec![1]);
    assert!(matches!(a.score, NodeScore::Share(s) if s.gpu_free_after == 100));
    assert_eq!(allocate(p, &st, &share(800)).unwrap().ids, vec![4]);
    // Partly shared GPUs are not free for whole-GPU requests.
    assert_eq!(allocate(p, &st, &DeviceRequest::whole(4)).unwrap().ids, vec![4, 5, 6, 7]);
    assert!(matches!(allocate(p, &st, &share(1000)), Err(NoFit::InvalidCount { .. })));
    let full = DeviceState::new().with_allocated(p.all());
    assert_eq!(allocate(p, &full, &share(10)).unwrap_err().to_string(), "no GPU with 10 free milli-GPU");
}

#[test]
fn apply_records_each_kind() {
    let p = builtin("atlas-inference-310p").unwrap();
    let mut st = DeviceState::new();
    let req = dynamic(4, VnpuDvpp::Null, VnpuLevel::Low);
    let a = allocate(p, &st, &req).unwrap();
    st.apply(p, &req, &a);
    assert_eq!(
        st.partial[0],
        DeviceUse { aicore: 4, aicpu: 3, mem_gib: 12, dvpp: 4, groups: 1, gpu_milli: 0, gpu_mem_mib: 0 }
    );
    // The second 4-core vNPU goes on the same chip (least free that fits), the third on chip 1.
    let a = allocate(p, &st, &req).unwrap();
    assert_eq!(a.vnpu.as_ref().unwrap().chip, 0);
    st.apply(p, &req, &a);
    assert_eq!(allocate(p, &st, &req).unwrap().vnpu.unwrap().chip, 1);
    let whole = DeviceRequest::whole(2);
    let a = allocate(p, &st, &whole).unwrap();
    assert_eq!(a.ids, vec![1, 2]);
    st.apply(p, &whole, &a);
    assert_eq!(st.allocated, DeviceSet::from_indices([1, 2]));
    let g = builtin("hgx-h100-8").unwrap();
    let mut gs = DeviceState::new();
    let share = |milli| DeviceRequest::Share(ShareRequest { milli });
    // 600 on an idle node → GPU0; 400 fits GPU0 exactly (best fit); the next 400 goes to GPU1.
    for (milli, expected) in [(600, 0), (400, 0), (400, 1)] {
        let a = allocate(g, &gs, &share(milli)).unwrap();
        assert_eq!(a.ids, vec![expected], "{milli}");
        gs.apply(g, &share(milli), &a);
    }
    assert_eq!((gs.partial[0].gpu_milli, gs.partial[1].gpu_milli), (1000, 400));
    assert_eq!(allocate(g, &gs, &DeviceRequest::whole(7)).unwrap_err().to_string(), "Insufficient nvidia.com/gpu");
}
