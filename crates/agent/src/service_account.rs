//! What a pod gets to call the API as its ServiceAccount, as the kubelet
//! gives it: a token bound to the pod (an hour's life, renewed once 80% of
//! it has passed), the cluster's CA and the pod's namespace, in a
//! directory the agent keeps up to date, and `KUBERNETES_SERVICE_*` naming
//! the API server.
//!
//! Where the pod finds the directory depends on the runtime: a container
//! (CRI) has it bind-mounted read-only at
//! `/var/run/secrets/kubernetes.io/serviceaccount`; a host process (the
//! process runtime, which has no mount namespace of its own unless
//! sandboxed) finds it at that path re-rooted in its sandbox — as the
//! files of `ringleader.io/files` are — which is relative to its working
//! directory, and whose full path is in `RINGLEADER_SERVICE_ACCOUNT_DIR`.

use ringleader_api::kinds::service_account::MOUNT_PATH;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The life of a pod's token (the kubelet asks for an hour).
pub const TOKEN_SECONDS: i64 = 3600;
/// Env var naming where a process-runtime pod finds its account's files.
pub const DIR_ENV: &str = "RINGLEADER_SERVICE_ACCOUNT_DIR";

/// Who mints pods' tokens: a TokenRequest bound to the pod, as the
/// kubelet sends one (the embedded agent's is the server's own signer).
pub trait TokenSource: Send + Sync {
    /// A token for `account` in `namespace` bound to pod `pod` (uid
    /// `pod_uid`), valid `seconds` from `now` (Unix seconds): the token and
    /// when it expires, or why there is none (the account is missing…).
    fn token(
        &self,
        namespace: &str,
        account: &str,
        pod: &str,
        pod_uid: &str,
        seconds: i64,
        now: f64,
    ) -> Result<(String, f64), String>;
}

/// How pods reach the API: the server's address as seen from a pod, its
/// CA, and the source of tokens.
#[derive(Clone)]
pub struct ApiAccess {
    pub host: String,
    pub port: u16,
    /// PEM of the CA that signed the server's certificate (empty when it serves plain HTTP).
    pub ca_pem: String,
    pub tokens: Arc<dyn TokenSource>,
}

impl std::fmt::Debug for ApiAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiAccess").field("host", &self.host).field("port", &self.port).finish_non_exhaustive()
    }
}

impl ApiAccess {
    /// The service env the kubelet gives every pod for the `kubernetes`
    /// Service: `KUBERNETES_SERVICE_HOST`/`_PORT` and the docker-link style
    /// `KUBERNETES_PORT…` variables.
    pub fn env(&self) -> Vec<(String, String)> {
        let (h, p) = (&self.host, self.port);
        let url = format!("tcp://{h}:{p}");
        vec![
            ("KUBERNETES_SERVICE_HOST".into(), h.clone()),
            ("KUBERNETES_SERVICE_PORT".into(), p.to_string()),
            ("KUBERNETES_SERVICE_PORT_HTTPS".into(), p.to_string()),
            ("KUBERNETES_PORT".into(), url.clone()),
            (format!("KUBERNETES_PORT_{p}_TCP"), url),
            (format!("KUBERNETES_PORT_{p}_TCP_PROTO"), "tcp".into()),
            (format!("KUBERNETES_PORT_{p}_TCP_PORT"), p.to_string()),
            (format!("KUBERNETES_PORT_{p}_TCP_ADDR"), h.clone()),
        ]
    }
}

/// A pod's mounted token, kept fresh by the agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Mounted {
    /// The directory on the host holding `token`, `ca.crt` and `namespace`.
    pub dir: PathBuf,
    pub namespace: String,
    pub account: String,
    pub pod: String,
    pub pod_uid: String,
    /// When the token was issued and expires (Unix seconds).
    pub issued: f64,
    pub expires: f64,
}

impl Mounted {
    /// Whether the token should be renewed at `now`: once 80% of its life
    /// has passed, as the kubelet renews.
    pub fn due(&self, now: f64) -> bool {
        now >= self.issued + 0.8 * (self.expires - self.issued)
    }
}

/// The path the process runtime re-roots in the sandbox (no leading `/`).
pub fn sandbox_relative() -> &'static str {
    MOUNT_PATH.trim_start_matches('/')
}

/// Writes the directory's three files (each atomically, so a reader never
/// sees half a token).
pub fn write_dir(dir: &Path, token: &str, ca_pem: &str, namespace: &str) -> Result<(), String> {
    for (name, content) in [("token", token), ("ca.crt", ca_pem), ("namespace", namespace)] {
        let path = dir.join(name);
        crate::sandbox::write_file(&path, content.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed;
    impl TokenSource for Fixed {
        fn token(&self, _: &str, _: &str, _: &str, _: &str, s: i64, now: f64) -> Result<(String, f64), String> {
            Ok(("t".into(), now + s as f64))
        }
    }

    #[test]
    fn tokens_are_renewed_at_80_percent_and_the_service_env_names_the_server() -> Result<(), String> {
        let m = Mounted {
            dir: PathBuf::from("/x"),
            namespace: "ns".into(),
            account: "default".into(),
            pod: "p".into(),
            pod_uid: "u".into(),
            issued: 1000.0,
            expires: 4600.0,
        };
        assert!(!m.due(3879.0) && m.due(3880.0));
        let access = ApiAccess { host: "10.0.0.1".into(), port: 6443, ca_pem: String::new(), tokens: Arc::new(Fixed) };
        let env = access.env();
        assert!(env.contains(&("KUBERNETES_SERVICE_HOST".into(), "10.0.0.1".into())));
        assert!(env.contains(&("KUBERNETES_SERVICE_PORT".into(), "6443".into())));
        assert!(env.contains(&("KUBERNETES_PORT_6443_TCP_ADDR".into(), "10.0.0.1".into())));
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        write_dir(dir.path(), "tok", "CA", "ns")?;
        assert_eq!(std::fs::read_to_string(dir.path().join("token")).map_err(|e| e.to_string())?, "tok");
        assert_eq!(std::fs::read_to_string(dir.path().join("namespace")).map_err(|e| e.to_string())?, "ns");
        assert_eq!(sandbox_relative(), "var/run/secrets/kubernetes.io/serviceaccount");
        Ok(())
    }
}
