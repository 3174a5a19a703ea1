//! kubectl's JSONPath templates (`-o jsonpath=…`, custom-columns): text with
//! `{…}` actions — paths, `"…"` string literals, `{range PATH}…{end}`.
//! The path part is RFC 9535 JSONPath evaluated by `jsonpath-rust`; this
//! module is the template layer kubectl puts around it, hand-written
//! because no crate implements it: kubectl's dotted names (`\.` escapes,
//! `/` and `-` in keys), optional leading `.`/`@`/`$`, results joined by a
//! space, objects printed as compact JSON, missing keys printing nothing.

use anyhow::{anyhow, bail, Result};
use jsonpath_rust::JsonPath;
use serde_json::Value;

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq)]
enum Node {
    Text(String),
    /// A path, already in RFC 9535 form; `root` when it starts at `$`.
    Path {
        query: String,
        root: bool,
    },
    Range {
        query: String,
        root: bool,
        body: Vec<Node>,
    },
}

/// A parsed template, ready to run on many objects.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    source: String,
    nodes: Vec<Node>,
}

impl Template {
    /// Parses kubectl's template syntax; errors name the template and what is wrong.
    pub fn parse(source: &str) -> Result<Template> {
        let mut actions = split_actions(source)?.into_iter();
        let nodes = parse_nodes(&mut actions, source, false)?;
        Ok(Template { source: source.to_string(), nodes })
    }

    /// The template's text applied to `root`.
    pub fn render(&self, root: &Value) -> Result<String> {
        let mut out = String::new();
        render_nodes(&self.nodes, root, root, &mut out).map_err(|e| anyhow!("jsonpath {:?}: {e}", self.source))?;
        Ok(out)
    }

    /// The values one bare path selects (custom-columns cells).
    pub fn values(&self, root: &Value) -> Result<Vec<Value>> {
        let mut found = Vec::new();
        for node in &self.nodes {
            match node {
                Node::Path { query, .. } => found.extend(query_values(query, root)?.into_iter().cloned()),
                Node::Text(t) => found.push(Value::String(t.clone())),
                Node::Range { .. } => bail!("jsonpath {:?}: range is not allowed here", self.source),
            }
        }
        Ok(found)
    }
}

/// kubectl's relaxed form for custom-columns: `.a.b`, `a.b` and `{.a.b}` are the same path.
pub fn relaxed(expr: &str) -> String {
    let e = expr.trim();
    if e.starts_with('{') && e.ends_with('}') {
        return e.to_string();
    }
    let e = e.strip_prefix('.').unwrap_or(e);
    format!("{{.{e}}}")
}

/// The template cut into literal text and the insides of `{…}` actions.
#[derive(Debug, PartialEq)]
enum Piece {
    Text(String),
    Action(String),
}

fn split_actions(source: &str) -> Result<Vec<Piece>> {
    let mut pieces = Vec::new();
    let mut rest = source;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            pieces.push(Piece::Text(rest[..open].to_string()));
        }
        let inner = &rest[open + 1..];
        let mut quote = None;
        let mut escaped = false;
        let mut close = None;
        for (i, c) in inner.char_indices() {
            match (quote, c) {
                _ if escaped => escaped = false,
                (_, '\\') => escaped = true,
                (None, '"' | '\'') => quote = Some(c),
                (Some(q), c) if c == q => quote = None,
                (None, '}') => {
                    close = Some(i);
                    break;
                }
                _ => {}
            }
        }
        let Some(close) = close else { bail!("jsonpath {source:?}: unclosed action (a `{{` without its `}}`)") };
        pieces.push(Piece::Action(inner[..close].trim().to_string()));
        rest = &inner[close + 1..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest.to_string()));
    }
    Ok(pieces)
}

fn parse_nodes(pieces: &mut impl Iterator<Item = Piece>, source: &str, in_range: bool) -> Result<Vec<Node>> {
    let mut nodes = Vec::new();
    while let Some(piece) = pieces.next() {
        let action = match piece {
            Piece::Text(t) => {
                nodes.push(Node::Text(t));
                continue;
            }
            Piece::Action(a) => a,
        };
        if action == "end" {
            if !in_range {
                bail!("jsonpath {source:?}: `{{end}}` without a `{{range}}`");
            }
            return Ok(nodes);
        }
        if let Some(path) = action.strip_prefix("range ") {
            let (query, root) = to_rfc9535(path.trim()).map_err(|e| anyhow!("jsonpath {source:?}: {e}"))?;
            let body = parse_nodes(pieces, source, true)?;
            nodes.push(Node::Range { query, root, body });
        } else if action.starts_with('"') {
            nodes.push(Node::Text(unquote(&action).map_err(|e| anyhow!("jsonpath {source:?}: {e}"))?));
        } else {
            let (query, root) = to_rfc9535(&action).map_err(|e| anyhow!("jsonpath {source:?}: {e}"))?;
            nodes.push(Node::Path { query, root });
        }
    }
    if in_range {
        bail!("jsonpath {source:?}: `{{range}}` without its `{{end}}`");
    }
    Ok(nodes)
}

/// A `"…"` literal with Go's escapes (`\n`, `\t`, `\r`, `\\`, `\"`).
fn unquote(literal: &str) -> Result<String> {
    let inner = literal
        .strip_prefix('"')
        .and_then(|l| l.strip_suffix('"'))
        .filter(|_| literal.len() >= 2)
        .ok_or_else(|| anyhow!("string literal {literal} is not closed"))?;
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(c @ ('\\' | '"' | '\'')) => out.push(c),
            other => {
                bail!("string literal {literal}: unknown escape \\{}", other.map(String::from).unwrap_or_default())
            }
        }
    }
    Ok(out)
}

/// kubectl's path (`.items[*].metadata.labels.app\.kubernetes\.io/name`)
/// as RFC 9535 (`$['items'][*]['metadata']…`); `true` when it starts at the root (`$`).
fn to_rfc9535(path: &str) -> Result<(String, bool)> {
    let (rest, root) = match path {
        p if p.starts_with('$') => (&p[1..], true),
        p if p.starts_with('@') => (&p[1..], false),
        p => (p, false),
    };
    let mut out = String::from("$");
    let chars: Vec<char> = rest.chars().collect();
    let mut i = 0;
    // kubectl accepts a path without its leading dot (`{metadata.name}`).
    let mut expect_name = !rest.is_empty() && !rest.starts_with(['.', '[']);
    while i < chars.len() || expect_name {
        if expect_name {
            let mut name = String::new();
            while i < chars.len() && chars[i] != '.' && chars[i] != '[' {
                if chars[i] == '\\' && i + 1 < chars.len() {
                    i += 1;
                }
                name.push(chars[i]);
                i += 1;
            }
            match name.as_str() {
                "" => {}
                "*" => out.push_str("[*]"),
                n => {
                    out.push_str("['");
                    out.push_str(&n.replace('\\', "\\\\").replace('\'', "\\'"));
                    out.push_str("']");
                }
            }
            expect_name = false;
            continue;
        }
        match chars[i] {
            '.' if chars.get(i + 1) == Some(&'.') => {
                out.push_str("..");
                i += 2;
                // `..name` and `..[0]` both follow the descent.
                expect_name = chars.get(i).is_some_and(|c| *c != '[');
            }
            '.' => {
                i += 1;
                expect_name = true;
            }
            '[' => {
                let start = i;
                let mut depth = 0;
                let mut quote = None;
                while i < chars.len() {
                    let c = chars[i];
                    match (quote, c) {
                        (None, '\'' | '"') => quote = Some(c),
                        (Some(q), c) if c == q => quote = None,
                        (None, '[') => depth += 1,
                        (None, ']') => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                if i >= chars.len() {
                    bail!("path {path:?}: unclosed `[`");
                }
                out.extend(&chars[start..=i]);
                i += 1;
            }
            c => bail!("path {path:?}: unexpected {c:?} (paths look like .items[*].metadata.name)"),
        }
    }
    Ok((out, root))
}

fn query_values<'a>(query: &str, current: &'a Value) -> Result<Vec<&'a Value>> {
    current.query(query).map_err(|e| anyhow!("{query}: {e}"))
}

/// How kubectl prints one result: strings bare, objects and lists as compact JSON.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn render_nodes(nodes: &[Node], root: &Value, current: &Value, out: &mut String) -> Result<()> {
    for node in nodes {
        match node {
            Node::Text(t) => out.push_str(t),
            Node::Path { query, root: from_root } => {
                let found = query_values(query, if *from_root { root } else { current })?;
                let texts: Vec<String> = found.into_iter().map(text_of).collect();
                out.push_str(&texts.join(" "));
            }
            Node::Range { query, root: from_root, body } => {
                for item in query_values(query, if *from_root { root } else { current })? {
                    render_nodes(body, root, item, out)?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `kubectl create deployment web --image=nginx --image=redis --dry-run=client -o yaml`.
    fn deployment() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"creationTimestamp": null, "labels": {"app": "web", "app.kubernetes.io/name": "w"}, "name": "web"},
               "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "strategy": {},
                        "template": {"metadata": {"creationTimestamp": null, "labels": {"app": "web"}},
                                     "spec": {"containers": [{"image": "nginx", "name": "nginx", "resources": {}},
                                                             {"image": "redis", "name": "redis", "resources": {}}]}}},
               "status": {}})
    }

    fn run(template: &str, v: &Value) -> String {
        Template::parse(template).and_then(|t| t.render(v)).unwrap_or_else(|e| format!("ERR {e}"))
    }

    /// Each expected text is what kubectl v1.32 printed for the same
    /// template on the same object (`--dry-run=client -o jsonpath=…`).
    #[test]
    fn templates_print_what_kubectl_prints() {
        let d = deployment();
        let cases = [
            (
                "{.metadata}",
                r#"{"creationTimestamp":null,"labels":{"app":"web","app.kubernetes.io/name":"w"},"name":"web"}"#,
            ),
            ("{.spec.replicas}", "1"),
            ("{.spec.x}", ""),
            ("{.metadata.labels.app}", "web"),
            ("{.spec.template.spec.containers[*].name} {\"\\t\"}x", "nginx redis \tx"),
            (
                "{range .spec.template.spec.containers[*]}{.name}{\"\\t\"}{.image}{\"\\n\"}{end}",
                "nginx\tnginx\nredis\tredis\n",
            ),
            ("{.spec.template.spec.containers[?(@.name==\"redis\")].image}", "redis"),
            ("{..image}", "nginx redis"),
            ("{.metadata.creationTimestamp}", "null"),
            ("{.spec.template.spec.containers[0]}", r#"{"image":"nginx","name":"nginx","resources":{}}"#),
            ("{.spec.template.spec.containers[-1:].name}", "redis"),
            ("{.kind}{.nope.deeper}|", "Deployment|"),
            ("plain", "plain"),
            ("{.spec.strategy}|{.status}|", "{}|{}|"),
            ("{.spec.template.spec.containers[*].nope}|", "|"),
            ("{.metadata.labels.app\\.kubernetes\\.io/name}", "w"),
            ("{$.kind}", "Deployment"),
            ("{@.kind}", "Deployment"),
        ];
        for (template, want) in cases {
            assert_eq!(run(template, &d), want, "template {template}");
        }
    }

    /// `kubectl create configmap x --from-literal=a=b --from-literal=c=d --dry-run=client -o jsonpath=…`.
    #[test]
    fn map_templates_print_what_kubectl_prints() {
        let cm =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b", "c": "d"}});
        for (template, want) in [
            ("{.data}", r#"{"a":"b","c":"d"}"#),
            ("{.data.*}", "b d"),
            ("{.data.a}{.data.c}", "bd"),
            ("{.metadata.name}{\"\\n\"}", "x\n"),
            ("{.data['a']}", "b"),
            ("{.data.a} {.data.c}", "b d"),
            ("{ .metadata.name }", "x"),
        ] {
            assert_eq!(run(template, &cm), want, "template {template}");
        }
        // kubectl ranges over a map in Go's random order; the values are the same.
        let ranged = run("{range .data.*}[{@}]{end}", &cm);
        assert!(ranged == "[b][d]" || ranged == "[d][b]", "{ranged}");
    }

    #[test]
    fn list_templates_walk_items() {
        let list = json!({"kind": "List", "items": [
            {"metadata": {"name": "a"}, "status": {"phase": "Running"}},
            {"metadata": {"name": "b"}, "status": {"phase": "Succeeded"}},
            {"metadata": {"name": "c"}, "status": {"phase": "Running"}}]});
        assert_eq!(run("{.items[*].metadata.name}", &list), "a b c");
        assert_eq!(run("{.items[0].metadata.name}", &list), "a");
        assert_eq!(run("{.items[?(@.status.phase==\"Running\")].metadata.name}", &list), "a c");
        assert_eq!(
            run("{range .items[*]}{.metadata.name}{\"\\t\"}{.status.phase}{\"\\n\"}{end}", &list),
            "a\tRunning\nb\tSucceeded\nc\tRunning\n"
        );
        // Inside a range `$` is still the whole list.
        assert_eq!(run("{range .items[*]}{.metadata.name}/{$.kind} {end}", &list), "a/List b/List c/List ");
    }

    #[test]
    fn broken_templates_are_refused_with_the_reason() {
        // kubectl: `error parsing jsonpath {.metadata.name, unclosed action`.
        for (template, says) in [
            ("{.metadata.name", "unclosed action"),
            ("{range .x}{end", "unclosed action"),
            ("{range .items[*]}{.a}", "without its `{end}`"),
            ("{end}", "without a `{range}`"),
            ("{.items[0}", "unclosed `[`"),
            ("{\"\\q\"}", "unknown escape"),
        ] {
            let err = Template::parse(template).map(|_| ()).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.contains(says), "{template}: {err}");
        }
    }

    #[test]
    fn custom_column_paths_are_relaxed() {
        assert_eq!(relaxed(".metadata.name"), "{.metadata.name}");
        assert_eq!(relaxed("metadata.name"), "{.metadata.name}");
        assert_eq!(relaxed("{.metadata.name}"), "{.metadata.name}");
        let t = Template::parse(&relaxed(".spec.template.spec.containers[*].image")).map_err(|e| e.to_string());
        let values = t.and_then(|t| t.values(&deployment()).map_err(|e| e.to_string()));
        assert_eq!(values, Ok(vec![json!("nginx"), json!("redis")]));
    }
}
