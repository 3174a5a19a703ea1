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

#[cfg(test)]
mod tests {
    use super::*;
    use ringleader_api::Resource;
    use ringleader_controller::{expand, ExpandOptions};

    fn services(job: Value) -> Vec<Value> {
        let resource = Resource::from_value(&job).unwrap_or_else(|e| panic!("{e}"));
        let state = JobState::from_resource(&resource).unwrap_or_else(|| panic!("not a job"));
        let exp = expand(&state.job, &state.extras, &ExpandOptions::default());
        let mut out: Vec<Value> = exp.pods.iter().filter_map(|p| for_pod(&state, p)).collect();
        out.dedup_by(|a, b| a["metadata"]["name"] == b["metadata"]["name"]);
        out
    }

    fn template(container: &str) -> Value {
        json!({"spec": {"containers": [{"name": container, "image": "x",
            "ports": [{"name": "pytorchjob-port", "containerPort": 23456}]}]}})
    }

    #[test]
    fn each_operator_gets_the_services_it_makes() {
        let pj = json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "pt", "namespace": "ns"},
            "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": template("pytorch")},
                "Worker": {"replicas": 2, "template": template("pytorch")}}}});
        let got = services(pj);
        let got_names: Vec<&str> = got.iter().filter_map(|s| s["metadata"]["name"].as_str()).collect();
        assert_eq!(got_names, ["pt-master-0", "pt-worker-0", "pt-worker-1"]);
        assert_eq!(got[2]["spec"]["selector"][KF_REPLICA_INDEX], "1");
        assert_eq!(got[2]["spec"]["selector"][KF_REPLICA_TYPE], "worker");
        assert_eq!(
            got[0]["spec"]["ports"],
            json!([{"name": "pytorchjob-port", "port": 23456, "protocol": "TCP", "targetPort": 23456}])
        );
        assert!(service::headless(&got[0]));

        let vc = |plugins: Value| {
            json!({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "vj", "namespace": "ns"},
                "spec": {"minAvailable": 2, "plugins": plugins, "tasks": [{"name": "worker", "replicas": 2,
                    "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}]}})
        };
        let got = services(vc(json!({"svc": [], "env": []})));
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0]["metadata"]["name"], "vj");
        assert_eq!(got[0]["spec"]["selector"], json!({VC_JOB_NAME: "vj", VC_JOB_NAMESPACE: "ns"}));
        assert_eq!(got[0]["spec"]["publishNotReadyAddresses"], true);
        assert!(services(vc(json!({"env": []}))).is_empty(), "no svc plugin, no Service");

        let mpi = json!({"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": "mj", "namespace": "ns"},
            "spec": {"mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": template("launcher")},
                "Worker": {"replicas": 2, "template": template("worker")}}}});
        let got = services(mpi);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0]["metadata"]["name"], "mj");
        assert_eq!(got[0]["spec"]["selector"], json!({KF_OPERATOR_NAME: "mpi-operator", KF_JOB_NAME: "mj"}));
    }
}
