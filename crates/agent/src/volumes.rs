//! A pod's declared volumes as the sandbox mounts them: `hostPath` and
//! `emptyDir` volumes named by the first container's `volumeMounts`
//! become binds; other volume kinds (NFS, ConfigMap, …) are not mounted and
//! the pod's log says so. A mount path that does not exist on the node
//! (where the read-only host file system cannot take a mount point) is
//! mounted at the same path re-rooted in the sandbox, as the pod's files are.

use crate::sandbox::in_sandbox;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Component, Path, PathBuf};

/// One host directory or file made visible inside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bind {
    /// Host path.
    pub source: PathBuf,
    /// Path inside the sandbox.
    pub target: PathBuf,
    /// Directory (else a file).
    pub dir: bool,
    /// Writable (else read-only).
    pub writable: bool,
}

/// Whether `path` is `hidden` or lies under it.
pub fn under(path: &Path, hidden: &Path) -> bool {
    path.starts_with(hidden)
}

/// One entry of `spec.containers[0].volumeMounts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountRequest {
    /// Volume name.
    pub name: String,
    /// `mountPath`.
    pub mount_path: String,
    /// `readOnly`.
    pub read_only: bool,
}

/// What a volume of `spec.volumes` is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `hostPath` with its `type` ("" when absent).
    HostPath { path: String, kind: String },
    /// `emptyDir`: a directory of the sandbox.
    EmptyDir,
    /// Any other kind, by its field name.
    Other(String),
}

/// How the file system looks to the planner (the node's, in the agent).
pub trait Host {
    /// `Some(is_dir)` when `path` exists.
    fn kind(&self, path: &Path) -> Option<bool>;
}

/// The real file system.
pub struct RealHost;

impl Host for RealHost {
    fn kind(&self, path: &Path) -> Option<bool> {
        std::fs::metadata(path).ok().map(|m| m.is_dir())
    }
}

/// The pod's volumes by name, in `spec.volumes` order.
pub type Volumes = Vec<(String, Source)>;

/// The first container's mounts and the pod's volumes, or why they cannot be read.
pub fn read(pod: &Value) -> Result<(Vec<MountRequest>, Volumes), String> {
    let mut mounts = Vec::new();
    if let Some(list) = pod.pointer("/spec/containers/0/volumeMounts").filter(|v| !v.is_null()) {
        let list = list.as_array().ok_or("spec.containers[0].volumeMounts: must be a list")?;
        for (i, m) in list.iter().enumerate() {
            let field = |f: &str| format!("spec.containers[0].volumeMounts[{i}].{f}");
            let name = m.get("name").and_then(Value::as_str).filter(|s| !s.is_empty());
            let name = name.ok_or_else(|| format!("{}: required", field("name")))?;
            let path = m.get("mountPath").and_then(Value::as_str).filter(|s| !s.is_empty());
            let path = path.ok_or_else(|| format!("{}: required", field("mountPath")))?;
            if m.get("subPath").and_then(Value::as_str).is_some_and(|s| !s.is_empty()) {
                return Err(format!("{}: not supported by the process runtime", field("subPath")));
            }
            let read_only = m.get("readOnly").and_then(Value::as_bool).unwrap_or(false);
            mounts.push(MountRequest { name: name.to_string(), mount_path: path.to_string(), read_only });
        }
    }
    let mut volumes = Vec::new();
    if let Some(list) = pod.pointer("/spec/volumes").filter(|v| !v.is_null()) {
        let list = list.as_array().ok_or("spec.volumes: must be a list")?;
        for (i, v) in list.iter().enumerate() {
            let name = v.get("name").and_then(Value::as_str).filter(|s| !s.is_empty());
            let name = name.ok_or_else(|| format!("spec.volumes[{i}].name: required"))?;
            let source = if let Some(h) = v.get("hostPath") {
                let path = h.get("path").and_then(Value::as_str).unwrap_or_default();
                Source::HostPath {
                    path: path.to_string(),
                    kind: h.get("type").and_then(Value::as_str).unwrap_or_default().to_string(),
                }
            } else if v.get("emptyDir").is_some() {
                Source::EmptyDir
            } else {
                let kind = v.as_object().and_then(|o| o.keys().find(|k| *k != "name").cloned());
                Source::Other(kind.unwrap_or_else(|| "unknown".to_string()))
            };
            volumes.push((name.to_string(), source));
        }
    }
    Ok((mounts, volumes))
}

/// The binds of a pod, the directories and files to create first (emptyDir
/// directories, `…OrCreate` host paths), and notes for its log.
#[derive(Debug, Default, PartialEq)]
pub struct Plan {
    /// Parents before children.
    pub binds: Vec<Bind>,
    /// Directories to create before the pod starts.
    pub create_dirs: Vec<PathBuf>,
    /// Files to create before the pod starts.
    pub create_files: Vec<PathBuf>,
    /// What was not mounted as asked, one line each.
    pub notes: Vec<String>,
    /// Mount paths absent on the node, and where in the sandbox they were
    /// mounted instead (env values naming them are pointed there).
    pub rerooted: Vec<(String, PathBuf)>,
}

/// Env values naming a re-rooted mount path, or a path under it, name the
/// place the pod sees it instead (`target` is as the pod sees the sandbox).
pub fn rewrite_env(env: &mut [(String, String)], rerooted: &[(String, PathBuf)]) {
    for (_, value) in env.iter_mut() {
        for (path, target) in rerooted {
            let rest = match value.strip_prefix(path.as_str()) {
                Some("") => Some(""),
                Some(r) if r.starts_with('/') => Some(r.trim_start_matches('/')),
                _ => None,
            };
            if let Some(rest) = rest {
                *value = if rest.is_empty() {
                    target.display().to_string()
                } else {
                    target.join(rest).display().to_string()
                };
                break;
            }
        }
    }
}

fn plain_absolute(p: &str) -> bool {
    let path = Path::new(p);
    path.is_absolute()
        && !p.contains('\0')
        && path.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
        && path.components().count() > 1
}

/// Where the pod sees a mount: the mount path itself where it exists on the
/// node or lies in what the sandbox makes writable (`/tmp`, `/dev/shm`, the
/// sandbox), else re-rooted in the sandbox.
fn target_of(mount_path: &str, sandbox: &Path, hidden: &[PathBuf], host: &dyn Host) -> Result<(PathBuf, bool), String> {
    let p = Path::new(mount_path);
    if under(p, sandbox) || under(p, Path::new("/tmp")) || under(p, Path::new("/dev/shm")) {
        return Ok((p.to_path_buf(), false));
    }
    if hidden.iter().any(|h| under(p, h)) {
        return Err(format!("{mount_path:?} lies in a directory the sandbox hides"));
    }
    if host.kind(p).is_some() {
        return Ok((p.to_path_buf(), false));
    }
    Ok((in_sandbox(sandbox, mount_path)?, true))
}

/// Plans the pod's volume binds. `hidden` are the paths no pod may see: a
/// host path inside one, or holding one, is refused.
pub fn plan(
    mounts: &[MountRequest],
    volumes: &[(String, Source)],
    sandbox: &Path,
    hidden: &[PathBuf],
    host: &dyn Host,
) -> Result<Plan, String> {
    let mut out = Plan::default();
    for (i, m) in mounts.iter().enumerate() {
        let field = format!("spec.containers[0].volumeMounts[{i}]");
        if !plain_absolute(&m.mount_path) {
            return Err(format!("{field}.mountPath: {:?} must be an absolute path without '..'", m.mount_path));
        }
        let Some((j, (_, source))) = volumes.iter().enumerate().find(|(_, (n, _))| *n == m.name) else {
            return Err(format!("{field}.name: no volume {:?} in spec.volumes", m.name));
        };
        let (source, dir) = match source {
            Source::EmptyDir => {
                let dir = sandbox.join("volumes").join(&m.name);
                if m.name.contains('/') || m.name == "." || m.name == ".." {
                    return Err(format!("spec.volumes[{j}].name: {:?} cannot name a directory", m.name));
                }
                out.create_dirs.push(dir.clone());
                (dir, true)
            }
            Source::HostPath { path, kind } => {
                let field = format!("spec.volumes[{j}].hostPath");
                if !plain_absolute(path) && path != "/" {
                    return Err(format!("{field}.path: {path:?} must be an absolute path without '..'"));
                }
                let p = PathBuf::from(path);
                if let Some(h) = hidden.iter().find(|h| under(&p, h) || under(h, &p)) {
                    return Err(format!(
                        "{field}.path: {path:?} would expose {} (the agent's data, hidden from pods)",
                        h.display()
                    ));
                }
                match (host.kind(&p), kind.as_str()) {
                    (Some(is_dir), _) => (p, is_dir),
                    (None, "DirectoryOrCreate") => {
                        out.create_dirs.push(p.clone());
                        (p, true)
                    }
                    (None, "FileOrCreate") => {
                        out.create_files.push(p.clone());
                        (p, false)
                    }
                    (None, "") => {
                        out.notes.push(format!(
                            "volume {:?} not mounted: hostPath {path} does not exist on this node",
                            m.name
                        ));
                        continue;
                    }
                    (None, other) => {
                        return Err(format!("{field}.path: {path:?} does not exist on this node (type {other})"));
                    }
                }
            }
            Source::Other(kind) => {
                out.notes.push(format!(
                    "volume {:?} not mounted: {kind} volumes are not supported by the process runtime",
                    m.name
                ));
                continue;
            }
        };
        let (target, rerooted) =
            target_of(&m.mount_path, sandbox, hidden, host).map_err(|e| format!("{field}.mountPath: {e}"))?;
        if rerooted {
            out.rerooted.push((m.mount_path.trim_end_matches('/').to_string(), target.clone()));
            out.notes.push(format!(
                "volume {:?} mounted at {} ({} does not exist on this node)",
                m.name,
                target.display(),
                m.mount_path
            ));
        }
        out.binds.push(Bind { source, target, dir, writable: !m.read_only });
    }
    out.binds.sort_by_key(|b| b.target.components().count());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::HashMap;

    #[test]
    fn env_values_naming_a_moved_mount_path_follow_it() {
        let moved = vec![("/data".to_string(), PathBuf::from("/run/ringleader/pod/data"))];
        let mut env: Vec<(String, String)> =
            [("DATA_PATH", "/data"), ("TRAIN", "/data/train"), ("OTHER", "/database"), ("X", "data")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        rewrite_env(&mut env, &moved);
        let values: Vec<&str> = env.iter().map(|(_, v)| v.as_str()).collect();
        assert_eq!(values, ["/run/ringleader/pod/data", "/run/ringleader/pod/data/train", "/database", "data"]);
    }

    struct Fake(HashMap<PathBuf, bool>);

    impl Host for Fake {
        fn kind(&self, path: &Path) -> Option<bool> {
            self.0.get(path).copied()
        }
    }

    fn host() -> Fake {
        Fake([("/data/shared".into(), true), ("/etc/localtime".into(), false), ("/srv".into(), true)].into())
    }

    fn pod(mounts: Value, volumes: Value) -> Value {
        json!({"spec": {"containers": [{"volumeMounts": mounts}], "volumes": volumes}})
    }

    #[test]
    fn host_paths_and_empty_dirs_become_binds() {
        let p = pod(
            json!([{"name": "shared", "mountPath": "/data/shared"},
                   {"name": "tz", "mountPath": "/etc/localtime", "readOnly": true},
                   {"name": "scratch", "mountPath": "/scratch"},
                   {"name": "code", "mountPath": "/code"},
                   {"name": "gone", "mountPath": "/tmp/gone"}]),
            json!([{"name": "shared", "hostPath": {"path": "/data/shared"}},
                   {"name": "tz", "hostPath": {"path": "/etc/localtime"}},
                   {"name": "scratch", "emptyDir": {}},
                   {"name": "code", "nfs": {"server": "x", "path": "/c"}},
                   {"name": "gone", "hostPath": {"path": "/nope"}}]),
        );
        let (mounts, volumes) = read(&p).unwrap();
        let sb = Path::new("/var/rl/nodes/n/pods/ns_p");
        let plan = plan(&mounts, &volumes, sb, &[PathBuf::from("/var/rl")], &host()).unwrap();
        let got: Vec<(&Path, &Path, bool, bool)> =
            plan.binds.iter().map(|b| (b.source.as_path(), b.target.as_path(), b.dir, b.writable)).collect();
        assert_eq!(
            got,
            [
                (Path::new("/data/shared"), Path::new("/data/shared"), true, true),
                (Path::new("/etc/localtime"), Path::new("/etc/localtime"), false, false),
                (sb.join("volumes/scratch").as_path(), sb.join("scratch").as_path(), true, true),
            ]
        );
        assert_eq!(plan.create_dirs, [sb.join("volumes/scratch")]);
        assert_eq!(plan.notes.len(), 3, "{:?}", plan.notes);
        assert!(plan.notes.iter().any(|n| n.contains("nfs volumes are not supported")));
        assert!(plan.notes.iter().any(|n| n.contains("/nope does not exist")));
        assert!(plan.notes.iter().any(|n| n.contains("\"scratch\" mounted at")));
    }

    #[test]
    fn the_data_dir_is_never_mounted() {
        let sb = Path::new("/var/rl/nodes/n/pods/ns_p");
        let hidden = [PathBuf::from("/var/rl")];
        for path in ["/var/rl", "/var/rl/store", "/var", "/"] {
            let p = pod(json!([{"name": "v", "mountPath": "/x"}]), json!([{"name": "v", "hostPath": {"path": path}}]));
            let (m, v) = read(&p).unwrap();
            let err = plan(&m, &v, sb, &hidden, &host()).unwrap_err();
            assert!(err.contains("spec.volumes[0].hostPath.path") && err.contains("/var/rl"), "{err}");
        }
        let p = pod(json!([{"name": "v", "mountPath": "/var/rl/x"}]), json!([{"name": "v", "emptyDir": {}}]));
        let (m, v) = read(&p).unwrap();
        assert!(plan(&m, &v, sb, &hidden, &host()).unwrap_err().contains("mountPath"));
    }

    #[test]
    fn malformed_mounts_name_the_field() {
        let sb = Path::new("/sb");
        let cases = [
            (
                json!([{"name": "v", "mountPath": "rel"}]),
                json!([{"name": "v", "emptyDir": {}}]),
                "volumeMounts[0].mountPath",
            ),
            (json!([{"name": "v", "mountPath": "/a/../b"}]), json!([{"name": "v", "emptyDir": {}}]), "mountPath"),
            (json!([{"name": "w", "mountPath": "/a"}]), json!([{"name": "v", "emptyDir": {}}]), "no volume \"w\""),
            (
                json!([{"name": "v", "mountPath": "/a"}]),
                json!([{"name": "v", "hostPath": {"path": "/nope", "type": "Directory"}}]),
                "does not exist",
            ),
        ];
        for (mounts, volumes, want) in cases {
            let (m, v) = read(&pod(mounts, volumes)).unwrap();
            let err = plan(&m, &v, sb, &[], &host()).unwrap_err();
            assert!(err.contains(want), "{err} lacks {want}");
        }
        assert!(read(&pod(json!([{"name": "v", "mountPath": "/a", "subPath": "x"}]), json!([])))
            .unwrap_err()
            .contains("subPath"));
        assert!(read(&pod(json!("x"), json!([]))).unwrap_err().contains("volumeMounts"));
        let (m, v) = read(&pod(
            json!([{"name": "v", "mountPath": "/a"}]),
            json!([{"name": "v", "hostPath": {"path": "/srv/new", "type": "DirectoryOrCreate"}}]),
        ))
        .unwrap();
        let plan = plan(&m, &v, sb, &[], &host()).unwrap();
        assert_eq!(plan.create_dirs, [PathBuf::from("/srv/new")]);
        assert_eq!(plan.binds[0].target, Path::new("/sb/a"));
    }
}
