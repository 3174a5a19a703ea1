//! `delete`: objects by name, by the documents of files, by selector or `--all`,
//! each reported as kubectl does (`pod "x" deleted`).

use crate::printer::{emit, type_name};
use crate::support::{rt, server_error, types, Conn};
use anyhow::{anyhow, bail, Result};
use clap::Args;
use ringleader_client::Client;
use ringleader_client::ListOptions;
use ringleader_server::ResourceType;
use serde_json::Value;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct DeleteArgs {
    /// TYPE[,TYPE…] (with names, `-l` or `--all`) or TYPE/NAME…
    pub resource: Option<String>,
    /// Names of objects of TYPE.
    pub names: Vec<String>,
    /// Files or directories of YAML/JSON documents whose objects to delete (`-` for stdin).
    #[arg(short = 'f', long = "filename")]
    pub files: Vec<PathBuf>,
    /// Namespace.
    #[arg(short = 'n', long, default_value = "default")]
    pub namespace: String,
    /// Every object of the type in the namespace.
    #[arg(long)]
    pub all: bool,
    /// The objects a label selector matches (`app=x`, `env in (a,b)`, `!canary`).
    #[arg(short = 'l', long)]
    pub selector: Option<String>,
    /// The objects a field selector matches (`status.phase=Failed`).
    #[arg(long)]
    pub field_selector: Option<String>,
    /// Seconds a pod gets to stop (0: at once).
    #[arg(long)]
    pub grace_period: Option<u64>,
    /// An object that does not exist is not an error.
    #[arg(long)]
    pub ignore_not_found: bool,
    #[command(flatten)]
    pub conn: Conn,
}

/// One object to delete.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub types: Vec<&'static ResourceType>,
    pub namespace: String,
    pub name: String,
}

/// Which objects the arguments name (selectors are resolved later, against the server).
#[derive(Debug, PartialEq)]
pub enum Selection {
    /// Named objects (from arguments or files).
    Named(Vec<Target>),
    /// Every object of these types matching a selector (`--all`: none).
    Selected(Vec<Vec<&'static ResourceType>>, ListOptions),
}

pub fn selection(args: &DeleteArgs) -> Result<Selection> {
    let selecting = args.all || args.selector.is_some() || args.field_selector.is_some();
    if !args.files.is_empty() {
        if args.resource.is_some() || selecting {
            bail!("-f: cannot be combined with TYPE, NAME, --all or -l (kubectl's rule)");
        }
        let docs = ringleader_api::document::load_all(&args.files)?;
        let mut targets = Vec::new();
        for d in docs {
            let api_version = d.value.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            let kind = d.value.get("kind").and_then(Value::as_str).unwrap_or("");
            let t = ringleader_registry::resources::by_kind(api_version, kind).ok_or_else(|| {
                anyhow!(
                    "{}[{}]: apiVersion {api_version:?} kind {kind:?} is not a type this server has",
                    d.source,
                    d.index
                )
            })?;
            let name = d.value.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
            if name.is_empty() {
                bail!("{}[{}] {kind}: metadata.name: required to delete it", d.source, d.index);
            }
            let ns = d.value.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or(&args.namespace);
            targets.push(Target { types: vec![t], namespace: ns.to_string(), name: name.to_string() });
        }
        return Ok(Selection::Named(targets));
    }
    let Some(resource) = args.resource.as_deref() else {
        bail!("resource: required: `delete TYPE NAME…`, `delete TYPE/NAME`, `delete TYPE --all|-l SEL` or `delete -f FILE`");
    };
    if resource.contains('/') {
        if selecting {
            bail!("{resource:?}: TYPE/NAME cannot be combined with --all or -l");
        }
        let mut targets = Vec::new();
        for arg in std::iter::once(resource).chain(args.names.iter().map(String::as_str)) {
            let Some((kind, name)) = arg.split_once('/').filter(|(_, n)| !n.is_empty()) else {
                bail!("{arg:?}: when one argument is TYPE/NAME, all must be");
            };
            targets.push(Target { types: types(kind)?, namespace: args.namespace.clone(), name: name.to_string() });
        }
        return Ok(Selection::Named(targets));
    }
    let type_sets: Vec<Vec<&'static ResourceType>> =
        resource.split(',').filter(|k| !k.is_empty()).map(types).collect::<Result<_>>()?;
    match (args.names.is_empty(), selecting) {
        (false, true) => bail!("names cannot be combined with --all or -l: give one or the other"),
        (true, false) => bail!(
            "{resource}: which? give NAME…, --all or -l SELECTOR (kubectl refuses to delete a whole type unasked)"
        ),
        (true, true) => Ok(Selection::Selected(
            type_sets,
            ListOptions { label_selector: args.selector.clone(), field_selector: args.field_selector.clone() },
        )),
        (false, false) => Ok(Selection::Named(
            type_sets
                .iter()
                .flat_map(|ts| {
                    args.names.iter().map(|n| Target {
                        types: ts.clone(),
                        namespace: args.namespace.clone(),
                        name: n.clone(),
                    })
                })
                .collect(),
        )),
    }
}

pub fn delete(args: DeleteArgs) -> Result<()> {
    let selection = selection(&args)?;
    let client = args.conn.client()?;
    rt()?.block_on(async {
        let targets = match selection {
            Selection::Named(targets) => targets,
            Selection::Selected(type_sets, options) => selected(&client, &args.namespace, &type_sets, &options).await?,
        };
        let mut failures = Vec::new();
        for target in &targets {
            match delete_one(&client, target, args.grace_period).await {
                Ok(line) => emit(&line)?,
                Err(e) if args.ignore_not_found && e.is_not_found() => {}
                Err(e) => failures.push(server_error(e)),
            }
        }
        let last = failures.pop();
        for e in &failures {
            eprintln!("{}", crate::support::error_line(e));
        }
        last.map_or(Ok(()), Err)
    })
}

/// The objects of the types that a selector (or `--all`) picks.
async fn selected(
    client: &Client,
    namespace: &str,
    type_sets: &[Vec<&'static ResourceType>],
    options: &ListOptions,
) -> Result<Vec<Target>> {
    let mut targets = Vec::new();
    for t in type_sets.iter().flatten() {
        let ns = if t.namespaced { Some(namespace) } else { None };
        let list = client.list_with(t, ns, options).await.map_err(server_error)?;
        for v in list.items {
            let name = v.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string();
            let ns = v.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or(namespace).to_string();
            targets.push(Target { types: vec![*t], namespace: ns, name });
        }
    }
    if targets.is_empty() {
        eprintln!("No resources found");
    }
    Ok(targets)
}

/// Deletes an object from the first of its types that has it; kubectl's line for it.
async fn delete_one(
    client: &Client,
    target: &Target,
    grace: Option<u64>,
) -> std::result::Result<String, ringleader_client::ClientError> {
    let mut missing = None;
    for t in &target.types {
        let ns = if t.namespaced { target.namespace.as_str() } else { "" };
        match client.delete(t, ns, &target.name, grace).await {
            Ok(_) => return Ok(format!("{} {:?} deleted\n", type_name(t), target.name)),
            Err(e) if e.is_not_found() => {
                missing.get_or_insert(e);
            }
            Err(e) => return Err(e),
        }
    }
    Err(missing.unwrap_or_else(|| ringleader_client::ClientError::Decode(format!("{}: no type", target.name))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use ringleader_registry::resources;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        delete: DeleteArgs,
    }

    fn parse(args: &[&str]) -> Result<Selection> {
        let cli = Cli::try_parse_from(std::iter::once("delete").chain(args.iter().copied()))?;
        selection(&cli.delete)
    }

    fn target(t: &'static ResourceType, ns: &str, name: &str) -> Target {
        Target { types: vec![t], namespace: ns.into(), name: name.into() }
    }

    #[test]
    fn names_and_type_slash_name_are_targets() {
        let got = parse(&["pods", "a", "b", "-n", "team"]).ok();
        assert_eq!(
            got,
            Some(Selection::Named(vec![target(resources::PODS, "team", "a"), target(resources::PODS, "team", "b")]))
        );
        let got = parse(&["pod/a", "configmap/c"]).ok();
        let cm = resources::find("configmaps").unwrap_or(resources::PODS);
        assert_eq!(
            got,
            Some(Selection::Named(vec![target(resources::PODS, "default", "a"), target(cm, "default", "c")]))
        );
    }

    #[test]
    fn all_and_selectors_select() {
        let got = parse(&["pods", "--all"]).ok();
        assert_eq!(got, Some(Selection::Selected(vec![vec![resources::PODS]], ListOptions::default())));
        let got = parse(&["pods", "-l", "app notin (x)"]).ok();
        let want = ListOptions { label_selector: Some("app notin (x)".into()), field_selector: None };
        assert_eq!(got, Some(Selection::Selected(vec![vec![resources::PODS]], want)));
    }

    #[test]
    fn ambiguous_deletes_are_refused() {
        for (args, says) in [
            (&["pods"][..], "which?"),
            (&["pods", "a", "--all"][..], "cannot be combined"),
            (&[][..], "resource: required"),
            (&["pod/a", "b"][..], "all must be"),
            (&["pods", "-f", "x.yaml"][..], "-f: cannot be combined"),
        ] {
            let err = parse(args).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.contains(says), "{args:?}: {err}");
        }
    }

    #[test]
    fn files_name_their_objects() {
        let dir = tempfile::tempdir().map_err(|e| e.to_string());
        let dir = dir.as_ref().map(|d| d.path().to_path_buf()).unwrap_or_default();
        let file = dir.join("objs.yaml");
        let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: team}\n";
        assert!(std::fs::write(&file, text).is_ok());
        let got = parse(&["-f", &file.display().to_string()]).ok();
        let cm = resources::find("configmaps").unwrap_or(resources::PODS);
        assert_eq!(got, Some(Selection::Named(vec![target(resources::PODS, "default", "a"), target(cm, "team", "c")])));
        assert!(std::fs::write(&file, "apiVersion: v1\nkind: Gizmo\nmetadata: {name: a}\n").is_ok());
        let err = parse(&["-f", &file.display().to_string()]).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("Gizmo"), "{err}");
    }
}
