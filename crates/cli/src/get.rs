//! `get`: the server's Tables (or objects, for `-o json|yaml|name|jsonpath|custom-columns`)
//! of one or several types, optionally followed with `-w`.

use crate::printer::{self, emit, Output, TableOptions};
use crate::support::{rt, server_error, types, Conn};
use anyhow::{bail, Result};
use clap::Args;
use futures_util::StreamExt;
use ringleader_client::Client;
use ringleader_client::{list_version, ListOptions};
use ringleader_server::table::IncludeObject;
use ringleader_server::ResourceType;
use serde_json::{json, Value};

#[derive(Args, Debug)]
pub struct GetArgs {
    /// TYPE[,TYPE…] (pods, nodes, jobs, queues, podgroups, events, configmaps or any kind, plural or
    /// short name), or TYPE/NAME…
    pub resource: String,
    /// Names of objects of TYPE (or more TYPE/NAME).
    pub names: Vec<String>,
    /// Namespace.
    #[arg(short = 'n', long, default_value = "default")]
    pub namespace: String,
    /// All namespaces (a NAMESPACE column first).
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// json, yaml, name, wide, jsonpath=TEMPLATE, jsonpath-file=FILE, custom-columns=SPEC, custom-columns-file=FILE.
    #[arg(short = 'o', long)]
    pub output: Option<String>,
    /// Label selector: `a=b,c!=d`, `env in (prod,dev)`, `tier notin (x)`, `app`, `!canary`.
    #[arg(short = 'l', long)]
    pub selector: Option<String>,
    /// Field selector, e.g. `status.phase=Running,spec.nodeName=h100-1`.
    #[arg(long)]
    pub field_selector: Option<String>,
    /// Print tables without their header line.
    #[arg(long)]
    pub no_headers: bool,
    /// A LABELS column last.
    #[arg(long)]
    pub show_labels: bool,
    /// After listing, keep printing changes.
    #[arg(short = 'w', long)]
    pub watch: bool,
    #[command(flatten)]
    pub conn: Conn,
}

/// What one `get` asks for: types and, when named, the objects.
#[derive(Debug, PartialEq)]
pub struct Request {
    /// The types one command-line type covers (`jobs` is every job kind).
    pub types: Vec<&'static ResourceType>,
    /// Names (empty: list).
    pub names: Vec<String>,
}

/// `pods,nodes`, `pod x y` and `pod/x node/y` as the requests they are.
pub fn requests(resource: &str, names: &[String]) -> Result<Vec<Request>> {
    if resource.contains('/') {
        let mut out: Vec<Request> = Vec::new();
        for arg in std::iter::once(resource).chain(names.iter().map(String::as_str)) {
            let Some((kind, name)) = arg.split_once('/') else {
                bail!("{arg:?}: when one argument is TYPE/NAME, all must be (kubectl's rule)");
            };
            if name.is_empty() {
                bail!("{arg:?}: the name after the `/` is empty");
            }
            let types = types(kind)?;
            match out.iter_mut().find(|r| r.types == types) {
                Some(r) => r.names.push(name.to_string()),
                None => out.push(Request { types, names: vec![name.to_string()] }),
            }
        }
        return Ok(out);
    }
    let kinds: Vec<&str> = resource.split(',').filter(|k| !k.is_empty()).collect();
    if kinds.is_empty() {
        bail!("resource type: required, e.g. pods or pods,nodes");
    }
    kinds.into_iter().map(|k| Ok(Request { types: types(k)?, names: names.to_vec() })).collect()
}

fn namespace_of<'a>(args: &'a GetArgs, t: &ResourceType) -> Option<&'a str> {
    if !t.namespaced || args.all_namespaces {
        None
    } else {
        Some(args.namespace.as_str())
    }
}

pub fn get(args: GetArgs) -> Result<()> {
    let output = Output::parse(args.output.as_deref())?;
    let requests = requests(&args.resource, &args.names)?;
    let client = args.conn.client()?;
    let options = ListOptions { label_selector: args.selector.clone(), field_selector: args.field_selector.clone() };
    rt()?.block_on(async {
        if output.wants_table() {
            tables(&client, &args, &requests, &options, output == Output::Wide).await
        } else {
            objects(&client, &args, &requests, &options, &output).await
        }
    })
}

/// Errors of named objects that were not found: kubectl prints the others first.
struct Missing(Vec<anyhow::Error>);

impl Missing {
    fn finish(self) -> Result<()> {
        let mut errors = self.0.into_iter();
        let Some(last) = errors.next_back() else { return Ok(()) };
        for e in errors {
            eprintln!("{}", crate::support::error_line(&e));
        }
        Err(last)
    }
}

/// Gets a named object from the first of `types` that has it.
async fn named<F, Fut>(types: &[&'static ResourceType], fetch: F) -> Result<Option<(&'static ResourceType, Value)>>
where
    F: Fn(&'static ResourceType) -> Fut,
    Fut: std::future::Future<Output = std::result::Result<Value, ringleader_client::ClientError>>,
{
    let mut first_missing = None;
    for t in types {
        match fetch(t).await {
            Ok(v) => return Ok(Some((t, v))),
            Err(e) if e.is_not_found() => {
                first_missing.get_or_insert(e);
            }
            Err(e) => return Err(server_error(e)),
        }
    }
    match first_missing {
        Some(e) => Err(server_error(e)),
        None => Ok(None),
    }
}

async fn tables(
    client: &Client,
    args: &GetArgs,
    requests: &[Request],
    options: &ListOptions,
    wide: bool,
) -> Result<()> {
    let now = ringleader_api::time::now();
    let mut tables: Vec<(&'static ResourceType, Value)> = Vec::new();
    let mut missing = Missing(Vec::new());
    let mut version = 0;
    for r in requests {
        for t in &r.types {
            if !r.names.is_empty() {
                continue;
            }
            let answer = client.list_table(t, namespace_of(args, t), options).await.map_err(server_error)?;
            version = version.max(list_version(&answer).unwrap_or(0));
            tables.push((t, as_table(t, answer, now)));
        }
        for name in &r.names {
            let found = named(&r.types, |t| client.get_table(t, namespace_of(args, t).unwrap_or(""), name)).await;
            match found {
                Ok(Some((t, answer))) => {
                    version = version.max(list_version(&answer).unwrap_or(0));
                    tables.push((t, as_table(t, answer, now)));
                }
                Ok(None) => {}
                Err(e) => missing.0.push(e),
            }
        }
    }
    let rows_of = |t: &Value| t.get("rows").and_then(Value::as_array).map_or(0, Vec::len);
    let kinds_with_rows = {
        let mut kinds: Vec<&str> = tables.iter().filter(|(_, t)| rows_of(t) > 0).map(|(rt, _)| rt.kind).collect();
        kinds.sort_unstable();
        kinds.dedup();
        kinds.len()
    };
    let prefix_kind = kinds_with_rows > 1 || requests.len() > 1;
    let base = TableOptions { wide, namespace_column: false, show_labels: args.show_labels, prefix_kind };
    // Consecutive tables with the same columns print as one (the job kinds of `get jobs`).
    let mut out = String::new();
    let mut first_block: Option<Layout> = None;
    let mut i = 0;
    while i < tables.len() {
        let columns = tables[i].1.get("columnDefinitions").cloned().unwrap_or(Value::Null);
        let mut j = i;
        let mut header = Vec::new();
        let mut rows = Vec::new();
        let opts = TableOptions { namespace_column: args.all_namespaces && tables[i].0.namespaced, ..base };
        while j < tables.len() && tables[j].1.get("columnDefinitions").cloned().unwrap_or(Value::Null) == columns {
            let (h, r) = printer::table_rows(tables[j].0, &tables[j].1, opts)?;
            header = h;
            rows.extend(r);
            j += 1;
        }
        if !rows.is_empty() || (args.watch && first_block.is_none()) {
            if !out.is_empty() {
                out.push('\n');
            }
            let shown_header = if args.no_headers { None } else { Some(header.as_slice()) };
            out.push_str(&printer::table_text(shown_header, &rows));
            if first_block.is_none() {
                let widths = printer::column_widths(&header, &rows);
                first_block = Some(Layout { shown: printer::shown_columns(&tables[i].1, wide), widths, opts });
            }
        }
        i = j;
    }
    if out.is_empty() && missing.0.is_empty() && !args.watch {
        if args.all_namespaces || requests.iter().all(|r| r.types.iter().all(|t| !t.namespaced)) {
            eprintln!("No resources found");
        } else {
            eprintln!("No resources found in {} namespace.", args.namespace);
        }
    }
    emit(&out)?;
    if !args.watch {
        return missing.finish();
    }
    missing.finish()?;
    let Layout { shown, widths, opts } = first_block.unwrap_or_default();
    let mut merged = watch_all(client, args, requests, options, version).await?;
    while let Some((t, event)) = merged.next().await {
        let event = event.map_err(server_error)?;
        if event.event_type == "BOOKMARK" {
            continue;
        }
        let table = as_table(t, event.object, ringleader_api::time::now());
        // An event's Table may leave out columnDefinitions (kube sends them once): then the first table's.
        let own = printer::shown_columns(&table, wide);
        let shown = if own.is_empty() { shown.clone() } else { own };
        let opts = TableOptions { namespace_column: args.all_namespaces && t.namespaced, ..opts };
        let mut text = String::new();
        for row in table.get("rows").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
            let mut cells = printer::table_row(t, row, &shown, opts);
            if event.event_type == "DELETED" {
                cells.push("(deleted)".into());
            }
            text.push_str(&printer::table_line(&cells, &widths));
            text.push('\n');
        }
        emit(&text)?;
    }
    Ok(())
}

/// One watch per type (per name, for named objects), merged; from after
/// `version` (`0`: the objects' current state first, as ADDED).
async fn watch_all(
    client: &Client,
    args: &GetArgs,
    requests: &[Request],
    options: &ListOptions,
    version: u64,
) -> Result<futures_util::stream::BoxStream<'static, (&'static ResourceType, WatchResult)>> {
    let mut streams = Vec::new();
    for r in requests {
        // kubectl watches a named object through `metadata.name=NAME`.
        let per_name: Vec<ListOptions> = if r.names.is_empty() {
            vec![options.clone()]
        } else {
            r.names
                .iter()
                .map(|n| ListOptions { field_selector: Some(format!("metadata.name={n}")), ..options.clone() })
                .collect()
        };
        for &t in &r.types {
            for o in &per_name {
                let from = Some(version).filter(|v| *v > 0);
                let stream = client.watch_table(t, namespace_of(args, t), o, from).await.map_err(server_error)?;
                streams.push(stream.map(move |e| (t, e)));
            }
        }
    }
    Ok(futures_util::stream::select_all(streams).boxed())
}

type WatchResult = std::result::Result<ringleader_client::WatchEvent, ringleader_client::ClientError>;

/// The columns of the first table printed: watched rows keep them, as kubectl does.
#[derive(Default)]
struct Layout {
    shown: Vec<(usize, Value)>,
    widths: Vec<usize>,
    opts: TableOptions,
}

/// The server's answer as a Table: itself when it is one, else the objects
/// laid out by the same columns the server uses (`ringleader_server::table`),
/// for a server that does not make Tables.
fn as_table(t: &ResourceType, mut answer: Value, now: f64) -> Value {
    if answer.get("kind").and_then(Value::as_str) == Some("Table") {
        return answer;
    }
    let items = match answer.get_mut("items").and_then(Value::as_array_mut) {
        Some(items) => std::mem::take(items),
        None => vec![answer],
    };
    ringleader_server::table::table_for(t, items, json!({}), IncludeObject::Metadata, "v1", now)
}

async fn objects(
    client: &Client,
    args: &GetArgs,
    requests: &[Request],
    options: &ListOptions,
    output: &Output,
) -> Result<()> {
    let mut typed: Vec<(&'static ResourceType, Value)> = Vec::new();
    let mut missing = Missing(Vec::new());
    let mut version = 0;
    let by_name = requests.iter().all(|r| !r.names.is_empty());
    for r in requests {
        for t in &r.types {
            if r.names.is_empty() {
                let list = client.list_with(t, namespace_of(args, t), options).await.map_err(server_error)?;
                version = version.max(list.resource_version);
                typed.extend(list.items.into_iter().map(|v| (*t, v)));
            }
        }
        for name in &r.names {
            match named(&r.types, |t| client.get(t, namespace_of(args, t).unwrap_or(""), name)).await {
                Ok(Some(found)) => {
                    let object_version = found.1.pointer("/metadata/resourceVersion").and_then(Value::as_str);
                    version = version.max(object_version.and_then(|v| v.parse().ok()).unwrap_or(0));
                    typed.push(found);
                }
                Ok(None) => {}
                Err(e) => missing.0.push(e),
            }
        }
    }
    if typed.is_empty() && !by_name && matches!(output, Output::Name | Output::CustomColumns(_)) && !args.watch {
        eprintln!("No resources found in {} namespace.", args.namespace);
    }
    let single = by_name && typed.len() == 1 && missing.0.is_empty();
    if !(typed.is_empty() && by_name) {
        emit(&printer::render_objects(output, &typed, single, args.no_headers)?)?;
    }
    missing.finish()?;
    if !args.watch {
        return Ok(());
    }
    let mut merged = watch_all(client, args, requests, options, version).await?;
    while let Some((t, event)) = merged.next().await {
        let event = event.map_err(server_error)?;
        if event.event_type == "BOOKMARK" {
            continue;
        }
        // A Table-speaking server sends Tables; the object is in its row.
        let object = match event.object.pointer("/rows/0/object") {
            Some(o) if event.object.get("kind").and_then(Value::as_str) == Some("Table") => o.clone(),
            _ => event.object,
        };
        emit(&printer::render_objects(output, &[(t, object)], true, true)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use ringleader_registry::resources;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        get: GetArgs,
    }

    #[test]
    fn types_and_names_become_requests() {
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let r = requests("pods,nodes", &[]).unwrap_or_default();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].types, vec![resources::PODS]);
        let r = requests("pod/a", &names(&["pod/b", "node/n1"])).unwrap_or_default();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].names, names(&["a", "b"]));
        assert_eq!(r[1].names, names(&["n1"]));
        let err = requests("pod/a", &names(&["b"])).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("all must be"), "{err}");
        let err = requests("pods,gizmos", &[]).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("gizmos"), "{err}");
        assert!(requests("jobs", &[]).is_ok_and(|r| r[0].types.len() > 1));
    }

    #[test]
    fn get_takes_kubectls_flags() {
        let cli = Cli::try_parse_from([
            "get",
            "pods",
            "a",
            "b",
            "-A",
            "-o",
            "jsonpath={.items[*].metadata.name}",
            "-l",
            "app in (x,y),!canary",
            "--field-selector",
            "status.phase=Running",
            "--no-headers",
            "--show-labels",
            "-w",
        ]);
        let args = cli.map(|c| c.get).map_err(|e| e.to_string());
        let args = args.as_ref();
        assert_eq!(args.map(|a| a.names.clone()), Ok(vec!["a".to_string(), "b".to_string()]));
        assert_eq!(args.map(|a| a.selector.as_deref()), Ok(Some("app in (x,y),!canary")));
        assert_eq!(args.map(|a| a.field_selector.as_deref()), Ok(Some("status.phase=Running")));
        assert_eq!(
            args.map(|a| (a.all_namespaces, a.no_headers, a.show_labels, a.watch)),
            Ok((true, true, true, true))
        );
        // `get` has no --follow or --tail: those are `logs` flags.
        assert!(Cli::try_parse_from(["get", "pods", "--tail", "3"]).is_err());
    }

    #[test]
    fn plain_lists_become_tables_with_the_servers_columns() {
        let list = serde_json::json!({"kind": "PodList", "items": [
            {"metadata": {"name": "a", "creationTimestamp": "2026-11-23T09:55:00Z"}, "status": {"phase": "Succeeded"}}]});
        let table = as_table(resources::PODS, list, 1_795_428_000.0);
        let (header, rows) = printer::table_rows(resources::PODS, &table, TableOptions::default()).unwrap_or_default();
        assert_eq!(header[..3], ["NAME", "READY", "STATUS"]);
        assert_eq!(rows[0][0], "a");
        assert_eq!(rows[0][2], "Completed", "Succeeded shows as kubectl's Completed");
        assert!(header.contains(&"RESTARTS".to_string()));
    }
}
