//! The scheduler bypass through a pod template (issue 29): a tenant with
//! `edit` wrote `spec.nodeName` into a Job's template and its pods ran on a
//! node whose devices the scheduler had given away. Against a real
//! `ringleader up`: for every workload kind the server serves, a template
//! with `nodeName` or a binding annotation is refused (403 naming the field)
//! on create, replace, each patch type, server-side apply and the bulk
//! apply, for the tenant and the admin alike, and nothing is stored; a
//! tenant cannot write the agent's `ringleader.io/pid`; `/readyz?verbose`
//! details only for the admin.

use crate::common::{cluster_yaml, repo, Plane};
use ringleader_client::Client;
use ringleader_registry::resources;
use serde::Deserialize;
use serde_json::{json, Value};

const NS: &str = "default";
const TENANT: &str = "mallory";

/// The plane's URL and a way to send raw requests with any token.
struct Http<'a> {
    plane: &'a Plane,
    url: String,
    http: reqwest::Client,
}

impl Http<'_> {
    /// Status and JSON body of one request (`token` None: anonymous).
    fn send(&self, method: &str, path: &str, token: Option<&str>, content_type: &str, body: &Value) -> (u16, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut request = self.http.request(method, format!("{}{path}", self.url));
        if let Some(t) = token {
            request = request.bearer_auth(t);
        }
        if !body.is_null() {
            request = request.header("Content-Type", content_type).body(body.to_string());
        }
        self.plane.rt.block_on(async {
            let r = request.send().await.expect("request");
            let code = r.status().as_u16();
            let text = r.text().await.expect("body");
            (code, serde_json::from_str(&text).unwrap_or(Value::String(text)))
        })
    }

    fn text(&self, path: &str, token: Option<&str>) -> (u16, String) {
        match self.send("GET", path, token, "", &Value::Null) {
            (code, Value::String(s)) => (code, s),
            (code, v) => (code, v.to_string()),
        }
    }
}

/// The first document of an example of each job kind served, by kind.
fn workload_examples() -> Vec<(&'static resources::ResourceType, Value)> {
    let mut docs = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(repo().join("examples")).expect("examples").flatten().collect();
    files.sort_by_key(|f| f.path());
    for f in files.iter().filter(|f| f.path().extension().is_some_and(|e| e == "yaml")) {
        let text = std::fs::read_to_string(f.path()).expect("example");
        for doc in serde_yaml_ng::Deserializer::from_str(&text) {
            if let Ok(v) = Value::deserialize(doc) {
                docs.push(v);
            }
        }
    }
    resources::job_types()
        .map(|rt| {
            let doc =
                docs.iter().find(|d| d["apiVersion"] == rt.api_version && d["kind"] == rt.kind).unwrap_or_else(|| {
                    panic!("no example of {} {}: add one so its templates are tested", rt.api_version, rt.kind)
                });
            (rt, doc.clone())
        })
        .collect()
}

/// JSON pointers of the pod templates in an object (maps whose `spec` has `containers`).
fn templates(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if m.get("spec").and_then(|s| s.get("containers")).is_some_and(Value::is_array) {
                out.push(at.clone());
            }
            for (k, v) in m {
                templates(v, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                templates(v, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// `object` with `f` applied to each of its templates.
fn with_templates(object: &Value, f: impl Fn(&mut Value)) -> Value {
    let mut o = object.clone();
    let mut at = Vec::new();
    templates(&o, String::new(), &mut at);
    assert!(!at.is_empty(), "no pod template in {object}");
    for p in at {
        f(o.pointer_mut(&p).expect("template"));
    }
    o
}

fn bind_node(t: &mut Value) {
    t["spec"]["nodeName"] = json!("g1");
}

fn bind_devices(t: &mut Value) {
    if !t.get("metadata").is_some_and(Value::is_object) {
        t["metadata"] = json!({});
    }
    if !t["metadata"].get("annotations").is_some_and(Value::is_object) {
        t["metadata"]["annotations"] = json!({});
    }
    t["metadata"]["annotations"]["ringleader.io/devices"] = json!("0,1,2,3,4,5,6,7");
}

fn collection(rt: &resources::ResourceType) -> String {
    let base = if rt.group.is_empty() { format!("/api/{}", rt.version) } else { format!("/apis/{}", rt.api_version) };
    format!("{base}/namespaces/{NS}/{}", rt.plural)
}

/// A 403 that names `field` (a template's `nodeName` or annotation) and who may set it.
fn assert_refused(what: &str, (code, body): (u16, Value), field: &str) {
    assert_eq!(code, 403, "{what}: {body}");
    assert_eq!(body["reason"], "Forbidden", "{what}: {body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains(field) && message.contains("system:ringleader:scheduler"), "{what}: {message}");
    let causes: Vec<&str> =
        body["details"]["causes"].as_array().into_iter().flatten().filter_map(|c| c["field"].as_str()).collect();
    assert!(causes.iter().any(|c| c.ends_with(field)), "{what}: causes {causes:?}");
}

#[test]
fn templates_cannot_bind_pods_nor_tenants_write_what_agents_own() {
    let cluster = cluster_yaml(223, &[("g1", "hgx-h100-8")]);
    let plane = Plane::start(&cluster, &[]);
    let url = std::fs::read_to_string(plane.data_dir().join("server")).expect("server file").trim().to_string();
    let admin = std::fs::read_to_string(plane.data_dir().join("token")).expect("token").trim().to_string();
    let tenant = plane.ctl(&["token", "create", "--user", TENANT]).trim().to_string();
    plane
        .apply(&format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: {TENANT}-edit, namespace: {NS}}}\n\
             roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}}\n\
             subjects: [{{kind: User, name: {TENANT}}}]\n"
        ))
        .expect("bind edit");
    let ca = std::fs::read(plane.data_dir().join("ca.crt")).expect("the plane's CA");
    let http = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&ca).expect("PEM"))
        .build()
        .expect("client");
    let h = Http { plane: &plane, url: url.clone(), http };
    let tenant_client = Client::with_ca(url.clone(), tenant.clone(), &ca).expect("tenant client");

    let examples = workload_examples();
    assert!(examples.len() >= 7, "every job kind: {:?}", examples.iter().map(|(r, _)| r.kind).collect::<Vec<_>>());
    for (i, (rt, example)) in examples.iter().enumerate() {
        let kind = format!("{} {}", rt.api_version, rt.kind);
        let mut valid = example.clone();
        valid["metadata"]["namespace"] = json!(NS);
        valid["metadata"]["name"] = json!(format!("tpl-{i}"));
        let coll = collection(rt);
        let one = format!("{coll}/tpl-{i}");
        let node_field = "spec.nodeName";
        let ann_field = "annotations[\"ringleader.io/devices\"]";

        // Create: the tenant and the admin, with either field; nothing stored.
        for (who, token) in [("tenant", &tenant), ("admin", &admin)] {
            for (field, bind) in [(node_field, bind_node as fn(&mut Value)), (ann_field, bind_devices)] {
                let bad = with_templates(&valid, bind);
                let r = h.send("POST", &coll, Some(token), "application/json", &bad);
                assert_refused(&format!("{kind}: create by the {who} with {field}"), r, field);
                assert_eq!(h.send("GET", &one, Some(&admin), "", &Value::Null).0, 404, "{kind}: stored anyway");
            }
        }
        // The bulk apply (`ringleader apply`) refuses it as well.
        let bad = with_templates(&valid, bind_node);
        let e = plane.rt.block_on(tenant_client.apply_documents(&bad.to_string())).expect_err("bulk apply refused");
        assert!(e.to_string().contains(node_field), "{kind}: bulk apply: {e}");
        assert_eq!(h.send("GET", &one, Some(&admin), "", &Value::Null).0, 404, "{kind}: stored by the bulk apply");

        // A valid object, then every way of changing it.
        let (code, body) = h.send("POST", &coll, Some(&tenant), "application/json", &valid);
        assert_eq!(code, 201, "{kind}: the valid object: {body}");
        let (_, stored) = h.send("GET", &one, Some(&admin), "", &Value::Null);
        for (field, bind) in [(node_field, bind_node as fn(&mut Value)), (ann_field, bind_devices)] {
            let bad = with_templates(&stored, bind);
            let mut pointers = Vec::new();
            templates(&stored, String::new(), &mut pointers);
            let ops: Vec<Value> = pointers
                .iter()
                .map(|p| {
                    if field == node_field {
                        json!({"op": "add", "path": format!("{p}/spec/nodeName"), "value": "g1"})
                    } else {
                        json!({"op": "add", "path": format!("{p}/metadata"), "value": bad.pointer(&format!("{p}/metadata"))})
                    }
                })
                .collect();
            let spec_patch = json!({"spec": bad["spec"]});
            let mut attempts = vec![
                ("PUT", "application/json", bad.clone()),
                ("PATCH", "application/merge-patch+json", spec_patch.clone()),
                ("PATCH", "application/json-patch+json", Value::Array(ops)),
            ];
            if rt.group.is_empty() || rt.group == "apps" || rt.group == "batch" {
                attempts.push(("PATCH", "application/strategic-merge-patch+json", spec_patch));
            }
            let mut applied = bad.clone();
            if let Some(meta) = applied["metadata"].as_object_mut() {
                meta.retain(|k, _| k == "name" || k == "namespace" || k == "labels" || k == "annotations");
            }
            if let Some(o) = applied.as_object_mut() {
                o.remove("status");
            }
            attempts.push(("PATCH", "application/apply-patch+yaml", applied));
            for (method, content_type, body) in attempts {
                // Forced: a conflict with the creator's fields would refuse it
                // before admission looks; forcing past it must not get it in.
                let path = if content_type.contains("apply") {
                    format!("{one}?fieldManager=abuse&force=true")
                } else {
                    one.clone()
                };
                let r = h.send(method, &path, Some(&tenant), content_type, &body);
                assert_refused(&format!("{kind}: {method} {content_type} with {field}"), r, field);
            }
        }
        let (_, after) = h.send("GET", &one, Some(&admin), "", &Value::Null);
        assert_eq!(after["spec"], stored["spec"], "{kind}: changed");
        // The deployment controller's revision annotation may land meanwhile: it is not the tenant's.
        let users = |v: &Value| -> Value {
            let mut a = v["metadata"]["annotations"].clone();
            if let Some(m) = a.as_object_mut() {
                m.retain(|k, _| !k.starts_with("deployment.kubernetes.io/"));
            }
            if a.as_object().is_some_and(|m| m.is_empty()) {
                Value::Null
            } else {
                a
            }
        };
        assert_eq!(users(&after), users(&stored), "{kind}: changed");
    }
    // The agent's own annotations: not the tenant's, on create nor on patch.
    let pods = format!("/api/v1/namespaces/{NS}/pods");
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain", "namespace": NS},
        "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["true"]}]}});
    let pid = "annotations[\"ringleader.io/pid\"]";
    let mut with_pid = pod.clone();
    with_pid["metadata"]["name"] = json!("with-pid");
    with_pid["metadata"]["annotations"] = json!({"ringleader.io/pid": "1"});
    let (code, body) = h.send("POST", &pods, Some(&tenant), "application/json", &with_pid);
    assert_eq!(code, 403, "{body}");
    assert!(body["message"].as_str().is_some_and(|m| m.contains(pid) && m.contains("node agent")), "{body}");
    assert_eq!(h.send("GET", &format!("{pods}/with-pid"), Some(&admin), "", &Value::Null).0, 404);
    assert_eq!(h.send("POST", &pods, Some(&tenant), "application/json", &pod).0, 201);
    let patch = json!({"metadata": {"annotations": {"ringleader.io/pid": "1"}}});
    let (code, body) = h.send("PATCH", &format!("{pods}/plain"), Some(&tenant), "application/merge-patch+json", &patch);
    assert_eq!(code, 403, "{body}");
    assert!(body["message"].as_str().is_some_and(|m| m.contains(pid)), "{body}");
    let (_, plain) = h.send("GET", &format!("{pods}/plain"), Some(&admin), "", &Value::Null);
    assert!(plain["metadata"]["annotations"].get("ringleader.io/pid").is_none(), "{plain}");
    // The tenant's own annotations are still theirs.
    let mine = json!({"metadata": {"annotations": {"example.com/owner": "mallory"}}});
    assert_eq!(h.send("PATCH", &format!("{pods}/plain"), Some(&tenant), "application/merge-patch+json", &mine).0, 200);

    // Readiness details: the admin's, not the tenant's nor anyone's.
    assert_eq!(h.text("/readyz?verbose", None), (200, "ok".to_string()));
    assert_eq!(h.text("/readyz?verbose", Some(&tenant)), (200, "ok".to_string()));
    assert_eq!(h.text("/livez?verbose", Some(&tenant)), (200, "ok".to_string()));
    let (code, details) = h.text("/readyz?verbose", Some(&admin));
    assert_eq!(code, 200);
    assert!(details.contains("[+]store ok\n") && details.ends_with("readyz check passed\n"), "{details}");
}
