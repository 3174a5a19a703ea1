//! Field paths in the form users know from `kubectl explain`:
//! `spec.replicaSpecs.Worker.template.spec.containers[0].resources.limits["huawei.com/Ascend910"]`.

/// Appends a map key or struct field to `base`: `.key` for plain identifiers,
/// `["key"]` for keys with dots, slashes or other punctuation (label keys, resource names).
pub fn key(base: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (base.is_empty(), plain) {
        (true, true) => key.to_string(),
        (false, true) => format!("{base}.{key}"),
        (_, false) => format!("{base}[{}]", serde_json::Value::String(key.to_string())),
    }
}

/// Appends a list index to `base`: `base[i]`.
pub fn index(base: &str, i: usize) -> String {
    format!("{base}[{i}]")
}

/// Renders a serde deserialisation path (from `serde_path_to_error`) in the same form.
pub fn from_serde(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for seg in path.iter() {
        out = match seg {
            Segment::Seq { index: i } => index(&out, *i),
            Segment::Map { key: k } => key(&out, k),
            Segment::Enum { variant } => key(&out, variant),
            Segment::Unknown => out,
        };
    }
    out
}

/// Looks up the value a serde path points at, to quote it in an error.
pub fn lookup<'a>(root: &'a serde_json::Value, path: &serde_path_to_error::Path) -> Option<&'a serde_json::Value> {
    use serde_path_to_error::Segment;
    let mut cur = root;
    for seg in path.iter() {
        cur = match seg {
            Segment::Seq { index } => cur.get(*index)?,
            Segment::Map { key } => cur.get(key.as_str())?,
            Segment::Enum { .. } | Segment::Unknown => cur,
        };
    }
    Some(cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_keys_use_dots_and_resource_names_use_brackets() {
        let p = key("spec.replicaSpecs", "Worker");
        let p = key(&index(&key(&p, "containers"), 0), "limits");
        assert_eq!(
            key(&p, "huawei.com/Ascend910"),
            r#"spec.replicaSpecs.Worker.containers[0].limits["huawei.com/Ascend910"]"#
        );
        assert_eq!(key("", "spec"), "spec");
        assert_eq!(key("metadata.labels", "ring-controller.atlas"), r#"metadata.labels["ring-controller.atlas"]"#);
        assert_eq!(key("metadata.labels", "framework"), "metadata.labels.framework");
    }
}
