//! Which jobs a pass must reconcile, and how each watch event marks them.

use crate::cache::Cache;
use crate::pods;
use serde_json::Value;
use std::collections::BTreeSet;

/// Which jobs a pass must reconcile: those whose object or owned objects
/// changed, or all of them after a node changed (faults concern everyone).
#[derive(Debug, Clone)]
pub enum Dirty {
    /// Every job.
    All,
    /// Jobs by uid.
    Some(BTreeSet<String>),
}

impl Dirty {
    pub(crate) fn add(&mut self, uid: &str) {
        if let Dirty::Some(set) = self {
            set.insert(uid.to_string());
        }
    }

    pub(crate) fn contains(&self, uid: &str) -> bool {
        match self {
            Dirty::All => true,
            Dirty::Some(set) => set.contains(uid),
        }
    }
}

/// Applies an event and marks what it makes dirty.
pub(crate) fn note(cache: &mut Cache, dirty: &mut Dirty, event: &ringleader_store::Event) -> bool {
    let object = &event.object.object;
    match event.object.key.kind.as_str() {
        // A heartbeat alone changes nothing a job or the scheduler sees; with
        // every agent beating, treating it as a node change would reconcile
        // every job every few seconds.
        "Node" if cache.get(&event.object.key).is_some_and(|old| heartbeat_only(&old.object, object)) => {
            cache.apply(event);
            return false;
        }
        "Node" => *dirty = Dirty::All,
        // Events describe work, they never call for any: one that made its
        // object dirty could be answered by another event, without end.
        "Event" => {
            cache.apply(event);
            return false;
        }
        _ => {
            let own = object.pointer("/metadata/uid").and_then(Value::as_str);
            let owner = pods::owner_uid(object);
            // An owned job (a platform Run's framework job) is reconciled on
            // its own events; an owned object that goes away may have owned
            // others in turn, whom the sweep below must then collect.
            let key = &event.object.key;
            let is_job = ringleader_api::kinds::JOB_KINDS.iter().any(|(a, k)| *a == key.api_version && *k == key.kind);
            if let (Some(_), Some(own)) = (owner, own) {
                if is_job || event.kind == ringleader_store::EventType::Deleted {
                    dirty.add(own);
                }
            }
            let uid = owner.or(own);
            if let Some(uid) = uid {
                dirty.add(uid);
                cache.apply(event);
                // Even the echo of the manager's own write (the cache has it
                // already) calls for one more reconcile of its job: the status
                // it wrote was computed before those pods existed. That next
                // reconcile writes nothing new, so the echoes stop.
                return true;
            }
        }
    }
    cache.apply(event).is_some()
}

/// Whether two states of a Node differ at most in `status.lastHeartbeat`
/// (and the resourceVersion that change brought).
fn heartbeat_only(old: &serde_json::Value, new: &serde_json::Value) -> bool {
    let (Some(old), Some(new)) = (old.as_object(), new.as_object()) else { return false };
    let same_except = |a: Option<&Value>, b: Option<&Value>, skip: &str| match (a, b) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            a.len() - usize::from(a.contains_key(skip)) == b.len() - usize::from(b.contains_key(skip))
                && a.iter().all(|(k, v)| k == skip || b.get(k) == Some(v))
        }
        (a, b) => a == b,
    };
    old.len() == new.len()
        && old.iter().all(|(k, v)| match k.as_str() {
            "status" => same_except(Some(v), new.get(k), "lastHeartbeat"),
            "metadata" => same_except(Some(v), new.get(k), "resourceVersion"),
            _ => new.get(k) == Some(v),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(beat: f64, rv: &str, ready: bool) -> serde_json::Value {
        json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node",
               "metadata": {"name": "n", "resourceVersion": rv},
               "spec": {"profile": "hgx-h100-8"},
               "status": {"ready": ready, "lastHeartbeat": beat, "unhealthyDevices": []}})
    }

    #[test]
    fn only_a_heartbeat_is_told_apart_from_a_node_change() {
        assert!(heartbeat_only(&node(1.0, "5", true), &node(2.0, "9", true)));
        assert!(!heartbeat_only(&node(1.0, "5", true), &node(2.0, "9", false)), "readiness changed");
        let mut faulty = node(2.0, "9", true);
        faulty["status"]["unhealthyDevices"] = json!([3]);
        assert!(!heartbeat_only(&node(1.0, "5", true), &faulty), "a device broke");
        let mut stopped = node(1.0, "9", true);
        stopped["spec"]["stopped"] = json!(true);
        assert!(!heartbeat_only(&node(1.0, "5", true), &stopped), "spec changed");
        let mut first = node(1.0, "5", true);
        if let Some(s) = first["status"].as_object_mut() {
            s.remove("lastHeartbeat");
        }
        assert!(heartbeat_only(&first, &node(2.0, "9", true)), "a first heartbeat is still only a heartbeat");
        let mut relabelled = node(2.0, "9", true);
        relabelled["metadata"]["labels"] = json!({"gpu-model": "h100"});
        assert!(!heartbeat_only(&node(1.0, "5", true), &relabelled), "labels changed");
    }
}
