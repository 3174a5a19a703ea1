//! Job replay through the real gang scheduler: arrivals, waits, departures.

use ringleader_api::document::parse_str;
use ringleader_api::{check_documents, Job};
use ringleader_scheduler::cluster::Cluster;
use ringleader_sim::jobs::{replay_jobs, timed_jobs};

const CLUSTER: &str = r#"
apiVersion: ringleader.io/v1alpha1
kind: Node
metadata: {name: n1}
spec: {profile: atlas-800t-a2}
---
apiVersion: ringleader.io/v1alpha1
kind: Node
metadata: {name: n2}
spec: {profile: atlas-800t-a2}
"#;

fn job(name: &str, pods: u32, chips: u32, arrival: u64, duration: u64) -> String {
    format!(
        r#"---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: {name}
  labels: {{ring-controller.atlas: ascend-910b}}
  annotations: {{ringleader.io/arrival-time: "{arrival}", ringleader.io/duration: "{duration}"}}
spec:
  minAvailable: {pods}
  tasks:
  - name: worker
    replicas: {pods}
    template:
      metadata: {{labels: {{ring-controller.atlas: ascend-910b}}}}
      spec:
        restartPolicy: OnFailure
        containers:
        - name: main
          image: train:1
          resources: {{requests: {{huawei.com/Ascend910: {chips}}}, limits: {{huawei.com/Ascend910: {chips}}}}}
"#
    )
}

fn jobs(yaml: &str) -> Vec<Job> {
    check_documents(&parse_str("jobs.yaml", yaml).unwrap())
        .iter()
        .map(|r| {
            assert!(r.valid, "{:?}", r.errors);
            Job::from_resource(r.resource.as_ref().unwrap()).unwrap()
        })
        .collect()
}

#[test]
fn queued_jobs_start_when_capacity_frees() {
    let cluster = Cluster::from_documents(&parse_str("c.yaml", CLUSTER).unwrap()).unwrap();
    let yaml = job("big", 2, 8, 0, 100)
        + &job("later", 1, 8, 10, 50)
        + &job("small", 1, 4, 20, 10)
        + &job("huge", 3, 8, 30, 10);
    let timed = timed_jobs(jobs(&yaml)).unwrap();
    let r = replay_jobs(cluster, &timed);
    let at = |name: &str| r.jobs.iter().find(|j| j.job == format!("default/{name}")).unwrap().clone();
    assert_eq!((at("big").start, at("big").end, at("big").pods), (Some(0), Some(100), 2));
    // Both nodes are full until 100; then `later` and `small` share them.
    assert_eq!((at("later").start, at("later").end), (Some(100), Some(150)));
    assert_eq!((at("small").start, at("small").end), (Some(100), Some(110)));
    // Three 8-chip pods never fit on two nodes.
    assert_eq!(r.never_placed(), vec!["default/huge"]);
    assert_eq!(at("later").wait(), Some(90));
    assert!((r.mean_wait() - (0.0 + 90.0 + 80.0) / 3.0).abs() < 1e-9);
    assert_eq!(r.p99_wait(), 90);
    // Full from 0 to 100, then 12 of 16 chips to 110, 8 to 150, 0 after.
    assert_eq!(r.utilisation.first(), Some(&(0, 1.0)));
    assert_eq!(r.utilisation.last(), Some(&(150, 0.0)));
    let expected = (100.0 * 1.0 + 10.0 * 0.75 + 40.0 * 0.5) / 150.0;
    assert!((r.mean_utilisation() - expected).abs() < 1e-9, "{}", r.mean_utilisation());
}

#[test]
fn bad_annotations_name_the_job_and_field() {
    let yaml = job("x", 1, 1, 0, 10).replace("\"0\"", "\"soon\"");
    let err = timed_jobs(jobs(&yaml)).unwrap_err();
    assert_eq!(
        err,
        r#"default/x: metadata.annotations["ringleader.io/arrival-time"]: "soon": must be whole seconds (0 or more)"#
    );
}
