//! The three patch formats of a Kubernetes PATCH: RFC 7386 merge patch and
//! RFC 6902 JSON patch (both the `json-patch` crate's), and strategic merge
//! patch for the built-in kinds, hand-written here (no maintained Rust crate
//! implements it): lists merge element by element on Kubernetes' patch merge
//! keys, and the directives kubectl sends (`$patch`, `$retainKeys`,
//! `$setElementOrder/<list>`, `$deleteFromPrimitiveList/<list>`) apply.

use ringleader_registry::resources::ResourceType;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet, VecDeque};

/// What a PATCH body is, from its Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/merge-patch+json`.
    Merge,
    /// `application/json-patch+json`.
    Json,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply,
}

/// Media types of the patches a resource accepts, in kube-apiserver's order.
pub const BUILTIN_PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
    "application/strategic-merge-patch+json",
];
/// Custom resources take no strategic merge patch.
pub const CUSTOM_PATCH_TYPES: &[&str] =
    &["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"];

impl PatchType {
    /// The type a Content-Type names; `None` for anything else.
    pub fn of(content_type: &str) -> Option<PatchType> {
        let media = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        match media.as_str() {
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/json-patch+json" => Some(PatchType::Json),
            "application/strategic-merge-patch+json" => Some(PatchType::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+json" => Some(PatchType::Apply),
            _ => None,
        }
    }
}

/// Whether a resource is one of Kubernetes' own kinds, which take strategic
/// merge patches; custom resources refuse them as kube-apiserver does.
pub(crate) fn builtin(rt: &ResourceType) -> bool {
    matches!(rt.group, "" | "apps" | "batch" | "policy" | "scheduling.k8s.io" | "discovery.k8s.io")
}

/// Why a patch was not applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchError {
    /// The patch is malformed or one of its operations failed.
    Invalid(String),
    /// The document under construction passed the size limit (bytes of
    /// JSON, an estimate at least as large as the real size less its keys).
    TooLarge(usize),
}

/// Bytes of the compact JSON of `value`, counting stopped once past `cap`
/// (the answer is then some number above `cap`).
pub(crate) fn json_len_capped(value: &Value, cap: usize) -> usize {
    struct Count(usize, usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            if self.0 > self.1 {
                return Err(std::io::Error::other("past the cap"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0, cap);
    // The only error is the cap's, and the count then says so.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Applies an RFC 6902 patch (`body` is its JSON array) one operation at a
/// time with a running size budget: `copy` and `add` can double a document
/// per 50 bytes of patch, so each value an operation inserts is measured
/// (up to `limit`) before it is inserted, and the patch is refused as soon
/// as the document would pass `limit` bytes. Memory stays within about
/// twice the limit whatever the patch.
pub fn json_patch(target: &Value, body: &Value, limit: usize) -> Result<Value, PatchError> {
    use serde::Deserialize;
    let ops = json_patch::Patch::deserialize(body)
        .map_err(|e| PatchError::Invalid(format!("not a valid JSON patch: {e}")))?;
    let mut out = target.clone();
    let mut size = json_len_capped(&out, limit);
    let len_at = |doc: &Value, at: &str| doc.pointer(at).map_or(0, |v| json_len_capped(v, limit));
    for (i, op) in ops.0.into_iter().enumerate() {
        // Key, quotes, colon and comma of an inserted member.
        let overhead = op.path().as_str().rsplit('/').next().map_or(0, str::len) + 4;
        let (grows, shrinks) = match &op {
            json_patch::PatchOperation::Add(a) => {
                (json_len_capped(&a.value, limit) + overhead, replaced_member(&out, a.path.as_str(), limit))
            }
            json_patch::PatchOperation::Replace(r) => (json_len_capped(&r.value, limit), len_at(&out, r.path.as_str())),
            json_patch::PatchOperation::Copy(c) => {
                (len_at(&out, c.from.as_str()) + overhead, replaced_member(&out, c.path.as_str(), limit))
            }
            json_patch::PatchOperation::Move(_) => (overhead, 0),
            json_patch::PatchOperation::Remove(r) => (0, len_at(&out, r.path.as_str())),
            json_patch::PatchOperation::Test(_) => (0, 0),
        };
        size = (size + grows).saturating_sub(shrinks);
        if size > limit {
            return Err(PatchError::TooLarge(size));
        }
        // One operation at a time; on failure `out` is dropped, so the
        // crate's undo of earlier operations is not needed.
        json_patch::patch_unsafe(&mut out, std::slice::from_ref(&op))
            .map_err(|e| PatchError::Invalid(format!("operation '/{i}' failed at path '{}': {}", e.path, e.kind)))?;
    }
    Ok(out)
}

/// Bytes an `add` or `copy` to `path` overwrites: an object member's old
/// value (array inserts shift, they overwrite nothing).
fn replaced_member(doc: &Value, path: &str, limit: usize) -> usize {
    let Some((parent, _)) = path.rsplit_once('/') else { return 0 };
    match doc.pointer(parent) {
        Some(Value::Object(_)) => doc.pointer(path).map_or(0, |v| json_len_capped(v, limit)),
        _ => 0,
    }
}

/// Applies an RFC 7386 merge patch.
pub fn merge_patch(target: &Value, body: &Value) -> Value {
    let mut out = target.clone();
    json_patch::merge(&mut out, body);
    out
}

/// How a list field merges in a strategic merge patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListStrategy {
    /// Elements are objects matched on this key.
    Key(&'static str),
    /// A set of scalars (e.g. `finalizers`): the patch's values are added.
    Set,
    /// Replaced whole (no `patchStrategy` tag in the Go type).
    Atomic,
}

/// The `patchStrategy:"merge" patchMergeKey:…` tags of the lists in the
/// built-in kinds we serve (Pod, Deployment, batch Job templates, ConfigMap,
/// Event, PriorityClass, object metadata and status). Field names are unique
/// enough across these types to key on the name alone.
pub(crate) fn strategy(field: &str) -> ListStrategy {
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "resourceClaims"
        | "schedulingGates" => ListStrategy::Key("name"),
        "ports" => ListStrategy::Key("containerPort"),
        "volumeMounts" => ListStrategy::Key("mountPath"),
        "volumeDevices" => ListStrategy::Key("devicePath"),
        "conditions" => ListStrategy::Key("type"),
        "hostAliases" => ListStrategy::Key("ip"),
        "topologySpreadConstraints" => ListStrategy::Key("topologyKey"),
        "ownerReferences" => ListStrategy::Key("uid"),
        "podIPs" | "hostIPs" => ListStrategy::Key("ip"),
        "finalizers" => ListStrategy::Set,
        _ => ListStrategy::Atomic,
    }
}

/// [`strategy`] of the list `field` of the map at `at` (`slice`: the map is
/// an EndpointSlice): a Service's `spec.ports` merge on `port`, an
/// EndpointSlice's lists are atomic; every other `ports` is a container's.
fn strategy_at(at: &str, field: &str, slice: bool) -> ListStrategy {
    match (at, field) {
        ("spec", "ports") => ListStrategy::Key("port"),
        ("", _) if slice => ListStrategy::Atomic,
        _ => strategy(field),
    }
}

const PATCH: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const ORDER: &str = "$setElementOrder/";
const DELETE_FROM: &str = "$deleteFromPrimitiveList/";

/// Applies a strategic merge patch to an object of a built-in kind.
pub fn strategic_merge(target: &Value, patch: &Value) -> Result<Value, String> {
    let Value::Object(p) = patch else {
        return Err("a strategic merge patch must be a JSON object".to_string());
    };
    let original = target.as_object().cloned().unwrap_or_default();
    merge_map(original, p, "")?.map(Value::Object).ok_or_else(|| "the patch deletes the whole object".to_string())
}

/// Merges `patch` into `original`; `None` when the patch deletes the map.
fn merge_map(
    mut original: Map<String, Value>,
    patch: &Map<String, Value>,
    at: &str,
) -> Result<Option<Map<String, Value>>, String> {
    match patch.get(PATCH) {
        None => {}
        Some(Value::String(d)) if d == "delete" => return Ok(None),
        Some(Value::String(d)) if d == "replace" => return Ok(Some(strip(patch))),
        Some(Value::String(d)) if d == "merge" => {}
        Some(other) => {
            return Err(format!("{at}: $patch: unknown patch directive {other}: use delete, replace or merge"))
        }
    }
    let slice = at.is_empty() && original.get("kind").and_then(Value::as_str) == Some("EndpointSlice");
    let mut orders = Vec::new();
    for (k, v) in patch {
        if k == PATCH || k == RETAIN_KEYS {
            continue;
        }
        let path = if at.is_empty() { k.clone() } else { format!("{at}.{k}") };
        if let Some(list) = k.strip_prefix(ORDER) {
            orders.push((list.to_string(), v));
            continue;
        }
        if let Some(list) = k.strip_prefix(DELETE_FROM) {
            let Value::Array(gone) = v else { return Err(format!("{path}: must be a list")) };
            if let Some(Value::Array(items)) = original.get_mut(list) {
                let gone: HashSet<String> = gone.iter().map(Value::to_string).collect();
                items.retain(|i| !gone.contains(&i.to_string()));
            }
            continue;
        }
        match v {
            Value::Null => {
                original.remove(k);
            }
            Value::Object(pm) => {
                let base = match original.remove(k) {
                    Some(Value::Object(o)) => o,
                    _ => Map::new(),
                };
                if let Some(m) = merge_map(base, pm, &path)? {
                    original.insert(k.clone(), Value::Object(m));
                }
            }
            Value::Array(pl) => {
                let base = match original.remove(k) {
                    Some(Value::Array(o)) => o,
                    _ => Vec::new(),
                };
                original.insert(k.clone(), Value::Array(merge_list(base, pl, strategy_at(at, k, slice), &path)?));
            }
            other => {
                original.insert(k.clone(), other.clone());
            }
        }
    }
    for (list, order) in orders {
        let Value::Array(order) = order else { return Err(format!("{at}.{ORDER}{list}: must be a list")) };
        if let Some(Value::Array(items)) = original.get_mut(&list) {
            reorder(items, order, strategy_at(at, &list, slice));
        }
    }
    if let Some(retain) = patch.get(RETAIN_KEYS) {
        let Value::Array(keep) = retain else { return Err(format!("{at}.{RETAIN_KEYS}: must be a list")) };
        original.retain(|k, _| keep.iter().any(|x| x.as_str() == Some(k)));
    }
    Ok(Some(original))
}

fn merge_list(original: Vec<Value>, patch: &[Value], strategy: ListStrategy, at: &str) -> Result<Vec<Value>, String> {
    // `[{"$patch": "replace"}, …]`: the rest of the patch list is the new list.
    let replace = patch.iter().any(|e| e.get(PATCH).and_then(Value::as_str) == Some("replace"));
    if replace {
        return Ok(patch.iter().filter(|e| e.get(PATCH).is_none()).map(strip_value).collect());
    }
    match strategy {
        ListStrategy::Atomic => Ok(patch.iter().map(strip_value).collect()),
        ListStrategy::Set => {
            // Membership by the value's JSON text: a linear `contains` per
            // patch element made 100,000 finalizers 5·10^9 comparisons.
            let mut seen: HashSet<String> = original.iter().map(Value::to_string).collect();
            let mut out = original;
            for v in patch {
                if seen.insert(v.to_string()) {
                    out.push(v.clone());
                }
            }
            Ok(out)
        }
        ListStrategy::Key(key) => {
            // Elements by merge key (JSON text of the key's value), first
            // occurrence first; removed ones leave a hole filled at the end.
            let mut out: Vec<Option<Value>> = original.into_iter().map(Some).collect();
            let mut index: HashMap<String, VecDeque<usize>> = HashMap::new();
            for (pos, item) in out.iter().enumerate() {
                if let Some(id) = item.as_ref().and_then(|o| o.get(key)) {
                    index.entry(id.to_string()).or_default().push_back(pos);
                }
            }
            for (i, item) in patch.iter().enumerate() {
                let Value::Object(pm) = item else {
                    return Err(format!("{at}[{i}]: must be an object with {key:?}"));
                };
                let Some(id) = pm.get(key) else {
                    return Err(format!("{at}[{i}]: map: {:?} does not contain declared merge key: {key}", item));
                };
                let id = id.to_string();
                let found = index.get(&id).and_then(|q| q.front().copied());
                let deleting = pm.get(PATCH).and_then(Value::as_str) == Some("delete");
                match (found, deleting) {
                    (Some(pos), true) => {
                        out[pos] = None;
                        index.get_mut(&id).map(VecDeque::pop_front);
                    }
                    (None, true) => {}
                    (Some(pos), false) => {
                        let base = match out[pos].take() {
                            Some(Value::Object(o)) => o,
                            _ => Map::new(),
                        };
                        match merge_map(base, pm, &format!("{at}[{i}]"))? {
                            Some(m) => out[pos] = Some(Value::Object(m)),
                            None => {
                                index.get_mut(&id).map(VecDeque::pop_front);
                            }
                        }
                    }
                    (None, false) => {
                        index.entry(id).or_default().push_back(out.len());
                        out.push(Some(Value::Object(strip(pm))));
                    }
                }
            }
            Ok(out.into_iter().flatten().collect())
        }
    }
}

/// `$setElementOrder`: the listed elements first, in the given order; any
/// others keep their relative order after them.
fn reorder(items: &mut [Value], order: &[Value], strategy: ListStrategy) {
    let id = |v: &Value| -> Value {
        match strategy {
            ListStrategy::Key(k) => v.get(k).cloned().unwrap_or(Value::Null),
            _ => v.clone(),
        }
    };
    // First position of each id in the order, looked up once per item.
    let mut ranks: HashMap<String, usize> = HashMap::new();
    for (pos, o) in order.iter().enumerate() {
        ranks.entry(id(o).to_string()).or_insert(pos);
    }
    items.sort_by_cached_key(|v| ranks.get(&id(v).to_string()).copied().unwrap_or(order.len()));
}

/// A patch value as plain data: directives removed at every depth.
fn strip(map: &Map<String, Value>) -> Map<String, Value> {
    map.iter().filter(|(k, _)| !k.starts_with('$')).map(|(k, v)| (k.clone(), strip_value(v))).collect()
}

fn strip_value(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(strip(m)),
        Value::Array(a) => Value::Array(a.iter().filter(|e| e.get(PATCH).is_none()).map(strip_value).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn smp(target: Value, patch: Value) -> Value {
        strategic_merge(&target, &patch).unwrap_or_else(|e| json!({"error": e}))
    }

    #[test]
    fn containers_merge_by_name_and_env_by_name() {
        let pod = json!({"spec": {"containers": [
            {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
            {"name": "b", "image": "b:1"}
        ]}});
        let got = smp(
            pod,
            json!({"spec": {"containers": [{"name": "a", "image": "a:2", "env": [{"name": "Y", "value": "3"}]},
                                            {"name": "c", "image": "c:1"}]}}),
        );
        assert_eq!(
            got,
            json!({"spec": {"containers": [
                {"name": "a", "image": "a:2", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "3"}]},
                {"name": "b", "image": "b:1"},
                {"name": "c", "image": "c:1"}
            ]}})
        );
    }

    /// The example of "Update API Objects in Place Using kubectl patch":
    /// a strategic merge patch adds a container; a merge patch replaces the list.
    #[test]
    fn kubernetes_docs_patch_file_example() {
        let deploy =
            json!({"spec": {"template": {"spec": {"containers": [{"name": "patch-demo-ctr", "image": "nginx"}]}}}});
        let patch =
            json!({"spec": {"template": {"spec": {"containers": [{"name": "patch-demo-ctr-2", "image": "redis"}]}}}});
        assert_eq!(
            smp(deploy.clone(), patch.clone())["spec"]["template"]["spec"]["containers"],
            json!([{"name": "patch-demo-ctr", "image": "nginx"}, {"name": "patch-demo-ctr-2", "image": "redis"}])
        );
        assert_eq!(
            merge_patch(&deploy, &patch)["spec"]["template"]["spec"]["containers"],
            json!([{"name": "patch-demo-ctr-2", "image": "redis"}])
        );
        // Same page: tolerations have no merge strategy, so they are replaced.
        let with_tol =
            json!({"spec": {"tolerations": [{"effect": "NoSchedule", "key": "dedicated", "value": "test-team"}]}});
        let got = smp(
            with_tol,
            json!({"spec": {"tolerations": [{"effect": "NoSchedule", "key": "disktype", "value": "ssd"}]}}),
        );
        assert_eq!(got["spec"]["tolerations"], json!([{"effect": "NoSchedule", "key": "disktype", "value": "ssd"}]));
    }

    #[test]
    fn ports_volume_mounts_and_conditions_use_their_keys() {
        let c = json!({"ports": [{"containerPort": 80, "name": "http"}], "volumeMounts": [{"mountPath": "/a", "name": "v"}]});
        let got = smp(
            c,
            json!({"ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443}],
                   "volumeMounts": [{"mountPath": "/a", "readOnly": true}]}),
        );
        assert_eq!(
            got["ports"],
            json!([{"containerPort": 80, "name": "http", "protocol": "TCP"}, {"containerPort": 443}])
        );
        assert_eq!(got["volumeMounts"], json!([{"mountPath": "/a", "name": "v", "readOnly": true}]));
        let st =
            json!({"conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]});
        let got = smp(st, json!({"conditions": [{"type": "Ready", "status": "True"}]}));
        assert_eq!(
            got["conditions"],
            json!([{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}])
        );
    }

    #[test]
    fn patch_directives() {
        let pod = json!({"metadata": {"labels": {"a": "1", "b": "2"}, "finalizers": ["x", "y"]},
                         "spec": {"containers": [{"name": "a"}, {"name": "b"}], "volumes": [{"name": "v"}]}});
        // $patch: delete on a list element.
        let got = smp(pod.clone(), json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}));
        assert_eq!(got["spec"]["containers"], json!([{"name": "b"}]));
        // $patch: replace on a map and on a list.
        let got = smp(pod.clone(), json!({"metadata": {"labels": {"c": "3", "$patch": "replace"}}}));
        assert_eq!(got["metadata"]["labels"], json!({"c": "3"}));
        let got = smp(pod.clone(), json!({"spec": {"containers": [{"name": "z"}, {"$patch": "replace"}]}}));
        assert_eq!(got["spec"]["containers"], json!([{"name": "z"}]));
        // $patch: delete on a map.
        let got = smp(pod.clone(), json!({"metadata": {"labels": {"$patch": "delete"}}}));
        assert!(got["metadata"].get("labels").is_none());
        // Primitive set: added, and removed with $deleteFromPrimitiveList.
        let got = smp(
            pod.clone(),
            json!({"metadata": {"finalizers": ["z", "x"], "$deleteFromPrimitiveList/finalizers": ["y"]}}),
        );
        assert_eq!(got["metadata"]["finalizers"], json!(["x", "z"]));
        // $setElementOrder, as kubectl apply sends it.
        let got = smp(
            pod.clone(),
            json!({"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}], "containers": [{"name": "a", "image": "i"}]}}),
        );
        assert_eq!(got["spec"]["containers"], json!([{"name": "b"}, {"name": "a", "image": "i"}]));
        // $retainKeys keeps only the listed keys of the merged map.
        let got = smp(pod.clone(), json!({"metadata": {"$retainKeys": ["labels"], "labels": {"a": "9"}}}));
        assert_eq!(got["metadata"], json!({"labels": {"a": "9", "b": "2"}}));
        // null deletes a key; unknown directives are errors naming the field.
        let got = smp(pod.clone(), json!({"metadata": {"labels": {"a": null}}}));
        assert_eq!(got["metadata"]["labels"], json!({"b": "2"}));
        let e = strategic_merge(&pod, &json!({"spec": {"$patch": "explode"}}));
        assert!(matches!(e, Err(ref m) if m.starts_with("spec: $patch")), "{e:?}");
        let e = strategic_merge(&pod, &json!({"spec": {"containers": [{"image": "x"}]}}));
        assert!(matches!(e, Err(ref m) if m.contains("merge key: name")), "{e:?}");
    }

    const LIMIT: usize = 1 << 20;

    #[test]
    fn json_patch_ops_and_errors() {
        let o = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "a", "image": "x"}]}});
        let got = json_patch(
            &o,
            &json!([{"op": "replace", "path": "/spec/containers/0/image", "value": "y"},
                    {"op": "add", "path": "/metadata/labels/b", "value": "2"},
                    {"op": "remove", "path": "/metadata/labels/a"}]),
            LIMIT,
        );
        assert_eq!(
            got,
            Ok(json!({"metadata": {"labels": {"b": "2"}}, "spec": {"containers": [{"name": "a", "image": "y"}]}}))
        );
        assert!(json_patch(&o, &json!([{"op": "test", "path": "/metadata/labels/a", "value": "2"}]), LIMIT).is_err());
        assert!(json_patch(&o, &json!({"op": "add"}), LIMIT).is_err());
        assert!(json_patch(&o, &json!([{"op": "remove", "path": "/nope"}]), LIMIT).is_err());
    }

    /// Each `copy` of `/data` into `/data/cN` doubles the document: refused
    /// at the operation that passes the limit, not after building 2^30 copies.
    #[test]
    fn copy_bomb_refused_before_it_is_built() {
        let cm = json!({"metadata": {"name": "bomb"}, "data": {"seed": "x".repeat(1000)}});
        let ops: Vec<Value> =
            (0..30).map(|i| json!({"op": "copy", "from": "/data", "path": format!("/data/c{i}")})).collect();
        match json_patch(&cm, &Value::Array(ops), LIMIT) {
            Err(PatchError::TooLarge(size)) => assert!(size > LIMIT && size < 3 * LIMIT, "{size}"),
            other => panic!("expected TooLarge, got {:?}", other.map(|_| "a document")),
        }
        // Replacing and removing give the budget back.
        let big = "y".repeat(LIMIT / 2);
        let ops = json!([{"op": "add", "path": "/data/a", "value": big},
                         {"op": "remove", "path": "/data/a"},
                         {"op": "add", "path": "/data/b", "value": big},
                         {"op": "replace", "path": "/data/b", "value": big}]);
        let got = json_patch(&cm, &ops, LIMIT).map(|v| v["data"]["b"].as_str().map(str::len));
        assert_eq!(got, Ok(Some(LIMIT / 2)));
        assert!(json_len_capped(&cm, 10) > 10);
        assert_eq!(json_len_capped(&json!({"a": 1}), 100), 7);
    }

    #[test]
    fn content_types() {
        assert_eq!(PatchType::of("application/json-patch+json"), Some(PatchType::Json));
        assert_eq!(PatchType::of("application/strategic-merge-patch+json; charset=utf-8"), Some(PatchType::Strategic));
        assert_eq!(PatchType::of("application/merge-patch+json"), Some(PatchType::Merge));
        assert_eq!(PatchType::of("application/apply-patch+yaml"), Some(PatchType::Apply));
        assert_eq!(PatchType::of("text/plain"), None);
    }
}
