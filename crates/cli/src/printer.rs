//! How `get` prints: kubectl's `-o` formats over server Tables and objects,
//! and the aligned columns of its table printer.

use crate::jsonpath::{relaxed, Template};
use anyhow::{anyhow, bail, Context, Result};
use ringleader_server::ResourceType;
use serde_json::{json, Value};
use std::io::Write;

/// An `-o` value.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    Table,
    Wide,
    Json,
    Yaml,
    Name,
    JsonPath(Template),
    CustomColumns(Vec<(String, Template)>),
}

const ALLOWED: &str =
    "json, yaml, name, wide, jsonpath=TEMPLATE, jsonpath-file=FILE, custom-columns=SPEC, custom-columns-file=FILE";

impl Output {
    /// Parses `-o`; `-o jsonpath-file=F` and `-o custom-columns-file=F` read F.
    pub fn parse(o: Option<&str>) -> Result<Output> {
        let Some(o) = o else { return Ok(Output::Table) };
        let read = |f: &str| std::fs::read_to_string(f).with_context(|| format!("-o {o}: cannot read {f}"));
        Ok(match o.split_once('=') {
            None => match o {
                "wide" => Output::Wide,
                "json" => Output::Json,
                "yaml" => Output::Yaml,
                "name" => Output::Name,
                _ => bail!("-o {o}: unknown output format; allowed: {ALLOWED}"),
            },
            Some(("jsonpath", t)) => Output::JsonPath(Template::parse(t)?),
            Some(("jsonpath-file", f)) => Output::JsonPath(Template::parse(&read(f)?)?),
            Some(("custom-columns", spec)) => Output::CustomColumns(custom_columns(spec)?),
            Some(("custom-columns-file", f)) => Output::CustomColumns(custom_columns_file(&read(f)?)?),
            Some(_) => bail!("-o {o}: unknown output format; allowed: {ALLOWED}"),
        })
    }

    /// Whether the server's Table is what gets printed (else the objects).
    pub fn wants_table(&self) -> bool {
        matches!(self, Output::Table | Output::Wide)
    }
}

/// `NAME:.metadata.name,STATUS:.status.phase`.
fn custom_columns(spec: &str) -> Result<Vec<(String, Template)>> {
    if spec.trim().is_empty() {
        bail!("custom-columns: empty spec; write HEADER:PATH[,HEADER:PATH…], e.g. NAME:.metadata.name");
    }
    spec.split(',')
        .map(|col| {
            let (header, path) = col
                .split_once(':')
                .ok_or_else(|| anyhow!("custom-columns: {col:?} is not HEADER:PATH (e.g. NAME:.metadata.name)"))?;
            Ok((header.to_string(), Template::parse(&relaxed(path))?))
        })
        .collect()
}

/// kubectl's file form: a line of headers over a line of paths, both split on whitespace.
fn custom_columns_file(text: &str) -> Result<Vec<(String, Template)>> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let (Some(headers), Some(paths)) = (lines.next(), lines.next()) else {
        bail!("custom-columns-file: needs two lines, the headers and then their paths");
    };
    let headers: Vec<&str> = headers.split_whitespace().collect();
    let paths: Vec<&str> = paths.split_whitespace().collect();
    if headers.len() != paths.len() {
        bail!("custom-columns-file: {} headers but {} paths", headers.len(), paths.len());
    }
    headers.iter().zip(paths).map(|(h, p)| Ok((h.to_string(), Template::parse(&relaxed(p))?))).collect()
}

/// `pod`, or `kind.group` for non-core kinds (`pytorchjob.kubeflow.org`), as kubectl names types.
pub fn type_name(t: &ResourceType) -> String {
    let kind = t.kind.to_ascii_lowercase();
    if t.group.is_empty() {
        kind
    } else {
        format!("{kind}.{}", t.group)
    }
}

/// `-o name`'s line of an object.
pub fn object_name(t: &ResourceType, object: &Value) -> String {
    format!("{}/{}", type_name(t), object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or(""))
}

/// What `-o json|yaml|jsonpath` applies to: the object itself when one was
/// asked for by name, else a `List` of them.
pub fn document(items: Vec<Value>, by_name: bool) -> Value {
    if by_name && items.len() == 1 {
        return items.into_iter().next().unwrap_or(Value::Null);
    }
    json!({"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}})
}

/// The text of objects in a non-table format.
pub fn render_objects(
    output: &Output,
    typed: &[(&ResourceType, Value)],
    by_name: bool,
    no_headers: bool,
) -> Result<String> {
    Ok(match output {
        Output::Name => typed.iter().map(|(t, v)| object_name(t, v) + "\n").collect(),
        Output::Json => {
            let doc = document(typed.iter().map(|(_, v)| v.clone()).collect(), by_name);
            serde_json::to_string_pretty(&doc)? + "\n"
        }
        Output::Yaml => serde_yaml_ng::to_string(&document(typed.iter().map(|(_, v)| v.clone()).collect(), by_name))?,
        Output::JsonPath(t) => t.render(&document(typed.iter().map(|(_, v)| v.clone()).collect(), by_name))?,
        Output::CustomColumns(cols) => {
            let header: Vec<String> = cols.iter().map(|(h, _)| h.clone()).collect();
            let mut rows = Vec::new();
            for (_, v) in typed {
                let mut row = Vec::new();
                for (_, path) in cols {
                    let values = path.values(v)?;
                    let texts: Vec<String> = values
                        .iter()
                        .filter(|v| !v.is_null())
                        .map(|v| match v {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        })
                        .collect();
                    row.push(if texts.is_empty() { "<none>".to_string() } else { texts.join(",") });
                }
                rows.push(row);
            }
            let header = if no_headers { None } else { Some(header) };
            table_text(header.as_deref(), &rows)
        }
        Output::Table | Output::Wide => bail!("table output is printed from the server's Table"),
    })
}

/// How a Table is shown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableOptions {
    /// `-o wide`: columns of every priority.
    pub wide: bool,
    /// `-A` on a namespaced type: a NAMESPACE column first.
    pub namespace_column: bool,
    /// `--show-labels`: a LABELS column last.
    pub show_labels: bool,
    /// Several types in one `get`: names are written `pod/x`.
    pub prefix_kind: bool,
}

/// The header and rows of a `meta.k8s.io/v1` Table, as kubectl lays them out.
pub fn table_rows(t: &ResourceType, table: &Value, opts: TableOptions) -> Result<(Vec<String>, Vec<Vec<String>>)> {
    if table.get("columnDefinitions").and_then(Value::as_array).is_none() {
        bail!("the server's Table has no columnDefinitions");
    }
    let shown = shown_columns(table, opts.wide);
    let mut header = Vec::new();
    if opts.namespace_column {
        header.push("NAMESPACE".to_string());
    }
    header.extend(shown.iter().map(|(_, c)| c.get("name").and_then(Value::as_str).unwrap_or("").to_uppercase()));
    if opts.show_labels {
        header.push("LABELS".to_string());
    }
    let mut rows = Vec::new();
    for row in table.get("rows").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
        rows.push(table_row(t, row, &shown, opts));
    }
    Ok((header, rows))
}

/// One Table row's cells (the `rows[]` entry of a Table or a watch event).
pub fn table_row(t: &ResourceType, row: &Value, shown: &[(usize, Value)], opts: TableOptions) -> Vec<String> {
    let cells = row.get("cells").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let meta = row.pointer("/object/metadata");
    let mut out = Vec::new();
    if opts.namespace_column {
        out.push(meta.and_then(|m| m.get("namespace")).and_then(Value::as_str).unwrap_or("").to_string());
    }
    for (i, column) in shown {
        let mut text = cells.get(*i).map(cell_text).unwrap_or_default();
        if opts.prefix_kind && column.get("format").and_then(Value::as_str) == Some("name") {
            text = format!("{}/{text}", type_name(t));
        }
        out.push(text);
    }
    if opts.show_labels {
        out.push(labels_text(meta.and_then(|m| m.get("labels"))));
    }
    out
}

/// The columns a Table shows with these options (indexes into its cells).
pub fn shown_columns(table: &Value, wide: bool) -> Vec<(usize, Value)> {
    table
        .get("columnDefinitions")
        .and_then(Value::as_array)
        .map(|cols| {
            cols.iter()
                .enumerate()
                .filter(|(_, c)| wide || c.get("priority").and_then(Value::as_i64).unwrap_or(0) == 0)
                .map(|(i, c)| (i, c.clone()))
                .collect()
        })
        .unwrap_or_default()
}

fn cell_text(cell: &Value) -> String {
    match cell {
        Value::String(s) => s.clone(),
        Value::Null => "<none>".to_string(),
        other => other.to_string(),
    }
}

/// `a=b,c=d` sorted by key, as `--show-labels` prints them.
fn labels_text(labels: Option<&Value>) -> String {
    let Some(map) = labels.and_then(Value::as_object).filter(|m| !m.is_empty()) else { return "<none>".into() };
    let mut pairs: Vec<String> = map.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or(""))).collect();
    pairs.sort();
    pairs.join(",")
}

/// Column widths of a header and rows (in characters).
pub fn column_widths<S: AsRef<str>>(header: &[S], rows: &[Vec<String>]) -> Vec<usize> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.as_ref().chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            let n = c.chars().count();
            match widths.get_mut(i) {
                Some(w) => *w = (*w).max(n),
                None => widths.push(n),
            }
        }
    }
    widths
}

/// kubectl's tabwriter: cells padded by 3 spaces to at least 6 characters; the last cell unpadded.
pub fn table_line<S: AsRef<str>>(cells: &[S], widths: &[usize]) -> String {
    let mut out = String::new();
    for (i, c) in cells.iter().enumerate() {
        let c = c.as_ref();
        out.push_str(c);
        if i + 1 < cells.len() {
            // A cell wider than its column (a watched row) pushes the rest right by the padding.
            let column = (widths.get(i).copied().unwrap_or(0) + 3).max(6);
            out.extend(std::iter::repeat_n(' ', column.saturating_sub(c.chars().count()).max(3)));
        }
    }
    out.trim_end().to_string()
}

/// A table as text, one line per row, header first (when given), each line ending in a newline.
pub fn table_text(header: Option<&[String]>, rows: &[Vec<String>]) -> String {
    let widths = column_widths(header.unwrap_or_default(), rows);
    let mut out = String::new();
    for line in header.into_iter().map(|h| h.to_vec()).chain(rows.iter().cloned()) {
        out.push_str(&table_line(&line, &widths));
        out.push('\n');
    }
    out
}

/// Writes to stdout and flushes; a closed pipe comes back as an error the
/// caller ends quietly on (see `main`).
pub fn emit(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Whether an error is stdout's reader having gone away (`| head`).
pub fn is_closed_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| e.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringleader_registry::resources;

    /// A pod Table as kube-apiserver sends it (`includeObject=Metadata`).
    fn pod_table() -> Value {
        json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": "7"},
            "columnDefinitions": [
                {"name": "Name", "type": "string", "format": "name", "description": "", "priority": 0},
                {"name": "Ready", "type": "string", "format": "", "description": "", "priority": 0},
                {"name": "Status", "type": "string", "format": "", "description": "", "priority": 0},
                {"name": "Restarts", "type": "string", "format": "", "description": "", "priority": 0},
                {"name": "Age", "type": "string", "format": "", "description": "", "priority": 0},
                {"name": "IP", "type": "string", "format": "", "description": "", "priority": 1},
                {"name": "Node", "type": "string", "format": "", "description": "", "priority": 1}],
            "rows": [
                {"cells": ["demo-master-0", "0/1", "Completed", 0, "5m", "10.0.0.1", "h100-1"],
                 "object": {"kind": "PartialObjectMetadata", "metadata": {"name": "demo-master-0", "namespace": "default",
                            "labels": {"job": "demo", "app": "x"}}}},
                {"cells": ["demo-worker-10", "1/1", "Running", "2 (3m ago)", "12m", "10.0.0.2", null],
                 "object": {"kind": "PartialObjectMetadata", "metadata": {"name": "demo-worker-10", "namespace": "team"}}}]})
    }

    fn print(opts: TableOptions) -> String {
        let (header, rows) = table_rows(resources::PODS, &pod_table(), opts).unwrap_or_default();
        table_text(Some(&header), &rows)
    }

    #[test]
    fn tables_print_priority_zero_columns_unless_wide() {
        assert_eq!(
            print(TableOptions::default()),
            "NAME             READY   STATUS      RESTARTS     AGE\n\
             demo-master-0    0/1     Completed   0            5m\n\
             demo-worker-10   1/1     Running     2 (3m ago)   12m\n"
        );
        assert_eq!(
            print(TableOptions { wide: true, namespace_column: true, ..Default::default() }),
            "NAMESPACE   NAME             READY   STATUS      RESTARTS     AGE   IP         NODE\n\
             default     demo-master-0    0/1     Completed   0            5m    10.0.0.1   h100-1\n\
             team        demo-worker-10   1/1     Running     2 (3m ago)   12m   10.0.0.2   <none>\n"
        );
    }

    #[test]
    fn several_types_prefix_names_and_labels_come_last() {
        let out = print(TableOptions { prefix_kind: true, show_labels: true, ..Default::default() });
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "NAME                 READY   STATUS      RESTARTS     AGE   LABELS");
        assert_eq!(lines[1], "pod/demo-master-0    0/1     Completed   0            5m    app=x,job=demo");
        assert_eq!(lines[2], "pod/demo-worker-10   1/1     Running     2 (3m ago)   12m   <none>");
    }

    #[test]
    fn narrow_columns_are_six_wide_as_kubectls_tabwriter_makes_them() {
        let widths = column_widths(&["A", "B"], &[vec!["x".into(), "y".into()]]);
        assert_eq!(table_line(&["A", "B"], &widths), "A     B");
        // A watched row keeps the first table's widths, pushed when wider.
        let widths = column_widths(&["NAME", "AGE"], &[vec!["a".into(), "1s".into()]]);
        assert_eq!(table_line(&["longer-name", "2s", "(deleted)"], &widths), "longer-name   2s    (deleted)");
    }

    #[test]
    fn names_are_kind_and_group_as_kubectl_writes_them() {
        let pod = json!({"metadata": {"name": "x"}});
        assert_eq!(object_name(resources::PODS, &pod), "pod/x");
        let pj = ringleader_server::find("pytorchjobs").map(|t| object_name(t, &pod));
        assert_eq!(pj.as_deref(), Some("pytorchjob.kubeflow.org/x"));
        let vc = ringleader_server::find("vcjob").map(type_name);
        assert_eq!(vc.as_deref(), Some("job.batch.volcano.sh"));
    }

    #[test]
    fn one_named_object_prints_as_itself_and_lists_as_list() {
        let a = json!({"kind": "Pod", "metadata": {"name": "a"}});
        assert_eq!(document(vec![a.clone()], true), a);
        let list = document(vec![a.clone()], false);
        assert_eq!(list["kind"], "List");
        assert_eq!(list["items"][0], a);
    }

    #[test]
    fn custom_columns_print_none_for_missing_and_join_many() {
        let out = Output::parse(Some(
            "custom-columns=NAME:.metadata.name,IMAGES:.spec.containers[*].image,NODE:.spec.nodeName",
        ));
        let out = out.unwrap_or(Output::Table);
        let pods = [
            (
                resources::PODS,
                json!({"metadata": {"name": "a"}, "spec": {"containers": [{"image": "nginx"}, {"image": "redis"}]}}),
            ),
            (resources::PODS, json!({"metadata": {"name": "bb"}, "spec": {"nodeName": "n1", "containers": []}})),
        ];
        assert_eq!(
            render_objects(&out, &pods, false, false).map_err(|e| e.to_string()).as_deref(),
            Ok("NAME   IMAGES        NODE\na      nginx,redis   <none>\nbb     <none>        n1\n")
        );
        assert_eq!(
            render_objects(&out, &pods, false, true).ok().as_deref(),
            Some("a     nginx,redis   <none>\nbb    <none>        n1\n")
        );
        let file = custom_columns_file("NAME   NODE\n.metadata.name   .spec.nodeName\n").map(|c| c.len());
        assert_eq!(file.ok(), Some(2));
    }

    #[test]
    fn unknown_formats_name_the_allowed_ones() {
        let err = Output::parse(Some("table")).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("-o table") && err.contains("jsonpath=TEMPLATE"), "{err}");
        let err = Output::parse(Some("custom-columns=NAME")).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("not HEADER:PATH"), "{err}");
        assert_eq!(Output::parse(Some("name")).ok(), Some(Output::Name));
        assert_eq!(Output::parse(None).ok(), Some(Output::Table));
    }

    #[test]
    fn a_closed_pipe_is_told_apart_from_other_failures() {
        let pipe = anyhow::Error::from(std::io::Error::from(std::io::ErrorKind::BrokenPipe)).context("writing");
        assert!(is_closed_pipe(&pipe));
        let other = anyhow::Error::from(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        assert!(!is_closed_pipe(&other));
        assert!(!is_closed_pipe(&anyhow!("broken pipe, said as text")));
    }
}
