//! The GPU allocator against brute force on the spec/gpu.md objective, on the
//! built-in GPU profiles (every free set, every k) and on random link matrices
//! of up to 16 GPUs.

// Matrix code indexes both dimensions; index loops read clearer than zipped iterators here.
#![allow(clippy::needless_range_loop)]

use proptest::prelude::*;
use ringleader_topology::alloc::gpu::{choose, BwMatrix};
use ringleader_topology::{
    allocate, builtin, builtins, AllocatorKind, DeviceRequest, DeviceSet, DeviceState, NodeScore,
};

/// Brute force: every k-subset of `free`; the best by (bottleneck, total,
/// bandwidth left among the remaining free GPUs, lexicographically smallest IDs).
fn brute(bw: &[Vec<u32>], free: u64, k: u32) -> Option<u64> {
    let n = bw.len();
    let pair_sum = |set: u64| -> u64 {
        let mut s = 0u64;
        for i in 0..n {
            for j in i + 1..n {
                if set >> i & 1 == 1 && set >> j & 1 == 1 {
                    s += u64::from(bw[i][j]);
                }
            }
        }
        s
    };
    let mut best: Option<(u32, u64, u64, Vec<usize>, u64)> = None;
    for set in 0..(1u64 << n) {
        if set & !free != 0 || set.count_ones() != k {
            continue;
        }
        let ids: Vec<usize> = (0..n).filter(|&i| set >> i & 1 == 1).collect();
        let mut min = u32::MAX;
        for (a, &i) in ids.iter().enumerate() {
            for &j in &ids[a + 1..] {
                min = min.min(bw[i][j]);
            }
        }
        let total = pair_sum(set);
        let keep = pair_sum(free & !set);
        let better = match &best {
            None => true,
            Some((bm, bt, bk, bids, _)) => {
                (min, total, keep).cmp(&(*bm, *bt, *bk)).then_with(|| bids.cmp(&ids)) == std::cmp::Ordering::Greater
            }
        };
        if better {
            best = Some((min, total, keep, ids, set));
        }
    }
    best.map(|b| b.4)
}

fn rows_of(p: &ringleader_topology::Profile) -> Vec<Vec<u32>> {
    (0..p.len()).map(|i| (0..p.len()).map(|j| p.bandwidth(i, j)).collect()).collect()
}

#[test]
fn builtin_gpu_profiles_every_free_set_and_k() {
    let mut checked = 0;
    for p in builtins().iter().filter(|p| p.allocator == AllocatorKind::Gpu) {
        let rows = rows_of(p);
        for free in 0..(1u64 << p.len()) {
            let st = DeviceState::new().with_allocated(p.all().minus(DeviceSet(free)));
            for k in 1..=p.len() as u32 {
                let got = allocate(p, &st, &DeviceRequest::whole(k)).ok().map(|a| a.devices.0);
                assert_eq!(got, brute(&rows, free, k), "{} free={free:#x} k={k}", p.name);
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 6 * 256 * 8);
}

#[test]
fn dgx1_choices() {
    let p = builtin("dgx-1-v100").unwrap();
    let all = DeviceState::new();
    let a = allocate(p, &all, &DeviceRequest::whole(4)).unwrap();
    assert_eq!(a.ids, vec![0, 1, 2, 3]);
    let NodeScore::Gpu(s) = a.score else { panic!() };
    assert_eq!(s.bottleneck_mbps, 25_000);
    assert_eq!(s.total_mbps, 225_000);
    // Two GPUs: the first NV2 pair (50 GB/s).
    assert_eq!(allocate(p, &all, &DeviceRequest::whole(2)).unwrap().ids, vec![0, 3]);
    // 8 GPUs: bottleneck is the SYS path (PCIe Gen3 × 50 %).
    let NodeScore::Gpu(s) = allocate(p, &all, &DeviceRequest::whole(8)).unwrap().score else { panic!() };
    assert_eq!(s.bottleneck_mbps, 8_000);
}

#[test]
fn pcie_box_least_connected_single_gpu() {
    let p = builtin("pcie-4090-8").unwrap();
    // Free 0, 1, 2: GPU 2's switch partner (3) is busy, so GPU 2 is the least connected; 0–1 stay a PIX pair.
    let st = DeviceState::new().with_allocated(p.all().minus(DeviceSet::from_indices([0, 1, 2])));
    assert_eq!(allocate(p, &st, &DeviceRequest::whole(1)).unwrap().ids, vec![2]);
    assert_eq!(allocate(p, &DeviceState::new(), &DeviceRequest::whole(2)).unwrap().ids, vec![0, 1]);
    assert_eq!(allocate(p, &DeviceState::new(), &DeviceRequest::whole(4)).unwrap().ids, vec![0, 1, 2, 3]);
}

#[test]
fn nvswitch_and_unhealthy() {
    let p = builtin("hgx-h100-8").unwrap();
    let st = DeviceState::new().with_unhealthy(DeviceSet::from_indices([0, 3]));
    let a = allocate(p, &st, &DeviceRequest::whole(4)).unwrap();
    assert_eq!(a.ids, vec![1, 2, 4, 5]);
    let NodeScore::Gpu(s) = a.score else { panic!() };
    assert_eq!(s.bottleneck_mbps, 450_000);
    assert_eq!(allocate(p, &st, &DeviceRequest::whole(7)).unwrap_err().to_string(), "Insufficient nvidia.com/gpu");
    let a800 = builtin("a800-8").unwrap();
    let NodeScore::Gpu(s) = allocate(a800, &DeviceState::new(), &DeviceRequest::whole(2)).unwrap().score else {
        panic!()
    };
    assert_eq!(s.bottleneck_mbps, 200_000);
}

fn matrix_strategy() -> impl Strategy<Value = (Vec<Vec<u32>>, u64, u32)> {
    (2usize..=16)
        .prop_flat_map(|n| {
            // Few distinct values so that ties (and the tie-breaks) are common.
            let cells = proptest::collection::vec(
                prop_oneof![Just(0u32), Just(8_000), Just(25_000), Just(50_000), 1u32..100_000],
                n * (n - 1) / 2,
            );
            (Just(n), cells, any::<u64>(), 1u32..=n as u32)
        })
        .prop_map(|(n, cells, free, k)| {
            let mut m = vec![vec![0u32; n]; n];
            let mut it = cells.into_iter();
            for i in 0..n {
                for j in i + 1..n {
                    let v = it.next().unwrap_or(0);
                    m[i][j] = v;
                    m[j][i] = v;
                }
            }
            (m, free & ((1u64 << n) - 1), k)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn random_matrices_match_brute_force((m, free, k) in matrix_strategy()) {
        let bw = BwMatrix::from_rows(&m);
        let got = choose(&bw, DeviceSet(free), k).map(|(s, _)| s.0);
        prop_assert_eq!(got, brute(&m, free, k));
    }
}
