//! Rendezvous ports chosen per address: pods of one node never share a
//! port, the env names the port each pod listens on, a declared port is
//! honoured when free, and a port is free again once its pod has ended.

mod common;

use common::{example, inline, placed};
use ringleader_api::Job;
use ringleader_controller::env::{self, EnvOptions};
use ringleader_controller::expand::{expand, ExpandOptions};
use ringleader_controller::placement::Placement;
use ringleader_controller::ports::{self, PortError, PortsInUse, FALLBACK_PORTS};
use ringleader_controller::{JobExtras, PodEnv};
use serde_json::Value;
use std::collections::BTreeMap;

fn addresses() -> EnvOptions {
    EnvOptions { use_addresses: true, ..EnvOptions::default() }
}

/// Every pod of the job on one address, ports chosen against `in_use`:
/// the placement and each pod's env.
fn on_one_node(
    job: &Job,
    extras: &JobExtras,
    addr: &str,
    in_use: &PortsInUse,
) -> (Placement, BTreeMap<String, PodEnv>) {
    let exp = expand(job, extras, &ExpandOptions::default());
    let mut placement = Placement { pods: exp.pods.iter().map(|p| (p.name.clone(), placed(1, addr, 0, 0))).collect() };
    ports::choose(job, extras, &exp.pods, &addresses(), &mut placement, in_use).expect("ports");
    let env = env::pod_env(job, extras, &exp.pods, &placement, &addresses());
    (placement, env)
}

/// What the pods of a placement hold, as the manager reads it back.
fn held(placement: &Placement) -> PortsInUse {
    let mut used = PortsInUse::new();
    for p in placement.pods.values() {
        if let Some(port) = p.port {
            used.entry(p.pod_ip.clone()).or_default().insert(port);
        }
    }
    used
}

fn pytorch(name: &str, declared: Option<u16>) -> (Job, JobExtras) {
    let ports = declared.map(|p| format!("\n            ports: [{{name: pytorchjob-port, containerPort: {p}}}]"));
    inline(&format!(
        r#"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{name: {name}, namespace: default}}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            image: x
            command: [run]{ports}
    Worker:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            image: x
            command: [run]{ports}
"#,
        ports = ports.unwrap_or_default()
    ))
}

#[test]
fn tfjob_pods_on_one_node_get_distinct_ports_and_each_listens_on_its_own_entry() {
    let (job, extras) = example("tfjob.yaml");
    let (placement, env) = on_one_node(&job, &extras, "127.0.1.1", &PortsInUse::new());
    let first = *FALLBACK_PORTS.start();
    let want: BTreeMap<&str, u16> = [
        ("dist-mnist-chief-0", 2222),
        ("dist-mnist-ps-0", first),
        ("dist-mnist-worker-0", first + 1),
        ("dist-mnist-worker-1", first + 2),
    ]
    .into();
    for (pod, port) in &want {
        assert_eq!(placement.pods[*pod].port, Some(*port), "{pod}");
        let tf: Value = serde_json::from_str(env[*pod].get("TF_CONFIG").expect("TF_CONFIG")).expect("json");
        let cluster = &tf["cluster"];
        let entries: Vec<&str> = ["chief", "ps", "worker"]
            .iter()
            .flat_map(|t| cluster[t].as_array().expect("entries"))
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(
            entries,
            vec!["127.0.1.1:2222", "127.0.1.1:28000", "127.0.1.1:28001", "127.0.1.1:28002"],
            "every pod sees the same cluster"
        );
        // The pod's own entry is where it listens.
        let own =
            &cluster[tf["task"]["type"].as_str().expect("type")][tf["task"]["index"].as_u64().expect("index") as usize];
        assert_eq!(own.as_str(), Some(format!("127.0.1.1:{port}").as_str()), "{pod}");
    }
}

#[test]
fn two_pytorch_masters_on_one_node_get_different_ports_and_a_freed_port_is_reused() {
    let (a, a_extras) = pytorch("a", None);
    let (b, b_extras) = pytorch("b", None);
    let (a_placed, a_env) = on_one_node(&a, &a_extras, "127.0.1.2", &PortsInUse::new());
    let (b_placed, b_env) = on_one_node(&b, &b_extras, "127.0.1.2", &held(&a_placed));
    for (env, port) in [(&a_env, "23456"), (&b_env, "28000")] {
        for pod in env.values() {
            assert_eq!((pod.get("MASTER_PORT"), pod.get("PET_MASTER_PORT")), (Some(port), Some(port)));
            assert_eq!(pod.get("MASTER_ADDR"), Some("127.0.1.2"));
        }
    }
    // Only masters listen: workers hold nothing.
    assert_eq!(a_placed.pods["a-worker-0"].port, None);
    assert_eq!(b_placed.pods["b-master-0"].port, Some(28000));

    // The same job elsewhere is not pushed off its port by another address's pods.
    let (c_placed, _) = on_one_node(&b, &b_extras, "127.0.1.3", &held(&a_placed));
    assert_eq!(c_placed.pods["b-master-0"].port, Some(23456));

    // Job a ended: its port is free again, job b's is still held.
    let (c, c_extras) = pytorch("c", None);
    let (_, c_env) = on_one_node(&c, &c_extras, "127.0.1.2", &held(&b_placed));
    assert_eq!(c_env["c-worker-0"].get("MASTER_PORT"), Some("23456"));
}

#[test]
fn a_declared_port_is_honoured_when_free_and_a_running_pods_port_is_kept() {
    let (job, extras) = pytorch("d", Some(29999));
    let (placed_once, env) = on_one_node(&job, &extras, "127.0.1.4", &PortsInUse::new());
    assert_eq!(env["d-worker-0"].get("MASTER_PORT"), Some("29999"));

    // Declared but held by another pod: the fallback range.
    let busy = PortsInUse::from([("127.0.1.4".to_string(), [29999, 28000].into())]);
    let (_, env) = on_one_node(&job, &extras, "127.0.1.4", &busy);
    assert_eq!(env["d-master-0"].get("MASTER_PORT"), Some("28001"));

    // A restarted worker joins the master where it already listens.
    let exp = expand(&job, &extras, &ExpandOptions::default());
    let mut again = placed_once.clone();
    let everything: PortsInUse = held(&placed_once);
    ports::choose(&job, &extras, &exp.pods, &addresses(), &mut again, &everything).expect("ports");
    assert_eq!(again.pods["d-master-0"].port, Some(29999));
}

#[test]
fn ascend_and_volcano_coordinators_and_elastic_rendezvous_name_the_chosen_port() {
    let taken = |ports: &[u16]| PortsInUse::from([("127.0.1.5".to_string(), ports.iter().copied().collect())]);
    let (ms, ms_extras) = example("ascendjob-mindspore.yaml");
    let (_, env) = on_one_node(&ms, &ms_extras, "127.0.1.5", &taken(&[2222]));
    assert!(env.values().all(|e| e.get("MS_SCHED_PORT") == Some("28000")), "{env:?}");

    let (pt, pt_extras) = example("ascendjob-pytorch.yaml");
    let (_, env) = on_one_node(&pt, &pt_extras, "127.0.1.5", &taken(&[2222]));
    assert!(env.values().all(|e| e.get("MASTER_PORT") == Some("28000")), "{env:?}");

    let (el, el_extras) = inline(
        r#"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: el, namespace: default}
spec:
  elasticPolicy: {rdzvPort: 29400, minReplicas: 1, maxReplicas: 2}
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers: [{name: pytorch, image: x, command: [run]}]
"#,
    );
    let (_, env) = on_one_node(&el, &el_extras, "127.0.1.5", &taken(&[29400]));
    assert!(env.values().all(|e| e.get("PET_RDZV_ENDPOINT") == Some("127.0.1.5:28000")), "{env:?}");

    let (vc, vc_extras) = inline(
        r#"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: vc, namespace: default}
spec:
  minAvailable: 2
  plugins: {pytorch: ["--master=master", "--worker=worker", "--port=23456"], svc: []}
  tasks:
  - name: master
    replicas: 1
    template: {spec: {containers: [{name: c, image: x, command: [run]}]}}
  - name: worker
    replicas: 1
    template: {spec: {containers: [{name: c, image: x, command: [run]}]}}
"#,
    );
    let (_, env) = on_one_node(&vc, &vc_extras, "127.0.1.5", &taken(&[23456]));
    assert!(env.values().all(|e| e.get("MASTER_PORT") == Some("28000")), "{env:?}");
}

#[test]
fn a_declared_port_that_is_not_a_port_is_named_in_the_error() {
    let (job, extras) = inline(
        r#"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: bad, namespace: default}
spec:
  minAvailable: 1
  plugins: {pytorch: ["--port=70000"]}
  tasks:
  - name: master
    replicas: 1
    template: {spec: {containers: [{name: c, image: x, command: [run]}]}}
"#,
    );
    let exp = expand(&job, &extras, &ExpandOptions::default());
    let err = ports::listeners(&job, &extras, &exp.pods, &addresses()).expect_err("not a port");
    assert_eq!(err, PortError::Invalid { job: "bad".into(), field: "plugins.pytorch --port", value: 70000 });
    assert_eq!(err.to_string(), "job bad: plugins.pytorch --port is 70000, not a port (1-65535)");
}
