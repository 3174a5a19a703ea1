//! The schema-driven walks of server-side apply over plain JSON: the field
//! set of an object, the comparison of two versions, the merge of an
//! applied configuration into the live object, and the removal of fields.
//!
//! The schema is what kube-apiserver's OpenAPI says about lists and maps:
//! lists merge on the strategic-merge keys [`crate::patch`] knows (a few
//! with the extra keys of their `listMapKey` tags), `finalizers` is a set,
//! label selectors are atomic, and every other list is atomic. Custom
//! resources carry no such tags, so only their `metadata` lists merge.

use super::fieldset::{Elem, Path, Set};
use crate::patch::{strategy, ListStrategy};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// What is known of the kind's schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schema {
    /// One of Kubernetes' own kinds (tagged lists), not a custom resource.
    pub builtin: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListType {
    Atomic,
    Set,
    Map(&'static [&'static str]),
}

/// The value a list-map key takes when an item omits it (the OpenAPI
/// default of the key field).
fn key_default(field: &str) -> Option<Value> {
    (field == "protocol").then(|| Value::String("TCP".into()))
}

impl Schema {
    /// How the list at the end of `fields` (the field names from the root,
    /// list items skipped) merges.
    fn list(&self, fields: &[String]) -> ListType {
        let Some(name) = fields.last() else { return ListType::Atomic };
        if !self.builtin && fields.first().map(String::as_str) != Some("metadata") {
            return ListType::Atomic;
        }
        let parent = fields.len().checked_sub(2).and_then(|i| fields.get(i)).map(String::as_str);
        match (parent, name.as_str()) {
            (Some("containers" | "initContainers" | "ephemeralContainers"), "ports") => {
                ListType::Map(&["containerPort", "protocol"])
            }
            (Some("spec"), "ports") if fields.len() == 2 => ListType::Map(&["port", "protocol"]),
            (_, "topologySpreadConstraints") => ListType::Map(&["topologyKey", "whenUnsatisfiable"]),
            _ => match strategy(name) {
                ListStrategy::Key("containerPort") => ListType::Map(&["containerPort", "protocol"]),
                ListStrategy::Key("name") => ListType::Map(&["name"]),
                ListStrategy::Key("mountPath") => ListType::Map(&["mountPath"]),
                ListStrategy::Key("devicePath") => ListType::Map(&["devicePath"]),
                ListStrategy::Key("type") => ListType::Map(&["type"]),
                ListStrategy::Key("ip") => ListType::Map(&["ip"]),
                ListStrategy::Key("uid") => ListType::Map(&["uid"]),
                ListStrategy::Key(_) | ListStrategy::Atomic => ListType::Atomic,
                ListStrategy::Set => ListType::Set,
            },
        }
    }

    /// Maps owned whole: label selectors (`structType=atomic`, and a
    /// Service's `mapType=atomic` selector).
    fn atomic_map(&self, fields: &[String]) -> bool {
        self.builtin && fields.last().is_some_and(|f| f == "selector")
    }
}

/// The path step of a list item, if it has one.
fn item_elem(item: &Value, list: ListType) -> Result<Elem, String> {
    match list {
        ListType::Set => match item {
            Value::Object(_) | Value::Array(_) => Err(format!("set list holds a non-scalar item {item}")),
            v => Ok(Elem::Value(v.to_string())),
        },
        ListType::Map(keys) => {
            let Value::Object(map) = item else {
                return Err("associative list has an element that is not an object".into());
            };
            let mut key = Map::new();
            for k in keys {
                let v = match (map.get(*k), key_default(k)) {
                    (Some(Value::Null) | None, Some(d)) => d,
                    (Some(v @ (Value::String(_) | Value::Number(_) | Value::Bool(_))), _) => v.clone(),
                    (Some(Value::Null) | None, None) => {
                        return Err(format!(
                            "associative list with keys has an element that omits key field {k:?} (and doesn't have default value)"
                        ))
                    }
                    (Some(_), _) => return Err(format!("key field {k:?} must be a scalar")),
                };
                key.insert((*k).to_string(), v);
            }
            Ok(Elem::Key(Value::Object(key).to_string()))
        }
        ListType::Atomic => Err("atomic list items have no path".into()),
    }
}

/// The steps of a list's items, or why it cannot merge item by item (an
/// item without its keys, or two with the same).
fn item_elems(items: &[Value], list: ListType) -> Result<Vec<Elem>, String> {
    let mut seen = HashSet::new();
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let e = item_elem(item, list).map_err(|e| format!("element {i}: {e}"))?;
            if !seen.insert(e.clone()) {
                return Err(format!("duplicate entries for key {}", super::fieldset::display(&[e])));
            }
            Ok(e)
        })
        .collect()
}

/// Where a walk is: the path so far and the field names on it.
struct At<'s> {
    schema: &'s Schema,
    path: Path,
    fields: Vec<String>,
}

impl At<'_> {
    fn enter_field(&mut self, name: &str) {
        self.path.push(Elem::Field(name.to_string()));
        self.fields.push(name.to_string());
    }
    fn leave_field(&mut self) {
        self.path.pop();
        self.fields.pop();
    }
    /// The list's type and its items' steps when it merges item by item.
    fn granular(&self, items: &[Value]) -> Option<(ListType, Vec<Elem>)> {
        let list = self.schema.list(&self.fields);
        if list == ListType::Atomic {
            return None;
        }
        item_elems(items, list).ok().map(|e| (list, e))
    }
    fn map_is_granular(&self) -> bool {
        !self.schema.atomic_map(&self.fields)
    }
}

/// The fields an applied configuration sets: its leaves, atomic lists and
/// maps, and the items of its associative and set lists (maps themselves
/// are not members). An item that cannot be keyed is an error, named by
/// its path.
pub fn applied_set(config: &Value, schema: &Schema) -> Result<Set, String> {
    fn walk(v: &Value, at: &mut At, out: &mut Set) -> Result<(), String> {
        match v {
            Value::Object(map) if at.map_is_granular() => {
                for (k, child) in map {
                    at.enter_field(k);
                    walk(child, at, out)?;
                    at.leave_field();
                }
            }
            Value::Array(items) if at.schema.list(&at.fields) != ListType::Atomic => {
                let list = at.schema.list(&at.fields);
                let elems =
                    item_elems(items, list).map_err(|e| format!("{}: {e}", super::fieldset::display(&at.path)))?;
                for (item, e) in items.iter().zip(elems) {
                    at.path.push(e);
                    out.insert(&at.path);
                    if let (ListType::Map(_), Value::Object(map)) = (list, item) {
                        for (k, child) in map {
                            at.enter_field(k);
                            walk(child, at, out)?;
                            at.leave_field();
                        }
                    }
                    at.path.pop();
                }
            }
            _ => out.insert(&at.path),
        }
        Ok(())
    }
    let mut out = Set::new();
    let mut at = At { schema, path: Vec::new(), fields: Vec::new() };
    match config {
        Value::Object(_) => walk(config, &mut at, &mut out)?,
        other => return Err(format!("an applied configuration must be an object, not {other}")),
    }
    Ok(out)
}

/// Every field of `v` at `at`, maps included (what an update that adds
/// `v` there sets), into `out`.
fn whole(v: &Value, at: &mut At, out: &mut Set) {
    match v {
        Value::Object(map) if at.map_is_granular() => {
            out.insert(&at.path);
            for (k, child) in map {
                at.enter_field(k);
                whole(child, at, out);
                at.leave_field();
            }
        }
        Value::Array(items) => match at.granular(items) {
            Some((list, elems)) => {
                for (item, e) in items.iter().zip(elems) {
                    at.path.push(e);
                    item_fields(item, list, at, out);
                    at.path.pop();
                }
            }
            None => out.insert(&at.path),
        },
        _ => out.insert(&at.path),
    }
}

/// A list item and (for an associative list) its fields.
fn item_fields(item: &Value, list: ListType, at: &mut At, out: &mut Set) {
    out.insert(&at.path);
    if let (ListType::Map(_), Value::Object(map)) = (list, item) {
        for (k, child) in map {
            at.enter_field(k);
            whole(child, at, out);
            at.leave_field();
        }
    }
}

/// Every field of an object, maps included.
pub fn object_set(object: &Value, schema: &Schema) -> Set {
    let mut out = Set::new();
    let mut at = At { schema, path: Vec::new(), fields: Vec::new() };
    whole(object, &mut at, &mut out);
    // The root is the object, not a field of it.
    out.difference(&root())
}

fn root() -> Set {
    let mut s = Set::new();
    s.insert(&[]);
    s
}

/// The fields `new` added or changed relative to `old` (removed ones are
/// not listed: ownership of what no longer exists is dropped separately).
pub fn changed(old: &Value, new: &Value, schema: &Schema) -> Set {
    fn walk(old: &Value, new: &Value, at: &mut At, out: &mut Set) {
        match (old, new) {
            (Value::Object(o), Value::Object(n)) if at.map_is_granular() => {
                for (k, child) in n {
                    at.enter_field(k);
                    match o.get(k) {
                        Some(was) => walk(was, child, at, out),
                        None => whole(child, at, out),
                    }
                    at.leave_field();
                }
            }
            (Value::Array(o), Value::Array(n)) => match (at.granular(o), at.granular(n)) {
                (Some((list, old_elems)), Some((_, new_elems))) => {
                    let index: HashMap<&Elem, usize> = old_elems.iter().enumerate().map(|(i, e)| (e, i)).collect();
                    for (item, e) in n.iter().zip(new_elems) {
                        let was = index.get(&e).and_then(|&i| o.get(i));
                        at.path.push(e);
                        match (was, list, item) {
                            (Some(Value::Object(wm)), ListType::Map(_), Value::Object(nm)) => {
                                for (k, child) in nm {
                                    at.enter_field(k);
                                    match wm.get(k) {
                                        Some(w) => walk(w, child, at, out),
                                        None => whole(child, at, out),
                                    }
                                    at.leave_field();
                                }
                            }
                            (Some(_), _, _) => {}
                            (None, _, _) => item_fields(item, list, at, out),
                        }
                        at.path.pop();
                    }
                }
                _ if o != n => out.insert(&at.path),
                _ => {}
            },
            _ if old != new => match new {
                // A map replacing a scalar: the map and all it holds are new.
                Value::Object(_) | Value::Array(_) => whole(new, at, out),
                _ => out.insert(&at.path),
            },
            _ => {}
        }
    }
    let mut out = Set::new();
    let mut at = At { schema, path: Vec::new(), fields: Vec::new() };
    walk(old, new, &mut at, &mut out);
    out.difference(&root())
}

/// `config` merged into `live`: maps field by field, associative and set
/// lists item by item (live items in their order, new ones after), all
/// else replaced by the configuration's value.
pub fn merge(live: &Value, config: &Value, schema: &Schema) -> Value {
    fn walk(live: &Value, config: &Value, at: &mut At) -> Value {
        match (live, config) {
            (Value::Object(l), Value::Object(c)) if at.map_is_granular() => merge_fields(l, c, at),
            (Value::Array(l), Value::Array(c)) => match (at.granular(l), at.granular(c)) {
                (Some((list, live_elems)), Some((_, config_elems))) => {
                    let mut out = Vec::with_capacity(l.len() + c.len());
                    let index: HashMap<&Elem, usize> = config_elems.iter().enumerate().map(|(i, e)| (e, i)).collect();
                    let live: HashSet<&Elem> = live_elems.iter().collect();
                    for (item, e) in l.iter().zip(&live_elems) {
                        match index.get(e).and_then(|&i| c.get(i)) {
                            Some(applied) => {
                                at.path.push(e.clone());
                                let merged = match list {
                                    ListType::Map(_) => merge_item(item, applied, at),
                                    _ => applied.clone(),
                                };
                                at.path.pop();
                                out.push(merged);
                            }
                            None => out.push(item.clone()),
                        }
                    }
                    for (item, e) in c.iter().zip(&config_elems) {
                        if !live.contains(e) {
                            out.push(item.clone());
                        }
                    }
                    Value::Array(out)
                }
                _ => config.clone(),
            },
            _ => config.clone(),
        }
    }
    /// An associative list's item: its fields merge as a map's do.
    fn merge_item(live: &Value, config: &Value, at: &mut At) -> Value {
        match (live, config) {
            (Value::Object(l), Value::Object(c)) => merge_fields(l, c, at),
            _ => config.clone(),
        }
    }
    /// A map's fields: the configuration's merged into the live ones.
    fn merge_fields(l: &serde_json::Map<String, Value>, c: &serde_json::Map<String, Value>, at: &mut At) -> Value {
        let mut out = l.clone();
        for (k, child) in c {
            at.enter_field(k);
            let merged = match l.get(k) {
                Some(was) => walk(was, child, at),
                None => child.clone(),
            };
            at.leave_field();
            out.insert(k.clone(), merged);
        }
        Value::Object(out)
    }
    let mut at = At { schema, path: Vec::new(), fields: Vec::new() };
    walk(live, config, &mut at)
}

/// How to name the items of a list some steps point into: by the key
/// fields of its `k:` steps (with their defaults), or by value.
enum Naming {
    Keys(Vec<String>),
    Values,
}

impl Naming {
    fn of(steps: &Set) -> Option<Naming> {
        match steps.first_child()? {
            Elem::Key(k) => match serde_json::from_str::<Value>(k) {
                Ok(Value::Object(m)) => Some(Naming::Keys(m.keys().cloned().collect())),
                _ => None,
            },
            Elem::Value(_) => Some(Naming::Values),
            Elem::Field(_) => None,
        }
    }

    /// The step naming `item`, if it has one.
    fn name(&self, item: &Value) -> Option<Elem> {
        match self {
            Naming::Values => (!item.is_object() && !item.is_array()).then(|| Elem::Value(item.to_string())),
            Naming::Keys(keys) => {
                let map = item.as_object()?;
                let mut key = Map::new();
                for k in keys {
                    let v = map.get(k).filter(|v| !v.is_null()).cloned().or_else(|| key_default(k))?;
                    key.insert(k.clone(), v);
                }
                Some(Elem::Key(Value::Object(key).to_string()))
            }
        }
    }
}

/// Removes from `v` (at `at`) every member of `doomed`, in one pass: a
/// field, or a list item with everything in it. A map or list this leaves
/// empty goes too (Kubernetes' types omit them), unless `keep` holds
/// something in it.
fn remove_all(v: &mut Value, doomed: &Set, keep: &Set, at: &mut Path) {
    match v {
        Value::Object(map) => {
            for (e, below) in doomed.children() {
                let Elem::Field(f) = e else { continue };
                if below.is_member() {
                    map.remove(f);
                    continue;
                }
                let Some(child) = map.get_mut(f) else { continue };
                let empty =
                    |v: &Value| v.as_object().is_some_and(Map::is_empty) || v.as_array().is_some_and(Vec::is_empty);
                let was_empty = empty(child);
                at.push(e.clone());
                remove_all(child, below, keep, at);
                let emptied = !was_empty && empty(child) && !keep.has_prefix(at);
                at.pop();
                if emptied {
                    map.remove(f);
                }
            }
        }
        Value::Array(items) => {
            let Some(naming) = Naming::of(doomed) else { return };
            let mut kept = Vec::with_capacity(items.len());
            for mut item in std::mem::take(items) {
                match naming.name(&item).and_then(|e| doomed.child(&e).map(|below| (e, below))) {
                    Some((_, below)) if below.is_member() => {}
                    Some((e, below)) => {
                        at.push(e);
                        remove_all(&mut item, below, keep, at);
                        at.pop();
                        kept.push(item);
                    }
                    None => kept.push(item),
                }
            }
            *items = kept;
        }
        _ => {}
    }
}

/// Removes from `merged` what the applier applied last time (`last`) and
/// no manager (the applier included, with what it applies now) owns now
/// (`owned`): a field, or an item with everything in it.
pub fn prune(merged: &mut Value, last: &Set, owned: &Set) {
    let doomed = last.filter(&mut |p| !owned.has_prefix(p));
    if !doomed.is_empty() {
        remove_all(merged, &doomed, owned, &mut Vec::new());
    }
}

/// `value` without the nulls of its maps: a null in an applied
/// configuration sets nothing.
pub fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(m) => {
            Value::Object(m.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), without_nulls(v))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        v => v.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const K8S: Schema = Schema { builtin: true };

    fn v1(set: &Set) -> Value {
        set.to_fields_v1()
    }

    #[test]
    fn applied_set_keys_lists_and_skips_maps() {
        let config = json!({"apiVersion": "apps/v1", "spec": {"replicas": 2, "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"app": "x"}}, "spec": {
                "containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}],
                    "env": [{"name": "E", "value": "1"}], "args": ["a", "b"]}],
                "tolerations": [{"key": "k"}]}}},
            "metadata": {"finalizers": ["f"], "labels": {}}});
        let set = applied_set(&config, &K8S).unwrap();
        assert_eq!(
            v1(&set),
            json!({"f:apiVersion": {}, "f:metadata": {"f:finalizers": {"v:\"f\"": {}}},
                "f:spec": {"f:replicas": {}, "f:selector": {},
                "f:template": {"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {
                    "f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:name": {}, "f:image": {}, "f:args": {},
                        "f:env": {"k:{\"name\":\"E\"}": {".": {}, "f:name": {}, "f:value": {}}},
                        "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}}},
                    "f:tolerations": {}}}}})
        );
    }

    #[test]
    fn custom_resources_merge_only_their_metadata_lists() {
        let config = json!({"spec": {"containers": [{"name": "c"}]}, "metadata": {"finalizers": ["x"]}});
        let set = applied_set(&config, &Schema { builtin: false }).unwrap();
        assert_eq!(v1(&set), json!({"f:spec": {"f:containers": {}}, "f:metadata": {"f:finalizers": {"v:\"x\"": {}}}}));
    }

    #[test]
    fn unkeyed_items_in_a_configuration_are_errors() {
        let e = applied_set(&json!({"spec": {"containers": [{"image": "i"}]}}), &K8S).unwrap_err();
        assert!(
            e.starts_with(
                ".spec.containers: element 0: associative list with keys has an element that omits key field \"name\""
            ),
            "{e}"
        );
        let e = applied_set(&json!({"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}), &K8S).unwrap_err();
        assert!(e.contains("duplicate entries for key [name=\"a\"]"), "{e}");
        assert!(applied_set(&json!([1]), &K8S).is_err());
    }

    #[test]
    fn merge_follows_the_schema() {
        let live = json!({"spec": {"replicas": 1, "tolerations": [{"key": "a"}], "selector": {"x": "1", "y": "2"},
            "containers": [{"name": "a", "image": "1", "env": [{"name": "A", "value": "1"}]}, {"name": "b", "image": "2"}]},
            "metadata": {"labels": {"keep": "1"}, "finalizers": ["f1"]}});
        let config = json!({"spec": {"replicas": 2, "tolerations": [{"key": "b"}], "selector": {"x": "3"},
            "containers": [{"name": "c", "image": "3"}, {"name": "a", "env": [{"name": "B", "value": "2"}]}]},
            "metadata": {"labels": {"new": "2"}, "finalizers": ["f2", "f1"]}});
        assert_eq!(
            merge(&live, &config, &K8S),
            json!({"spec": {"replicas": 2, "tolerations": [{"key": "b"}], "selector": {"x": "3"},
                "containers": [{"name": "a", "image": "1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
                    {"name": "b", "image": "2"}, {"name": "c", "image": "3"}]},
                "metadata": {"labels": {"keep": "1", "new": "2"}, "finalizers": ["f1", "f2"]}})
        );
    }

    #[test]
    fn changed_lists_added_and_modified_fields_with_new_maps() {
        let old = json!({"spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "a", "image": "1"}]}}}});
        let new = json!({"metadata": {"labels": {"app": "x"}}, "spec": {"replicas": 2,
            "template": {"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "2"}]}}}});
        assert_eq!(
            v1(&changed(&old, &new, &K8S)),
            json!({"f:metadata": {".": {}, "f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:replicas": {},
                "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"b\"}": {".": {}, "f:name": {}, "f:image": {}}}}}}})
        );
        assert!(changed(&new, &new, &K8S).is_empty());
    }

    #[test]
    fn pruning_removes_fields_and_items_and_the_maps_it_empties() {
        let mut obj = json!({"metadata": {"labels": {"a": "1"}, "finalizers": ["x", "y"]},
            "spec": {"ports": [{"port": 80}, {"port": 81, "protocol": "UDP"}],
                "containers": [{"name": "c", "image": "i", "args": ["1"]}]}});
        let f = |n: &str| Elem::Field(n.into());
        let mut last = Set::new();
        last.insert(&[f("spec"), f("ports"), Elem::Key(r#"{"port":80,"protocol":"TCP"}"#.into())]);
        last.insert(&[f("metadata"), f("labels"), f("a")]);
        last.insert(&[f("metadata"), f("finalizers"), Elem::Value("\"y\"".into())]);
        last.insert(&[f("spec"), f("containers"), Elem::Key(r#"{"name":"c"}"#.into()), f("args")]);
        let mut owned = Set::new();
        owned.insert(&[f("spec"), f("containers"), Elem::Key(r#"{"name":"c"}"#.into()), f("image")]);
        prune(&mut obj, &last, &owned);
        assert_eq!(
            obj,
            json!({"metadata": {"finalizers": ["x"]}, "spec": {"ports": [{"port": 81, "protocol": "UDP"}],
                "containers": [{"name": "c", "image": "i"}]}})
        );
    }

    #[test]
    fn large_lists_merge_in_linear_time() {
        let items: Vec<Value> = (0..50_000).map(|i| json!(format!("f{i}"))).collect();
        let live = json!({"metadata": {"finalizers": items}});
        let config = json!({"metadata": {"finalizers": items.iter().rev().cloned().collect::<Vec<_>>()}});
        let started = std::time::Instant::now();
        let merged = merge(&live, &config, &K8S);
        assert!(changed(&live, &merged, &K8S).is_empty());
        let set = applied_set(&config, &K8S).unwrap();
        let mut pruned = merged.clone();
        prune(&mut pruned, &set, &Set::new());
        assert_eq!(pruned, json!({}));
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{:?}", started.elapsed());
    }
}
