//! Who a request is: the user name and groups a bearer token stands for.
//!
//! Two sources, both in the data directory and both owner-only (0600):
//!
//! - `<data-dir>/token`, the admin token `up` writes into its kubeconfig:
//!   user [`ADMIN_USER`] in [`MASTERS_GROUP`], which the built-in
//!   `cluster-admin` binding covers (see [`crate::rbac`]).
//! - `<data-dir>/tokens.yaml`, the registry `ringleader token create` adds
//!   to: one entry per token with its user, groups and the SHA-256 of the
//!   token. Only the digest is kept, so reading the file (a backup, a
//!   misplaced copy) gives no credential; the token is printed once.
//!
//! A file rather than store objects: the registry must be writable while
//! the server is down (the first tokens are made before anything runs), a
//! token must never be readable through the API it unlocks, and a future
//! agent on another machine is given its credential out of band anyway.
//! The server re-reads the file when its size or modification time
//! changes, so a token created while `up` runs works at once.

use rand::RngCore;
use ringleader_client::Token;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Name of the token registry inside the data directory.
pub const TOKENS_FILE: &str = "tokens.yaml";
/// The user of the data directory's `token` file.
pub const ADMIN_USER: &str = "ringleader-admin";
/// Members may do anything RBAC allows anyone (bound to `cluster-admin`).
pub const MASTERS_GROUP: &str = "system:masters";
/// Every authenticated request is in this group, as in Kubernetes.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";
/// The group of every node agent.
pub const NODES_GROUP: &str = "system:nodes";
/// The prefix of a node agent's user name (`system:node:<node>`).
pub const NODE_USER_PREFIX: &str = "system:node:";
/// The identity of the scheduler and job controllers (the manager): the
/// only one that may bind pods (`spec.nodeName`, device annotations).
pub const SCHEDULER_USER: &str = "system:ringleader:scheduler";
/// The API server itself when it proxies a pod's log to the agent that
/// serves it; its token lives in the server's memory only.
pub const APISERVER_USER: &str = "system:ringleader:apiserver";
/// Longest user or group name accepted (a DNS subdomain's length).
const MAX_NAME_CHARS: usize = 253;

/// An authenticated user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// User name, e.g. `alice` or `system:node:n1`.
    pub user: String,
    /// Groups, always including [`AUTHENTICATED_GROUP`].
    pub groups: Vec<String>,
}

impl Identity {
    /// `user` in `groups` (plus [`AUTHENTICATED_GROUP`]).
    pub fn new(user: impl Into<String>, groups: impl IntoIterator<Item = impl Into<String>>) -> Identity {
        let mut groups: Vec<String> = groups.into_iter().map(Into::into).collect();
        if !groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
            groups.push(AUTHENTICATED_GROUP.to_string());
        }
        Identity { user: user.into(), groups }
    }

    /// The holder of the data directory's `token` file.
    pub fn admin() -> Identity {
        Identity::new(ADMIN_USER, [MASTERS_GROUP])
    }

    /// The scheduler/manager.
    pub fn scheduler() -> Identity {
        Identity::new(SCHEDULER_USER, Vec::<String>::new())
    }

    /// The agent of one node.
    pub fn node(name: &str) -> Identity {
        Identity::new(format!("{NODE_USER_PREFIX}{name}"), [NODES_GROUP])
    }

    /// Whether it is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// The node a node agent's identity is for (`None` for anyone else):
    /// both the user prefix and the nodes group are needed, so a user named
    /// `system:node:x` by mistake is not taken for an agent.
    pub fn node_name(&self) -> Option<&str> {
        self.user.strip_prefix(NODE_USER_PREFIX).filter(|n| !n.is_empty() && self.in_group(NODES_GROUP))
    }

    /// Whether it is the scheduler.
    pub fn is_scheduler(&self) -> bool {
        self.user == SCHEDULER_USER
    }
}

/// One entry of `tokens.yaml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenEntry {
    /// User name.
    pub user: String,
    /// Groups (without the implied `system:authenticated`).
    #[serde(default)]
    pub groups: Vec<String>,
    /// Lower-case hex SHA-256 of the token.
    pub sha256: String,
    /// When it was made (RFC 3339).
    #[serde(default)]
    pub created_at: String,
}

/// The whole `tokens.yaml`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenFile {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub tokens: Vec<TokenEntry>,
}

/// The path of the registry of a data directory.
pub fn tokens_path(data_dir: &Path) -> PathBuf {
    data_dir.join(TOKENS_FILE)
}

/// Lower-case hex SHA-256 of a token.
pub fn digest(token: &str) -> String {
    ring::digest::digest(&ring::digest::SHA256, token.as_bytes()).as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Equality in time independent of where `a` and `b` differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for (i, x) in a.iter().enumerate() {
        diff |= usize::from(x ^ b.get(i).copied().unwrap_or(0));
    }
    diff == 0
}

/// A user and its groups as `--user`/`--group` name them: the first
/// refused name's reason.
pub(crate) fn check_names(user: &str, groups: &[String]) -> Result<(), String> {
    if let Some(problem) = name_problem("--user", user) {
        return Err(problem);
    }
    groups.iter().find_map(|g| name_problem("--group", g)).map_or(Ok(()), Err)
}

/// Why a user or group name is refused (`None`: accepted).
pub fn name_problem(what: &str, name: &str) -> Option<String> {
    if name.is_empty() {
        return Some(format!("{what}: must not be empty"));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Some(format!("{what}: {name:?} is longer than {MAX_NAME_CHARS} characters"));
    }
    if name.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Some(format!("{what}: {name:?} must not contain whitespace or control characters"));
    }
    None
}

/// Reads `tokens.yaml` (an absent file is an empty registry).
pub fn read_tokens(path: &Path) -> Result<TokenFile, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(TokenFile::default()),
        Err(e) => return Err(format!("{}: cannot read: {e}", path.display())),
    };
    if text.trim().is_empty() {
        return Ok(TokenFile::default());
    }
    let file: TokenFile =
        serde_yaml_ng::from_str(&text).map_err(|e| format!("{}: not a token registry: {e}", path.display()))?;
    for (i, t) in file.tokens.iter().enumerate() {
        if t.sha256.len() != 64 || !t.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("{}: tokens[{i}].sha256: not 64 hex digits", path.display()));
        }
    }
    Ok(file)
}

/// Makes a new random token for `user` in `groups`, records its digest in
/// `<data_dir>/tokens.yaml` (created 0600) and returns the token.
/// `created_at` is the RFC 3339 time to record.
pub fn issue(data_dir: &Path, user: &str, groups: &[String], created_at: &str) -> Result<String, String> {
    check_names(user, groups)?;
    std::fs::create_dir_all(data_dir).map_err(|e| format!("{}: {e}", data_dir.display()))?;
    let path = tokens_path(data_dir);
    let mut file = read_tokens(&path)?;
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    file.api_version = "ringleader.io/v1alpha1".into();
    file.kind = "TokenRegistry".into();
    file.tokens.push(TokenEntry {
        user: user.to_string(),
        groups: groups.to_vec(),
        sha256: digest(&token),
        created_at: created_at.to_string(),
    });
    let text = serde_yaml_ng::to_string(&file).map_err(|e| format!("{}: cannot render: {e}", path.display()))?;
    let text =
        format!("# Written by `ringleader token create`: SHA-256 digests of bearer tokens, never the tokens.\n{text}");
    ringleader_client::tls::write_atomic(&path, text.as_bytes(), 0o600).map_err(|e| e.to_string())?;
    Ok(token)
}

/// What the registry file looked like when it was last read.
type Stamp = (Option<SystemTime>, u64);

#[derive(Default)]
struct Cached {
    stamp: Option<Stamp>,
    tokens: Arc<Vec<TokenEntry>>,
}

/// Maps bearer tokens to identities: the admin token, then the registry
/// file (re-read when it changes).
#[derive(Clone)]
pub struct Authenticator {
    admin: Token,
    /// The server's own token for requests to agents ([`APISERVER_USER`]).
    proxy: Option<Token>,
    registry: Option<Arc<PathBuf>>,
    cache: Arc<Mutex<Cached>>,
}

impl Authenticator {
    /// The admin token alone.
    pub fn new(admin: Token) -> Authenticator {
        Authenticator { admin, proxy: None, registry: None, cache: Arc::default() }
    }

    /// Also accepts `token` as [`APISERVER_USER`].
    pub fn with_proxy_token(mut self, token: Token) -> Authenticator {
        self.proxy = Some(token);
        self
    }

    /// Also accepts the tokens of the registry at `path`.
    pub fn with_registry(mut self, path: PathBuf) -> Authenticator {
        self.registry = Some(Arc::new(path));
        self.cache = Arc::default();
        self
    }

    /// The identity `presented` stands for, or `None` for an unknown token.
    pub fn identify(&self, presented: &str) -> Option<Identity> {
        if self.admin.matches(presented) {
            return Some(Identity::admin());
        }
        if self.proxy.as_ref().is_some_and(|p| p.matches(presented)) {
            return Some(Identity::new(APISERVER_USER, Vec::<String>::new()));
        }
        let wanted = digest(presented);
        let tokens = self.tokens();
        // Every entry is compared, in constant time each, so the answer's
        // timing says nothing about which entry (if any) matched.
        let mut found = None;
        for t in tokens.iter() {
            if same(t.sha256.to_ascii_lowercase().as_bytes(), wanted.as_bytes()) && found.is_none() {
                found = Some(Identity::new(t.user.clone(), t.groups.clone()));
            }
        }
        found
    }

    fn tokens(&self) -> Arc<Vec<TokenEntry>> {
        let Some(path) = &self.registry else { return Arc::default() };
        let stamp = std::fs::metadata(path.as_path()).ok().map(|m| (m.modified().ok(), m.len()));
        let Ok(mut cache) = self.cache.lock() else { return Arc::default() };
        if cache.stamp.is_some() && cache.stamp == stamp {
            return cache.tokens.clone();
        }
        let tokens = match stamp {
            None => Vec::new(),
            Some(_) => match read_tokens(path) {
                Ok(file) => file.tokens,
                Err(message) => {
                    // A broken registry authenticates nobody through it; the
                    // admin token still works, so it can be repaired.
                    tracing::warn!("{message}");
                    Vec::new()
                }
            },
        };
        cache.stamp = Some(stamp.unwrap_or((None, 0)));
        cache.tokens = Arc::new(tokens);
        cache.tokens.clone()
    }
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator").field("registry", &self.registry).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_tokens_identify_their_user_and_only_digests_are_kept() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let auth = Authenticator::new(Token::new("admin-secret")).with_registry(tokens_path(dir.path()));
        assert_eq!(auth.identify("admin-secret"), Some(Identity::admin()));
        assert_eq!(auth.identify("nope"), None);
        let alice = issue(dir.path(), "alice", &["team-a".into()], "2025-01-01T00:00:00Z")?;
        let bob = issue(dir.path(), "bob", &[], "2025-01-01T00:00:00Z")?;
        let a = auth.identify(&alice).ok_or("alice unknown")?;
        assert_eq!(a.user, "alice");
        assert!(a.in_group("team-a") && a.in_group(AUTHENTICATED_GROUP) && !a.in_group(MASTERS_GROUP));
        assert_eq!(auth.identify(&bob).map(|i| i.user), Some("bob".to_string()));
        assert_eq!(auth.identify(&alice[..63]), None);
        let text = std::fs::read_to_string(tokens_path(dir.path()))?;
        assert!(!text.contains(&alice) && text.contains(&digest(&alice)));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(tokens_path(dir.path()))?.permissions().mode() & 0o777, 0o600);
        }
        Ok(())
    }

    #[test]
    fn bad_names_and_files_are_refused_with_the_reason() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let e = issue(dir.path(), "", &[], "").err().unwrap_or_default();
        assert!(e.contains("--user: must not be empty"), "{e}");
        let e = issue(dir.path(), "a", &["b c".into()], "").err().unwrap_or_default();
        assert!(e.contains("--group") && e.contains("whitespace"), "{e}");
        std::fs::write(tokens_path(dir.path()), "tokens: [{user: x, sha256: short}]")?;
        let e = read_tokens(&tokens_path(dir.path())).err().unwrap_or_default();
        assert!(e.contains("tokens[0].sha256"), "{e}");
        let auth = Authenticator::new(Token::new("t")).with_registry(tokens_path(dir.path()));
        assert_eq!(auth.identify("short"), None);
        Ok(())
    }

    #[test]
    fn node_identities_need_the_group_too() {
        assert_eq!(Identity::node("n1").node_name(), Some("n1"));
        assert_eq!(Identity::new("system:node:n1", ["x"]).node_name(), None);
        assert!(Identity::scheduler().is_scheduler());
    }
}
