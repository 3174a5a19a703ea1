//! `ringleader validate -f PATH ...`: one line per document, `PATH: Kind/name: ok`
//! or its errors, then the env-var warnings of valid jobs (`--strict` makes
//! them errors). Exit 0 when all are valid, 1 when any is invalid, 2 when a
//! path cannot be read or parsed.

use crate::warnings::env_warnings;
use ringleader_api::document::load_path;
use ringleader_api::{check_documents, Document, FieldError, Report};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct ValidateArgs {
    /// Files, directories (their .yaml/.yml/.json files) or `-` for stdin.
    #[arg(short = 'f', long = "filename", required = true, num_args = 1..)]
    files: Vec<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    output: Output,
    /// Treat env-var warnings (NCCL settings, undefined variables) as errors.
    #[arg(long)]
    strict: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Output {
    Text,
    Json,
}

pub fn run(args: ValidateArgs) -> anyhow::Result<u8> {
    let mut docs: Vec<Document> = Vec::new();
    let mut load_failed = false;
    for path in &args.files {
        for source in load_path(path) {
            match source {
                Ok(d) => docs.extend(d),
                Err(e) => {
                    eprintln!("error: {e}");
                    load_failed = true;
                }
            }
        }
    }
    let mut reports = check_documents(&docs);
    let mut warnings: Vec<Vec<FieldError>> = Vec::with_capacity(reports.len());
    for r in &mut reports {
        let found = env_warnings(r);
        if args.strict && !found.is_empty() {
            r.errors.extend(found);
            r.valid = false;
            warnings.push(Vec::new());
        } else {
            warnings.push(found);
        }
    }
    match args.output {
        Output::Text => {
            for (r, w) in reports.iter().zip(&warnings) {
                print_text(r, w);
            }
        }
        Output::Json => {
            #[derive(serde::Serialize)]
            struct Doc<'a> {
                #[serde(flatten)]
                report: &'a Report,
                warnings: &'a [FieldError],
            }
            #[derive(serde::Serialize)]
            struct Out<'a> {
                documents: Vec<Doc<'a>>,
            }
            let documents = reports.iter().zip(&warnings).map(|(report, warnings)| Doc { report, warnings }).collect();
            println!("{}", serde_json::to_string_pretty(&Out { documents })?);
        }
    }
    Ok(if load_failed {
        2
    } else if reports.iter().any(|r| !r.valid) {
        1
    } else {
        0
    })
}

fn print_text(r: &Report, warnings: &[FieldError]) {
    let object = if r.kind.is_empty() { format!("document {}", r.index) } else { format!("{}/{}", r.kind, r.name) };
    if r.valid {
        println!("{}: {object}: ok", r.path);
        for w in warnings {
            println!("  {}[{}] {}: warning: {w}", r.path, r.index, r.object());
        }
        return;
    }
    let plural = if r.errors.len() == 1 { "" } else { "s" };
    println!("{}: {object}: {} error{plural}", r.path, r.errors.len());
    for e in &r.errors {
        println!("  {}[{}] {}: {e}", r.path, r.index, r.object());
    }
}
