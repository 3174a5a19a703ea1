//! Label and field selectors as Kubernetes parses them, applied to lists and
//! watch events after the store's kind/namespace narrowing. Label selectors
//! take the set-based grammar (`env in (a,b)`, `tier notin (x)`, `key`,
//! `!key`, `=`, `==`, `!=`, `>`/`<` on integers); field selectors take only
//! `=`, `==` and `!=` on dotted paths (`spec.nodeName=n1`). Hand-written: the
//! Kubernetes crates for Rust build selectors but do not parse them.

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;

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

/// Why a walk ended early: [`values_at`]'s `settled` asked it to.
const SETTLED: &str = "settled";

/// The values at several paths of JSON text, read in one pass without
/// building the rest of the object: each `None` where its path is absent or
/// runs through a non-object, as `Value::get` reads it. Every path has at
/// least one segment (a field selector's key splits into one or more).
///
/// `settled` is told a path's value (by its index) each time the walk leaves
/// an entry it lies in; true stops the walk there, so a selector stops
/// reading once a requirement fails. A value is final when told because the
/// texts walked are the store's, which serde wrote from maps: no key appears
/// twice in one.
fn values_at<F: FnMut(usize, Option<&Value>) -> bool>(
    text: &str,
    paths: &[Vec<&str>],
    settled: &mut F,
) -> Result<Vec<Option<Value>>, serde_json::Error> {
    let mut out = vec![None; paths.len()];
    let mut de = serde_json::Deserializer::from_str(text);
    let wanted = paths.iter().enumerate().map(|(i, p)| (i, p.as_slice())).collect();
    Many { paths: wanted, out: &mut out, settled: Some(settled) }.deserialize(&mut de)?;
    de.end()?;
    Ok(out)
}

fn lookup(v: &Value, path: &[&str]) -> Option<Value> {
    path.iter().try_fold(v, |v, key| v.get(key)).cloned()
}

/// Paths looked for in the value at hand (each non-empty: its first segment
/// is a key of this level), where each one's value goes, and who is told
/// when it is final.
struct Many<'p, 'o, 's, F> {
    paths: Vec<(usize, &'p [&'p str])>,
    out: &'o mut [Option<Value>],
    settled: Option<&'s mut F>,
}

impl<'de, F: FnMut(usize, Option<&Value>) -> bool> DeserializeSeed<'de> for Many<'_, '_, '_, F> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, F: FnMut(usize, Option<&Value>) -> bool> Visitor<'de> for Many<'_, '_, '_, F> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        while let Some(hits) = map.next_key_seed(KeyOf(&self.paths))? {
            if hits.is_empty() {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            match hits.iter().position(|(_, rest)| rest.is_empty()) {
                // The value itself is wanted: built once, moved to its slot.
                Some(whole) => {
                    let v: Value = map.next_value()?;
                    for (i, (slot, rest)) in hits.iter().enumerate() {
                        if i != whole {
                            self.out[*slot] = lookup(&v, rest);
                        }
                    }
                    self.out[hits[whole].0] = Some(v);
                }
                None => {
                    let settled = self.settled.as_deref_mut();
                    map.next_value_seed(Many { paths: hits.clone(), out: &mut *self.out, settled })?;
                }
            }
            if let Some(settled) = self.settled.as_deref_mut() {
                for (slot, _) in &hits {
                    if settled(*slot, self.out[*slot].as_ref()) {
                        return Err(serde::de::Error::custom(SETTLED));
                    }
                }
            }
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

/// The paths a map key leads on: each one whose first segment it is, with
/// the rest of its path; compared where the key lies.
struct KeyOf<'a, 'p>(&'a [(usize, &'p [&'p str])]);

impl<'de, 'p> DeserializeSeed<'de> for KeyOf<'_, 'p> {
    type Value = Vec<(usize, &'p [&'p str])>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, 'p> Visitor<'de> for KeyOf<'_, 'p> {
    type Value = Vec<(usize, &'p [&'p str])>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(self
            .0
            .iter()
            .filter_map(|(slot, p)| p.split_first().filter(|(k, _)| **k == v).map(|(_, rest)| (*slot, rest)))
            .collect())
    }
}

/// The texts whose presence `"key":"value"` (or, for a number or a
/// boolean, `"key":value`) would show in compact JSON; none for an empty
/// value, which always may match: a missing field reads as no value, not as
/// a pair in the text.
fn pair_needles(key: &str, value: &str) -> Vec<String> {
    if value.is_empty() {
        return Vec::new();
    }
    let key = Value::String(key.to_string()).to_string();
    let quoted = Value::String(value.to_string()).to_string();
    let mut needles = vec![format!("{key}:{quoted}")];
    // Only a value that reads as JSON other than a string can sit unquoted.
    if serde_json::from_str::<Value>(value).is_ok_and(|v| !v.is_string()) {
        needles.push(format!("{key}:{value}"));
    }
    needles
}

/// A selector made ready to test many objects' stored texts: what each
/// text is searched for and the paths it is read at are worked out once,
/// not once per object.
pub struct TextTest<'s> {
    selector: &'s ObjectSelector,
    /// Per `=` or `in` requirement, the texts one of which it needs (an
    /// empty set: a requirement the text cannot rule out).
    needles: Vec<Vec<String>>,
    /// How many of the paths are label requirements' (the first ones).
    labels: usize,
    paths: Vec<Vec<&'s str>>,
}

impl TextTest<'_> {
    /// Whether an object kept as compact JSON text (as `serde_json::to_string`
    /// writes it, which is how the store keeps every object) may be selected:
    /// false only when a pair an `=` or `in` requirement needs appears nowhere
    /// in the text. A selected list over thousands of pods spends its time
    /// reading each one; this lets it read only those that can match
    /// (`spec.nodeName=n1` on a node's page, `status.phase=Failed`). A text
    /// that passes is still tested with [`TextTest::matches`].
    pub fn may_match(&self, text: &str) -> bool {
        self.needles.iter().all(|any| any.is_empty() || any.iter().any(|n| text.contains(n.as_str())))
    }

    /// [`ObjectSelector::matches`] on an object's JSON text, read in one
    /// pass without building the object (most of a selected list's cost,
    /// when most objects match); `None` when the text is not JSON.
    pub fn matches(&self, text: &str) -> Option<bool> {
        let (selector, labels) = (self.selector, self.labels);
        let holds = |slot: usize, value: Option<&Value>| {
            if slot < labels {
                selector.labels[slot].matches(value.and_then(Value::as_str))
            } else {
                let value = value.and_then(|v| match v {
                    Value::String(s) => Some(Cow::Borrowed(s.as_str())),
                    Value::Null => None,
                    other => Some(Cow::Owned(other.to_string())),
                });
                selector.fields[slot - labels].matches(value.as_deref())
            }
        };
        // A requirement that fails as soon as its value is read ends the walk:
        // a job's pod is turned away by its labels, the rest of it unread.
        let mut failed = false;
        let walked = values_at(text, &self.paths, &mut |slot, value| {
            failed = !holds(slot, value);
            failed
        });
        if failed {
            return Some(false);
        }
        let values = walked.ok()?;
        Some(values.iter().enumerate().all(|(slot, value)| holds(slot, value.as_ref())))
    }
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

    /// The selector made ready to test stored texts, many in a row.
    pub fn text_test(&self) -> TextTest<'_> {
        let labels = self.labels.iter().map(|r| (r.key.as_str(), &r.op));
        // A field's last path segment is the key its value sits under.
        let fields = self.fields.iter().map(|r| (r.key.rsplit('.').next().unwrap_or(&r.key), &r.op));
        let needles = labels
            .chain(fields)
            .filter_map(|(key, op)| match op {
                Op::Equals(v) => Some(pair_needles(key, v)),
                // Any value of the set will do; one that is empty rules nothing out.
                Op::In(set) => {
                    let any: Vec<Vec<String>> = set.iter().map(|v| pair_needles(key, v)).collect();
                    Some(if any.iter().any(Vec::is_empty) { Vec::new() } else { any.concat() })
                }
                _ => None,
            })
            .collect();
        // Each requirement reads its own path (a label's is one key of the
        // labels map: only those are built, not the whole map).
        let labels = self.labels.iter().map(|r| vec!["metadata", "labels", r.key.as_str()]);
        let paths = labels.chain(self.fields.iter().map(|r| r.key.split('.').collect())).collect();
        TextTest { selector: self, needles, labels: self.labels.len(), paths }
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
            assert_eq!(s.text_test().may_match(&text), want, "{labels:?} {fields:?}");
            assert_eq!(s.text_test().matches(&text), Some(want), "{labels:?} {fields:?}");
        }
        // An empty value is not a pair to look for: a missing field selects it.
        let s = ObjectSelector::parse(None, Some("spec.schedulerName="))?;
        assert!(s.text_test().may_match(&text));
        // Read from the text, a path agrees with the parsed object's everywhere.
        let paths =
            ["spec.replicas!=3", "spec.nodeName.x=1", "metadata.labels.app=x", "status=x", "missing!=a", "spec=x"];
        for fields in paths {
            let s = ObjectSelector::parse(Some("!gone,app notin (y)"), Some(fields))?;
            assert_eq!(s.text_test().matches(&text), Some(s.matches(&o)), "{fields}");
        }
        // Several requirements at once, read in the one pass, agree too.
        let many = [
            (
                Some("!gone,volcano.sh/job-name,app=x"),
                Some("status.phase=Pending,spec.nodeName=n1,metadata.labels.app=x"),
            ),
            (Some("!volcano.sh/job-name,!pod-template-hash"), Some("status.phase=Pending")),
            (Some("app"), Some("metadata=x,metadata.labels.app=x,status.phase!=Failed")),
            (Some("app=x"), Some("spec.replicas=3,spec.nodeName.x=1")),
        ];
        for (labels, fields) in many {
            let s = ObjectSelector::parse(labels, fields)?;
            assert_eq!(s.text_test().matches(&text), Some(s.matches(&o)), "{labels:?} {fields:?}");
        }
        // A requirement that fails early decides without the rest of the text.
        let s = ObjectSelector::parse(Some("!volcano.sh/job-name"), Some("status.phase=Pending"))?;
        let cut = &text[..text.find("\"spec\"").ok_or("no spec")?];
        assert_eq!(s.text_test().matches(cut), Some(false));
        // One that holds reads on, and text that is not JSON gives no answer.
        let s = ObjectSelector::parse(Some("volcano.sh/job-name"), Some("status.phase=Pending"))?;
        assert_eq!(s.text_test().matches(cut), None);
        assert_eq!(ObjectSelector::parse(None, Some("a=b"))?.text_test().matches("{\"a\":"), None);
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
