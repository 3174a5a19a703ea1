//! `ringleader accesskey create|list|enable|disable|delete|sign`: access key
//! pairs (AK/SK, seed 004's OpenAPI access) in `<data-dir>/accesskeys.yaml`
//! ([`ringleader_auth::access_key`]), and the headers of a signed request
//! for `curl` or any HTTP client.

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use ringleader_auth::access_key;
use std::path::PathBuf;

#[derive(Args)]
pub struct AccessKeyArgs {
    #[command(subcommand)]
    command: AccessKeyCommand,
}

#[derive(Args)]
struct DataDir {
    /// Data directory of the cluster (its `accesskeys.yaml` holds the keys).
    #[arg(long, env = "RINGLEADER_DATA_DIR", default_value = crate::support::DEFAULT_DATA_DIR)]
    data_dir: PathBuf,
}

#[derive(Subcommand)]
enum AccessKeyCommand {
    /// Make a key pair for a user; the secret key is printed once.
    Create {
        /// User the key signs as.
        #[arg(long)]
        user: String,
        /// A group the user is in (repeatable).
        #[arg(long = "group")]
        groups: Vec<String>,
        #[command(flatten)]
        dir: DataDir,
    },
    /// List the keys (never their secrets).
    List {
        /// Only this user's keys.
        #[arg(long)]
        user: Option<String>,
        #[command(flatten)]
        dir: DataDir,
    },
    /// A disabled key authenticates nothing until enabled again.
    Disable {
        access_key_id: String,
        #[command(flatten)]
        dir: DataDir,
    },
    /// Enable a disabled key.
    Enable {
        access_key_id: String,
        #[command(flatten)]
        dir: DataDir,
    },
    /// Delete a key.
    Delete {
        access_key_id: String,
        #[command(flatten)]
        dir: DataDir,
    },
    /// Print the `Authorization` and `X-RL-Timestamp` headers of a signed request (for `curl -H`).
    Sign {
        /// HTTP method.
        method: String,
        /// The request's URL or its path with the query (`/api/v1/namespaces/ws-a/pods?limit=5`).
        url: String,
        /// The request's body, from this file (none: empty).
        #[arg(long)]
        data_file: Option<PathBuf>,
        #[arg(long, env = "RINGLEADER_ACCESS_KEY")]
        access_key: String,
        #[arg(long, env = "RINGLEADER_SECRET_KEY", hide_env_values = true)]
        secret_key: String,
        /// Unix seconds to sign (default: now).
        #[arg(long)]
        timestamp: Option<i64>,
    },
}

pub fn run(args: AccessKeyArgs) -> Result<()> {
    match args.command {
        AccessKeyCommand::Create { user, groups, dir } => {
            let now = ringleader_api::time::now_rfc3339();
            let (ak, sk) = access_key::create(&dir.data_dir, &user, &groups, &now).map_err(anyhow::Error::msg)?;
            eprintln!("the secret key is shown this once: keep it");
            println!("accessKeyId: {ak}\nsecretAccessKey: {sk}\nuser: {user}");
        }
        AccessKeyCommand::List { user, dir } => {
            let file = access_key::read(&dir.data_dir).map_err(anyhow::Error::msg)?;
            let rows: Vec<Vec<String>> = file
                .keys
                .iter()
                .filter(|k| user.as_ref().is_none_or(|u| *u == k.user))
                .map(|k| {
                    let state = if k.disabled { "disabled" } else { "enabled" };
                    vec![k.access_key_id.clone(), k.user.clone(), state.to_string(), k.created_at.clone()]
                })
                .collect();
            crate::support::print_table(&["ACCESS-KEY-ID", "USER", "STATE", "CREATED"], &rows);
        }
        AccessKeyCommand::Disable { access_key_id, dir } => {
            access_key::set_disabled(&dir.data_dir, &access_key_id, true).map_err(anyhow::Error::msg)?;
            println!("accesskey/{access_key_id} disabled");
        }
        AccessKeyCommand::Enable { access_key_id, dir } => {
            access_key::set_disabled(&dir.data_dir, &access_key_id, false).map_err(anyhow::Error::msg)?;
            println!("accesskey/{access_key_id} enabled");
        }
        AccessKeyCommand::Delete { access_key_id, dir } => {
            access_key::delete(&dir.data_dir, &access_key_id).map_err(anyhow::Error::msg)?;
            println!("accesskey/{access_key_id} deleted");
        }
        AccessKeyCommand::Sign { method, url, data_file, access_key, secret_key, timestamp } => {
            let body = match &data_file {
                Some(f) => std::fs::read(f).map_err(|e| anyhow::anyhow!("--data-file {}: {e}", f.display()))?,
                None => Vec::new(),
            };
            let (path, query) = split_url(&url)?;
            let ts = timestamp.unwrap_or_else(|| ringleader_api::time::now() as i64).to_string();
            let auth = access_key::authorization(&access_key, &secret_key, &method, path, query, &ts, &body);
            println!("Authorization: {auth}\nX-RL-Timestamp: {ts}");
        }
    }
    Ok(())
}

/// The path and query of a URL (or of a path with a query).
fn split_url(url: &str) -> Result<(&str, &str)> {
    let rest = match url.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/", |i| &rest[i..]),
        None => url,
    };
    if !rest.starts_with('/') {
        bail!("{url:?}: give a URL (https://host:port/path?query) or a path starting with '/'");
    }
    let rest = rest.split('#').next().unwrap_or(rest);
    Ok(rest.split_once('?').unwrap_or((rest, "")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_path_and_query() {
        assert_eq!(split_url("https://127.0.0.1:6443/api/v1/pods?limit=5").ok(), Some(("/api/v1/pods", "limit=5")));
        assert_eq!(split_url("/api/v1/pods").ok(), Some(("/api/v1/pods", "")));
        assert_eq!(split_url("https://h:1").ok(), Some(("/", "")));
        assert!(split_url("api/v1").is_err());
    }
}
