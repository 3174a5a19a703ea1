//! Write throughput: one batch of 1,000 creates (a gang's pods) and single
//! durable writes (each its own fsync).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use ringleader_store::{ObjectKey, Op, Store};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};

fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"volcano.sh/job-name": "bench", "volcano.sh/task-spec": "worker"},
            "annotations": {"scheduling.k8s.io/group-name": "bench"}
        },
        "spec": {"containers": [{
            "name": "main",
            "image": "busybox",
            "command": ["/bin/sh", "-c", "sleep 1"],
            "env": [{"name": "MASTER_ADDR", "value": "bench-master-0"}, {"name": "WORLD_SIZE", "value": "1000"}],
            "resources": {"limits": {"huawei.com/Ascend910": "8"}}
        }]},
        "status": {"phase": "Pending"}
    })
}

fn benches(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    let round = AtomicU64::new(0);

    c.bench_function("batch create 1000 pods", |b| {
        b.iter_batched(
            || {
                let r = round.fetch_add(1, Ordering::Relaxed);
                (0..1000).map(|i| Op::Create(pod(&format!("b{r}-{i}")))).collect::<Vec<_>>()
            },
            |ops| store.batch(ops).expect("batch"),
            BatchSize::PerIteration,
        )
    });

    let mut group = c.benchmark_group("single write");
    group.sample_size(20);
    group.bench_function("create", |b| {
        b.iter(|| {
            let r = round.fetch_add(1, Ordering::Relaxed);
            store.create(pod(&format!("s{r}"))).expect("create")
        })
    });
    store.create(pod("patched")).expect("create");
    let key = ObjectKey::new("v1", "Pod", "default", "patched");
    group.bench_function("patch", |b| {
        b.iter(|| {
            let r = round.fetch_add(1, Ordering::Relaxed);
            store.patch(&key, &json!({"status": {"lastHeartbeat": r}}), None).expect("patch")
        })
    });
    group.finish();
}

criterion_group!(store_benches, benches);
criterion_main!(store_benches);
