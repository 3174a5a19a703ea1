//! The manager's view of the store: every object, fed by one watch and by
//! the results of the manager's own writes (so a pass never acts twice on
//! something it already did while the watch event is still in flight).

use ringleader_store::{Event, EventType, ObjectKey, Stored};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Objects by key, with the version each was last seen at. Shared with the
/// watch events they came from, so taking a job's pods is no deep copy.
#[derive(Default)]
pub struct Cache {
    objects: BTreeMap<ObjectKey, Arc<Stored>>,
    /// Deleted keys and the version of their deletion, so a late event of an
    /// older write cannot bring them back.
    tombstones: HashMap<ObjectKey, u64>,
    /// Each Node as the passes see it, by name, with the version it was
    /// read from: decoding thousands of Nodes on every pass was a fifth of
    /// a busy manager's time, and most passes change none of them.
    pub(crate) node_views: std::sync::Mutex<HashMap<String, (u64, Arc<crate::node_model::NodeView>)>>,
    /// Why each Node cannot be a scheduler node (`None`: it can), by name,
    /// with the version it was judged at, for the same reason.
    pub(crate) node_problems: std::sync::Mutex<HashMap<String, (u64, Option<String>)>>,
    /// Each job as controller state, by key, with the version it was parsed
    /// from (see [`crate::jobs::jobs`]).
    pub(crate) parsed_jobs: std::sync::Mutex<HashMap<ObjectKey, (u64, Arc<ringleader_controller::JobState>)>>,
}

impl Cache {
    /// Replaces the content with a list.
    pub fn load(&mut self, objects: Vec<Stored>) {
        self.objects = objects.into_iter().map(|o| (o.key.clone(), Arc::new(o))).collect();
        self.tombstones.clear();
    }

    /// Applies a watch event; returns the key when it changed anything.
    pub fn apply(&mut self, event: &Event) -> Option<ObjectKey> {
        let key = &event.object.key;
        let rv = event.object.resource_version;
        match event.kind {
            EventType::Deleted => self.remove(key, rv),
            EventType::Added | EventType::Modified => self.put_shared(event.object.clone()),
        }
    }

    /// Records an object written by the manager itself.
    pub fn put(&mut self, object: Stored) -> Option<ObjectKey> {
        self.put_shared(Arc::new(object))
    }

    /// [`Cache::put`] of an object shared with the store's watch events.
    pub fn put_shared(&mut self, object: Arc<Stored>) -> Option<ObjectKey> {
        let key = object.key.clone();
        if self.tombstones.get(&key).is_some_and(|&dead| dead >= object.resource_version) {
            return None;
        }
        if self.objects.get(&key).is_some_and(|o| o.resource_version >= object.resource_version) {
            return None;
        }
        self.tombstones.remove(&key);
        self.objects.insert(key.clone(), object);
        Some(key)
    }

    /// Records a deletion at version `rv`.
    pub fn remove(&mut self, key: &ObjectKey, rv: u64) -> Option<ObjectKey> {
        if self.objects.get(key).is_some_and(|o| o.resource_version > rv) {
            return None;
        }
        self.tombstones.insert(key.clone(), rv);
        self.objects.remove(key).map(|o| o.key.clone())
    }

    /// Puts `object` in at version 1 (tests build caches this way).
    #[cfg(test)]
    pub fn put_value(&mut self, object: Value) {
        let key = ObjectKey::of(&object).unwrap_or_else(|e| panic!("{e}"));
        self.put(Stored { key, resource_version: 1, object });
    }

    /// One object.
    pub fn get(&self, key: &ObjectKey) -> Option<&Stored> {
        self.objects.get(key).map(|o| &**o)
    }

    /// One object, shared.
    pub fn get_shared(&self, key: &ObjectKey) -> Option<Arc<Stored>> {
        self.objects.get(key).cloned()
    }

    /// Objects of one kind, ordered by key.
    pub fn of_kind<'a>(&'a self, api_version: &'a str, kind: &'a str) -> impl Iterator<Item = &'a Stored> + 'a {
        self.of_kind_shared(api_version, kind).map(|o| &**o)
    }

    /// [`Cache::of_kind`], shared.
    pub fn of_kind_shared<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
    ) -> impl Iterator<Item = &'a Arc<Stored>> + 'a {
        let start = ObjectKey::new(api_version, kind, "", "");
        self.objects
            .range(start..)
            .map(|(_, o)| o)
            .take_while(move |o| o.key.api_version == api_version && o.key.kind == kind)
    }

    /// Every object.
    pub fn all(&self) -> impl Iterator<Item = &Stored> {
        self.objects.values().map(|o| &**o)
    }
}

/// A string field at a path.
pub fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(v, path)?.as_str()
}

/// A value at a path.
pub fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut v = v;
    for p in path {
        v = v.get(p)?;
    }
    Some(v)
}

/// An annotation.
pub fn annotation<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get("metadata")?.get("annotations")?.get(key)?.as_str()
}
