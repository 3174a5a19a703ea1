//! The kubeconfig `ringleader up` writes into its data directory, and the
//! reading of one for [`crate::Client::from_kubeconfig`]. Writing gives
//! stock kubectl everything it needs in one file (server URL, the data
//! directory's CA, the bearer token); reading understands the subset of
//! the format such a file uses — one context, `certificate-authority-data`
//! or `certificate-authority`, `token` or `tokenFile` — which also covers
//! most hand-written ones.

use crate::tls::{write_atomic, TlsError};
use base64::Engine;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Name of the kubeconfig inside the data directory.
pub const KUBECONFIG_FILE: &str = "kubeconfig";

/// The cluster, user and context name `up` writes.
pub const NAME: &str = "ringleader";

/// The path of the kubeconfig of a data directory.
pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(KUBECONFIG_FILE)
}

/// The kubeconfig file format (the fields ringleader reads or writes).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Kubeconfig {
    #[serde(rename = "apiVersion", default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub clusters: Vec<NamedCluster>,
    #[serde(default)]
    pub users: Vec<NamedUser>,
    #[serde(default)]
    pub contexts: Vec<NamedContext>,
    #[serde(default)]
    pub current_context: String,
}

/// `clusters[]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct NamedCluster {
    pub name: String,
    pub cluster: Cluster,
}

/// `clusters[].cluster`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Cluster {
    pub server: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_authority_data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_authority: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure_skip_tls_verify: bool,
}

/// `users[]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct NamedUser {
    pub name: String,
    #[serde(default)]
    pub user: User,
}

/// `users[].user` (token auth only).
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct User {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(rename = "tokenFile", default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
}

impl std::fmt::Debug for User {
    // The token stays out of debug output and logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("User")
            .field("token", &self.token.as_ref().map(|_| ".."))
            .field("token_file", &self.token_file)
            .finish()
    }
}

/// `contexts[]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct NamedContext {
    pub name: String,
    pub context: Context,
}

/// `contexts[].context`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Context {
    pub cluster: String,
    #[serde(default)]
    pub user: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// What a client needs from a kubeconfig's current context.
#[derive(Clone)]
pub struct Connection {
    /// The API server URL.
    pub server: String,
    /// PEM of the CA to trust (`None`: the system's roots).
    pub ca_pem: Option<Vec<u8>>,
    /// Skip verifying the server's certificate (the kubeconfig asked for it).
    pub insecure_skip_tls_verify: bool,
    /// The bearer token (empty when the user has none).
    pub token: String,
    /// The context's namespace.
    pub namespace: Option<String>,
}

impl std::fmt::Debug for Connection {
    // The token stays out of debug output and logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("server", &self.server)
            .field("ca_pem", &self.ca_pem.as_ref().map(Vec::len))
            .field("insecure_skip_tls_verify", &self.insecure_skip_tls_verify)
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl Kubeconfig {
    /// The kubeconfig of one cluster: cluster, user and context all named
    /// [`NAME`], the context current, namespace `default`. `ca_pem` is
    /// embedded as `certificate-authority-data` (none for plain HTTP).
    pub fn single(server: &str, ca_pem: Option<&str>, token: &str) -> Kubeconfig {
        let engine = base64::engine::general_purpose::STANDARD;
        Kubeconfig {
            api_version: "v1".into(),
            kind: "Config".into(),
            clusters: vec![NamedCluster {
                name: NAME.into(),
                cluster: Cluster {
                    server: server.into(),
                    certificate_authority_data: ca_pem.map(|p| engine.encode(p.as_bytes())),
                    ..Cluster::default()
                },
            }],
            users: vec![NamedUser { name: NAME.into(), user: User { token: Some(token.into()), token_file: None } }],
            contexts: vec![NamedContext {
                name: NAME.into(),
                context: Context { cluster: NAME.into(), user: NAME.into(), namespace: Some("default".into()) },
            }],
            current_context: NAME.into(),
        }
    }

    /// Writes it to `path` atomically with mode 0600 (it holds the token).
    pub fn write(&self, path: &Path) -> Result<(), TlsError> {
        let text = serde_yaml_ng::to_string(self)
            .map_err(|e| TlsError { path: path.to_path_buf(), message: format!("cannot render: {e}") })?;
        write_atomic(path, text.as_bytes(), 0o600)
    }

    /// Reads and parses a kubeconfig file.
    pub fn read(path: &Path) -> Result<Kubeconfig, TlsError> {
        let err = |message: String| TlsError { path: path.to_path_buf(), message };
        let text = std::fs::read_to_string(path).map_err(|e| err(format!("cannot read: {e}")))?;
        serde_yaml_ng::from_str(&text).map_err(|e| err(format!("not a kubeconfig: {e}")))
    }

    /// The connection of `context` (`None`: `current-context`). Relative
    /// `certificate-authority` and `tokenFile` paths are taken from `dir`
    /// (the kubeconfig's directory), as kubectl does.
    pub fn connection(&self, context: Option<&str>, dir: &Path) -> Result<Connection, String> {
        let name = context.unwrap_or(&self.current_context);
        if name.is_empty() {
            return Err("no current-context".into());
        }
        let ctx = self
            .contexts
            .iter()
            .find(|c| c.name == name)
            .map(|c| &c.context)
            .ok_or_else(|| format!("context {name:?} not found"))?;
        let cluster = self
            .clusters
            .iter()
            .find(|c| c.name == ctx.cluster)
            .map(|c| &c.cluster)
            .ok_or_else(|| format!("cluster {:?} of context {name:?} not found", ctx.cluster))?;
        if cluster.server.is_empty() {
            return Err(format!("cluster {:?} has no server", ctx.cluster));
        }
        let ca_pem = match (&cluster.certificate_authority_data, &cluster.certificate_authority) {
            (Some(data), _) => Some(
                base64::engine::general_purpose::STANDARD
                    .decode(data.trim())
                    .map_err(|e| format!("cluster {:?}: certificate-authority-data is not base64: {e}", ctx.cluster))?,
            ),
            (None, Some(file)) => {
                let file = dir.join(file);
                Some(std::fs::read(&file).map_err(|e| format!("certificate-authority {}: {e}", file.display()))?)
            }
            (None, None) => None,
        };
        let user = self.users.iter().find(|u| u.name == ctx.user).map(|u| &u.user);
        let token = match user {
            Some(User { token: Some(t), .. }) => t.trim().to_string(),
            Some(User { token_file: Some(file), .. }) => {
                let file = dir.join(file);
                std::fs::read_to_string(&file)
                    .map_err(|e| format!("tokenFile {}: {e}", file.display()))?
                    .trim()
                    .to_string()
            }
            _ => String::new(),
        };
        Ok(Connection {
            server: cluster.server.trim_end_matches('/').to_string(),
            ca_pem,
            insecure_skip_tls_verify: cluster.insecure_skip_tls_verify,
            token,
            namespace: ctx.namespace.clone(),
        })
    }
}

/// Reads `path` and returns its current context's connection.
pub fn load(path: &Path) -> Result<Connection, TlsError> {
    let config = Kubeconfig::read(path)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    config.connection(None, dir).map_err(|message| TlsError { path: path.to_path_buf(), message })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_names_what_is_missing() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let file = dir.path().join("kubeconfig");
        Kubeconfig::single("https://127.0.0.1:6443", Some("PEM"), "secret").write(&file)?;
        let conn = load(&file)?;
        assert_eq!(conn.server, "https://127.0.0.1:6443");
        assert_eq!(conn.ca_pem.as_deref(), Some(&b"PEM"[..]));
        assert_eq!(conn.token, "secret");
        assert_eq!(conn.namespace.as_deref(), Some("default"));
        assert!(!format!("{conn:?}").contains("secret"));

        let mut other = Kubeconfig::read(&file)?;
        other.current_context = "elsewhere".into();
        let err = other.connection(None, dir.path()).err().ok_or("missing context accepted")?;
        assert!(err.contains("elsewhere"), "{err}");

        std::fs::write(dir.path().join("token"), "from-file\n")?;
        std::fs::write(dir.path().join("ca.crt"), "CA")?;
        let yaml = "apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\nclusters: [{name: k, cluster: {server: 'https://h:1/', certificate-authority: ca.crt}}]\nusers: [{name: u, user: {tokenFile: token}}]\n";
        std::fs::write(&file, yaml)?;
        let conn = load(&file)?;
        assert_eq!((conn.server.as_str(), conn.token.as_str()), ("https://h:1", "from-file"));
        assert_eq!(conn.ca_pem.as_deref(), Some(&b"CA"[..]));
        Ok(())
    }
}
