//! Field management and server-side apply, as kube-apiserver does them
//! with structured-merge-diff: every write through the API records which
//! manager set which fields in `metadata.managedFields`, and an apply
//! patch merges a manager's configuration into the object, removes what it
//! applied before and no longer does, and refuses (409) to change a field
//! another manager set unless forced.
//!
//! Written here (no Rust crate implements field sets or apply): pure
//! functions over `serde_json::Value`, the time of the write an argument.
//! The in-process manager writes through the store and records nothing,
//! so its thousands of pod writes pay none of this.

pub(crate) mod entries;
pub(crate) mod fieldset;
pub(crate) mod walk;

use entries::{Entry, Operation};
use fieldset::{Elem, Set};
use serde_json::{json, Value};
pub use walk::Schema;

/// Who writes, and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Writer {
    pub manager: String,
    /// The version the object is written in (`apps/v1`).
    pub api_version: String,
    /// `status` for writes of that subresource, else empty.
    pub subresource: String,
    /// RFC 3339.
    pub now: String,
    pub schema: Schema,
}

/// Why an apply was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyError {
    /// The configuration is not one (400).
    BadRequest(String),
    /// The configuration cannot be merged (422), at the field named.
    Invalid(String),
    /// Fields other managers own would change (409).
    Conflicts(Vec<Conflict>),
}

/// One field another manager owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// As kube-apiserver prints it: `"kubectl-client-side-apply" using apps/v1`.
    pub manager: String,
    /// `.spec.replicas`.
    pub field: String,
}

/// kube-apiserver's message for a refused apply.
pub fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [c] = conflicts {
        return format!("Apply failed with 1 conflict: conflict with {}: {}", c.manager, c.field);
    }
    let mut managers: Vec<&str> = conflicts.iter().map(|c| c.manager.as_str()).collect();
    managers.sort_unstable();
    managers.dedup();
    let mut lines = Vec::new();
    for m in managers {
        lines.push(format!("conflicts with {m}:"));
        lines.extend(conflicts.iter().filter(|c| c.manager == m).map(|c| format!("- {}", c.field)));
    }
    format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
}

/// Paths every object has or the server sets: never anyone's fields
/// (kube-apiserver's stripped metadata, and the top-level maps that
/// Kubernetes' types always hold).
fn server_paths() -> Set {
    let mut s = Set::new();
    let f = |n: &str| Elem::Field(n.to_string());
    for top in ["apiVersion", "kind", "metadata", "spec", "status"] {
        s.insert(&[f(top)]);
    }
    for m in
        ["name", "namespace", "creationTimestamp", "selfLink", "uid", "generation", "managedFields", "resourceVersion"]
    {
        s.insert(&[f("metadata"), f(m)]);
    }
    s
}

/// The object without its `managedFields` (an absent object is `{}`).
fn plain(object: Option<&Value>) -> Value {
    let mut o = object.cloned().unwrap_or_else(|| json!({}));
    if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    o
}

fn managed_of(object: Option<&Value>) -> Option<&Value> {
    object.and_then(|o| o.pointer("/metadata/managedFields"))
}

/// `object` with `entries` as its `managedFields` (none when they own nothing).
fn with_entries(mut object: Value, entries: &[Entry]) -> Value {
    let encoded = entries::encode(entries);
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        match encoded.as_array().is_some_and(Vec::is_empty) {
            true => meta.remove("managedFields"),
            false => meta.insert("managedFields".into(), encoded),
        };
    }
    object
}

/// Each entry's fields less `taken`, and less what `object` no longer has.
fn release(entries: &mut [Entry], taken: &Set, object: &Value, schema: &Schema) {
    let present = walk::object_set(object, schema);
    for e in entries.iter_mut() {
        e.set = e.set.difference(taken).intersection(&present);
    }
}

/// Records a create, update or patch (`live` → `new`) in `new`'s
/// `managedFields`: the writer's Update entry gains the fields it added or
/// changed, which other managers lose; nobody keeps a field that is gone.
/// Entries the request sets are kept when valid (kubectl moves client-side
/// apply ownership this way), `[]` clears them, and anything else (absent,
/// or not valid) keeps the live object's.
pub fn record_update(live: Option<&Value>, new: Value, w: &Writer) -> Value {
    let sent = managed_of(Some(&new));
    let mut entries = if entries::is_reset(sent) {
        Vec::new()
    } else {
        match entries::decode(sent) {
            Ok(e) if !e.is_empty() && w.subresource.is_empty() => e,
            _ => entries::decode(managed_of(live)).unwrap_or_default(),
        }
    };
    let (old, new) = (plain(live), plain(Some(&new)));
    let changed = walk::changed(&old, &new, &w.schema).difference(&server_paths());
    release(&mut entries, &changed, &new, &w.schema);
    if !changed.is_empty() {
        match entries.iter_mut().find(|e| e.same(&w.manager, Operation::Update, &w.api_version, &w.subresource)) {
            Some(e) => {
                e.set = e.set.union(&changed);
                e.time = Some(w.now.clone());
            }
            None => entries.push(Entry {
                manager: w.manager.clone(),
                operation: Operation::Update,
                api_version: w.api_version.clone(),
                time: Some(w.now.clone()),
                subresource: w.subresource.clone(),
                set: changed,
            }),
        }
    }
    cap_updaters(&mut entries);
    with_entries(new, &entries)
}

/// Manager of what an object held before its first apply, when nothing
/// recorded who wrote it (kube-apiserver's name).
const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// kubectl's client-side apply record, from which kubectl's first
/// server-side apply takes over.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Server-side apply of `config` by `w` to `live` (absent: a create): the
/// object to store, managedFields included. An apply that changes nothing
/// returns `live` as it is.
pub fn apply(live: Option<&Value>, config: &Value, w: &Writer, force: bool) -> Result<Value, ApplyError> {
    if !config.is_object() {
        return Err(ApplyError::BadRequest("an apply patch must be an object".into()));
    }
    if config.pointer("/metadata/managedFields").is_some_and(|m| !m.is_null()) {
        return Err(ApplyError::BadRequest("metadata.managedFields must be nil".into()));
    }
    let mut config = walk::without_nulls(config);
    if w.subresource == "status" {
        config = status_only(&config);
    }
    let mut applied = walk::applied_set(&config, &w.schema).map_err(ApplyError::Invalid)?.difference(&server_paths());
    if w.subresource == "status" {
        applied = applied.filter(&mut |p| p.first() == Some(&Elem::Field("status".into())));
    }
    let old = plain(live);
    let mut entries = entries::decode(managed_of(live)).unwrap_or_default();
    if live.is_some() && entries.is_empty() {
        let set = walk::object_set(&old, &w.schema).difference(&server_paths());
        entries.push(Entry {
            manager: BEFORE_FIRST_APPLY.into(),
            operation: Operation::Update,
            api_version: w.api_version.clone(),
            time: Some(w.now.clone()),
            subresource: String::new(),
            set,
        });
    }
    let mine = |e: &Entry| e.same(&w.manager, Operation::Apply, &w.api_version, &w.subresource);
    let last = entries.iter().find(|e| mine(e)).map(|e| e.set.clone()).unwrap_or_default();
    let mut merged = walk::merge(&old, &config, &w.schema);
    let owned = entries.iter().filter(|e| !mine(e)).fold(applied.clone(), |all, e| all.union(&e.set));
    walk::prune(&mut merged, &last, &owned);
    let changed = walk::changed(&old, &merged, &w.schema).difference(&server_paths());
    let mut conflicts = Vec::new();
    let mut taken = Set::new();
    for e in entries.iter().filter(|e| !mine(e)) {
        let theirs = e.set.intersection(&changed);
        for p in theirs.paths() {
            conflicts.push(Conflict { manager: e.printed(), field: fieldset::display(&p) });
        }
        taken = taken.union(&theirs);
    }
    if !force && !conflicts.is_empty() && !taken_over_from_client_side(live, &old, &taken, w) {
        conflicts.sort_by(|a, b| (&a.manager, &a.field).cmp(&(&b.manager, &b.field)));
        return Err(ApplyError::Conflicts(conflicts));
    }
    release(&mut entries, &taken, &merged, &w.schema);
    let is_new = !entries.iter().any(&mine);
    let touched = live.is_none() || !changed.is_empty() || is_new || last != applied;
    match entries.iter_mut().find(|e| mine(e)) {
        Some(e) => {
            e.set = applied;
            e.api_version = w.api_version.clone();
            if touched {
                e.time = Some(w.now.clone());
            }
        }
        None => entries.push(Entry {
            manager: w.manager.clone(),
            operation: Operation::Apply,
            api_version: w.api_version.clone(),
            time: Some(w.now.clone()),
            subresource: w.subresource.clone(),
            set: applied,
        }),
    }
    if w.manager == "kubectl" && w.subresource.is_empty() {
        sync_last_applied(&mut merged, &config);
    }
    let unchanged = merged == old;
    let out = with_entries(merged, &entries);
    Ok(match live {
        Some(l)
            if !touched
                && unchanged
                && entries::decode(managed_of(Some(&out))).ok() == entries::decode(managed_of(Some(l))).ok() =>
        {
            l.clone()
        }
        _ => out,
    })
}

/// kube-apiserver keeps kubectl's client-side apply record (when the
/// object has one) in step with kubectl's server-side applies, so a later
/// client-side `kubectl apply` diffs against what was last applied.
fn sync_last_applied(object: &mut Value, config: &Value) {
    let Some(annotations) = object.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) else {
        return;
    };
    if annotations.get(LAST_APPLIED).and_then(Value::as_str).is_none_or(str::is_empty) {
        return;
    }
    let mut record = config.clone();
    if let Some(a) = record.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) {
        a.remove(LAST_APPLIED);
    }
    annotations.insert(LAST_APPLIED.into(), Value::String(format!("{record}\n")));
}

/// kube-apiserver's bound on Update entries: past it, the oldest are
/// merged into one `ancient-changes` entry per version.
const MAX_UPDATERS: usize = 10;
const ANCIENT: &str = "ancient-changes";

fn cap_updaters(entries: &mut Vec<Entry>) {
    let secs = |e: &Entry| e.time.as_deref().and_then(ringleader_api::time::parse_rfc3339).unwrap_or(0.0).floor();
    loop {
        let mut updaters: Vec<usize> = (0..entries.len())
            .filter(|&i| entries.get(i).is_some_and(|e| e.operation == Operation::Update && !e.set.is_empty()))
            .collect();
        if updaters.len() <= MAX_UPDATERS {
            return;
        }
        updaters.sort_by(|&a, &b| match (entries.get(a), entries.get(b)) {
            (Some(x), Some(y)) => secs(x).total_cmp(&secs(y)).then_with(|| x.manager.cmp(&y.manager)),
            _ => std::cmp::Ordering::Equal,
        });
        // The two oldest of one version become one.
        let pair = updaters.iter().enumerate().find_map(|(n, &i)| {
            let version = &entries.get(i)?.api_version;
            let j =
                updaters.iter().skip(n + 1).find(|&&j| entries.get(j).is_some_and(|e| e.api_version == *version))?;
            Some((i, *j))
        });
        let Some((older, newer)) = pair else { return };
        let merged = entries.get(older).map(|e| e.set.clone()).unwrap_or_default();
        let version = entries.get(newer).map(|e| e.api_version.clone()).unwrap_or_default();
        // An existing bucket of the version takes both, else the newer one becomes it.
        let bucket = (0..entries.len()).find(|&k| {
            k != older && k != newer && entries.get(k).is_some_and(|e| e.same(ANCIENT, Operation::Update, &version, ""))
        });
        match bucket {
            Some(b) => {
                let both = entries.get(newer).map(|e| e.set.union(&merged)).unwrap_or_default();
                let time = entries.get(newer).and_then(|e| e.time.clone());
                if let Some(e) = entries.get_mut(b) {
                    e.set = e.set.union(&both);
                    e.time = time;
                }
                let (hi, lo) = if older > newer { (older, newer) } else { (newer, older) };
                entries.remove(hi);
                entries.remove(lo);
            }
            None => {
                if let Some(e) = entries.get_mut(newer) {
                    e.set = e.set.union(&merged);
                    e.manager = ANCIENT.into();
                    e.subresource = String::new();
                }
                entries.remove(older);
            }
        }
    }
}

/// A status apply's configuration: its identity and `status`, the rest
/// ignored as kube-apiserver resets it.
fn status_only(config: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for k in ["apiVersion", "kind", "status"] {
        if let Some(v) = config.get(k) {
            out.insert(k.into(), v.clone());
        }
    }
    let mut meta = serde_json::Map::new();
    for k in ["name", "namespace"] {
        if let Some(v) = config.pointer(&format!("/metadata/{k}")) {
            meta.insert(k.into(), v.clone());
        }
    }
    out.insert("metadata".into(), Value::Object(meta));
    Value::Object(out)
}

/// kube-apiserver lets kubectl's server-side apply (manager `kubectl`) take
/// fields from its client-side apply: those the object's last-applied
/// annotation sets and that still hold the value it set.
fn taken_over_from_client_side(live: Option<&Value>, old: &Value, taken: &Set, w: &Writer) -> bool {
    if w.manager != "kubectl" || !w.subresource.is_empty() {
        return false;
    }
    let Some(text) = live.and_then(|l| l.pointer("/metadata/annotations")).and_then(|a| a.get(LAST_APPLIED)) else {
        return false;
    };
    let Some(last) = text.as_str().and_then(|t| serde_json::from_str::<Value>(t).ok()).filter(Value::is_object) else {
        return false;
    };
    let last = walk::without_nulls(&last);
    let Ok(set) = walk::applied_set(&last, &w.schema) else { return false };
    let drifted = walk::changed(&last, &walk::merge(&last, old, &w.schema), &w.schema);
    let allowed = set.difference(&drifted);
    taken.paths().iter().all(|p| allowed.contains(p))
}

#[cfg(test)]
mod tests;
