//! `metadata.managedFields`: its entries read (and checked, as
//! kube-apiserver checks them) and written back in kube-apiserver's order.

use super::fieldset::Set;
use serde_json::{json, Map, Value};

/// How a manager last wrote its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    fn name(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One entry: a manager's fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub manager: String,
    pub operation: Operation,
    pub api_version: String,
    pub time: Option<String>,
    /// `status` for writes of that subresource, else empty.
    pub subresource: String,
    pub set: Set,
}

impl Entry {
    /// Whether both are the same manager: an applier is one whatever
    /// version it applied, an updater one per version.
    pub fn same(&self, manager: &str, operation: Operation, api_version: &str, subresource: &str) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource == subresource
            && (operation == Operation::Apply || self.api_version == api_version)
    }

    /// The manager as kube-apiserver names it in a conflict:
    /// `"kubectl"`, `"kubectl-edit" using apps/v1`,
    /// `"agent" with subresource "status" using v1`.
    pub fn printed(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            s.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        if self.operation == Operation::Update {
            s.push_str(&format!(" using {}", self.api_version));
        }
        s
    }
}

/// kube-apiserver's bound on a manager's name.
pub const MAX_MANAGER_LEN: usize = 128;

/// Why a field manager's name is refused, if it is.
pub fn check_manager(name: &str) -> Option<String> {
    if name.chars().count() > MAX_MANAGER_LEN {
        return Some(format!("may not be more than {MAX_MANAGER_LEN} bytes"));
    }
    name.char_indices()
        .find(|(_, c)| c.is_control())
        .map(|(i, c)| format!("invalid character U+{:04X} (at position {i})", u32::from(c)))
}

/// `managedFields: []` (or a single empty entry): the client resets them.
pub fn is_reset(value: Option<&Value>) -> bool {
    match value {
        Some(Value::Array(items)) => {
            items.is_empty()
                || (items.len() == 1 && items.first().is_some_and(|e| e.as_object().is_some_and(Map::is_empty)))
        }
        _ => false,
    }
}

/// The entries of a `managedFields` value (none when absent), or why it is
/// not one.
pub fn decode(value: Option<&Value>) -> Result<Vec<Entry>, String> {
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(format!("managedFields must be a list, not {other}")),
    };
    let mut out: Vec<Entry> = Vec::with_capacity(items.len());
    let mut seen = std::collections::HashSet::new();
    for (i, item) in items.iter().enumerate() {
        let entry = decode_entry(item).map_err(|e| format!("managedFields[{i}]: {e}"))?;
        let version = if entry.operation == Operation::Apply { "" } else { entry.api_version.as_str() };
        if !seen.insert((entry.manager.clone(), entry.operation, version.to_string(), entry.subresource.clone())) {
            return Err(format!("managedFields[{i}]: found duplicate manager {:?}", entry.manager));
        }
        out.push(entry);
    }
    Ok(out)
}

fn decode_entry(item: &Value) -> Result<Entry, String> {
    let Value::Object(m) = item else { return Err("must be an object".into()) };
    let text = |k: &str| -> Result<String, String> {
        match m.get(k) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(format!("{k}: must be a string, not {other}")),
        }
    };
    let manager = text("manager")?;
    if let Some(why) = check_manager(&manager) {
        return Err(format!("manager: Invalid value: {manager:?}: {why}"));
    }
    let operation = match text("operation")?.as_str() {
        "Apply" => Operation::Apply,
        "Update" => Operation::Update,
        other => return Err(format!("operation: Invalid value: {other:?}: must be `Apply` or `Update`")),
    };
    match text("fieldsType")?.as_str() {
        "" | "FieldsV1" => {}
        other => return Err(format!("fieldsType: Invalid value: {other:?}: must be `FieldsV1`")),
    }
    let time = Some(text("time")?).filter(|t| !t.is_empty());
    if let Some(t) = &time {
        if ringleader_api::time::parse_rfc3339(t).is_none() {
            return Err(format!("time: Invalid value: {t:?}: must be an RFC 3339 time"));
        }
    }
    let subresource = text("subresource")?;
    if subresource.len() > 256 {
        return Err("subresource: may not be more than 256 bytes".into());
    }
    let set = match m.get("fieldsV1") {
        None | Some(Value::Null) => Set::new(),
        Some(v) => Set::from_fields_v1(v).map_err(|e| format!("fieldsV1: {e}"))?,
    };
    Ok(Entry { manager, operation, api_version: text("apiVersion")?, time, subresource, set })
}

/// The `managedFields` list of `entries`, those owning nothing left out,
/// in kube-apiserver's order (appliers first, then by time, manager,
/// version and subresource).
pub fn encode(entries: &[Entry]) -> Value {
    let mut kept: Vec<&Entry> = entries.iter().filter(|e| !e.set.is_empty()).collect();
    let secs = |e: &Entry| e.time.as_deref().and_then(ringleader_api::time::parse_rfc3339).unwrap_or(0.0).floor();
    kept.sort_by(|a, b| {
        a.operation
            .cmp(&b.operation)
            .then(secs(a).total_cmp(&secs(b)))
            .then_with(|| a.manager.cmp(&b.manager))
            .then_with(|| a.api_version.cmp(&b.api_version))
            .then_with(|| a.subresource.cmp(&b.subresource))
    });
    Value::Array(
        kept.into_iter()
            .map(|e| {
                let mut o = json!({"manager": e.manager, "operation": e.operation.name(), "apiVersion": e.api_version,
                    "fieldsType": "FieldsV1", "fieldsV1": e.set.to_fields_v1()});
                if let (Some(t), Some(m)) = (&e.time, o.as_object_mut()) {
                    m.insert("time".into(), json!(t));
                }
                if let (false, Some(m)) = (e.subresource.is_empty(), o.as_object_mut()) {
                    m.insert("subresource".into(), json!(e.subresource));
                }
                o
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_order() {
        let v = json!([
            {"manager": "b", "operation": "Update", "apiVersion": "apps/v1", "time": "2024-01-01T00:00:01Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:x": {}}}},
            {"manager": "a", "operation": "Update", "apiVersion": "apps/v1", "time": "2024-01-01T00:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:y": {}}}, "subresource": "status"},
            {"manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1", "time": "2024-01-02T00:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:z": {}}}},
        ]);
        let entries = decode(Some(&v)).unwrap();
        let out = encode(&entries);
        let managers: Vec<&str> = out.as_array().unwrap().iter().filter_map(|e| e["manager"].as_str()).collect();
        assert_eq!(managers, ["kubectl", "a", "b"]);
        assert_eq!(decode(Some(&out)).unwrap().len(), 3);
        assert_eq!(entries[1].printed(), r#""a" with subresource "status" using apps/v1"#);
        assert_eq!(entries[2].printed(), r#""kubectl""#);
    }

    #[test]
    fn garbage_is_refused_with_the_field() {
        for (bad, says) in [
            (json!({"x": 1}), "must be a list"),
            (json!([1]), "managedFields[0]: must be an object"),
            (json!([{"manager": "a", "operation": "Patch"}]), "must be `Apply` or `Update`"),
            (json!([{"manager": "a", "operation": "Apply", "fieldsType": "FieldsV2"}]), "must be `FieldsV1`"),
            (json!([{"manager": "a", "operation": "Apply", "time": "yesterday"}]), "time"),
            (json!([{"manager": "a", "operation": "Apply", "fieldsV1": {"q": {}}}]), "fieldsV1"),
            (json!([{"manager": "a\u{7}", "operation": "Apply"}]), "invalid character"),
            (json!([{"manager": "a", "operation": "Apply"}, {"manager": "a", "operation": "Apply"}]), "duplicate"),
        ] {
            let e = decode(Some(&bad)).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        assert!(is_reset(Some(&json!([]))) && is_reset(Some(&json!([{}]))) && !is_reset(None));
    }
}
