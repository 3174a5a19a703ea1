//! Sets of field paths as structured-merge-diff keeps them, and their
//! `FieldsV1` encoding: `f:<field>` for a map's field, `k:{…}` for an item of
//! an associative list (its keys as a JSON object), `v:<json>` for an item of
//! a set list, and `.` marking the node itself as a member when it also has
//! members below it.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// One step of a path. The key and value forms hold canonical JSON (serde's
/// maps are sorted), so equal items give equal steps and sort stably.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Elem {
    /// A field of a map.
    Field(String),
    /// An item of an associative list: its key fields as a JSON object.
    Key(String),
    /// An item of a set list: its JSON value.
    Value(String),
}

impl Elem {
    fn encode(&self) -> String {
        match self {
            Elem::Field(f) => format!("f:{f}"),
            Elem::Key(k) => format!("k:{k}"),
            Elem::Value(v) => format!("v:{v}"),
        }
    }

    fn decode(text: &str) -> Result<Elem, String> {
        let (kind, rest) = text.split_at_checked(2).ok_or_else(|| format!("unknown path element {text:?}"))?;
        match kind {
            "f:" => Ok(Elem::Field(rest.to_string())),
            "k:" => match serde_json::from_str::<Value>(rest) {
                Ok(Value::Object(m)) if !m.is_empty() => Ok(Elem::Key(Value::Object(m).to_string())),
                _ => Err(format!("key {rest:?} is not a JSON object of key fields")),
            },
            "v:" => serde_json::from_str::<Value>(rest)
                .map(|v| Elem::Value(v.to_string()))
                .map_err(|e| format!("value {rest:?} is not JSON: {e}")),
            _ => Err(format!("unknown path element {text:?}: must start with f:, k: or v:")),
        }
    }

    /// The step as structured-merge-diff prints it in a path:
    /// `.replicas`, `[name="c"]`, `[containerPort=80,protocol="TCP"]`, `[="x"]`.
    fn display(&self) -> String {
        match self {
            Elem::Field(f) => format!(".{f}"),
            Elem::Key(k) => {
                let fields = match serde_json::from_str::<Value>(k) {
                    Ok(Value::Object(m)) => m.iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>(),
                    _ => vec![k.clone()],
                };
                format!("[{}]", fields.join(","))
            }
            Elem::Value(v) => format!("[={v}]"),
        }
    }
}

/// A path from the object's root.
pub type Path = Vec<Elem>;

/// `.spec.template.spec.containers[name="c"].image`, as kube-apiserver
/// names a field in a conflict.
pub fn display(path: &[Elem]) -> String {
    path.iter().map(Elem::display).collect()
}

/// A set of paths, as a tree: a node is a member when `member` is set; its
/// children are the paths that continue through it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Set {
    member: bool,
    children: BTreeMap<Elem, Set>,
}

impl Set {
    pub fn new() -> Set {
        Set::default()
    }

    pub fn is_empty(&self) -> bool {
        !self.member && self.children.is_empty()
    }

    pub fn insert(&mut self, path: &[Elem]) {
        let mut node = self;
        for e in path {
            node = node.children.entry(e.clone()).or_default();
        }
        node.member = true;
    }

    pub fn contains(&self, path: &[Elem]) -> bool {
        self.node(path).is_some_and(|n| n.member)
    }

    /// Whether `path` or any path below it is a member.
    pub fn has_prefix(&self, path: &[Elem]) -> bool {
        self.node(path).is_some_and(|n| !n.is_empty())
    }

    /// Whether the path this node stands for is itself a member.
    pub fn is_member(&self) -> bool {
        self.member
    }

    /// The paths one step below, with what follows them.
    pub fn children(&self) -> impl Iterator<Item = (&Elem, &Set)> {
        self.children.iter()
    }

    pub fn child(&self, e: &Elem) -> Option<&Set> {
        self.children.get(e)
    }

    pub fn first_child(&self) -> Option<&Elem> {
        self.children.keys().next()
    }

    fn node(&self, path: &[Elem]) -> Option<&Set> {
        let mut node = self;
        for e in path {
            node = node.children.get(e)?;
        }
        Some(node)
    }

    pub fn union(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.member |= other.member;
        for (e, child) in &other.children {
            let merged = match out.children.get(e) {
                Some(mine) => mine.union(child),
                None => child.clone(),
            };
            out.children.insert(e.clone(), merged);
        }
        out
    }

    /// Members of `self` that are not members of `other` (members below a
    /// path of `other` stay: the difference is not recursive).
    pub fn difference(&self, other: &Set) -> Set {
        let mut out = Set { member: self.member && !other.member, children: BTreeMap::new() };
        for (e, child) in &self.children {
            let rest = match other.children.get(e) {
                Some(theirs) => child.difference(theirs),
                None => child.clone(),
            };
            if !rest.is_empty() {
                out.children.insert(e.clone(), rest);
            }
        }
        out
    }

    pub fn intersection(&self, other: &Set) -> Set {
        let mut out = Set { member: self.member && other.member, children: BTreeMap::new() };
        for (e, child) in &self.children {
            if let Some(theirs) = other.children.get(e) {
                let both = child.intersection(theirs);
                if !both.is_empty() {
                    out.children.insert(e.clone(), both);
                }
            }
        }
        out
    }

    /// Every member, in the set's order (a node before what is below it).
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, at: &mut Path, out: &mut Vec<Path>) {
        if self.member {
            out.push(at.clone());
        }
        for (e, child) in &self.children {
            at.push(e.clone());
            child.collect(at, out);
            at.pop();
        }
    }

    /// Only the members for which `keep` holds.
    pub fn filter(&self, keep: &mut dyn FnMut(&[Elem]) -> bool) -> Set {
        let mut out = Set::new();
        for p in self.paths() {
            if keep(&p) {
                out.insert(&p);
            }
        }
        out
    }

    /// The `fieldsV1` object of the set (the root is never a member).
    pub fn to_fields_v1(&self) -> Value {
        let mut map = Map::new();
        if self.member && !self.children.is_empty() {
            map.insert(".".into(), Value::Object(Map::new()));
        }
        for (e, child) in &self.children {
            map.insert(e.encode(), child.to_fields_v1());
        }
        Value::Object(map)
    }

    /// The set a `fieldsV1` object encodes, or why it is not one.
    pub fn from_fields_v1(value: &Value) -> Result<Set, String> {
        fn node(value: &Value, depth: usize) -> Result<Set, String> {
            // Objects nest this deep at most; deeper is not a real object's.
            if depth > 128 {
                return Err("fieldsV1 is nested too deeply".into());
            }
            let Value::Object(map) = value else {
                return Err(format!("fieldsV1 members must be objects, not {value}"));
            };
            let mut set = Set { member: map.is_empty(), children: BTreeMap::new() };
            for (k, v) in map {
                if k == "." {
                    if !v.as_object().is_some_and(Map::is_empty) {
                        return Err("the '.' member of fieldsV1 must be {}".into());
                    }
                    set.member = true;
                    continue;
                }
                set.children.insert(Elem::decode(k)?, node(v, depth + 1)?);
            }
            Ok(set)
        }
        let mut set = node(value, 0)?;
        // The root is the object itself, never a field of it.
        set.member = false;
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(s: &str) -> Elem {
        Elem::Field(s.into())
    }

    #[test]
    fn encodes_and_decodes_kubernetes_fields_v1() {
        let v = json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}}}},
            "f:finalizers": {"v:\"x\"": {}}});
        let set = Set::from_fields_v1(&v).unwrap();
        assert!(set.contains(&[f("metadata"), f("labels")]));
        assert!(set.contains(&[f("metadata"), f("labels"), f("app")]));
        assert!(!set.contains(&[f("metadata")]));
        assert!(set.contains(&[f("spec"), f("containers"), Elem::Key(r#"{"name":"c"}"#.into())]));
        assert!(set.contains(&[f("finalizers"), Elem::Value("\"x\"".into())]));
        assert_eq!(set.to_fields_v1(), v);
        assert_eq!(
            display(&[f("spec"), f("containers"), Elem::Key(r#"{"name":"c"}"#.into()), f("image")]),
            r#".spec.containers[name="c"].image"#
        );
        assert_eq!(
            display(&[f("ports"), Elem::Key(r#"{"containerPort":80,"protocol":"TCP"}"#.into())]),
            r#".ports[containerPort=80,protocol="TCP"]"#
        );
    }

    #[test]
    fn garbage_is_refused() {
        for bad in [json!([]), json!({"x:a": {}}), json!({"f:a": 1}), json!({"k:[1]": {}}), json!({"f:a": {".": 1}})] {
            assert!(Set::from_fields_v1(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn set_algebra() {
        let mut a = Set::new();
        a.insert(&[f("a"), f("b")]);
        a.insert(&[f("a")]);
        a.insert(&[f("c")]);
        let mut b = Set::new();
        b.insert(&[f("a")]);
        b.insert(&[f("d")]);
        assert_eq!(a.difference(&b).paths(), vec![vec![f("a"), f("b")], vec![f("c")]]);
        assert_eq!(a.intersection(&b).paths(), vec![vec![f("a")]]);
        assert_eq!(a.union(&b).paths().len(), 4);
        assert!(a.has_prefix(&[f("a")]) && !a.has_prefix(&[f("d")]));
        assert!(a.difference(&a).is_empty());
    }
}
