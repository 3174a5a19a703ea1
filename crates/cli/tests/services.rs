//! Services end to end with `ringleader up`: a PyTorchJob gets the training
//! operator's per-replica headless Services, a user's Service's Endpoints
//! and EndpointSlice follow the job's pods (a named target port resolved
//! through the pods' container ports), and all of it goes with the job.

mod common;

use common::{cluster_yaml, Plane};
use serde_json::Value;

const JOB: &str = r#"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: svc-demo, namespace: default}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            image: x
            command: ["/bin/sh", "-c", "sleep 300"]
            ports: [{name: pytorchjob-port, containerPort: 23456}]
    Worker:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            image: x
            command: ["/bin/sh", "-c", "sleep 300"]
            ports: [{name: pytorchjob-port, containerPort: 23456}]
---
apiVersion: v1
kind: Service
metadata: {name: svc-demo-all, namespace: default}
spec:
  selector: {training.kubeflow.org/job-name: svc-demo}
  ports: [{name: dist, port: 80, targetPort: pytorchjob-port}]
"#;

fn addresses(endpoints: &Value) -> Vec<String> {
    let mut out: Vec<String> = endpoints["subsets"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["addresses"].as_array().cloned().unwrap_or_default())
        .filter_map(|a| a["targetRef"]["name"].as_str().map(str::to_string))
        .collect();
    out.sort();
    out
}

fn slice_of<'a>(slices: &'a [Value], service: &str) -> Option<&'a Value> {
    slices.iter().find(|s| s["metadata"]["labels"]["kubernetes.io/service-name"] == service)
}

#[test]
fn endpoints_follow_a_jobs_pods_and_its_headless_services_go_with_it() {
    let p = Plane::start(&cluster_yaml(15, &[("g-1", "pcie-4090-8")]), &[]);
    p.apply(JOB).expect("apply");
    let pods = ["svc-demo-master-0", "svc-demo-worker-0"];
    p.wait_for(60, "both pods running", |p| {
        pods.iter().all(|n| p.get("pods", n).is_some_and(|x| x["status"]["phase"] == "Running"))
    });
    // The training operator's Services: one per replica, named like its pod.
    let job = p.get("pytorchjobs", "svc-demo").expect("job");
    for (name, rtype) in [("svc-demo-master-0", "master"), ("svc-demo-worker-0", "worker")] {
        let svc = p.get("services", name).unwrap_or_else(|| panic!("{name}: no Service"));
        assert_eq!(svc["spec"]["clusterIP"], "None", "{svc}");
        assert_eq!(svc["spec"]["selector"]["training.kubeflow.org/replica-type"], rtype);
        assert_eq!(svc["spec"]["selector"]["training.kubeflow.org/replica-index"], "0");
        assert_eq!(svc["spec"]["selector"]["training.kubeflow.org/job-name"], "svc-demo");
        assert_eq!(svc["spec"]["ports"][0]["name"], "pytorchjob-port");
        assert_eq!(svc["metadata"]["ownerReferences"][0]["uid"], job["metadata"]["uid"]);
        p.wait_for(30, "the replica's endpoints", |p| {
            p.get("endpoints", name).is_some_and(|e| addresses(&e) == [name.to_string()])
        });
    }
    // The user's Service: both pods, at the port their containers name.
    p.wait_for(30, "svc-demo-all's endpoints", |p| {
        p.get("endpoints", "svc-demo-all").is_some_and(|e| addresses(&e) == pods.map(str::to_string))
    });
    let master = p.get("pods", "svc-demo-master-0").expect("master");
    let port = master["spec"]["containers"][0]["ports"][0]["containerPort"].clone();
    let ep = p.get("endpoints", "svc-demo-all").expect("endpoints");
    assert_eq!(ep["subsets"][0]["ports"][0]["port"], port, "{ep}");
    assert_eq!(ep["subsets"][0]["addresses"][0]["ip"], master["status"]["podIP"], "{ep}");
    assert_eq!(ep["subsets"][0]["addresses"][0]["nodeName"], "g-1");
    let slices = p.list("endpointslices");
    let slice = slice_of(&slices, "svc-demo-all").expect("svc-demo-all's EndpointSlice");
    assert_eq!(
        slice["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
        "endpointslice-controller.k8s.io"
    );
    assert_eq!(slice["addressType"], "IPv4");
    assert_eq!(slice["endpoints"].as_array().map(Vec::len), Some(2), "{slice}");
    assert_eq!(slice["endpoints"][0]["conditions"]["ready"], true);
    assert_eq!(slice["ports"][0]["port"], port);

    // The job deleted: its Services and their slices go, the user's Service stays, empty.
    p.ctl(&["delete", "pytorchjob", "svc-demo"]);
    p.wait_for(60, "the job's pods and Services gone", |p| {
        let services: Vec<String> =
            p.list("services").iter().filter_map(|s| s["metadata"]["name"].as_str().map(str::to_string)).collect();
        p.list("pods").is_empty() && !services.iter().any(|s| s.starts_with("svc-demo-") && s != "svc-demo-all")
    });
    p.wait_for(30, "the addresses gone", |p| {
        let slices = p.list("endpointslices");
        p.get("endpoints", "svc-demo-all").is_some_and(|e| e.get("subsets").is_none())
            && slice_of(&slices, "svc-demo-all").is_some_and(|s| s["endpoints"].as_array().is_some_and(Vec::is_empty))
            && slice_of(&slices, "svc-demo-master-0").is_none()
            && p.get("endpoints", "svc-demo-master-0").is_none()
    });
}
