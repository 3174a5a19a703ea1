//! Dynamic vNPU pods bound in separate scheduling cycles pack their chips as
//! one cycle placing them all would (issue 18): a later cycle reads the
//! earlier pods' `huawei.com/npu-core` annotations as shares of their chips.

use ringleader_api::document::parse_str;
use ringleader_api::{check_documents, Job, Resource};
use ringleader_scheduler::conf::SchedulerConf;
use ringleader_scheduler::session::{self, Snapshot};

const NODE: &str = "---\napiVersion: ringleader.io/v1alpha1\nkind: Node\nmetadata: {name: i-1}\nspec: {profile: atlas-inference-310p}\n";

fn vcjob(name: &str, cores: u32) -> String {
    format!(
        "---\napiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: {name}, namespace: default, labels: {{ring-controller.atlas: ascend-310P}}}}\nspec:\n  minAvailable: 1\n  schedulerName: volcano\n  queue: default\n  tasks:\n  - name: w\n    replicas: 1\n    template:\n      metadata: {{labels: {{ring-controller.atlas: ascend-310P}}}}\n      spec:\n        containers:\n        - name: w\n          image: x\n          resources: {{requests: {{huawei.com/npu-core: {cores}}}, limits: {{huawei.com/npu-core: {cores}}}}}\n"
    )
}

fn snapshot(yaml: &str) -> Snapshot {
    let docs = parse_str("scenario.yaml", yaml).unwrap();
    let objects: Vec<Resource> = check_documents(&docs).into_iter().filter_map(|r| r.resource).collect();
    let jobs: Vec<Job> = objects.iter().filter_map(Job::from_resource).collect();
    Snapshot::from_resources(&objects, jobs).unwrap()
}

#[test]
fn vnpu_pods_bound_cycle_by_cycle_pack_like_one_cycle() {
    let sizes = [("a", 2), ("b", 4), ("c", 1), ("d", 4)];
    let conf = SchedulerConf::default();
    let all: String = sizes.iter().map(|(n, c)| vcjob(n, *c)).collect();
    let one = session::run(snapshot(&(NODE.to_string() + &all)), &conf, 0);
    let together: Vec<String> =
        one.bindings.iter().map(|b| format!("{}:{:?}", b.job, b.annotations.get("huawei.com/npu-core"))).collect();
    let mut current = snapshot(NODE);
    let mut apart = Vec::new();
    for (t, (name, cores)) in sizes.iter().enumerate() {
        let job = snapshot(&(NODE.to_string() + &vcjob(name, *cores))).pending;
        current.pending = job;
        let o = session::run(current.clone(), &conf, t as u64);
        apart.extend(o.bindings.iter().map(|b| format!("{}:{:?}", b.job, b.annotations.get("huawei.com/npu-core"))));
        current = current.after(&o);
    }
    assert_eq!(apart, together);
    // 2 + 4 + 1 of chip 0's 8 AI cores are taken: the last 4 go to chip 1.
    assert_eq!(apart.last().map(String::as_str), Some("default/d:Some(\"1-vir04_3c\")"), "{apart:?}");
}
