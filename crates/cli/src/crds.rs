//! `crds`: print the CustomResourceDefinitions of the job kinds ringleader
//! runs on Kubernetes (AscendJob, PyTorchJob, TFJob, MPIJob, Volcano Job,
//! Queue, PodGroup), for `kubectl apply -f -` on a cluster
//! that lacks them.

use crate::printer::emit;
use anyhow::{anyhow, bail, Result};
use clap::Args;
use serde_json::{json, Value};

#[derive(Args, Debug)]
pub struct CrdsArgs {
    /// Only these kinds (kind, plural, short name or plural.group), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// yaml (multi-document, the default) or json (one v1 List).
    #[arg(short = 'o', long, default_value = "yaml")]
    pub output: String,
}

pub fn run(args: CrdsArgs) -> Result<()> {
    let crds = if args.only.is_empty() {
        ringleader_server::crds::crds()
    } else {
        ringleader_server::crds::select(&args.only).map_err(|e| anyhow!(e))?
    };
    emit(&render(&crds, &args.output)?)
}

/// The CRDs as `-o` asks.
fn render(crds: &[Value], output: &str) -> Result<String> {
    match output {
        "yaml" => {
            let mut out = String::new();
            for crd in crds {
                out.push_str("---\n");
                out.push_str(&serde_yaml_ng::to_string(crd)?);
            }
            Ok(out)
        }
        "json" => {
            let list = json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": crds});
            Ok(serde_json::to_string_pretty(&list)? + "\n")
        }
        other => bail!("-o {other:?}: allowed are yaml, json"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_is_one_document_per_crd_and_reads_back() -> Result<()> {
        let crds = ringleader_server::crds::select(&["queue".into(), "pg".into()]).map_err(|e| anyhow!(e))?;
        let text = render(&crds, "yaml")?;
        let docs: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&text)
            .map(|d| serde::Deserialize::deserialize(d).map_err(anyhow::Error::from))
            .collect::<Result<_>>()?;
        assert_eq!(docs, crds);
        assert!(text.starts_with("---\napiVersion: apiextensions.k8s.io/v1\n"), "{text}");
        Ok(())
    }

    #[test]
    fn json_is_a_v1_list() -> Result<()> {
        let crds = ringleader_server::crds::crds();
        let list: Value = serde_json::from_str(&render(&crds, "json")?)?;
        assert_eq!(list["kind"], "List");
        assert_eq!(list["items"].as_array().map(Vec::len), Some(7));
        Ok(())
    }

    #[test]
    fn an_unknown_output_names_the_allowed_ones() {
        let err = render(&[], "wide").err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(err, "-o \"wide\": allowed are yaml, json");
    }
}
