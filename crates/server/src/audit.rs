//! The audit trail of the platform: every successful create, update, patch
//! or delete of a platform kind or a Queue through the API appends one
//! `AuditRecord` (who, what, which object, when), in the same store batch as
//! the write, so a write is never without its record nor a record without
//! its write. Writes that change nothing but `status` are controllers'
//! bookkeeping and are not recorded, except a Queue's lock and unlock.
//! Records are read-only through the API ([`ringleader_registry::resources::AUDIT_RECORDS`]
//! is not writable): only this module writes them.

use ringleader_api::kinds::platform::API_VERSION;
use ringleader_auth::Identity;
use ringleader_registry::resources::{ResourceType, AUDIT_RECORDS};
use ringleader_store::{Op, Store, StoreError, Stored};
use serde_json::{json, Value};

/// User recorded for a request without an identity (auth disabled).
const UNKNOWN_USER: &str = "system:anonymous";

/// Whether writes of `rt` are recorded.
pub(crate) fn audited(rt: &ResourceType) -> bool {
    (rt.platform() && rt != AUDIT_RECORDS) || (rt.group == "scheduling.volcano.sh" && rt.kind == "Queue")
}

/// Metadata the store sets; changing them is not a change a person made.
const SERVER_METADATA: &[&str] = &["resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"];

fn without_status(object: &Value) -> Value {
    let mut o = object.clone();
    if let Some(map) = o.as_object_mut() {
        map.remove("status");
    }
    if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in SERVER_METADATA {
            meta.remove(*f);
        }
    }
    o
}

fn text<'a>(v: Option<&'a Value>, pointer: &str) -> &'a str {
    v.and_then(|v| v.pointer(pointer)).and_then(Value::as_str).unwrap_or("")
}

fn flag(v: Option<&Value>, pointer: &str) -> bool {
    v.and_then(|v| v.pointer(pointer)).and_then(Value::as_bool) == Some(true)
}

/// The verb and detail a write is recorded with (`None`: not recorded).
/// `verb` is the API verb (`create`, `update`, `patch`, `delete`); a
/// Run's create is `run`, setting its `spec.stop` is `stop`, and a Queue
/// closed or opened is `lock` or `unlock`.
pub fn classify(
    rt: &ResourceType,
    verb: &str,
    before: Option<&Value>,
    after: Option<&Value>,
) -> Option<(String, String)> {
    if !audited(rt) {
        return None;
    }
    let is_run = rt.platform() && rt.kind == "Run";
    if rt.platform() && rt.kind == "PlatformNode" {
        if let Some(found) = node_verb(before, after) {
            return Some(found);
        }
    }
    match (before, after) {
        (None, Some(after)) if is_run => {
            Some(("run".into(), format!("run of TrainingJob {}", text(Some(after), "/spec/trainingJob"))))
        }
        (_, None) => Some(("delete".into(), String::new())),
        (None, Some(_)) => Some(("create".into(), String::new())),
        (Some(before), Some(after)) => {
            if is_run && !flag(Some(before), "/spec/stop") && flag(Some(after), "/spec/stop") {
                let job = text(Some(after), "/spec/trainingJob");
                return Some(("stop".into(), format!("stop of a run of TrainingJob {job}")));
            }
            if rt.kind == "Queue" {
                let (was, now) = (text(Some(before), "/status/state"), text(Some(after), "/status/state"));
                if was != "Closed" && now == "Closed" {
                    return Some(("lock".into(), "no new jobs are admitted; running ones go on".into()));
                }
                if was == "Closed" && now != "Closed" {
                    return Some(("unlock".into(), String::new()));
                }
            }
            if without_status(before) == without_status(after) {
                return None;
            }
            Some((verb.to_string(), String::new()))
        }
    }
}

/// A PlatformNode's write in seed 004's words: adopted (纳管), bound,
/// unbound or removed (`None`: an ordinary create or change).
fn node_verb(before: Option<&Value>, after: Option<&Value>) -> Option<(String, String)> {
    let group = |v: Option<&Value>| text(v, "/spec/resourceGroup").to_string();
    let detail = |g: &str| if g.is_empty() { String::new() } else { format!("resource group {g}") };
    match (before, after) {
        (Some(b), None) => Some(("remove".into(), detail(&group(Some(b))))),
        (None, Some(a)) if text(Some(a), "/spec/source") == "adopted" => {
            Some(("adopt".into(), detail(&group(Some(a)))))
        }
        (None, _) => None,
        (Some(_), Some(_)) => {
            let (was, now) = (group(before), group(after));
            if was == now {
                None
            } else if now.is_empty() {
                Some(("unbind".into(), detail(&was)))
            } else {
                Some(("bind".into(), detail(&now)))
            }
        }
    }
}

/// The `group/Kind` an audit record names (`Kind` for the core group).
fn resource_name(rt: &ResourceType) -> String {
    if rt.group.is_empty() {
        rt.kind.to_string()
    } else {
        format!("{}/{}", rt.group, rt.kind)
    }
}

/// A record's name: `audit-` with the digits of its time (to the second)
/// and a suffix that orders records of one second (nanoseconds, then a
/// process-wide sequence), so a list by name is the order things happened.
pub fn record_name(time: &str, suffix: u64) -> String {
    let digits: String = time.chars().filter(char::is_ascii_digit).take(14).collect();
    format!("audit-{digits}-{suffix:013}")
}

/// The suffix of a record made now: nanoseconds of the second × 10,000 plus
/// a sequence, so two records of one nanosecond still differ.
fn suffix_now() -> u64 {
    static SEQUENCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    u64::from(nanos) * 10_000 + SEQUENCE.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 10_000
}

/// The AuditRecord of one write.
#[allow(clippy::too_many_arguments)]
pub fn record(
    user: &str,
    verb: &str,
    detail: &str,
    rt: &ResourceType,
    namespace: &str,
    name: &str,
    time: &str,
    suffix: u64,
) -> Value {
    let mut spec = json!({
        "user": user,
        "verb": verb,
        "resource": resource_name(rt),
        "name": name,
        "time": time,
    });
    if rt.namespaced && !namespace.is_empty() {
        spec["namespace"] = json!(namespace);
    }
    if !detail.is_empty() {
        spec["detail"] = json!(detail);
    }
    json!({
        "apiVersion": API_VERSION,
        "kind": AUDIT_RECORDS.kind,
        "metadata": {
            "name": record_name(time, suffix),
            "labels": {"platform.ringleader.io/verb": verb, "platform.ringleader.io/kind": rt.kind.to_ascii_lowercase()},
        },
        "spec": spec,
    })
}

/// The record of a write about to be made now, by `identity` (`None` when
/// it is not recorded). `before`/`after`: the object as it was and will be
/// (`None`: absent).
pub(crate) fn entry(
    identity: Option<&Identity>,
    verb: &str,
    rt: &ResourceType,
    before: Option<&Value>,
    after: Option<&Value>,
) -> Option<Value> {
    let (verb, detail) = classify(rt, verb, before, after)?;
    let object = after.or(before)?;
    let user = identity.map_or(UNKNOWN_USER, |i| i.user.as_str());
    let time = ringleader_api::time::now_rfc3339();
    let suffix = suffix_now();
    Some(record(
        user,
        &verb,
        &detail,
        rt,
        text(Some(object), "/metadata/namespace"),
        text(Some(object), "/metadata/name"),
        &time,
        suffix,
    ))
}

/// Makes one write, and its record (if any) in the same batch; answers
/// the write's result.
pub(crate) fn write(store: &Store, mut op: Op, record: Option<Value>) -> Result<Stored, StoreError> {
    crate::generation::stamp(store, &mut op)?;
    let mut ops = vec![op];
    ops.extend(record.map(Op::Create));
    let mut out = store.batch(ops)?;
    if out.is_empty() {
        return Err(StoreError::Io("a write returned no result".to_string()));
    }
    Ok(out.swap_remove(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringleader_registry::resources::find;

    fn rt(name: &str) -> &'static ResourceType {
        find(name).unwrap_or(AUDIT_RECORDS)
    }

    #[test]
    fn verbs_say_what_happened() {
        let run = json!({"metadata": {"name": "j-r1", "namespace": "a"}, "spec": {"trainingJob": "j"}});
        let stopped =
            json!({"metadata": {"name": "j-r1", "namespace": "a"}, "spec": {"trainingJob": "j", "stop": true}});
        let verb =
            |rt: &ResourceType, v: &str, b: Option<&Value>, a: Option<&Value>| classify(rt, v, b, a).map(|x| x.0);
        assert_eq!(verb(rt("runs"), "create", None, Some(&run)).as_deref(), Some("run"));
        assert_eq!(verb(rt("runs"), "patch", Some(&run), Some(&stopped)).as_deref(), Some("stop"));
        assert_eq!(verb(rt("runs"), "delete", Some(&run), None).as_deref(), Some("delete"));
        let mut with_status = run.clone();
        with_status["status"] = json!({"state": "running"});
        with_status["metadata"]["resourceVersion"] = json!("9");
        assert_eq!(verb(rt("runs"), "update", Some(&run), Some(&with_status)), None, "status-only");
        let q = json!({"metadata": {"name": "q"}, "spec": {}, "status": {"state": "Open"}});
        let closed = json!({"metadata": {"name": "q"}, "spec": {}, "status": {"state": "Closed"}});
        assert_eq!(verb(rt("queues"), "patch", Some(&q), Some(&closed)).as_deref(), Some("lock"));
        assert_eq!(verb(rt("queues"), "patch", Some(&closed), Some(&q)).as_deref(), Some("unlock"));
        let edited = json!({"metadata": {"name": "q"}, "spec": {"weight": 2}, "status": {"state": "Open"}});
        assert_eq!(verb(rt("queues"), "update", Some(&q), Some(&edited)).as_deref(), Some("update"));
        assert_eq!(verb(rt("pods"), "create", None, Some(&run)), None);
        assert_eq!(verb(AUDIT_RECORDS, "create", None, Some(&run)), None);
    }

    #[test]
    fn platform_node_writes_are_recorded_in_seed_004_s_words() {
        let rt = ringleader_registry::resources::PLATFORM_NODES;
        let pn = |source: &str, group: Value| json!({"metadata": {"name": "n1"}, "spec": {"source": source, "resourceGroup": group}});
        let verb = |before: Option<&Value>, after: Option<&Value>| classify(rt, "patch", before, after).map(|(v, _)| v);
        let (bound, unbound) = (pn("adopted", json!("g")), pn("adopted", Value::Null));
        assert_eq!(verb(None, Some(&bound)).as_deref(), Some("adopt"));
        assert_eq!(verb(None, Some(&pn("new", json!("g")))).as_deref(), Some("create"));
        assert_eq!(verb(Some(&bound), Some(&unbound)).as_deref(), Some("unbind"));
        assert_eq!(verb(Some(&unbound), Some(&bound)).as_deref(), Some("bind"));
        assert_eq!(verb(Some(&bound), None).as_deref(), Some("remove"));
        let mut status_only = bound.clone();
        status_only["status"] = json!({"binding": "bound"});
        assert_eq!(verb(Some(&bound), Some(&status_only)), None, "the controller's status is not recorded");
    }

    #[test]
    fn records_are_valid_audit_records() {
        let r = record("alice", "create", "", rt("trainingjobs"), "ws-a", "train", "2025-03-04T05:06:07Z", 0xabc);
        assert_eq!(r["metadata"]["name"], "audit-20250304050607-0000000002748");
        let (a, b) = (suffix_now(), suffix_now());
        assert_ne!(a, b, "two records made at once differ");
        assert_eq!(r["spec"]["resource"], "platform.ringleader.io/TrainingJob");
        assert_eq!(r["spec"]["namespace"], "ws-a");
        let typed = ringleader_api::Resource::from_value(&r).map(|res| ringleader_api::validate(&res));
        assert_eq!(typed.ok(), Some(Vec::new()));
        let cluster = record("bob", "delete", "", rt("resourcegroups"), "", "rg", "2025-03-04T05:06:07Z", 1);
        assert!(cluster["spec"].get("namespace").is_none());
    }
}
