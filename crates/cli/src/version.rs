//! `version`: this client's version and the server's `/version`, as
//! `kubectl version` prints them.

use crate::printer::emit;
use crate::support::{rt, server_error, Conn};
use anyhow::{bail, Result};
use clap::Args;
use serde_json::{json, Value};

#[derive(Args, Debug)]
pub struct VersionArgs {
    /// This client's version only (no server needed).
    #[arg(long)]
    pub client: bool,
    /// json or yaml.
    #[arg(short = 'o', long)]
    pub output: Option<String>,
    #[command(flatten)]
    pub conn: Conn,
}

/// The client's version in the shape of Kubernetes' `version.Info`.
pub fn client_info() -> Value {
    let version = env!("CARGO_PKG_VERSION");
    let mut parts = version.split('.');
    let major = parts.next().unwrap_or("0");
    let minor = parts.next().unwrap_or("0");
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    json!({
        "major": major,
        "minor": minor,
        "gitVersion": format!("v{version}"),
        "gitCommit": "",
        "gitTreeState": "",
        "buildDate": "",
        "goVersion": "",
        "compiler": "rustc",
        "platform": format!("{}/{arch}", std::env::consts::OS),
    })
}

/// `kubectl version`'s text: `Client Version: v…` then `Server Version: v…`.
pub fn text(client: &Value, server: Option<&Value>) -> String {
    let v = |info: &Value| info.get("gitVersion").and_then(Value::as_str).unwrap_or("").to_string();
    let mut out = format!("Client Version: {}\n", v(client));
    if let Some(server) = server {
        out.push_str(&format!("Server Version: {}\n", v(server)));
    }
    out
}

pub fn version(args: VersionArgs) -> Result<()> {
    if let Some(o) = args.output.as_deref() {
        if !matches!(o, "json" | "yaml") {
            bail!("-o {o}: allowed are json, yaml");
        }
    }
    let client_info = client_info();
    let server = if args.client {
        Ok(None)
    } else {
        match args.conn.client() {
            Ok(client) => rt()?.block_on(client.version()).map(Some).map_err(server_error),
            Err(e) => Err(e),
        }
    };
    // kubectl prints what it knows before failing on the server.
    let server_info = server.as_ref().ok().cloned().flatten();
    let mut doc = json!({"clientVersion": client_info});
    if let Some(s) = &server_info {
        doc["serverVersion"] = s.clone();
    }
    match args.output.as_deref() {
        Some("json") => emit(&(serde_json::to_string_pretty(&doc)? + "\n"))?,
        Some(_) => emit(&serde_yaml_ng::to_string(&doc)?)?,
        None => emit(&text(&client_info, server_info.as_ref()))?,
    }
    server.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_print_as_kubectl_prints_them() {
        let client = client_info();
        assert_eq!(client["gitVersion"], format!("v{}", env!("CARGO_PKG_VERSION")));
        let server = json!({"major": "1", "minor": "32", "gitVersion": "v1.32.0-ringleader"});
        assert_eq!(
            text(&client, Some(&server)),
            format!("Client Version: v{}\nServer Version: v1.32.0-ringleader\n", env!("CARGO_PKG_VERSION"))
        );
        assert_eq!(text(&client, None).lines().count(), 1);
    }
}
