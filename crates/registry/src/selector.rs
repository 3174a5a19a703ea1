//! Label and field selectors as Kubernetes parses them, applied to lists and
//! watch events after the store's kind/namespace narrowing. Label selectors
//! take the set-based grammar (`env in (a,b)`, `tier notin (x)`, `key`,
//! `!key`, `=`, `==`, `!=`, `>`/`<` on integers); field selectors take only
//! `=`, `==` and `!=` on dotted paths (`spec.nodeName=n1`). Hand-written: the
//! Kubernetes crates for Rust build selectors but do not parse them.

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    Equals(String),
    NotEquals(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
    Gt(i64),
    Lt(i64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    op: Op,
}

impl Requirement {
    fn matches(&self, value: Option<&str>) -> bool {
        match (&self.op, value) {
            (Op::Equals(v), Some(x)) => v == x,
            (Op::Equals(_), None) => false,
            (Op::NotEquals(v), x) => x != Some(v.as_str()),
            (Op::In(set), Some(x)) => set.iter().any(|v| v == x),
            (Op::In(_), None) => false,
            (Op::NotIn(set), x) => x.is_none_or(|x| !set.iter().any(|v| v == x)),
            (Op::Exists, x) => x.is_some(),
            (Op::DoesNotExist, x) => x.is_none(),
            (Op::Gt(n), Some(x)) => x.parse::<i64>().is_ok_and(|x| x > *n),
            (Op::Lt(n), Some(x)) => x.parse::<i64>().is_ok_and(|x| x < *n),
            (Op::Gt(_) | Op::Lt(_), None) => false,
        }
    }
}

/// A parsed selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectSelector {
    labels: Vec<Requirement>,
    fields: Vec<Requirement>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    Open,
    Close,
    Comma,
    Eq,
    DoubleEq,
    NotEq,
    Bang,
    Gt,
    Lt,
}

impl Token {
    fn text(&self) -> String {
        match self {
            Token::Ident(s) => s.clone(),
            Token::Open => "(".into(),
            Token::Close => ")".into(),
            Token::Comma => ",".into(),
            Token::Eq => "=".into(),
            Token::DoubleEq => "==".into(),
            Token::NotEq => "!=".into(),
            Token::Bang => "!".into(),
            Token::Gt => ">".into(),
            Token::Lt => "<".into(),
        }
    }
}

fn lex(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '(' | ')' | ',' | '>' | '<' => {
                chars.next();
                out.push(match c {
                    '(' => Token::Open,
                    ')' => Token::Close,
                    ',' => Token::Comma,
                    '>' => Token::Gt,
                    _ => Token::Lt,
                });
            }
            '=' | '!' => {
                chars.next();
                let double = chars.peek() == Some(&'=');
                if double {
                    chars.next();
                }
                out.push(match (c, double) {
                    ('=', true) => Token::DoubleEq,
                    ('=', false) => Token::Eq,
                    (_, true) => Token::NotEq,
                    (_, false) => Token::Bang,
                });
            }
            _ => {
                let mut s = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_whitespace() || "(),=!<>".contains(c) {
                        break;
                    }
                    s.push(c);
                    chars.next();
                }
                out.push(Token::Ident(s));
            }
        }
    }
    out
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`, at most 63 characters.
fn is_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || b"-_.".contains(c))
}

/// A DNS subdomain: lower-case labels joined by dots, at most 253 characters.
fn is_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|l| {
            let b = l.as_bytes();
            !b.is_empty()
                && b.len() <= 63
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        })
}

const NAME_RULE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an \
                         alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for \
                         validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

fn check_key(key: &str) -> Result<(), String> {
    let invalid = |why: String| Err(format!("unable to parse requirement: key: Invalid value: {key:?}: {why}"));
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix {
        if !is_subdomain(p) {
            return invalid(
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric \
                            characters, '-' or '.', and must start and end with an alphanumeric character"
                    .to_string(),
            );
        }
    }
    if name.len() > 63 {
        return invalid("name part must be no more than 63 characters".to_string());
    }
    if !is_name(name) {
        return invalid(format!("name part {NAME_RULE}"));
    }
    Ok(())
}

fn check_value(key: &str, value: &str) -> Result<(), String> {
    if value.is_empty() || is_name(value) {
        return Ok(());
    }
    let why = if value.len() > 63 {
        "must be no more than 63 characters".to_string()
    } else {
        format!("a valid label {NAME_RULE}")
    };
    Err(format!("unable to parse requirement: values[0][{key}]: Invalid value: {value:?}: {why}"))
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.at).cloned();
        self.at += 1;
        t
    }

    fn found(t: Option<&Token>) -> String {
        t.map(Token::text).unwrap_or_default()
    }

    fn requirement(&mut self, labels: bool) -> Result<Requirement, String> {
        let negated = self.peek() == Some(&Token::Bang);
        if negated {
            self.next();
        }
        let key = match self.next() {
            Some(Token::Ident(k)) => k,
            other => return Err(format!("found '{}', expected: identifier", Self::found(other.as_ref()))),
        };
        if labels {
            check_key(&key)?;
        }
        if negated {
            return Ok(Requirement { key, op: Op::DoesNotExist });
        }
        let op = match self.peek() {
            None | Some(Token::Comma) => return Ok(Requirement { key, op: Op::Exists }),
            Some(t) => t.clone(),
        };
        self.next();
        let op = match op {
            Token::Eq | Token::DoubleEq | Token::NotEq => {
                let value = match self.peek() {
                    Some(Token::Ident(v)) => {
                        let v = v.clone();
                        self.next();
                        v
                    }
                    None | Some(Token::Comma) => String::new(),
                    Some(t) => return Err(format!("found '{}', expected: identifier", t.text())),
                };
                if labels {
                    check_value(&key, &value)?;
                }
                if op == Token::NotEq {
                    Op::NotEquals(value)
                } else {
                    Op::Equals(value)
                }
            }
            Token::Ident(word) if labels && (word == "in" || word == "notin") => {
                let values = self.set()?;
                for v in &values {
                    check_value(&key, v)?;
                }
                if values.is_empty() {
                    return Err(format!(
                        "unable to parse requirement: values: Invalid value: []: for 'in', 'notin' operators, values \
                         set can't be empty (key {key:?})"
                    ));
                }
                if word == "in" {
                    Op::In(values)
                } else {
                    Op::NotIn(values)
                }
            }
            Token::Gt | Token::Lt if labels => {
                let text = match self.next() {
                    Some(Token::Ident(v)) => v,
                    other => return Err(format!("found '{}', expected: identifier", Self::found(other.as_ref()))),
                };
                let n: i64 = text.parse().map_err(|_| {
                    format!(
                        "unable to parse requirement: values[0]: Invalid value: {text:?}: for 'Gt', 'Lt' operators, \
                         the value must be an integer"
                    )
                })?;
                if op == Token::Gt {
                    Op::Gt(n)
                } else {
                    Op::Lt(n)
                }
            }
            other => {
                let expected = if labels { "'=', '!=', '==', 'in', notin'" } else { "'=', '!=', '=='" };
                return Err(format!("found '{}', expected: {expected}", other.text()));
            }
        };
        Ok(Requirement { key, op })
    }

    /// `( v1, v2 )` after `in`/`notin`.
    fn set(&mut self) -> Result<Vec<String>, String> {
        match self.next() {
            Some(Token::Open) => {}
            other => return Err(format!("found '{}', expected: '('", Self::found(other.as_ref()))),
        }
        let mut values = Vec::new();
        loop {
            match self.next() {
                Some(Token::Ident(v)) => values.push(v),
                Some(Token::Close) if values.is_empty() => return Ok(values),
                other => {
                    return Err(format!("found '{}', expected: ',', ')' or identifier", Self::found(other.as_ref())))
                }
            }
            match self.next() {
                Some(Token::Comma) => {}
                Some(Token::Close) => return Ok(values),
                other => return Err(format!("found '{}', expected: ',' or ')'", Self::found(other.as_ref()))),
            }
        }
    }

    fn all(mut self, labels: bool) -> Result<Vec<Requirement>, String> {
        let mut out = Vec::new();
        if self.tokens.is_empty() {
            return Ok(out);
        }
        loop {
            out.push(self.requirement(labels)?);
            match self.next() {
                None => return Ok(out),
                Some(Token::Comma) => {}
                Some(t) => return Err(format!("found '{}', expected: ',' or 'end of string'", t.text())),
            }
        }
    }
}

fn parse_labels(text: &str) -> Result<Vec<Requirement>, String> {
    Parser { tokens: lex(text), at: 0 }.all(true)
}

/// Field selectors split on `,` and take `=`, `==`, `!=` only, as
/// Kubernetes' `fields.ParseSelector`.
fn parse_fields(text: &str) -> Result<Vec<Requirement>, String> {
    let mut out = Vec::new();
    for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (key, op) = if let Some((k, v)) = term.split_once("!=") {
            (k, Op::NotEquals(v.trim().to_string()))
        } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
            (k, Op::Equals(v.trim().to_string()))
        } else {
            return Err(format!("invalid selector: '{text}'; can't understand '{term}'"));
        };
        let key = key.trim();
        if key.is_empty() {
            return Err(format!("invalid selector: '{text}'; can't understand '{term}'"));
        }
        out.push(Requirement { key: key.to_string(), op });
    }
    Ok(out)
}

fn field_value(object: &Value, path: &str) -> Option<String> {
    let mut v = object;
    for part in path.split('.') {
        v = v.get(part)?;
    }
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// Reads the value at a path of JSON text without building the rest of the
/// object: `None` where the path is absent or runs through a non-object, as
/// `Value::get` reads it.
struct At<'p> {
    path: &'p [&'p str],
}

impl<'de> DeserializeSeed<'de> for At<'_> {
    type Value = Option<Value>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        match self.path.split_first() {
            None => Value::deserialize(d).map(Some),
            Some((key, rest)) => d.deserialize_any(Walk { key, rest }),
        }
    }
}

struct Walk<'p> {
    key: &'p str,
    rest: &'p [&'p str],
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        // The last of duplicate keys wins, as in a parsed `Value`.
        while let Some(hit) = map.next_key_seed(KeyIs(self.key))? {
            if hit {
                found = map.next_value_seed(At { path: self.rest })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// Whether a map key is the one looked for, compared where it lies.
struct KeyIs<'k>(&'k str);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<bool, E> {
        Ok(v == self.0)
    }
}

/// The value at `path` of JSON `text`; `Err` when the text is not JSON.
fn value_at(text: &str, path: &[&str]) -> Result<Option<Value>, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let found = At { path }.deserialize(&mut de)?;
    de.end()?;
    Ok(found)
}

/// Whether `"key":"value"` (or, for a number or a boolean, `"key":value`)
/// may be in compact JSON `text`. An empty value always may: a missing field
/// reads as no value, not as a pair in the text.
fn pair_may_be_in(text: &str, key: &str, value: &str) -> bool {
    if value.is_empty() {
        return true;
    }
    let key = Value::String(key.to_string()).to_string();
    let quoted = Value::String(value.to_string()).to_string();
    // Only a value that reads as JSON other than a string can sit unquoted.
    let bare = || serde_json::from_str::<Value>(value).is_ok_and(|v| !v.is_string());
    text.contains(&format!("{key}:{quoted}")) || (bare() && text.contains(&format!("{key}:{value}")))
}

impl ObjectSelector {
    /// Parses `labelSelector` and `fieldSelector`; the error is Kubernetes'
    /// parse error for the selector that failed.
    pub fn parse(labels: Option<&str>, fields: Option<&str>) -> Result<ObjectSelector, String> {
        Ok(ObjectSelector { labels: parse_labels(labels.unwrap_or(""))?, fields: parse_fields(fields.unwrap_or(""))? })
    }

    /// Whether the selector is empty.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    /// Whether an object kept as compact JSON text (as `serde_json::to_string`
    /// writes it, which is how the store keeps every object) may be selected:
    /// false only when a pair an `=` or `in` requirement needs appears nowhere
    /// in the text. A selected list over thousands of pods spends its time
    /// parsing each one; this lets it parse only those that can match
    /// (`spec.nodeName=n1` on a node's page, `status.phase=Failed`). A text
    /// that passes is still tested with [`ObjectSelector::matches`].
    pub fn may_match_text(&self, text: &str) -> bool {
        let labels = self.labels.iter().map(|r| (r.key.as_str(), &r.op));
        // A field's last path segment is the key its value sits under.
        let fields = self.fields.iter().map(|r| (r.key.rsplit('.').next().unwrap_or(&r.key), &r.op));
        labels.chain(fields).all(|(key, op)| match op {
            Op::Equals(v) => pair_may_be_in(text, key, v),
            Op::In(set) => set.iter().any(|v| pair_may_be_in(text, key, v)),
            _ => true,
        })
    }

    /// [`ObjectSelector::matches`] on an object's JSON text, read one path
    /// at a time without building the object (most of a selected list's
    /// cost, when most objects match); `None` when the text is not JSON.
    pub fn matches_text(&self, text: &str) -> Option<bool> {
        for r in &self.labels {
            let value = value_at(text, &["metadata", "labels", &r.key]).ok()?;
            if !r.matches(value.as_ref().and_then(Value::as_str)) {
                return Some(false);
            }
        }
        for r in &self.fields {
            let path: Vec<&str> = r.key.split('.').collect();
            let value = value_at(text, &path).ok()?.and_then(|v| match v {
                Value::String(s) => Some(s),
                Value::Null => None,
                other => Some(other.to_string()),
            });
            if !r.matches(value.as_deref()) {
                return Some(false);
            }
        }
        Some(true)
    }

    /// Whether an object is selected.
    pub fn matches(&self, object: &Value) -> bool {
        let labels = object.get("metadata").and_then(|m| m.get("labels"));
        self.labels.iter().all(|r| r.matches(labels.and_then(|l| l.get(&r.key)).and_then(Value::as_str)))
            && self.fields.iter().all(|r| r.matches(field_value(object, &r.key).as_deref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({"metadata": {"name": "p", "labels": {"app": "x", "tier": "db", "n": "5"}}, "spec": {"nodeName": "n1"}})
    }

    #[test]
    fn label_selector_table() -> Result<(), String> {
        let o = pod();
        let cases = [
            ("", true),
            ("app=x", true),
            ("app==x", true),
            ("app!=x", false),
            ("app!=y", true),
            ("missing!=y", true),
            ("app", true),
            ("!app", false),
            ("!missing", true),
            ("app in (x, y)", true),
            ("app in (y)", false),
            ("missing in (y)", false),
            ("app notin (y,z)", true),
            ("app notin (x)", false),
            ("missing notin (x)", true),
            ("app=x,tier in (db,web),!gone", true),
            ("app=x,tier in (web)", false),
            ("n>4", true),
            ("n<5", false),
            ("app>1", false),
            ("example.com/team", false),
            ("app=", false),
        ];
        for (text, want) in cases {
            assert_eq!(ObjectSelector::parse(Some(text), None)?.matches(&o), want, "{text:?}");
        }
        Ok(())
    }

    /// The text test never turns away an object `matches` selects, and
    /// turns away one that lacks a required pair.
    #[test]
    fn the_text_test_keeps_every_match() -> Result<(), String> {
        let o = json!({"metadata": {"name": "p", "labels": {"app": "x", "volcano.sh/job-name": "big-0"}},
            "spec": {"nodeName": "n1", "unschedulable": true, "replicas": 3}, "status": {"phase": "Pending"}});
        let text = o.to_string();
        let cases = [
            (None, Some("spec.nodeName=n1"), true),
            (None, Some("spec.nodeName=n11"), false),
            (None, Some("spec.nodeName=n"), false),
            (None, Some("spec.nodeName!=n2"), true),
            (None, Some("spec.unschedulable=true"), true),
            (None, Some("spec.replicas=3"), true),
            (None, Some("status.phase=Pending,spec.nodeName=n1"), true),
            (None, Some("status.phase=Failed"), false),
            (Some("volcano.sh/job-name=big-0"), None, true),
            (Some("volcano.sh/job-name=big-1"), None, false),
            (Some("app in (y, x)"), None, true),
            (Some("app in (y)"), None, false),
        ];
        for (labels, fields, want) in cases {
            let s = ObjectSelector::parse(labels, fields)?;
            assert_eq!(s.matches(&o), want, "{labels:?} {fields:?}");
            assert_eq!(s.may_match_text(&text), want, "{labels:?} {fields:?}");
            assert_eq!(s.matches_text(&text), Some(want), "{labels:?} {fields:?}");
        }
        // An empty value is not a pair to look for: a missing field selects it.
        let s = ObjectSelector::parse(None, Some("spec.schedulerName="))?;
        assert!(s.may_match_text(&text));
        // Read from the text, a path agrees with the parsed object's everywhere.
        let paths =
            ["spec.replicas!=3", "spec.nodeName.x=1", "metadata.labels.app=x", "status=x", "missing!=a", "spec=x"];
        for fields in paths {
            let s = ObjectSelector::parse(Some("!gone,app notin (y)"), Some(fields))?;
            assert_eq!(s.matches_text(&text), Some(s.matches(&o)), "{fields}");
        }
        assert_eq!(ObjectSelector::parse(None, Some("a=b"))?.matches_text("{\"a\":"), None);
        Ok(())
    }

    #[test]
    fn label_parse_errors_read_as_kubernetes() {
        let err = |t: &str| ObjectSelector::parse(Some(t), None).err().unwrap_or_default();
        assert_eq!(err("env in a"), "found 'a', expected: '('");
        assert_eq!(err("env in (a"), "found '', expected: ',' or ')'");
        assert_eq!(err("a b"), "found 'b', expected: '=', '!=', '==', 'in', notin'");
        assert_eq!(err("a=b c"), "found 'c', expected: ',' or 'end of string'");
        assert_eq!(err(",a"), "found ',', expected: identifier");
        assert!(err("env in ()").contains("values set can't be empty"));
        assert!(err("a=b c d!").starts_with("found 'c'"));
        assert!(
            err("-bad=x").starts_with("unable to parse requirement: key: Invalid value: \"-bad\""),
            "{}",
            err("-bad=x")
        );
        assert!(err("a=b$").starts_with("unable to parse requirement: values[0][a]: Invalid value: \"b$\""));
        assert!(err("n>x").contains("must be an integer"));
    }

    #[test]
    fn field_selectors() -> Result<(), String> {
        let o = pod();
        let f = |t: &str| ObjectSelector::parse(None, Some(t));
        assert!(f("spec.nodeName=n1,metadata.name=p")?.matches(&o));
        assert!(f("spec.nodeName==n1")?.matches(&o));
        assert!(!f("spec.nodeName=n2")?.matches(&o));
        assert!(f("spec.nodeName!=n2")?.matches(&o));
        assert!(f("status.phase!=Running")?.matches(&o));
        assert_eq!(
            f("spec.nodeName in (a)").err().unwrap_or_default(),
            "invalid selector: 'spec.nodeName in (a)'; can't understand 'spec.nodeName in (a)'"
        );
        assert!(f("")?.is_empty());
        Ok(())
    }
}
