//! The contract with the `kube` crate (kube-rs), a client nobody here wrote:
//! it reads the kubeconfig `ringleader up` wrote, connects over TLS trusting
//! the data directory's CA, runs discovery, and drives typed core objects
//! (pods, nodes, config maps) and a job kind as a dynamic object through
//! list/get/create/patch/delete/watch/logs, as a controller would.

mod common;

use common::{cluster_yaml, Plane};
use futures_util::{AsyncBufReadExt, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, LogParams, Patch, PatchParams, PostParams, WatchEvent};
use kube::api::{GroupVersionKind, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::discovery::{ApiResource, Discovery, Scope};
use kube::Client;
use serde_json::json;
use std::time::{Duration, Instant};

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: kube-web, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: kube-web}}
  template:
    metadata: {labels: {app: kube-web}}
    spec:
      containers:
      - name: web
        image: busybox
        command: ["/bin/sh", "-c", "echo hello-from-kube-rs; sleep 600"]
        resources: {limits: {nvidia.com/gpu: 1}}
"#;

async fn client(plane: &Plane) -> Result<Client, Box<dyn std::error::Error + Send + Sync>> {
    let kubeconfig = Kubeconfig::read_from(plane.data_dir().join("kubeconfig"))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    assert!(config.cluster_url.scheme_str() == Some("https"), "kubeconfig points at {}", config.cluster_url);
    Ok(Client::try_from(config)?)
}

/// Polls `f` until it yields `Some` (bounded by `secs`).
async fn until<T, F, Fut>(secs: u64, what: &str, mut f: F) -> Result<T, Box<dyn std::error::Error + Send + Sync>>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f().await {
            return Ok(v);
        }
        if Instant::now() > deadline {
            return Err(format!("timed out after {secs}s waiting for {what}").into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[test]
fn kube_rs_client_drives_the_cluster() -> TestResult {
    let plane = Plane::start(&cluster_yaml(32, &[("kgpu-1", "hgx-h100-8"), ("knpu-1", "atlas-800-910")]), &[]);
    plane.rt.block_on(async {
        let client = client(&plane).await?;

        // Version and discovery, as every kube-rs controller starts.
        let version = client.apiserver_version().await?;
        assert!(version.git_version.starts_with("v1."), "{version:?}");
        let discovery = Discovery::new(client.clone()).run().await?;
        let (pytorch, caps) = discovery
            .resolve_gvk(&GroupVersionKind::gvk("kubeflow.org", "v1", "PyTorchJob"))
            .ok_or("discovery has no kubeflow.org/v1 PyTorchJob")?;
        assert_eq!(pytorch.plural, "pytorchjobs");
        assert_eq!(caps.scope, Scope::Namespaced);
        assert!(discovery.resolve_gvk(&GroupVersionKind::gvk("mindxdl.gitee.com", "v1", "AscendJob")).is_some());
        assert!(discovery.resolve_gvk(&GroupVersionKind::gvk("", "v1", "Pod")).is_some());

        // Typed core v1 Nodes with capacity and a Ready condition.
        let nodes: Api<Node> = Api::all(client.clone());
        let gpu = nodes.get("kgpu-1").await?;
        let status = gpu.status.ok_or("node without status")?;
        let capacity = status.capacity.ok_or("node without capacity")?;
        assert_eq!(capacity.get("nvidia.com/gpu").map(|q| q.0.as_str()), Some("8"));
        let ready = status.conditions.unwrap_or_default().into_iter().find(|c| c.type_ == "Ready");
        assert_eq!(ready.map(|c| c.status), Some("True".to_string()));
        assert!(nodes.create(&PostParams::default(), &gpu_node_copy()).await.is_err(), "nodes are read-only");

        // Config maps: dry run, create, conflict, three kinds of patch, delete.
        let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": "kube-cm", "labels": {"from": "kube-rs"}}, "data": {"a": "1"}
        }))?;
        cms.create(&PostParams { dry_run: true, ..Default::default() }, &cm).await?;
        match cms.get("kube-cm").await {
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            other => return Err(format!("dry run stored the object: {other:?}").into()),
        }
        cms.create(&PostParams::default(), &cm).await?;
        match cms.create(&PostParams::default(), &cm).await {
            Err(kube::Error::Api(s)) => {
                assert_eq!((s.code, s.reason.as_str()), (409, "AlreadyExists"), "{s:?}");
                assert!(s.message.contains("configmaps \"kube-cm\" already exists"), "{}", s.message);
            }
            other => return Err(format!("second create: {other:?}").into()),
        }
        let pp = PatchParams::default();
        cms.patch("kube-cm", &pp, &Patch::Strategic(json!({"data": {"b": "2"}}))).await?;
        cms.patch("kube-cm", &pp, &Patch::Merge(json!({"data": {"c": "3"}}))).await?;
        // kube-core takes the json-patch 4 type.
        let json_patch: kube_json_patch::Patch = serde_json::from_value(json!([{"op": "remove", "path": "/data/a"}]))?;
        let got = cms.patch("kube-cm", &pp, &Patch::<()>::Json(json_patch)).await?;
        let data = got.data.unwrap_or_default();
        assert_eq!(data.keys().cloned().collect::<Vec<_>>(), vec!["b".to_string(), "c".to_string()]);
        // Server-side apply: another manager's field is a conflict naming it, forcing takes it.
        let applied =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kube-cm"}, "data": {"b": "9"}});
        match cms.patch("kube-cm", &PatchParams::apply("kube-rs-test"), &Patch::Apply(&applied)).await {
            Err(kube::Error::Api(s)) => {
                assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"), "{s:?}");
                assert!(s.message.starts_with("Apply failed with 1 conflict: conflict with "), "{}", s.message);
                assert!(s.message.ends_with(": .data.b"), "{}", s.message);
            }
            other => return Err(format!("conflicting apply: {other:?}").into()),
        }
        let got = cms.patch("kube-cm", &PatchParams::apply("kube-rs-test").force(), &Patch::Apply(&applied)).await?;
        assert_eq!(got.data.unwrap_or_default().get("b").map(String::as_str), Some("9"));
        let owners: Vec<(Option<String>, Option<String>)> =
            got.metadata.managed_fields.unwrap_or_default().into_iter().map(|m| (m.manager, m.operation)).collect();
        assert!(owners.contains(&(Some("kube-rs-test".into()), Some("Apply".into()))), "{owners:?}");
        let listed = cms.list(&ListParams::default().labels("from in (kube-rs,other)")).await?;
        assert_eq!(listed.items.len(), 1);
        assert!(cms.list(&ListParams::default().labels("!from")).await?.items.is_empty());

        // A job kind as a dynamic object: a dry-run create is validated and not stored.
        let pj_api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &pytorch);
        let job: DynamicObject = serde_yaml_ng::from_str(&std::fs::read_to_string(
            common::repo().join("examples/demo/pytorchjob-h100.yaml"),
        )?)?;
        let name = job.metadata.name.clone().ok_or("example without name")?;
        pj_api.create(&PostParams { dry_run: true, ..Default::default() }, &job).await?;
        assert!(pj_api.get_opt(&name).await?.is_none(), "dry run stored the PyTorchJob");
        let mut bad = job.clone();
        bad.data["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = json!(-1);
        match pj_api.create(&PostParams::default(), &bad).await {
            Err(kube::Error::Api(s)) => assert_eq!(s.code, 422, "{s:?}"),
            other => return Err(format!("invalid job accepted: {other:?}").into()),
        }

        // Pods: a watch opened before the Deployment sees its pod come, Running.
        let pods: Api<Pod> = Api::default_namespaced(client.clone());
        let start = pods.list(&ListParams::default().limit(1)).await?;
        let rv = start.metadata.resource_version.clone().unwrap_or_else(|| "0".into());
        let watch = pods.watch(&WatchParams::default().labels("app=kube-web").timeout(60), &rv).await?;
        plane.client.apply_documents(DEPLOYMENT).await?;
        let running = tokio::time::timeout(Duration::from_secs(60), async {
            let mut watch = std::pin::pin!(watch);
            while let Some(event) = watch.try_next().await.map_err(|e| e.to_string())? {
                if let WatchEvent::Added(p) | WatchEvent::Modified(p) = event {
                    if p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running") {
                        return Ok(p);
                    }
                }
            }
            Err("the watch ended before the pod ran".to_string())
        })
        .await
        .map_err(|_| "no Running pod seen on the watch within 60 s")??;
        let pod_name = running.metadata.name.clone().ok_or("pod without name")?;
        let status = running.status.ok_or("pod without status")?;
        let cs = status.container_statuses.unwrap_or_default();
        assert_eq!(cs.len(), 1);
        assert_eq!(cs[0].image, "busybox");
        assert!(!cs[0].image_id.is_empty());
        assert_eq!(cs[0].restart_count, 0);

        // Paging with limit/continue through typed lists.
        let page = pods.list(&ListParams::default().limit(1)).await?;
        assert_eq!(page.items.len(), 1);

        // Logs through the pod's log subresource.
        let log = until(30, "the pod's log", || {
            let pods = pods.clone();
            let pod_name = pod_name.clone();
            async move {
                let text = pods.logs(&pod_name, &LogParams::default()).await.ok()?;
                text.contains("hello-from-kube-rs").then_some(text)
            }
        })
        .await?;
        assert!(log.ends_with('\n'), "{log:?}");
        let stream = pods.log_stream(&pod_name, &LogParams { follow: true, ..Default::default() }).await?;
        let mut lines = std::pin::pin!(stream.lines());
        let first = tokio::time::timeout(Duration::from_secs(10), lines.next()).await;
        assert!(matches!(&first, Ok(Some(Ok(line))) if line == "hello-from-kube-rs"), "log_stream -f: {first:?}");

        // Not found as Kubernetes words it.
        match pods.get("no-such-pod").await {
            Err(kube::Error::Api(s)) => {
                assert_eq!((s.code, s.reason.as_str()), (404, "NotFound"));
                assert_eq!(s.message, "pods \"no-such-pod\" not found");
            }
            other => return Err(format!("missing pod: {other:?}").into()),
        }

        // Delete the Deployment (dynamic) and the config map; the pod goes.
        let deploy = ApiResource::from_gvk(&GroupVersionKind::gvk("apps", "v1", "Deployment"));
        let deployments: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &deploy);
        deployments.delete("kube-web", &DeleteParams::default()).await?;
        cms.delete("kube-cm", &DeleteParams::default()).await?;
        until(60, "the Deployment's pod to go", || {
            let pods = pods.clone();
            async move {
                pods.list(&ListParams::default().labels("app=kube-web")).await.ok()?.items.is_empty().then_some(())
            }
        })
        .await?;
        Ok(())
    })
}

/// A Node object to try to create (the core v1 view is read-only).
fn gpu_node_copy() -> Node {
    let mut n = Node::default();
    n.metadata.name = Some("kube-made-node".into());
    n
}
