//! Equality-based label and field selectors (`a=b,c!=d,e,!f`), applied to
//! lists and watch events after the store's kind/namespace narrowing.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    Exists(String),
    Absent(String),
}

/// A parsed selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectSelector {
    labels: Vec<Requirement>,
    fields: Vec<Requirement>,
}

fn parse_terms(text: &str, what: &str) -> Result<Vec<Requirement>, String> {
    let mut out = Vec::new();
    for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let bad = |k: &str| k.is_empty() || k.contains(|c: char| c.is_whitespace() || "()=!".contains(c));
        let req = if let Some((k, v)) = term.split_once("!=") {
            Requirement::NotEquals(k.trim().to_string(), v.trim().to_string())
        } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
            Requirement::Equals(k.trim().to_string(), v.trim().to_string())
        } else if let Some(k) = term.strip_prefix('!') {
            Requirement::Absent(k.trim().to_string())
        } else {
            Requirement::Exists(term.to_string())
        };
        let (Requirement::Equals(k, _)
        | Requirement::NotEquals(k, _)
        | Requirement::Exists(k)
        | Requirement::Absent(k)) = &req;
        if bad(k) {
            return Err(format!(
                "{what}: cannot parse {term:?}: only equality-based requirements are supported (key=value, key!=value, key, !key)"
            ));
        }
        out.push(req);
    }
    Ok(out)
}

fn field_value<'a>(object: &'a Value, path: &str) -> Option<String> {
    let mut v: &'a Value = object;
    for part in path.split('.') {
        v = v.get(part)?;
    }
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn matches(reqs: &[Requirement], lookup: impl Fn(&str) -> Option<String>) -> bool {
    reqs.iter().all(|r| match r {
        Requirement::Equals(k, v) => lookup(k).as_deref() == Some(v.as_str()),
        Requirement::NotEquals(k, v) => lookup(k).as_deref() != Some(v.as_str()),
        Requirement::Exists(k) => lookup(k).is_some(),
        Requirement::Absent(k) => lookup(k).is_none(),
    })
}

impl ObjectSelector {
    /// Parses `labelSelector` and `fieldSelector` (dotted paths, e.g.
    /// `spec.nodeName=n1`); an error names the parameter.
    pub fn parse(labels: Option<&str>, fields: Option<&str>) -> Result<ObjectSelector, String> {
        Ok(ObjectSelector {
            labels: parse_terms(labels.unwrap_or(""), "labelSelector")?,
            fields: parse_terms(fields.unwrap_or(""), "fieldSelector")?,
        })
    }

    /// Whether the selector is empty.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    /// Whether an object is selected.
    pub fn matches(&self, object: &Value) -> bool {
        let labels = object.get("metadata").and_then(|m| m.get("labels"));
        matches(&self.labels, |k| labels.and_then(|l| l.get(k)).and_then(Value::as_str).map(str::to_string))
            && matches(&self.fields, |k| field_value(object, k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equality_terms() -> Result<(), String> {
        let o = json!({"metadata": {"name": "p", "labels": {"app": "x", "tier": "db"}}, "spec": {"nodeName": "n1"}});
        let sel = |l: &str| ObjectSelector::parse(Some(l), None);
        assert!(sel("app=x,tier!=web,tier")?.matches(&o));
        assert!(sel("app==x, !missing")?.matches(&o));
        assert!(!sel("app=y")?.matches(&o));
        assert!(!sel("!app")?.matches(&o));
        assert!(ObjectSelector::parse(None, Some("spec.nodeName=n1,metadata.name=p"))?.matches(&o));
        assert!(!ObjectSelector::parse(None, Some("spec.nodeName=n2"))?.matches(&o));
        assert!(ObjectSelector::parse(Some("env in (a,b)"), None).is_err());
        assert!(ObjectSelector::parse(Some(""), None)?.is_empty());
        Ok(())
    }
}
