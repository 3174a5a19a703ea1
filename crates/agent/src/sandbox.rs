//! A pod's sandbox: `<data-dir>/nodes/<node>/pods/<namespace>_<pod>/`, its
//! working directory, holding the files of `ringleader.io/files` at the paths
//! the pod expects (re-rooted), its hosts file and its log.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

/// Name of the log file in the sandbox.
pub const LOG_FILE: &str = "log";
/// Name of the hosts file in the sandbox.
pub const HOSTS_FILE: &str = "hosts";

fn plain_name(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && !s.contains('/') && !s.contains('\0')
}

/// The sandbox of a pod, or why its names cannot be directory names.
pub fn sandbox_dir(data_dir: &Path, node: &str, namespace: &str, pod: &str) -> Result<PathBuf, String> {
    for (what, s) in [("spec.nodeName", node), ("metadata.name", pod)] {
        if !plain_name(s) {
            return Err(format!("{what}: {s:?} cannot name a sandbox directory"));
        }
    }
    let ns = if namespace.is_empty() { "default" } else { namespace };
    if !plain_name(ns) {
        return Err(format!("metadata.namespace: {ns:?} cannot name a sandbox directory"));
    }
    Ok(data_dir.join("nodes").join(node).join("pods").join(format!("{ns}_{pod}")))
}

/// Where a pod-visible path lies in the sandbox: absolute paths are
/// re-rooted at the sandbox, relative ones are taken from it; `..` is
/// refused so nothing is written outside.
pub fn in_sandbox(sandbox: &Path, pod_path: &str) -> Result<PathBuf, String> {
    let mut out = sandbox.to_path_buf();
    let mut any = false;
    for c in Path::new(pod_path).components() {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(p) => {
                out.push(p);
                any = true;
            }
            Component::ParentDir | Component::Prefix(_) => {
                return Err(format!("{pod_path:?}: '..' would leave the sandbox"));
            }
        }
    }
    if !any || pod_path.contains('\0') {
        return Err(format!("{pod_path:?}: not a file path"));
    }
    Ok(out)
}

/// Env values naming a file of `files` — or the directory directly holding
/// one, as `sshAuthMountPath`-style variables do — point into the sandbox.
pub fn rewrite_env(env: &mut [(String, String)], files: &BTreeMap<String, String>, sandbox: &Path) {
    let parent = |p: &str| Path::new(p).parent().and_then(Path::to_str).map(|s| s.trim_end_matches('/').to_string());
    for (_, value) in env.iter_mut() {
        let exact = files.contains_key(value.as_str());
        let dir = !exact
            && value.len() > 1
            && value.starts_with('/')
            && files.keys().any(|f| parent(f).as_deref() == Some(value.trim_end_matches('/')));
        if exact || dir {
            if let Ok(p) = in_sandbox(sandbox, value) {
                *value = p.to_string_lossy().into_owned();
            }
        }
    }
}

/// Keys must not be readable by others, or ssh refuses them: everything
/// under a `.ssh` directory, and private keys (`id_*` but `*.pub`) wherever
/// an `sshAuthMountPath` puts them.
fn private(path: &Path) -> bool {
    let key = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("id_") && !n.ends_with(".pub"));
    key || path.components().any(|c| c.as_os_str() == ".ssh")
}

/// Writes `content` at `path` atomically (temp file + rename), creating
/// parent directories, so a reader never sees half a file.
pub fn write_file(path: &Path, content: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = path.parent().ok_or_else(|| std::io::Error::other("no parent directory"))?;
    std::fs::DirBuilder::new().recursive(true).mode(if private(dir) { 0o700 } else { 0o755 }).create(dir)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{name}.tmp"));
    // The sandbox belongs to the pod's user: a link planted at the temp
    // name must be replaced, never written through (the agent is root).
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .mode(if private(path) { 0o600 } else { 0o644 })
            .open(&tmp)?;
        f.write_all(content)?;
    }
    std::fs::rename(&tmp, path)
}

/// Creates the sandbox and writes the pod's files; returns the working
/// directory (`workingDir` inside the sandbox, else the sandbox).
pub fn prepare(sandbox: &Path, files: &BTreeMap<String, String>, working_dir: Option<&str>) -> Result<PathBuf, String> {
    std::fs::create_dir_all(sandbox).map_err(|e| format!("{}: {e}", sandbox.display()))?;
    for (pod_path, content) in files {
        let at = in_sandbox(sandbox, pod_path).map_err(|e| format!("annotation {}: {e}", crate::pod::FILES))?;
        write_file(&at, content.as_bytes()).map_err(|e| format!("{}: {e}", at.display()))?;
    }
    let cwd = match working_dir {
        Some(w) => in_sandbox(sandbox, w).map_err(|e| format!("spec.containers[0].workingDir: {e}"))?,
        None => sandbox.to_path_buf(),
    };
    std::fs::create_dir_all(&cwd).map_err(|e| format!("{}: {e}", cwd.display()))?;
    Ok(cwd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandbox_layout_and_refusals() {
        let d = sandbox_dir(Path::new("/data"), "n-0", "ns", "p").unwrap();
        assert_eq!(d, Path::new("/data/nodes/n-0/pods/ns_p"));
        assert!(sandbox_dir(Path::new("/data"), "n-0", "ns", "../x").is_err());
        assert_eq!(in_sandbox(&d, "/etc/mpi/hostfile").unwrap(), d.join("etc/mpi/hostfile"));
        assert_eq!(in_sandbox(&d, "work").unwrap(), d.join("work"));
        assert!(in_sandbox(&d, "/etc/../../x").is_err());
        assert!(in_sandbox(&d, "/").is_err());
    }

    #[test]
    fn env_values_naming_files_or_their_directory_are_rewritten() {
        let files: BTreeMap<String, String> = [
            ("/user/serverid/devindex/config/hccl.json".to_string(), "{}".to_string()),
            ("/root/.ssh/id_rsa".to_string(), "k".to_string()),
        ]
        .into();
        let mut env = vec![
            ("RANK_TABLE_FILE".to_string(), "/user/serverid/devindex/config/hccl.json".to_string()),
            ("SSH_DIR".to_string(), "/root/.ssh/".to_string()),
            ("OTHER".to_string(), "/user".to_string()),
            ("ROOT".to_string(), "/".to_string()),
        ];
        rewrite_env(&mut env, &files, Path::new("/sb"));
        assert_eq!(env[0].1, "/sb/user/serverid/devindex/config/hccl.json");
        assert_eq!(env[1].1, "/sb/root/.ssh");
        assert_eq!(env[2].1, "/user");
        assert_eq!(env[3].1, "/");
    }

    #[test]
    fn prepare_writes_files_and_keys_privately() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let sb = tmp.path().join("sb");
        let files: BTreeMap<String, String> =
            [("/etc/a.txt".to_string(), "A".to_string()), ("/root/.ssh/id_rsa".to_string(), "K".to_string())].into();
        let cwd = prepare(&sb, &files, Some("/work")).unwrap();
        assert_eq!(cwd, sb.join("work"));
        assert_eq!(std::fs::read_to_string(sb.join("etc/a.txt")).unwrap(), "A");
        let mode = std::fs::metadata(sb.join("root/.ssh/id_rsa")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let bad: BTreeMap<String, String> = [("../x".to_string(), "A".to_string())].into();
        assert!(prepare(&sb, &bad, None).is_err());
    }
}
