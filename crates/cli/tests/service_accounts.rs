//! A pod calls the API as its ServiceAccount with the token its agent
//! mounted (`ringleader up`, process runtime): with `view` bound to the
//! account in its namespace it lists pods there and is refused elsewhere;
//! the token it had stops working once the pod is deleted.

mod common;

use common::{cluster_yaml, kill_pods_left, Plane};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

const SETUP: &str = r#"
apiVersion: v1
kind: ServiceAccount
metadata: {name: lister, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: lister-view, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{kind: ServiceAccount, name: lister, namespace: default}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: sa-lister, namespace: default}
spec:
  backoffLimit: 0
  template:
    spec:
      serviceAccountName: lister
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command:
        - sh
        - -c
        - |
          D=$RINGLEADER_SERVICE_ACCOUNT_DIR
          echo "namespace=$(cat $D/namespace)"
          for ns in default kube-system; do
            code=$(curl -sS -o /dev/null -w '%{http_code}' --cacert $D/ca.crt \
              -H "Authorization: Bearer $(cat $D/token)" \
              https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/api/v1/namespaces/$ns/pods)
            echo "list-$ns=$code"
          done
          sleep 600
"#;

const GHOST: &str = r#"
apiVersion: batch/v1
kind: Job
metadata: {name: sa-ghost, namespace: default}
spec:
  backoffLimit: 0
  template:
    spec:
      serviceAccountName: ghost
      restartPolicy: Never
      containers: [{name: main, image: busybox, command: [sleep, "1"]}]
"#;

/// `curl` of the pods of `ns` with `token`, verified against `ca`: the HTTP code.
fn list_pods(url: &str, ca: &PathBuf, token: &str, ns: &str) -> String {
    let out = Command::new("curl")
        .args(["-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert"])
        .arg(ca)
        .args(["-H", &format!("Authorization: Bearer {token}")])
        .arg(format!("{url}/api/v1/namespaces/{ns}/pods"))
        .output()
        .expect("curl");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_pod_lists_pods_with_its_mounted_token_until_it_is_deleted() {
    let p = Plane::start(&cluster_yaml(241, &[("n1", "pcie-4090-8")]), &[]);
    p.wait_for(30, "the default ServiceAccount", |p| p.get("serviceaccounts", "default").is_some());
    p.apply(SETUP).expect("apply");
    let mut pod = String::new();
    p.wait_for(60, "the pod's two listings", |p| {
        let pods = p.list("pods");
        let mine = pods.iter().find(|x| x["metadata"]["name"].as_str().is_some_and(|n| n.starts_with("sa-lister")));
        pod = mine.and_then(|x| x["metadata"]["name"].as_str()).unwrap_or_default().to_string();
        !pod.is_empty() && p.sandbox_log(&pod).contains("list-kube-system=")
    });
    let log = p.sandbox_log(&pod);
    assert!(log.contains("namespace=default"), "{log}");
    assert!(log.contains("list-default=200"), "view is bound in its namespace: {log}");
    assert!(log.contains("list-kube-system=403"), "and nowhere else: {log}");
    let object: Value = p.get("pods", &pod).expect("pod");
    assert_eq!(object["spec"]["serviceAccountName"], "lister");

    // The token the pod had, as the agent mounted it: a CA and token on disk.
    let dir =
        p.data_dir().join("nodes/n1/pods").join(format!("default_{pod}/var/run/secrets/kubernetes.io/serviceaccount"));
    let token = std::fs::read_to_string(dir.join("token")).expect("mounted token");
    let ca = dir.join("ca.crt");
    let url = std::fs::read_to_string(p.data_dir().join("server")).expect("server file").trim().to_string();
    assert_eq!(list_pods(&url, &ca, &token, "default"), "200");
    let admin = std::fs::read_to_string(p.data_dir().join("token")).expect("admin token");
    assert!(!token.contains(admin.trim()), "the pod's token is its own");

    p.rt.block_on(p.client.delete(common::find("pods"), "default", &pod, Some(1))).expect("delete pod");
    // The job controller may replace it under the same name: a new uid.
    let uid = object["metadata"]["uid"].clone();
    p.wait_for(60, "the pod gone", |p| p.get("pods", &pod).is_none_or(|now| now["metadata"]["uid"] != uid));
    assert_eq!(list_pods(&url, &ca, &token, "default"), "401", "the token died with its pod");

    // A job whose pods name an account that does not exist makes none, and
    // says why on the job; once the account exists, its pod is made.
    p.apply(GHOST).expect("apply");
    p.wait_for(30, "the FailedCreate event", |p| {
        p.list("events").iter().any(|e| {
            e["reason"] == "FailedCreate"
                && e["involvedObject"]["name"] == "sa-ghost"
                && e["message"].as_str().is_some_and(|m| m.contains("serviceaccount \"ghost\" not found"))
        })
    });
    let ghost_pods = |p: &Plane| {
        p.list("pods")
            .iter()
            .filter(|x| x["metadata"]["name"].as_str().is_some_and(|n| n.starts_with("sa-ghost")))
            .count()
    };
    assert_eq!(ghost_pods(&p), 0);
    p.apply("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: ghost, namespace: default}\n").expect("apply");
    p.wait_for(60, "the job's pod once its account exists", |p| ghost_pods(p) == 1);
    kill_pods_left(&p.data_dir());
}
