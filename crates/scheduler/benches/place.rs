//! Engine time of gang placement on the seed's scenarios.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use ringleader_scheduler::place::{place_job, plan};
use ringleader_scheduler::scenarios::{a2_cluster, npu_job};

fn single_job(c: &mut Criterion) {
    let mut g = c.benchmark_group("single-job");
    g.sample_size(10);
    for n in [100usize, 1000] {
        let job = npu_job("big", n as u32, 1);
        g.bench_function(format!("{n}"), |b| {
            b.iter_batched(|| a2_cluster(n, 1), |mut cl| place_job(&mut cl, &job, 0), BatchSize::LargeInput)
        });
    }
    g.finish();
}

fn concurrent(c: &mut Criterion) {
    let jobs: Vec<_> = (0..100).map(|i| npu_job(&format!("job-{i}"), 1, 1)).collect();
    c.bench_function("concurrent-100", |b| {
        b.iter_batched(|| a2_cluster(100, 1), |mut cl| plan(&mut cl, &jobs, 0), BatchSize::LargeInput)
    });
}

criterion_group!(benches, single_job, concurrent);
criterion_main!(benches);
