//! The endpoints and endpointslice controllers: for each Service with a
//! selector, the `v1 Endpoints` and `discovery.k8s.io/v1 EndpointSlice`s
//! naming the pods it selects, as kube-controller-manager keeps them, so
//! clients that discover peers through them (Prometheus' Kubernetes SD,
//! `kubectl get endpoints`) find the job's pods.
//!
//! Written only when what they say changes, and worked out again only for
//! the Services a pass's changes may touch: the Service itself, or a pod it
//! selects or lists, changed (pods mark their job dirty, see
//! [`crate::dirty`]). Pods are indexed only by the labels some Service
//! selects on, so pods no Service selects cost one look-up per label; with
//! no selecting Service the pass reads no pod.

use crate::cache::Cache;
use crate::dirty::Dirty;
use crate::pods::owner_uid;
use crate::writes::write;
use crate::ManagerError;
use ringleader_api::kinds::service::{self, MANAGED_BY, MANAGED_BY_LABEL, SERVICE_NAME_LABEL, SKIP_MIRROR_LABEL};
use ringleader_store::{Backend, ObjectKey, Op, Stored};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Label kube-controller-manager puts on the endpoints of a headless Service.
const HEADLESS_LABEL: &str = "service.kubernetes.io/headless";

/// One pass: the writes [`decide`] wants, carried out.
pub fn pass(store: &dyn Backend, cache: &mut Cache, dirty: &Dirty) -> Result<(), ManagerError> {
    let ops = decide(cache, dirty);
    write(store, cache, ops)
}

/// The Endpoints and EndpointSlices to write (those that differ from what
/// the Service's pods make them) and to delete (the controller's own, left
/// by a Service that is gone or selects nothing now). Only Services
/// [`touched`] by `dirty` are worked out again.
pub fn decide(cache: &Cache, dirty: &Dirty) -> Vec<Op> {
    let services: BTreeMap<(&str, &str), &Stored> = cache
        .of_kind(service::API_VERSION, service::KIND)
        .map(|s| ((s.key.namespace.as_str(), s.key.name.as_str()), s))
        .collect();
    let selecting =
        |ns: &str, name: &str| services.get(&(ns, name)).is_some_and(|s| service::selector(&s.object).is_some());
    let mut ops = Vec::new();
    for e in cache.of_kind(service::API_VERSION, service::ENDPOINTS_KIND) {
        let ours = label(&e.object, SKIP_MIRROR_LABEL) == Some("true");
        if ours && !services.contains_key(&(e.key.namespace.as_str(), e.key.name.as_str())) {
            ops.push(Op::Delete { key: e.key.clone(), expected: None });
        }
    }
    let mut slices: HashMap<(&str, &str), Vec<&Stored>> = HashMap::new();
    for s in cache.of_kind(service::SLICE_API_VERSION, service::SLICE_KIND) {
        if label(&s.object, MANAGED_BY_LABEL) != Some(MANAGED_BY) {
            continue;
        }
        let Some(svc) = label(&s.object, SERVICE_NAME_LABEL) else { continue };
        if selecting(&s.key.namespace, svc) {
            slices.entry((s.key.namespace.as_str(), svc)).or_default().push(s);
        } else {
            ops.push(Op::Delete { key: s.key.clone(), expected: None });
        }
    }
    let wanted: Vec<(&Stored, &Map<String, Value>)> =
        services.values().filter_map(|s| service::selector(&s.object).map(|sel| (*s, sel))).collect();
    if wanted.is_empty() {
        return ops;
    }
    let index = PodIndex::new(cache, wanted.iter().flat_map(|(_, sel)| sel.keys().map(String::as_str)).collect());
    for (svc, selector) in wanted {
        let pods = index.selected(&svc.key.namespace, selector);
        let have: Vec<&Stored> =
            slices.remove(&(svc.key.namespace.as_str(), svc.key.name.as_str())).unwrap_or_default();
        if !touched(dirty, svc, &pods, &have) {
            continue;
        }
        let endpoints = endpoints_for(&svc.object, &pods);
        let key = ObjectKey::new(service::API_VERSION, service::ENDPOINTS_KIND, &svc.key.namespace, &svc.key.name);
        let current = cache.get(&key).map(|e| &e.object);
        if current.is_none_or(|h| differs(h, &endpoints, &["subsets"])) {
            ops.push(Op::Apply(endpoints));
        }
        let want = slices_for(&svc.object, &pods);
        let names: BTreeSet<&str> =
            want.iter().filter_map(|w| w.pointer("/metadata/name").and_then(Value::as_str)).collect();
        for old in &have {
            if !names.contains(old.key.name.as_str()) {
                ops.push(Op::Delete { key: old.key.clone(), expected: None });
            }
        }
        for w in want {
            let name = w.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
            let current = have.iter().find(|h| h.key.name == name).map(|h| &h.object);
            if current.is_none_or(|c| differs(c, &w, &["addressType", "endpoints", "ports"])) {
                ops.push(Op::Apply(w));
            }
        }
    }
    ops
}

/// Whether a pass's changes may change what `svc` lists: the Service (or
/// a slice of it) changed, or a pod it selects changed, or its slices list
/// a pod it no longer selects (gone, or relabelled). A pod's change marks
/// its owner, or itself.
fn touched(dirty: &Dirty, svc: &Stored, pods: &[&Value], slices: &[&Stored]) -> bool {
    fn own(v: &Value) -> Option<&str> {
        v.pointer("/metadata/uid").and_then(Value::as_str)
    }
    let is_dirty = |v: &Value| owner_uid(v).or_else(|| own(v)).is_some_and(|u| dirty.contains(u));
    if matches!(dirty, Dirty::All)
        || own(&svc.object).is_some_and(|u| dirty.contains(u))
        || is_dirty(&svc.object)
        || slices.is_empty()
        || pods.iter().any(|p| is_dirty(p))
    {
        return true;
    }
    let selected: BTreeSet<&str> =
        pods.iter().filter_map(|p| p.pointer("/metadata/name").and_then(Value::as_str)).collect();
    let listed = slices.iter().flat_map(|s| s.object.get("endpoints").and_then(Value::as_array).into_iter().flatten());
    listed.filter_map(|e| e.pointer("/targetRef/name").and_then(Value::as_str)).any(|name| !selected.contains(name))
}

fn label<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.pointer("/metadata/labels").and_then(|l| l.get(key)).and_then(Value::as_str)
}

/// Whether `have` says other than `want` in `fields`, its labels or its
/// owners (what the controller sets; the store's metadata aside).
fn differs(have: &Value, want: &Value, fields: &[&str]) -> bool {
    let meta = |v: &Value, f: &str| v.pointer(&format!("/metadata/{f}")).cloned().unwrap_or(Value::Null);
    fields.iter().any(|f| have.get(*f).unwrap_or(&Value::Null) != want.get(*f).unwrap_or(&Value::Null))
        || ["labels", "ownerReferences"].iter().any(|f| meta(have, f) != meta(want, f))
}

/// Pods by `(namespace, label, value)` for the labels some selector uses.
struct PodIndex<'a> {
    by_label: HashMap<(&'a str, &'a str, &'a str), Vec<&'a Value>>,
}

impl<'a> PodIndex<'a> {
    fn new(cache: &'a Cache, keys: BTreeSet<&str>) -> PodIndex<'a> {
        let mut by_label: HashMap<(&str, &str, &str), Vec<&Value>> = HashMap::new();
        for p in cache.of_kind("v1", "Pod") {
            let Some(labels) = p.object.pointer("/metadata/labels").and_then(Value::as_object) else { continue };
            for (k, v) in labels {
                if let (true, Some(v)) = (keys.contains(k.as_str()), v.as_str()) {
                    by_label.entry((p.key.namespace.as_str(), k.as_str(), v)).or_default().push(&p.object);
                }
            }
        }
        PodIndex { by_label }
    }

    /// The pods of `namespace` `selector` selects, by name: those of its
    /// rarest pair that match the others.
    fn selected(&self, namespace: &str, selector: &Map<String, Value>) -> Vec<&'a Value> {
        let candidates = selector
            .iter()
            .map(|(k, v)| {
                self.by_label
                    .get(&(namespace, k.as_str(), v.as_str().unwrap_or_default()))
                    .map_or(&[][..], Vec::as_slice)
            })
            .min_by_key(|c| c.len())
            .unwrap_or_default();
        let mut pods: Vec<&Value> = candidates
            .iter()
            .copied()
            .filter(|p| service::matches(selector, p.pointer("/metadata/labels").and_then(Value::as_object)))
            .collect();
        pods.sort_by_key(|p| p.pointer("/metadata/name").and_then(Value::as_str));
        pods
    }
}

/// One pod as an endpoint: address, readiness and what refers to it;
/// `None` for pods that are none (no IP yet, finished, being deleted).
struct Address<'a> {
    ip: &'a str,
    ready: bool,
    node: Option<&'a str>,
    target: Value,
}

fn address<'a>(pod: &'a Value, publish_not_ready: bool) -> Option<Address<'a>> {
    let ip = pod.pointer("/status/podIP").and_then(Value::as_str).filter(|ip| !ip.is_empty())?;
    let phase = pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or_default();
    if matches!(phase, "Succeeded" | "Failed")
        || pod.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null())
    {
        return None;
    }
    let ready = publish_not_ready || ringleader_api::kinds::disruption::healthy(pod);
    let meta = |f: &str| pod.pointer(&format!("/metadata/{f}")).cloned().unwrap_or(Value::Null);
    Some(Address {
        ip,
        ready,
        node: pod.pointer("/spec/nodeName").and_then(Value::as_str).filter(|n| !n.is_empty()),
        target: json!({"kind": "Pod", "namespace": meta("namespace"), "name": meta("name"), "uid": meta("uid")}),
    })
}

/// The Service's ports as `pod` serves them: a named target port through
/// its containers' port names (a pod without that name has no such port).
fn ports_of(svc: &Value, pod: &Value) -> Vec<Value> {
    let declared: Vec<&Value> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|c| c.get("ports").and_then(Value::as_array).into_iter().flatten())
        .collect();
    let mut out = Vec::new();
    for p in svc.pointer("/spec/ports").and_then(Value::as_array).into_iter().flatten() {
        let port = match p.get("targetPort").or_else(|| p.get("port")) {
            Some(Value::String(name)) => declared
                .iter()
                .find(|d| d.get("name").and_then(Value::as_str) == Some(name))
                .and_then(|d| d.get("containerPort"))
                .and_then(Value::as_i64),
            Some(n) => n.as_i64(),
            None => None,
        };
        let Some(port) = port else { continue };
        let mut e = json!({"port": port, "protocol": p.get("protocol").cloned().unwrap_or(json!("TCP"))});
        if let Some(name) = p.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()) {
            e["name"] = json!(name);
        }
        out.push(e);
    }
    out
}

/// Pods with their addresses, grouped by the ports they serve (Kubernetes
/// puts each group in a subset, and a slice, of its own).
fn grouped<'a>(svc: &Value, pods: &[&'a Value]) -> BTreeMap<String, (Value, Vec<Address<'a>>)> {
    let publish = svc.pointer("/spec/publishNotReadyAddresses").and_then(Value::as_bool).unwrap_or(false);
    let mut groups: BTreeMap<String, (Value, Vec<Address>)> = BTreeMap::new();
    let wants_ports = svc.pointer("/spec/ports").and_then(Value::as_array).is_some_and(|p| !p.is_empty());
    for pod in pods {
        let Some(a) = address(pod, publish) else { continue };
        let ports = ports_of(svc, pod);
        if wants_ports && ports.is_empty() {
            continue;
        }
        let ports = Value::Array(ports);
        groups.entry(ports.to_string()).or_insert_with(|| (ports, Vec::new())).1.push(a);
    }
    groups
}

/// Labels of what the controller writes for `svc`: the Service's own, and
/// `service.kubernetes.io/headless` for a headless one.
fn labels_of(svc: &Value) -> Map<String, Value> {
    let mut labels = svc.pointer("/metadata/labels").and_then(Value::as_object).cloned().unwrap_or_default();
    if service::headless(svc) {
        labels.insert(HEADLESS_LABEL.into(), json!(""));
    }
    labels
}

/// The Service's `v1 Endpoints`.
pub fn endpoints_for(svc: &Value, pods: &[&Value]) -> Value {
    let subsets: Vec<Value> = grouped(svc, pods)
        .into_values()
        .map(|(ports, addresses)| {
            let entry = |a: &Address| {
                let mut e = json!({"ip": a.ip, "targetRef": a.target});
                if let Some(node) = a.node {
                    e["nodeName"] = json!(node);
                }
                e
            };
            let mut subset = Map::new();
            let (ready, not_ready): (Vec<&Address>, Vec<&Address>) = addresses.iter().partition(|a| a.ready);
            if !ready.is_empty() {
                subset.insert("addresses".into(), ready.into_iter().map(entry).collect());
            }
            if !not_ready.is_empty() {
                subset.insert("notReadyAddresses".into(), not_ready.into_iter().map(entry).collect());
            }
            if ports.as_array().is_some_and(|p| !p.is_empty()) {
                subset.insert("ports".into(), ports);
            }
            Value::Object(subset)
        })
        .collect();
    let mut labels = labels_of(svc);
    labels.insert(SKIP_MIRROR_LABEL.into(), json!("true"));
    let mut e = json!({
        "apiVersion": service::API_VERSION, "kind": service::ENDPOINTS_KIND,
        "metadata": {"name": svc.pointer("/metadata/name"), "namespace": svc.pointer("/metadata/namespace"), "labels": labels},
    });
    if !subsets.is_empty() {
        e["subsets"] = Value::Array(subsets);
    }
    e
}

/// The Service's EndpointSlices: one per group of ports (one, empty, when
/// no pod serves it), named after the Service and its uid.
pub fn slices_for(svc: &Value, pods: &[&Value]) -> Vec<Value> {
    let at = |p: &str| svc.pointer(p).and_then(Value::as_str).unwrap_or_default();
    let (name, uid) = (at("/metadata/name"), at("/metadata/uid"));
    let base = format!("{name}-{}", uid.chars().filter(char::is_ascii_alphanumeric).take(5).collect::<String>());
    let mut labels = labels_of(svc);
    labels.insert(SERVICE_NAME_LABEL.into(), json!(name));
    labels.insert(MANAGED_BY_LABEL.into(), json!(MANAGED_BY));
    let mut groups: Vec<(Value, Vec<Address>)> = grouped(svc, pods).into_values().collect();
    if groups.is_empty() {
        groups.push((Value::Array(Vec::new()), Vec::new()));
    }
    groups
        .into_iter()
        .enumerate()
        .map(|(i, (ports, addresses))| {
            let endpoints: Vec<Value> = addresses
                .iter()
                .map(|a| {
                    let mut e = json!({"addresses": [a.ip],
                        "conditions": {"ready": a.ready, "serving": a.ready, "terminating": false},
                        "targetRef": a.target});
                    if let Some(node) = a.node {
                        e["nodeName"] = json!(node);
                    }
                    e
                })
                .collect();
            let slice_name = if i == 0 { base.clone() } else { format!("{base}-{i}") };
            // A slice's port names are pointers that clients dereference
            // (`kubectl describe svc`): always set, `""` when unnamed.
            let mut ports = ports;
            for p in ports.as_array_mut().into_iter().flatten() {
                if p.get("name").is_none() {
                    p["name"] = json!("");
                }
            }
            json!({
                "apiVersion": service::SLICE_API_VERSION, "kind": service::SLICE_KIND,
                "metadata": {"name": slice_name, "namespace": at("/metadata/namespace"), "labels": labels,
                    "ownerReferences": [{"apiVersion": service::API_VERSION, "kind": service::KIND, "name": name,
                        "uid": uid, "controller": true, "blockOwnerDeletion": true}]},
                "addressType": "IPv4",
                "endpoints": endpoints,
                "ports": ports,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, ip: &str, ready: bool, labels: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"), "labels": labels},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]},
            "status": {"phase": "Running", "podIP": ip,
                "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}})
    }

    fn web() -> Value {
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "ns", "uid": "abcdef-123"},
            "spec": {"selector": {"app": "web"}, "clusterIP": "10.96.0.9",
                "ports": [{"name": "h", "port": 80, "targetPort": "http", "protocol": "TCP"}]}})
    }

    #[test]
    fn endpoints_and_slices_follow_the_pods_a_service_selects_and_are_written_once() {
        let mut cache = Cache::default();
        cache.put_value(web());
        cache.put_value(pod("w-0", "127.0.1.2", true, json!({"app": "web"})));
        cache.put_value(pod("w-1", "127.0.1.3", false, json!({"app": "web"})));
        cache.put_value(pod("other", "127.0.1.4", true, json!({"app": "db"})));
        let ops = decide(&cache, &Dirty::All);
        assert_eq!(ops.len(), 2, "{ops:?}");
        for op in &ops {
            let Op::Apply(v) = op else { panic!("{op:?}") };
            cache.put_value(v.clone());
        }
        let ep =
            cache.get(&ObjectKey::new("v1", "Endpoints", "ns", "web")).map(|e| e.object.clone()).unwrap_or_default();
        assert_eq!(ep["subsets"][0]["addresses"][0]["ip"], "127.0.1.2");
        assert_eq!(ep["subsets"][0]["addresses"][0]["targetRef"]["name"], "w-0");
        assert_eq!(ep["subsets"][0]["addresses"][0]["nodeName"], "n1");
        assert_eq!(ep["subsets"][0]["notReadyAddresses"][0]["ip"], "127.0.1.3");
        assert_eq!(ep["subsets"][0]["ports"], json!([{"name": "h", "port": 8080, "protocol": "TCP"}]));
        let key = ObjectKey::new("discovery.k8s.io/v1", "EndpointSlice", "ns", "web-abcde");
        let slice = cache.get(&key).map(|e| e.object.clone()).unwrap_or_default();
        assert_eq!(slice["metadata"]["labels"][SERVICE_NAME_LABEL], "web");
        assert_eq!(slice["metadata"]["labels"][MANAGED_BY_LABEL], MANAGED_BY);
        assert_eq!(slice["metadata"]["ownerReferences"][0]["uid"], "abcdef-123");
        assert_eq!(slice["endpoints"][1]["conditions"]["ready"], false);
        assert_eq!(slice["ports"][0]["port"], 8080);
        let mut unnamed = web();
        unnamed["spec"]["ports"][0].as_object_mut().map(|p| p.remove("name"));
        let p0 = pod("w-0", "127.0.1.2", true, json!({"app": "web"}));
        assert_eq!(slices_for(&unnamed, &[&p0])[0]["ports"][0]["name"], "", "set: clients dereference it");
        assert!(decide(&cache, &Dirty::All).is_empty(), "nothing changed: nothing written");

        cache.remove(&ObjectKey::new("v1", "Service", "ns", "web"), 2);
        let ops = decide(&cache, &Dirty::All);
        assert!(
            matches!(&ops[..], [Op::Delete { key: a, .. }, Op::Delete { key: b, .. }] if a.kind == "Endpoints" && b.kind == "EndpointSlice"),
            "{ops:?}"
        );
    }

    #[test]
    fn only_services_a_change_touches_are_worked_out_again() {
        let mut cache = Cache::default();
        cache.put_value(web());
        let mut p0 = pod("w-0", "127.0.1.2", true, json!({"app": "web"}));
        p0["metadata"]["ownerReferences"] = json!([{"uid": "job-1", "controller": true}]);
        cache.put_value(p0.clone());
        for op in decide(&cache, &Dirty::All) {
            let Op::Apply(v) = op else { panic!("{op:?}") };
            cache.put_value(v);
        }
        // The pod turns unready: only a pass where its job is dirty sees it.
        p0["status"]["conditions"][0]["status"] = json!("False");
        cache.put(Stored {
            key: ObjectKey::of(&p0).unwrap_or_else(|e| panic!("{e}")),
            resource_version: 2,
            object: p0,
        });
        let mut other = Dirty::Some(Default::default());
        other.add("job-2");
        assert!(decide(&cache, &other).is_empty(), "nothing it selects changed");
        let mut own = Dirty::Some(Default::default());
        own.add("job-1");
        assert_eq!(decide(&cache, &own).len(), 2, "its pod changed: both rewritten");
        // The pod gone: the slice that lists it calls for a new one.
        cache.remove(&ObjectKey::new("v1", "Pod", "ns", "w-0"), 3);
        assert_eq!(decide(&cache, &other).len(), 2);
    }

    #[test]
    fn publish_not_ready_makes_every_address_ready_and_selector_less_services_are_left_alone() {
        let mut svc = web();
        svc["spec"]["publishNotReadyAddresses"] = json!(true);
        let p = pod("w-1", "127.0.1.3", false, json!({"app": "web"}));
        let ep = endpoints_for(&svc, &[&p]);
        assert_eq!(ep["subsets"][0]["addresses"][0]["ip"], "127.0.1.3");
        assert!(ep["subsets"][0].get("notReadyAddresses").is_none());

        let mut cache = Cache::default();
        let mut manual = web();
        manual["spec"].as_object_mut().map(|s| s.remove("selector"));
        cache.put_value(manual);
        cache
            .put_value(json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web", "namespace": "ns"},
            "subsets": [{"addresses": [{"ip": "10.0.0.1"}]}]}));
        assert!(decide(&cache, &Dirty::All).is_empty(), "a selector-less Service's Endpoints are its user's");
    }
}
