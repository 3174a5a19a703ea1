//! The headless Services the reference operators make beside their pods,
//! so `<pod>.<job>`-style names exist as objects (resolving them is the
//! pods' hosts files' work): Kubeflow's training operator one per replica
//! pod, named like it; mpi-operator one named after the job; Volcano's
//! `svc` plugin one named after the job.

use ringleader_api::kinds::service;
use ringleader_api::model::JobKind;
use ringleader_controller::expand::{
    PodPlan, KF_JOB_NAME, KF_OPERATOR_NAME, KF_REPLICA_INDEX, KF_REPLICA_TYPE, VC_JOB_NAME, VC_JOB_NAMESPACE,
};
use ringleader_controller::JobState;
use serde_json::{json, Map, Value};

/// The Service the job's operator makes for pod `plan`, if any (not yet
/// owned by the job: the caller owns it).
pub fn for_pod(state: &JobState, plan: &PodPlan) -> Option<Value> {
    let job = &state.job;
    let labels = plan.labels();
    let pick = |keys: &[&str]| -> Value {
        let map: Map<String, Value> =
            keys.iter().filter_map(|k| labels.get(*k).map(|v| (k.to_string(), json!(v)))).collect();
        Value::Object(map)
    };
    match job.kind {
        JobKind::PyTorchJob | JobKind::TfJob => {
            let container = if job.kind == JobKind::PyTorchJob { "pytorch" } else { "tensorflow" };
            let spec = plan.template.spec.as_ref()?;
            let ports: Vec<Value> = spec
                .containers
                .iter()
                .filter(|c| c.name == container)
                .flat_map(|c| c.ports.iter().flatten())
                .map(|p| json!({"name": p.name.clone().unwrap_or_default(), "port": p.container_port}))
                .collect();
            let selector = pick(&[KF_OPERATOR_NAME, KF_JOB_NAME, KF_REPLICA_TYPE, KF_REPLICA_INDEX]);
            Some(service::headless_for(&job.namespace, &plan.slot, selector, Value::Array(ports), false))
        }
        JobKind::MpiJob => {
            let selector = pick(&[KF_OPERATOR_NAME, KF_JOB_NAME]);
            Some(service::headless_for(&job.namespace, &job.name, selector, json!([]), true))
        }
        JobKind::VolcanoJob if state.extras.volcano_plugins.contains_key("svc") => {
            let selector = pick(&[VC_JOB_NAME, VC_JOB_NAMESPACE]);
            let ports = json!([{"name": "placeholder-svc", "port": 1, "protocol": "TCP", "targetPort": 1}]);
            Some(service::headless_for(&job.namespace, &job.name, selector, ports, true))
        }
        _ => None,
    }
}
