//! `ringleader token create`: a bearer token for a user (and groups),
//! recorded by its digest in `<data-dir>/tokens.yaml` and printed once;
//! optionally a kubeconfig for it. What the user may do is what RBAC
//! bindings give the user or the groups (`kubectl create rolebinding …`).

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use ringleader_auth::identity;
use ringleader_client::kubeconfig::Kubeconfig;
use ringleader_client::TlsFiles;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct TokenArgs {
    #[command(subcommand)]
    command: TokenCommand,
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Make a token for a user, print it, and optionally write a kubeconfig for it.
    Create(CreateArgs),
}

#[derive(Args)]
pub struct CreateArgs {
    /// User name the token authenticates as (e.g. `alice`; `system:node:<node>` with
    /// `--group system:nodes` for an agent, `system:ringleader:scheduler` for the manager).
    #[arg(long)]
    user: String,
    /// A group the user is in (repeatable).
    #[arg(long = "group")]
    groups: Vec<String>,
    /// Data directory of the cluster (its `tokens.yaml` gets the token's digest).
    #[arg(long, env = "RINGLEADER_DATA_DIR", default_value = crate::support::DEFAULT_DATA_DIR)]
    data_dir: PathBuf,
    /// Also write a kubeconfig (mode 0600) for the token to this file.
    #[arg(long)]
    kubeconfig_out: Option<PathBuf>,
    /// API server URL for the kubeconfig (default: the one `up` recorded in the data directory).
    #[arg(long)]
    server: Option<String>,
    /// Namespace of the kubeconfig's context.
    #[arg(long, default_value = "default")]
    namespace: String,
}

pub fn run(args: TokenArgs) -> Result<()> {
    match args.command {
        TokenCommand::Create(args) => create(args),
    }
}

fn create(args: CreateArgs) -> Result<()> {
    if let Some(out) = &args.kubeconfig_out {
        // Checked before the token is recorded: a failure leaves nothing behind.
        kubeconfig_inputs(&args.data_dir, args.server.as_deref(), out)?;
    }
    let now = ringleader_api::time::now_rfc3339();
    let token = identity::issue(&args.data_dir, &args.user, &args.groups, &now).map_err(anyhow::Error::msg)?;
    if let Some(out) = &args.kubeconfig_out {
        let (server, ca) = kubeconfig_inputs(&args.data_dir, args.server.as_deref(), out)?;
        let mut config = Kubeconfig::single(&server, ca.as_deref(), &token);
        for c in &mut config.contexts {
            c.context.namespace = Some(args.namespace.clone());
        }
        for u in &mut config.users {
            u.name = args.user.clone();
        }
        for c in &mut config.contexts {
            c.context.user = args.user.clone();
        }
        config.write(out).with_context(|| format!("writing {}", out.display()))?;
        eprintln!("kubeconfig for {:?} written to {}", args.user, out.display());
    }
    println!("{token}");
    Ok(())
}

/// The server URL and (for HTTPS) the CA a kubeconfig for this data dir needs.
fn kubeconfig_inputs(data_dir: &Path, server: Option<&str>, out: &Path) -> Result<(String, Option<String>)> {
    let server = match server {
        Some(s) => s.trim().to_string(),
        None => {
            let file = crate::support::server_file(data_dir);
            std::fs::read_to_string(&file).map(|s| s.trim().to_string()).with_context(|| {
                format!(
                    "{}: no server address (start `ringleader up` with this --data-dir, or pass --server URL)",
                    file.display()
                )
            })?
        }
    };
    if !(server.starts_with("https://") || server.starts_with("http://")) {
        bail!("--server: {server:?} is not an http:// or https:// URL");
    }
    let ca = if server.starts_with("https://") {
        let path = TlsFiles::ca_path(data_dir);
        Some(
            std::fs::read_to_string(&path)
                .with_context(|| format!("{}: the cluster's CA, for {}", path.display(), out.display()))?,
        )
    } else {
        None
    };
    Ok((server, ca))
}
