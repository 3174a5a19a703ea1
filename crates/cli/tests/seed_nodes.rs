//! Seed 004's node list (节点: 纳管, 绑定, 解绑, 移除) live under `ringleader
//! up`, through the `ringleader` CLI as an administrator would: an existing
//! node adopted into a resource group is bound, unbound and removed; a bind
//! fails with its reason for a node that does not exist, is not Ready or is
//! of the other accelerator family; a node the platform made cannot be
//! removed ("移除仅支持来源为纳管的节点"); a batch operation (批量执行脚本,
//! 批量存储挂载) over nodes not bound is refused naming them; a member gets
//! 403; every step is in the audit trail. And seed 004's AK/SK access to
//! the API: a user's access key signs `curl` requests (HMAC-SHA256) that
//! are that user, with the user's RBAC; a tampered or stale request, a
//! disabled or deleted key get 401 saying why.

mod common;

use common::Plane;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const BLOCK: u8 = 247;

fn ok(plane: &Plane, args: &[&str]) -> String {
    let (success, out) = plane.ringleader_as(None, args);
    assert!(success, "ringleader {args:?} failed:\n{out}");
    out
}

/// The output of a command that must be refused.
fn refused(plane: &Plane, who: Option<&Path>, args: &[&str]) -> String {
    let (success, out) = plane.ringleader_as(who, args);
    assert!(!success, "ringleader {args:?} should have been refused:\n{out}");
    out
}

fn apply(plane: &Plane, name: &str, yaml: &str) -> (bool, String) {
    let file = plane.dir.path().join(name);
    std::fs::write(&file, yaml).expect("write");
    plane.ringleader_as(None, &["apply", "-f", &file.to_string_lossy()])
}

fn token(plane: &Plane, user: &str) -> PathBuf {
    let file = plane.dir.path().join(format!("{user}.kubeconfig"));
    ok(plane, &["token", "create", "--user", user, "--kubeconfig-out", &file.to_string_lossy()]);
    file
}

fn pnode(plane: &Plane, name: &str) -> Value {
    plane.get("platformnodes", name).unwrap_or(Value::Null)
}

fn binding(plane: &Plane, name: &str) -> (String, String) {
    let p = pnode(plane, name);
    let s = |ptr: &str| p.pointer(ptr).and_then(Value::as_str).unwrap_or_default().to_string();
    (s("/status/binding"), s("/status/reason"))
}

fn wait_binding(plane: &Plane, name: &str, want: &str) -> String {
    plane.wait_for(20, &format!("platformnode {name} {want}"), |p| binding(p, name).0 == want);
    binding(plane, name).1
}

fn group_label(plane: &Plane, node: &str) -> Option<String> {
    plane
        .get("nodes", node)?
        .pointer("/metadata/labels/platform.ringleader.io~1resource-group")?
        .as_str()
        .map(str::to_string)
}

fn group_nodes(plane: &Plane) -> Vec<String> {
    plane
        .get("resourcegroups", "train")
        .and_then(|g| g.pointer("/status/nodes").and_then(Value::as_array).cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|n| n.as_str().map(str::to_string))
        .collect()
}

#[test]
fn seed_004_s_node_list_adopts_binds_unbinds_and_removes_nodes() {
    let cluster = common::cluster_yaml(
        BLOCK,
        &[("g1", "hgx-h100-8"), ("g2", "hgx-h100-8"), ("g3", "hgx-h100-8"), ("a1", "atlas-800-910")],
    );
    let plane = Plane::start(&cluster, &["--heartbeat-timeout", "1.5"]);
    plane.wait_for(30, "every node Ready", |p| {
        p.list("nodes").iter().filter(|n| n.pointer("/status/ready") == Some(&Value::Bool(true))).count() == 4
    });
    let (applied, out) = apply(
        &plane,
        "group.yaml",
        "apiVersion: platform.ringleader.io/v1alpha1\nkind: ResourceGroup\nmetadata: {name: train}\n\
         spec: {accelerator: NVIDIA}\n---\n\
         apiVersion: platform.ringleader.io/v1alpha1\nkind: Script\nmetadata: {name: hello}\n\
         spec: {timeoutSeconds: 600, content: \"echo ok\"}\n",
    );
    assert!(applied, "{out}");

    // 纳管: an existing node adopted into the group is bound (已绑定-正常).
    let out = ok(&plane, &["node", "adopt", "g1", "--resource-group", "train"]);
    assert!(out.contains("platformnode/g1 adopted"), "{out}");
    wait_binding(&plane, "g1", "bound");
    assert_eq!(group_label(&plane, "g1").as_deref(), Some("train"));
    plane.wait_for(10, "g1 a member of the group", |p| group_nodes(p) == ["g1"]);

    // A node the platform made (source new) binds the same way.
    let (applied, out) = apply(
        &plane,
        "g2.yaml",
        "apiVersion: platform.ringleader.io/v1alpha1\nkind: PlatformNode\nmetadata: {name: g2}\n\
         spec: {source: new, resourceGroup: train}\n",
    );
    assert!(applied, "{out}");
    wait_binding(&plane, "g2", "bound");

    // Stock kubectl lists the node list with its binding states.
    if common::kubectl_or_skip("the kubectl part") {
        let out = Command::new("kubectl")
            .env("KUBECONFIG", plane.data_dir().join("kubeconfig"))
            .args(["get", "platformnodes"])
            .output()
            .expect("kubectl");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("BINDING") && text.contains("adopted") && text.contains("bound"), "{text}");
    }

    // 绑定失败, with the reason: a missing node, one of the other family, one not Ready.
    ok(&plane, &["node", "adopt", "ghost", "--resource-group", "train"]);
    assert_eq!(wait_binding(&plane, "ghost", "bind-failed"), "node ghost not found");
    ok(&plane, &["node", "adopt", "a1", "--resource-group", "train"]);
    assert_eq!(
        wait_binding(&plane, "a1", "bind-failed"),
        "node a1 has Ascend accelerators; this group's accelerator is NVIDIA"
    );
    ok(&plane, &["node", "stop", "g3"]);
    plane.wait_for(20, "g3 NotReady", |p| {
        p.get("nodes", "g3").and_then(|n| n.pointer("/status/ready").cloned()) == Some(Value::Bool(false))
    });
    ok(&plane, &["node", "adopt", "g3", "--resource-group", "train"]);
    assert_eq!(wait_binding(&plane, "g3", "bind-failed"), "node g3 is not Ready");
    assert_eq!(group_label(&plane, "a1"), None, "a failed bind labels nothing");
    assert_eq!(group_nodes(&plane), ["g1", "g2"], "the group holds the bound nodes only");
    let group = plane.get("resourcegroups", "train").unwrap_or(Value::Null);
    assert_eq!(group["status"]["state"], "running", "a node's failed bind is not the group's: {group}");

    // Batch operations apply to bound nodes only, and the refusal names the others.
    let (applied, out) = apply(
        &plane,
        "batch.yaml",
        "apiVersion: platform.ringleader.io/v1alpha1\nkind: ScriptRun\nmetadata: {name: hello-1}\n\
         spec: {script: hello, nodes: [g1, a1, g3]}\n",
    );
    assert!(!applied, "a script run over nodes not bound is refused:\n{out}");
    assert!(
        out.contains("spec.nodes") && out.contains("a1 (bind-failed), g3 (bind-failed)") && !out.contains("g1 ("),
        "{out}"
    );
    let (applied, out) = apply(
        &plane,
        "mount.yaml",
        "apiVersion: platform.ringleader.io/v1alpha1\nkind: StorageMount\nmetadata: {name: pfs}\n\
         spec: {nodeDirectory: /mnt/pfs, nodes: [g1, g2]}\n",
    );
    assert!(applied, "a batch over bound nodes goes through:\n{out}");

    // 移除: only adopted nodes, and only once unbound.
    let out = refused(&plane, None, &["node", "remove", "g2"]);
    assert!(out.contains("移除仅支持来源为纳管的节点"), "{out}");
    let out = refused(&plane, None, &["node", "remove", "g1"]);
    assert!(out.contains("unbind it first"), "{out}");

    // 解绑: the node leaves the group but stays in the node list.
    ok(&plane, &["node", "unbind", "g1"]);
    wait_binding(&plane, "g1", "unbound");
    assert_eq!(group_label(&plane, "g1"), None);
    plane.wait_for(10, "g1 out of the group", |p| group_nodes(p) == ["g2"]);
    let (applied, out) = apply(
        &plane,
        "batch2.yaml",
        "apiVersion: platform.ringleader.io/v1alpha1\nkind: ScriptRun\nmetadata: {name: hello-2}\n\
         spec: {script: hello, nodes: [g1]}\n",
    );
    assert!(!applied && out.contains("g1 (unbound)"), "an unbound node takes no batch:\n{out}");
    let out = ok(&plane, &["node", "remove", "g1"]);
    assert!(out.contains("platformnode/g1 removed"), "{out}");
    assert!(plane.get("platformnodes", "g1").is_none(), "g1 left the node list");
    assert!(plane.get("nodes", "g1").is_some(), "removal leaves the machine itself");

    // 解绑失败 while the group's own spec still names the node.
    let (applied, out) = apply(
        &plane,
        "group2.yaml",
        "apiVersion: platform.ringleader.io/v1alpha1\nkind: ResourceGroup\nmetadata: {name: train}\n\
         spec: {accelerator: NVIDIA, nodes: {names: [g2]}}\n",
    );
    assert!(applied, "{out}");
    ok(&plane, &["node", "unbind", "g2"]);
    let why = wait_binding(&plane, "g2", "unbind-failed");
    assert!(why.contains("resource group train's spec.nodes"), "{why}");

    // Only administrators manage the node list.
    let alice = token(&plane, "alice");
    let out = refused(&plane, Some(&alice), &["node", "adopt", "g3", "--resource-group", "train"]);
    assert!(out.contains("forbidden"), "{out}");

    // The audit trail names each step in seed 004's words.
    let records = plane.list("auditrecords");
    let steps: Vec<(String, String)> = records
        .iter()
        .filter(|r| r["spec"]["resource"] == "platform.ringleader.io/PlatformNode")
        .map(|r| {
            (r["spec"]["verb"].as_str().unwrap_or("").to_string(), r["spec"]["name"].as_str().unwrap_or("").to_string())
        })
        .collect();
    for (verb, name) in [("adopt", "g1"), ("create", "g2"), ("unbind", "g1"), ("remove", "g1"), ("unbind", "g2")] {
        assert!(steps.contains(&(verb.to_string(), name.to_string())), "audit: {verb} {name} in {steps:?}");
    }
}

/// `curl` of the API with extra headers (and a body): (HTTP status, body).
fn curl(plane: &Plane, method: &str, url: &str, headers: &str, body: Option<&Path>) -> (u16, String) {
    let ca = plane.data_dir().join("ca.crt");
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "-X", method, "--cacert"]).arg(&ca).args(["-w", "\n%{http_code}"]);
    for h in headers.lines().filter(|l| !l.trim().is_empty()) {
        cmd.args(["-H", h]);
    }
    if let Some(b) = body {
        cmd.args(["-H", "Content-Type: application/json", "--data-binary"]).arg(format!("@{}", b.display()));
    }
    let out = cmd.arg(url).output().expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

/// `ringleader accesskey sign` with the key in the environment, as a user's script would.
fn sign(keys: (&str, &str), method: &str, url: &str, body: Option<&Path>, at: Option<i64>) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringleader"));
    cmd.args(["accesskey", "sign", method, url])
        .env("RINGLEADER_ACCESS_KEY", keys.0)
        .env("RINGLEADER_SECRET_KEY", keys.1)
        .env_remove("KUBECONFIG");
    if let Some(b) = body {
        cmd.arg("--data-file").arg(b);
    }
    if let Some(t) = at {
        cmd.args(["--timestamp", &t.to_string()]);
    }
    let out = cmd.output().expect("ringleader accesskey sign");
    assert!(out.status.success(), "sign: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn field<'a>(text: &'a str, name: &str) -> &'a str {
    text.lines().find_map(|l| l.strip_prefix(name)).map(str::trim).unwrap_or_default()
}

#[test]
fn seed_004_s_access_keys_sign_api_requests_as_their_user() {
    let plane = Plane::start(&common::cluster_yaml(248, &[("k1", "hgx-h100-8")]), &[]);
    let (applied, out) = apply(
        &plane,
        "alice.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: ws-a}\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: alice-edit, namespace: ws-a}\n\
         roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}\n\
         subjects: [{kind: User, name: alice, apiGroup: rbac.authorization.k8s.io}]\n---\n\
         apiVersion: v1\nkind: Pod\nmetadata: {name: alice-pod, namespace: ws-a}\n\
         spec: {containers: [{name: main, image: busybox, command: [sleep, '600']}]}\n",
    );
    assert!(applied, "{out}");

    // The admin makes alice a key pair: AK always shown, SK once, sealed at rest.
    let made = ok(&plane, &["accesskey", "create", "--user", "alice"]);
    let (ak, sk) = (field(&made, "accessKeyId:").to_string(), field(&made, "secretAccessKey:").to_string());
    assert!(ak.starts_with("RLAK") && sk.len() == 40, "{made}");
    let registry = std::fs::read_to_string(plane.data_dir().join("accesskeys.yaml")).expect("registry");
    assert!(registry.contains(&ak) && !registry.contains(&sk), "the secret key is not kept in the clear:\n{registry}");
    let listed = ok(&plane, &["accesskey", "list"]);
    assert!(listed.contains(&ak) && listed.contains("alice") && !listed.contains(&sk), "{listed}");

    let server = std::fs::read_to_string(plane.data_dir().join("server")).expect("server url").trim().to_string();
    let pods = format!("{server}/api/v1/namespaces/ws-a/pods?limit=10");
    let keys = (ak.as_str(), sk.as_str());

    // A signed request is alice: her pods are listed.
    let (code, body) = curl(&plane, "GET", &pods, &sign(keys, "GET", &pods, None, None), None);
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("alice-pod"), "{body}");
    // A body is signed too: alice creates a ConfigMap in her namespace.
    let cm = plane.dir.path().join("cm.json");
    std::fs::write(&cm, r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"signed"},"data":{"a":"b"}}"#)
        .expect("write");
    let cms = format!("{server}/api/v1/namespaces/ws-a/configmaps");
    let (code, body) = curl(&plane, "POST", &cms, &sign(keys, "POST", &cms, Some(&cm), None), Some(&cm));
    assert_eq!(code, 201, "{body}");
    // The same RBAC as alice's: another namespace is forbidden.
    let other = format!("{server}/api/v1/namespaces/default/pods");
    let (code, body) = curl(&plane, "GET", &other, &sign(keys, "GET", &other, None, None), None);
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("forbidden") && body.contains("alice"), "{body}");

    // Tampered: headers signed for ws-a sent for default, or another body.
    let (code, body) = curl(&plane, "GET", &other, &sign(keys, "GET", &pods, None, None), None);
    assert_eq!(code, 401, "{body}");
    assert!(body.contains("signature does not match"), "{body}");
    let cm2 = plane.dir.path().join("cm2.json");
    std::fs::write(&cm2, r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"evil"}}"#).expect("write");
    let (code, body) = curl(&plane, "POST", &cms, &sign(keys, "POST", &cms, Some(&cm), None), Some(&cm2));
    assert_eq!(code, 401, "{body}");
    // Stale: signed ten minutes ago.
    let old = ringleader_api::time::now() as i64 - 600;
    let (code, body) = curl(&plane, "GET", &pods, &sign(keys, "GET", &pods, None, Some(old)), None);
    assert_eq!(code, 401, "{body}");
    assert!(body.contains("a signature holds for 300 s"), "{body}");
    // A wrong secret.
    let (code, body) = curl(&plane, "GET", &pods, &sign((&ak, "not-the-secret"), "GET", &pods, None, None), None);
    assert_eq!(code, 401, "{body}");

    // Disabled, then enabled again, then deleted.
    ok(&plane, &["accesskey", "disable", &ak]);
    let (code, body) = curl(&plane, "GET", &pods, &sign(keys, "GET", &pods, None, None), None);
    assert_eq!(code, 401, "{body}");
    assert!(body.contains("is disabled"), "{body}");
    ok(&plane, &["accesskey", "enable", &ak]);
    let (code, body) = curl(&plane, "GET", &pods, &sign(keys, "GET", &pods, None, None), None);
    assert_eq!(code, 200, "{body}");
    ok(&plane, &["accesskey", "delete", &ak]);
    let (code, body) = curl(&plane, "GET", &pods, &sign(keys, "GET", &pods, None, None), None);
    assert_eq!(code, 401, "{body}");
    assert!(body.contains("unknown access key"), "{body}");

    // Alice manages her own keys through the API (her bearer token here):
    // makes one, sees only hers, signs with it, disables and deletes it.
    let bob = ok(&plane, &["accesskey", "create", "--user", "bob"]);
    let bob_ak = field(&bob, "accessKeyId:").to_string();
    let kubeconfig = token(&plane, "alice");
    let text = std::fs::read_to_string(&kubeconfig).expect("kubeconfig");
    let bearer = text.lines().find_map(|l| l.trim().strip_prefix("token:")).map(str::trim).expect("token").to_string();
    let bearer = format!("Authorization: Bearer {}", bearer.trim_matches('"').trim_matches('\''));
    let keys_url = format!("{server}/apis/ringleader.io/v1alpha1/accesskeys");
    let empty = plane.dir.path().join("empty.json");
    std::fs::write(&empty, "{}").expect("write");
    let (code, body) = curl(&plane, "POST", &keys_url, &bearer, Some(&empty));
    assert_eq!(code, 201, "{body}");
    let made: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let (ak2, sk2) =
        (made["accessKeyId"].as_str().unwrap_or_default(), made["secretAccessKey"].as_str().unwrap_or_default());
    assert_eq!(made["user"], "alice", "{body}");
    let (code, body) = curl(&plane, "GET", &keys_url, &bearer, None);
    assert_eq!(code, 200, "{body}");
    assert!(body.contains(ak2) && !body.contains(sk2) && !body.contains(&bob_ak), "only her keys, no secret:\n{body}");
    let keys2 = (ak2, sk2);
    let (code, body) = curl(&plane, "GET", &pods, &sign(keys2, "GET", &pods, None, None), None);
    assert_eq!(code, 200, "{body}");
    let bob_url = format!("{keys_url}/{bob_ak}");
    let (code, body) = curl(&plane, "DELETE", &bob_url, &bearer, None);
    assert_eq!(code, 404, "another user's key is not hers to delete: {body}");
    let for_bob = plane.dir.path().join("for-bob.json");
    std::fs::write(&for_bob, r#"{"user":"bob"}"#).expect("write");
    let (code, body) = curl(&plane, "POST", &keys_url, &bearer, Some(&for_bob));
    assert_eq!(code, 403, "{body}");
    let off = plane.dir.path().join("off.json");
    std::fs::write(&off, r#"{"disabled":true}"#).expect("write");
    let own = format!("{keys_url}/{ak2}");
    let (code, body) = curl(&plane, "PATCH", &own, &bearer, Some(&off));
    assert_eq!(code, 200, "{body}");
    let (code, body) = curl(&plane, "GET", &pods, &sign(keys2, "GET", &pods, None, None), None);
    assert_eq!((code, body.contains("is disabled")), (401, true), "{body}");
    let (code, body) = curl(&plane, "DELETE", &own, &bearer, None);
    assert_eq!(code, 200, "{body}");
    let (code, body) = curl(&plane, "GET", &keys_url, &bearer, None);
    assert!(code == 200 && !body.contains(ak2), "{body}");
}
