//! Atlas 350 (`huawei.com/npu`) allocation against MindCluster's current
//! ascend-for-volcano code (issue 18; docs/atlas-350.md): a reference written
//! the way its `chip4nodex` policy reads (free card list → cards per mesh →
//! filter, select, score) checked on every free set of the 8- and 16-card
//! servers, the cases of chip4nodex's own unit tests, and the base handler
//! behind chip1-node8/16.

use ringleader_topology::{allocate, builtin, DeviceRequest, DeviceSet, DeviceState, NoFit, NodeScore, Profile};

fn profile(name: &str) -> &'static Profile {
    builtin(name).unwrap_or_else(|| panic!("missing builtin {name}"))
}

fn state_with_free(p: &Profile, free: &[usize]) -> DeviceState {
    DeviceState::new().with_allocated(p.all().minus(DeviceSet::from_indices(free.iter().copied())))
}

fn free_list(bits: u64, n: usize) -> Vec<usize> {
    (0..n).filter(|&i| bits >> i & 1 == 1).collect()
}

/// Free cards per mesh of 4 (chip4nodex's `getNodeMeshInfo`), and the wholly free meshes.
fn mesh_info(top: &[usize]) -> ([usize; 4], usize) {
    let mut count = [0usize; 4];
    for &c in top {
        count[c / 4] += 1;
    }
    (count, count.iter().filter(|&&m| m == 4).count())
}

fn affinity(req: usize) -> bool {
    req <= 4 || req.is_multiple_of(4)
}

/// chip4nodex's choice of cards, or `None` when the node fails its filter.
fn reference_select(top: &[usize], req: usize) -> Option<Vec<usize>> {
    let (count, full) = mesh_info(top);
    if !affinity(req) {
        return (top.len() >= req).then(|| top[..req].to_vec());
    }
    if req >= 4 {
        if full < req / 4 {
            return None;
        }
        let meshes: Vec<usize> = (0..4).filter(|&m| count[m] == 4).take(req / 4).collect();
        return Some(meshes.iter().flat_map(|&m| m * 4..m * 4 + 4).collect());
    }
    // The first mesh with the least extra cards.
    let mut chosen: Option<(usize, usize)> = None;
    for (m, &c) in count.iter().enumerate() {
        if c >= req && chosen.is_none_or(|(_, extra)| c - req < extra) {
            chosen = Some((m, c - req));
        }
    }
    let (mesh, _) = chosen?;
    Some(top.iter().copied().filter(|c| c / 4 == mesh).take(req).collect())
}

/// chip4nodex's `bestScore` (lower is better) for a node that passed the filter.
fn reference_best(top: &[usize], req: usize, max: usize) -> usize {
    let card = if top.len() >= req { top.len() - req } else { max };
    if !affinity(req) {
        return card;
    }
    let (count, full) = mesh_info(top);
    let (need, available) = if req >= 4 { (req / 4, full) } else { (1, count.iter().filter(|&&c| c >= req).count()) };
    max * (available - need) + card
}

/// The node score MindCluster writes (greater is better).
fn reference_score(top: &[usize], req: usize, max: usize) -> usize {
    let best = reference_best(top, req, max);
    if !affinity(req) {
        return max * (max - best);
    }
    let w = if max == 8 { 16 } else { 64 };
    w * (w - best)
}

/// Our score as chip4nodex's `bestScore`: the spare-mesh rank weighs the node size, free cards left add.
fn our_best(score: NodeScore, max: usize) -> usize {
    let NodeScore::Ascend(s) = score else { panic!("not an Ascend score") };
    assert_eq!(s.healthy_chips, 0);
    s.affinity_rank as usize * max + s.free_after as usize
}

fn check_exhaustive(name: &str, n: usize) -> usize {
    let p = profile(name);
    let mut checked = 0;
    for bits in 0..(1u64 << n) {
        let top = free_list(bits, n);
        let st = state_with_free(p, &top);
        for req in 1..=n {
            let got = allocate(p, &st, &DeviceRequest::whole(req as u32));
            match reference_select(&top, req) {
                Some(want) => {
                    let a = got.unwrap_or_else(|e| panic!("{name} free={top:?} req={req}: want {want:?}, got {e}"));
                    assert_eq!(a.devices.to_vec(), want, "{name} free={top:?} req={req}");
                    assert_eq!(a.ids, want.iter().map(|&i| i as u32).collect::<Vec<_>>());
                    assert_eq!(our_best(a.score, n), reference_best(&top, req, n), "{name} free={top:?} req={req}");
                }
                None => {
                    let e = got.expect_err("reference rejects the node");
                    assert!(
                        matches!(e, NoFit::NoRing { .. } | NoFit::NoWholeRings { .. } | NoFit::Insufficient { .. }),
                        "{name} free={top:?} req={req}: {e}"
                    );
                }
            }
            checked += 1;
        }
    }
    checked
}

#[test]
fn chip4_node8_every_free_set_and_count() {
    assert_eq!(check_exhaustive("atlas-350-8", 8), 256 * 8);
}

#[test]
fn chip4_node16_every_free_set_and_count() {
    assert_eq!(check_exhaustive("atlas-350-16", 16), 65536 * 16);
}

/// Node order: for every pair of free sets of the 8-card server and every
/// count, the node our score prefers is the one MindCluster scores higher
/// (equal scores tie in both).
#[test]
fn chip4_node8_node_order_matches_the_plugin_score_for_every_pair() {
    let p = profile("atlas-350-8");
    for req in 1..=8usize {
        let nodes: Vec<(NodeScore, usize)> = (0..256u64)
            .filter_map(|bits| {
                let top = free_list(bits, 8);
                let a = allocate(p, &state_with_free(p, &top), &DeviceRequest::whole(req as u32)).ok()?;
                Some((a.score, reference_score(&top, req, 8)))
            })
            .collect();
        for (sa, ra) in &nodes {
            for (sb, rb) in &nodes {
                assert_eq!(sa.cmp(sb), ra.cmp(rb), "req={req}: {sa:?} vs {sb:?}");
            }
        }
    }
}

fn pick(p: &Profile, free: &[usize], req: u32) -> Result<Vec<u32>, NoFit> {
    allocate(p, &state_with_free(p, free), &DeviceRequest::whole(req)).map(|a| a.ids)
}

/// chip4nodex `TestSelectNPUNotFullMesh`, `TestSelectNPUMultiMesh`, `TestSelectNPUFromNodeSuccess`.
#[test]
fn chip4nodex_selection_cases() {
    let p = profile("atlas-350-16");
    // mesh free {3,2,3,3}, 2 cards → the mesh with exactly 2.
    assert_eq!(pick(p, &[0, 1, 2, 5, 6, 8, 9, 10, 12, 13, 14], 2), Ok(vec![5, 6]));
    // {4,1,3,4}, 2 → the mesh with 3 (1 extra), not the whole ones.
    assert_eq!(pick(p, &[0, 1, 2, 3, 5, 8, 9, 10, 12, 13, 14, 15], 2), Ok(vec![8, 9]));
    // {4,2,3,4}, 3 → the mesh with 3.
    assert_eq!(pick(p, &[0, 1, 2, 3, 4, 5, 8, 9, 10, 12, 13, 14, 15], 3), Ok(vec![8, 9, 10]));
    // {1,1,1,0}, 4 → nothing; {2,1,1,0}, 4 → no whole mesh.
    assert_eq!(pick(p, &[0, 5, 9], 4), Err(NoFit::Insufficient { resource: "huawei.com/npu".into() }));
    assert_eq!(pick(p, &[0, 1, 5, 9], 4), Err(NoFit::NoWholeRings { ring: "UB", rings: 1 }));
    // {3,2,3,4}, 4 → the only whole mesh; {3,2,4,4} → the lowest whole mesh.
    assert_eq!(pick(p, &[0, 1, 2, 5, 6, 8, 9, 10, 12, 13, 14, 15], 4), Ok(vec![12, 13, 14, 15]));
    assert_eq!(pick(p, &[0, 1, 2, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15], 4), Ok(vec![8, 9, 10, 11]));
    // {4,1,3,4}, 8 → meshes 0 and 3; {4,2,4,4}, 12 → meshes 0, 2, 3.
    assert_eq!(pick(p, &[0, 1, 2, 3, 5, 8, 9, 10, 12, 13, 14, 15], 8), Ok(vec![0, 1, 2, 3, 12, 13, 14, 15]));
    assert_eq!(
        pick(p, &[0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13, 14, 15], 12),
        Ok(vec![0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15])
    );
    // 3 cards on a node with cards 0–2 free.
    assert_eq!(pick(profile("atlas-350-8"), &[0, 1, 2], 3), Ok(vec![0, 1, 2]));
}

/// chip4nodex `TestJudgeNodeAndTaskNpuIn4Pmesh`, `TestJudgeNodeAndTaskNPU`, `TestIs4PmeshAffinity`.
#[test]
fn chip4nodex_filter_cases() {
    let p = profile("atlas-350-16");
    let fits = |free: &[usize], req| pick(p, free, req).is_ok();
    assert!(fits(&[0, 1, 2], 2));
    assert!(!fits(&[0, 4, 8], 3));
    assert!(fits(&[0, 1, 2, 5, 6, 7, 9, 10, 11], 3));
    assert!(fits(&[0, 1, 2, 3], 4));
    assert!(!fits(&[0, 1, 2], 4));
    assert!(fits(&[0, 1, 2, 3, 4, 5, 6, 7], 8));
    assert!(!fits(&[0, 1, 2, 3, 8, 9, 13, 15], 8));
    assert!(fits(&(0..16).collect::<Vec<_>>(), 16));
    assert!(!fits(&[0, 1, 2, 3, 4, 5, 6, 7], 16));
    assert!(fits(&[0, 1, 2], 3));
    // Affinity: below a mesh or whole meshes; 5 takes any 5 free cards, across meshes.
    assert!(ringleader_topology::alloc::atlas350::mesh_affinity(1));
    assert!(ringleader_topology::alloc::atlas350::mesh_affinity(2));
    assert!(ringleader_topology::alloc::atlas350::mesh_affinity(8));
    assert!(!ringleader_topology::alloc::atlas350::mesh_affinity(5));
    assert_eq!(pick(p, &[0, 1, 4, 5, 8, 12], 5), Ok(vec![0, 1, 4, 5, 8]));
}

/// chip4nodex `TestGetNodeBestScoreIn4Pmesh` / `TestScoreNodeFor4Pmesh` and
/// `TestScoreBestNPUNodesSuccessNoMesh`: the plugin's numbers, from our score.
#[test]
fn chip4nodex_score_cases() {
    let cases: [(&str, usize, &[usize], usize, usize); 7] = [
        ("atlas-350-8", 2, &[0, 1, 2, 3], 2, 16 * 14),
        ("atlas-350-8", 2, &[0, 1, 4, 5], 10, 16 * 6),
        ("atlas-350-8", 2, &[0, 1, 2], 1, 16 * 15),
        ("atlas-350-16", 8, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], 40, 64 * 24),
        ("atlas-350-16", 8, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13], 22, 64 * 42),
        ("atlas-350-16", 8, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], 20, 64 * 44),
        ("atlas-350-16", 8, &[0, 1, 2, 3, 8, 9, 10, 11], 0, 64 * 64),
    ];
    for (name, req, free, best, score) in cases {
        let p = profile(name);
        let n = p.len();
        let a = allocate(p, &state_with_free(p, free), &DeviceRequest::whole(req as u32)).unwrap();
        assert_eq!(our_best(a.score, n), best, "{name} {free:?} req={req}");
        assert_eq!(reference_score(free, req, n), score, "{name} {free:?} req={req}");
    }
    // 5 cards (no mesh affinity) on 8-card nodes with 5 and 6 free: 64 and 56, the fuller node first.
    let p = profile("atlas-350-8");
    let five = allocate(p, &state_with_free(p, &[0, 1, 2, 3, 4]), &DeviceRequest::whole(5)).unwrap();
    let six = allocate(p, &state_with_free(p, &[0, 1, 2, 3, 4, 5]), &DeviceRequest::whole(5)).unwrap();
    assert_eq!((reference_score(&[0, 1, 2, 3, 4], 5, 8), reference_score(&[0, 1, 2, 3, 4, 5], 5, 8)), (64, 56));
    assert!(five.score > six.score);
}

/// chip4nodex `checkJobMode`: any count up to the node size per pod; more is refused.
#[test]
fn counts_up_to_the_node_size() {
    for (name, n) in [("atlas-350-8", 8), ("atlas-350-16", 16), ("atlas-350-8-pcie", 8), ("atlas-350-16-pcie", 16)] {
        let p = profile(name);
        for req in 1..=n {
            assert!(allocate(p, &DeviceState::new(), &DeviceRequest::whole(req)).is_ok(), "{name} {req}");
            assert!(allocate(p, &DeviceState::new(), &DeviceRequest::whole_multi_pod(req)).is_ok(), "{name} {req}");
        }
        for req in [0, n + 1] {
            let e = allocate(p, &DeviceState::new(), &DeviceRequest::whole(req)).unwrap_err();
            assert!(matches!(e, NoFit::InvalidCount { .. }), "{name} {req}: {e}");
        }
    }
    let e = allocate(profile("atlas-350-8"), &DeviceState::new(), &DeviceRequest::whole(9)).unwrap_err();
    assert_eq!(e.to_string(), "9 huawei.com/npu not allowed on chip4-node8 (allowed: 1–8)");
}

/// chip4nodex watches network faults for multi-pod jobs; the base handler behind chip1-node8/16 does not.
#[test]
fn network_unhealthy_cards_and_distributed_jobs() {
    let mesh = profile("atlas-350-8");
    let st = DeviceState::new().with_network_unhealthy(DeviceSet::from_indices([0]));
    assert_eq!(allocate(mesh, &st, &DeviceRequest::whole(4)).unwrap().ids, vec![0, 1, 2, 3]);
    assert_eq!(allocate(mesh, &st, &DeviceRequest::whole_multi_pod(4)).unwrap().ids, vec![4, 5, 6, 7]);
    assert_eq!(
        allocate(mesh, &st, &DeviceRequest::whole_multi_pod(8)).unwrap_err(),
        NoFit::Insufficient { resource: "huawei.com/npu".into() }
    );
    assert_eq!(allocate(mesh, &st, &DeviceRequest::whole_multi_pod(4)).map(|a| a.ids), Ok(vec![4, 5, 6, 7]),);
    let flat = profile("atlas-350-8-pcie");
    assert_eq!(allocate(flat, &st, &DeviceRequest::whole_multi_pod(2)).unwrap().ids, vec![0, 1]);
    // Unhealthy cards are never given.
    let st = DeviceState::new().with_unhealthy(DeviceSet::from_indices([0, 5]));
    assert_eq!(allocate(flat, &st, &DeviceRequest::whole(3)).unwrap().ids, vec![1, 2, 3]);
    assert_eq!(
        allocate(mesh, &st, &DeviceRequest::whole(4)).unwrap_err(),
        NoFit::NoWholeRings { ring: "UB", rings: 1 }
    );
}

/// chip1-node8/16 (MindCluster's base handler): the lowest free cards; a node
/// scores `healthy × 10 − free` (greater is better). Where that score ties,
/// ours prefers the node left with fewer free cards.
#[test]
fn chip1_lowest_cards_and_base_handler_node_order() {
    for (name, n) in [("atlas-350-8-pcie", 8usize), ("atlas-350-16-pcie", 16)] {
        let p = profile(name);
        // Every (healthy, free) shape a node can have, as unhealthy cards at the top and allocated ones below.
        let mut nodes = Vec::new();
        for unhealthy in 0..=n {
            for allocated in 0..=(n - unhealthy) {
                let st = DeviceState::new()
                    .with_unhealthy(DeviceSet::range(n - unhealthy, n))
                    .with_allocated(DeviceSet::range(0, allocated));
                let free = n - unhealthy - allocated;
                for req in 1..=free {
                    let a = allocate(p, &st, &DeviceRequest::whole(req as u32)).unwrap();
                    assert_eq!(a.devices, DeviceSet::range(allocated, allocated + req), "{name}");
                }
                if free >= 1 {
                    let a = allocate(p, &st, &DeviceRequest::whole(1)).unwrap();
                    nodes.push((a.score, 10 * (n - unhealthy) as i64 - free as i64));
                }
            }
        }
        for (sa, ra) in &nodes {
            for (sb, rb) in &nodes.iter().filter(|(_, rb)| rb != ra).collect::<Vec<_>>() {
                assert_eq!(sa.cmp(sb), ra.cmp(rb), "{name}: {sa:?} vs {sb:?}");
            }
        }
    }
}
