//! `apply -f FILE|DIR|-`: every document through the server's all-or-nothing
//! bulk apply, with `validate`'s warnings, printed as kubectl prints them.

use crate::printer::emit;
use crate::support::{rt, server_error, Conn};
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct ApplyArgs {
    /// Files or directories of YAML/JSON documents (`-` for stdin).
    #[arg(short = 'f', long = "filename", required = true)]
    pub files: Vec<PathBuf>,
    /// Unknown fields: `strict` (or `true`) refuses the apply, `warn` applies
    /// and warns, `ignore` (or `false`) applies silently — kubectl's values.
    #[arg(long, default_value = "strict", value_parser = ["strict", "true", "warn", "ignore", "false"])]
    pub validate: String,
    #[command(flatten)]
    pub conn: Conn,
}
pub fn run(args: ApplyArgs) -> Result<()> {
    let client = args.conn.client()?;
    let validation = match args.validate.as_str() {
        "warn" => "Warn",
        "ignore" | "false" => "Ignore",
        _ => "Strict",
    };
    let mut sources = Vec::new();
    for f in &args.files {
        if f.as_os_str() == "-" {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)?;
            sources.push(("-".to_string(), s));
        } else if f.is_dir() {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(f)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml" || e == "json"))
                .collect();
            entries.sort();
            for p in entries {
                sources.push((p.display().to_string(), std::fs::read_to_string(&p)?));
            }
        } else {
            sources
                .push((f.display().to_string(), std::fs::read_to_string(f).with_context(|| f.display().to_string())?));
        }
    }
    rt()?.block_on(async {
        for (source, body) in sources {
            let (results, warnings) =
                client.apply_documents_validated(&source, None, &body, Some(validation)).await.map_err(server_error)?;
            for w in warnings {
                eprintln!("Warning: {w}");
            }
            for w in crate::warnings::warning_lines(&source, &body) {
                eprintln!("{w}");
            }
            for r in results {
                let t = ringleader_registry::resources::by_kind(&r.api_version, &r.kind);
                let name = t.map_or(r.kind.to_lowercase(), |t| t.singular.to_string());
                emit(&format!("{name}/{} {}\n", r.name, r.action))?;
            }
        }
        Ok(())
    })
}
