//! Normalisation of each kind into the one job model: pod names, rank order,
//! gang size, queue, device requests, fault and topology settings.

use ringleader_api::document::load_path;
use ringleader_api::model::{FaultScheduling, Framework, JobKind, RestartPolicy, SuccessPolicy};
use ringleader_api::{check_documents, DeviceKind, Job};
use std::path::Path;

fn job(example: &str) -> Job {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(example);
    let docs: Vec<_> = load_path(&path).into_iter().flat_map(|r| r.unwrap()).collect();
    let reports = check_documents(&docs);
    let report = reports.iter().find(|r| r.resource.as_ref().is_some_and(|res| res.is_job())).unwrap();
    assert!(report.valid, "{:?}", report.errors);
    Job::from_resource(report.resource.as_ref().unwrap()).unwrap()
}

#[test]
fn ascendjob_pytorch_orders_master_first_and_requests_whole_chips() {
    let j = job("ascendjob-pytorch.yaml");
    assert_eq!(j.kind, JobKind::AscendJob);
    assert_eq!(j.framework, Some(Framework::PyTorch));
    assert_eq!(j.roles[0].name, "Master");
    assert_eq!(j.pod_names()[0], format!("{}-master-0", j.name));
    assert!(j.pod_names().iter().skip(1).all(|p| p.starts_with(&format!("{}-worker-", j.name))));
    let dev = j.roles[0].device.as_ref().unwrap();
    assert_eq!((dev.resource.as_str(), dev.kind.clone()), ("huawei.com/Ascend910", DeviceKind::Whole));
    assert_eq!(j.roles[0].restart_policy, RestartPolicy::Never);
    assert_eq!(j.scheduling.min_available, j.total_replicas());
    assert_eq!(j.topology.ring_controller.as_deref(), Some("ascend-910"));
}

#[test]
fn elastic_vcjob_carries_min_replicas_and_grace() {
    let j = job("vcjob-elastic.yaml");
    assert_eq!(j.kind, JobKind::VolcanoJob);
    let e = j.fault.elastic.unwrap();
    assert_eq!((e.min_replicas, e.max_replicas), (1, j.total_replicas()));
    assert_eq!(j.fault.fault_scheduling, Some(FaultScheduling::Grace));
    assert_eq!(j.fault.backoff_limit, Some(0));
    assert_eq!(j.pod_names()[0], format!("{}-{}-0", j.name, j.roles[0].name));
}

#[test]
fn mpijob_launcher_defaults_to_on_failure_and_workers_never() {
    let j = job("mpijob.yaml");
    assert_eq!(j.roles[0].name, "Launcher");
    assert_eq!(j.roles[0].restart_policy, RestartPolicy::OnFailure);
    assert_eq!(j.roles[1].restart_policy, RestartPolicy::Never);
    assert_eq!(
        j.pod_names(),
        vec![format!("{}-launcher-0", j.name), format!("{}-worker-0", j.name), format!("{}-worker-1", j.name)]
    );
    assert_eq!(j.roles[1].device.as_ref().unwrap().count, 8);
}

#[test]
fn ack_gpu_topology_labels_reach_the_model() {
    let j = job("pytorchjob-ack-gpu-topology.yaml");
    assert_eq!(j.topology.gpu_topology.as_deref(), Some(j.name.as_str()));
    assert_eq!(j.topology.gpu_topology_replica, Some(j.total_replicas()));
    assert_eq!(j.roles[0].device.as_ref().unwrap().resource, "aliyun.com/gpu");
    assert_eq!(j.roles[0].restart_policy, RestartPolicy::OnFailure);
}

#[test]
fn tfjob_and_deployment_defaults() {
    let tf = job("tfjob.yaml");
    assert_eq!(tf.roles.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), vec!["Chief", "PS", "Worker"]);
    assert_eq!(tf.success, SuccessPolicy::Default);
    let d = job("deployment-inference.yaml");
    assert_eq!(d.kind, JobKind::Deployment);
    assert_eq!(d.roles[0].restart_policy, RestartPolicy::Always);
    assert_eq!(d.pod_names()[0], format!("{}-0", d.name));
}
