//! One allocation decision per profile (spec targets: Ascend < 5 µs, exact
//! 8-GPU search < 100 µs), plus the exact search on 16-GPU random matrices.
//!
//! Run: `cargo bench -p ringleader-topology --bench alloc`

// Matrix code indexes both dimensions; index loops read clearer than zipped iterators here.
#![allow(clippy::needless_range_loop)]

use criterion::{criterion_group, criterion_main, Criterion};
use ringleader_topology::alloc::gpu::{choose, BwMatrix};
use ringleader_topology::alloc::vnpu::add;
use ringleader_topology::{
    allocate, builtin, builtins, DeviceRequest, DeviceSet, DeviceState, DeviceUse, ShareRequest, VnpuDvpp, VnpuLevel,
    VnpuRequest,
};
use std::hint::black_box;
use std::time::Duration;

/// A deterministic pseudo-random generator (xorshift), so runs are comparable.
fn xorshift(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

fn random_matrix(n: usize, seed: u64, distinct: u64) -> Vec<Vec<u32>> {
    let mut s = seed;
    let mut m = vec![vec![0u32; n]; n];
    for i in 0..n {
        for j in i + 1..n {
            let v = ((xorshift(&mut s) % distinct) + 1) as u32 * 10_000;
            m[i][j] = v;
            m[j][i] = v;
        }
    }
    m
}

fn ascend(c: &mut Criterion) {
    let mut g = c.benchmark_group("ascend");
    let cases: &[(&str, &[usize], u32)] = &[
        ("atlas-800-910", &[0, 5], 2),
        ("atlas-800-910", &[], 8),
        ("atlas-800-910-half", &[1], 1),
        ("atlas-300t", &[], 2),
        ("atlas-800t-a2", &[2, 3], 4),
        ("atlas-200t-a2-box16", &[0, 1, 9], 4),
        ("atlas-200t-a2-box16", &[3], 12),
        ("atlas-800t-a3", &[0, 6], 1),
        ("atlas-800t-a3", &[0, 6], 8),
        ("atlas-900-a3-superpod", &[], 16),
        ("atlas-350-16", &[1, 2], 4),
        ("atlas-350-8-pcie", &[1], 3),
        ("atlas-300i", &[0, 5], 3),
        ("atlas-300i-duo", &[2], 3),
        ("atlas-inference-310p", &[], 2),
    ];
    for (name, used, count) in cases {
        let p = builtin(name).expect("builtin");
        let st = DeviceState::new().with_allocated(DeviceSet::from_indices(used.iter().copied()));
        let req = DeviceRequest::whole(*count);
        g.bench_function(format!("{name}/n{count}"), |b| {
            b.iter(|| allocate(black_box(p), black_box(&st), black_box(&req)))
        });
    }
    let p = builtin("atlas-inference-310p").expect("builtin");
    let spec = p.vnpu.as_ref().expect("vnpu");
    let mut st = DeviceState::new();
    st.partial = (0..8)
        .map(|i| if i % 2 == 0 { add(spec, &DeviceUse::default(), &spec.templates[4]) } else { DeviceUse::default() })
        .collect();
    let req = DeviceRequest::Vnpu(VnpuRequest::Dynamic { cores: 4, dvpp: VnpuDvpp::Null, level: VnpuLevel::High });
    g.bench_function("atlas-inference-310p/vnpu-dynamic-4c-high", |b| {
        b.iter(|| allocate(black_box(p), black_box(&st), black_box(&req)))
    });
    g.finish();
}

fn gpu(c: &mut Criterion) {
    let mut g = c.benchmark_group("gpu");
    for p in builtins().iter().filter(|p| p.allocator == ringleader_topology::AllocatorKind::Gpu) {
        for k in [1u32, 2, 4] {
            let st = DeviceState::new();
            let req = DeviceRequest::whole(k);
            g.bench_function(format!("{}/all-free/k{k}", p.name), |b| {
                b.iter(|| allocate(black_box(p), black_box(&st), black_box(&req)))
            });
        }
        let st = DeviceState::new().with_allocated(DeviceSet::from_indices([1, 6]));
        let req = DeviceRequest::whole(3);
        g.bench_function(format!("{}/2-used/k3", p.name), |b| {
            b.iter(|| allocate(black_box(p), black_box(&st), black_box(&req)))
        });
    }
    let p = builtin("pcie-l40s-8").expect("builtin");
    let mut st = DeviceState::new();
    st.partial = (0..8).map(|i| DeviceUse { gpu_milli: (i * 120) % 1000, ..DeviceUse::default() }).collect();
    let req = DeviceRequest::Share(ShareRequest { milli: 300 });
    g.bench_function("pcie-l40s-8/share-300m", |b| b.iter(|| allocate(black_box(p), black_box(&st), black_box(&req))));
    // 16 GPUs: uniform (no pruning possible, all 12,870 subsets for k = 8) and random matrices.
    let uniform = BwMatrix::from_rows(&vec![vec![100_000u32; 16]; 16]);
    for (label, bw) in [
        ("uniform", uniform),
        ("random-4-levels", BwMatrix::from_rows(&random_matrix(16, 42, 4))),
        ("random-distinct", BwMatrix::from_rows(&random_matrix(16, 7, 1_000_000))),
    ] {
        for k in [2u32, 4, 8] {
            g.bench_function(format!("matrix16-{label}/k{k}"), |b| {
                b.iter(|| choose(black_box(&bw), black_box(DeviceSet::first(16)), black_box(k)))
            });
        }
    }
    g.finish();
}

fn config() -> Criterion {
    Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(2)).sample_size(30)
}

criterion_group! { name = benches; config = config(); targets = ascend, gpu }
criterion_main!(benches);
