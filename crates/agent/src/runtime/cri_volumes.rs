//! A container's volumes, made on the node as kubelet makes them and
//! bind-mounted at their `mountPath` (with `subPath` and `readOnly`):
//! `emptyDir` (a directory of the pod's sandbox; `medium: Memory` a tmpfs
//! there, sized by `sizeLimit`, e.g. the `/dev/shm` PyTorch's data loaders
//! need), `hostPath` (by its `type`; never the agent's own files or the
//! host's system directories), `configMap`, `secret` and `downwardAPI`
//! (their keys written as files).

use super::cri::Bind;
use base64::Engine;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// Why a pod's volumes cannot be made: kubelet's reason and message.
pub type Refusal = (&'static str, String);

/// Host paths no `hostPath` volume may be or lie in, besides the ones the
/// agent hides (its data dir, tokens): the system's own directories.
pub const SYSTEM_PATHS: &[&str] =
    &["/proc", "/sys", "/boot", "/etc", "/root", "/run", "/var/run", "/var/lib/containerd", "/var/lib/kubelet"];

/// What the node allows.
pub struct Policy<'a> {
    /// Paths no volume may reach (the agent's data dir first).
    pub hidden: &'a [PathBuf],
    /// Where `hostPath` volumes may lie; empty: anywhere but [`SYSTEM_PATHS`] and `hidden`.
    pub allowed_host_paths: &'a [PathBuf],
    /// Mount tmpfs for `emptyDir.medium: Memory` (false without root: a directory).
    pub mount_tmpfs: bool,
}

fn refuse(message: String) -> Refusal {
    ("CreateContainerConfigError", message)
}

fn plain_absolute(p: &str) -> bool {
    let path = Path::new(p);
    path.is_absolute()
        && !p.contains('\0')
        && path.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
}

fn plain_relative(p: &str) -> bool {
    !p.is_empty() && !p.contains('\0') && Path::new(p).components().all(|c| matches!(c, Component::Normal(_)))
}

/// Whether a `hostPath` may be mounted under `policy`; why not.
pub fn host_path_allowed(path: &str, policy: &Policy<'_>) -> Result<(), String> {
    if !plain_absolute(path) || path == "/" {
        return Err(format!("{path:?} must be an absolute path below / without '..'"));
    }
    let p = Path::new(path);
    if let Some(h) = policy.hidden.iter().find(|h| p.starts_with(h) || h.starts_with(p)) {
        return Err(format!("{path:?} would show the agent's own files ({})", h.display()));
    }
    if !policy.allowed_host_paths.is_empty() {
        if policy.allowed_host_paths.iter().any(|a| p.starts_with(a)) {
            return Ok(());
        }
        let allowed: Vec<String> = policy.allowed_host_paths.iter().map(|a| a.display().to_string()).collect();
        return Err(format!("{path:?} is not under a path this node allows ({})", allowed.join(", ")));
    }
    if let Some(s) = SYSTEM_PATHS.iter().find(|s| p.starts_with(s) || Path::new(s).starts_with(p)) {
        return Err(format!("{path:?} would show the host's {s}"));
    }
    Ok(())
}

/// Writes `files` (name → bytes) into `dir` afresh, as a projected volume.
fn write_files(dir: &Path, files: &BTreeMap<String, Vec<u8>>, mode: u32, field: &str) -> Result<(), Refusal> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).map_err(|e| refuse(format!("{}: {e}", dir.display())))?;
    for (name, content) in files {
        if !plain_relative(name) {
            return Err(refuse(format!("{field}: file path {name:?} must be relative, without '..'")));
        }
        let at = dir.join(name);
        crate::sandbox::write_file(&at, content).map_err(|e| refuse(format!("{}: {e}", at.display())))?;
        let _ = std::fs::set_permissions(&at, std::fs::Permissions::from_mode(mode & 0o777));
    }
    Ok(())
}

/// The files of a ConfigMap or Secret volume: every key, or the `items`
/// asked (key → path); a key asked that is missing refuses the pod.
fn projected(
    source: &Value,
    data: BTreeMap<String, Vec<u8>>,
    field: &str,
) -> Result<BTreeMap<String, Vec<u8>>, Refusal> {
    let Some(items) = source.get("items").and_then(Value::as_array) else { return Ok(data) };
    let mut out = BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        let key = item.get("key").and_then(Value::as_str).unwrap_or_default();
        let path = item.get("path").and_then(Value::as_str).unwrap_or(key);
        let content =
            data.get(key).ok_or_else(|| refuse(format!("{field}.items[{i}].key: {key:?} is not in the object")))?;
        out.insert(path.to_string(), content.clone());
    }
    Ok(out)
}

fn object_data(obj: &Value, base64_values: bool) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let b64 = base64::engine::general_purpose::STANDARD;
    for (map, encoded) in [("data", base64_values), ("binaryData", true), ("stringData", false)] {
        for (k, v) in obj.get(map).and_then(Value::as_object).into_iter().flatten() {
            let text = v.as_str().unwrap_or_default();
            let bytes = if encoded { b64.decode(text.trim()).unwrap_or_default() } else { text.as_bytes().to_vec() };
            out.insert(k.clone(), bytes);
        }
    }
    out
}

/// The value of a downward API `fieldRef`.
fn field_ref(pod: &Value, path: &str) -> Option<String> {
    let map = |m: &str| -> Option<String> {
        let entries = pod.pointer(&format!("/metadata/{m}"))?.as_object()?;
        Some(entries.iter().map(|(k, v)| format!("{k}={:?}\n", v.as_str().unwrap_or_default())).collect())
    };
    match path {
        "metadata.name" => pod.pointer("/metadata/name")?.as_str().map(str::to_string),
        "metadata.namespace" => {
            Some(pod.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default").into())
        }
        "metadata.uid" => pod.pointer("/metadata/uid")?.as_str().map(str::to_string),
        "metadata.labels" => map("labels"),
        "metadata.annotations" => map("annotations"),
        _ => None,
    }
}

fn mount_tmpfs(dir: &Path, size: Option<u64>) -> std::io::Result<()> {
    use std::ffi::CString;
    let target = CString::new(dir.as_os_str().as_encoded_bytes()).map_err(std::io::Error::other)?;
    let data = CString::new(match size {
        Some(bytes) => format!("mode=1777,size={bytes}"),
        None => "mode=1777".to_string(),
    })
    .map_err(std::io::Error::other)?;
    let kind = c"tmpfs";
    // SAFETY: every pointer is a valid NUL-terminated string for the call.
    let rc = unsafe {
        libc::mount(
            kind.as_ptr(),
            target.as_ptr(),
            kind.as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            data.as_ptr().cast(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Whether `dir` is a mount point (its device differs from its parent's).
fn is_mount_point(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(dir), dir.parent().map(std::fs::metadata)) {
        (Ok(d), Some(Ok(p))) => d.dev() != p.dev(),
        _ => false,
    }
}

/// Makes the pod's volumes under `sandbox/volumes/` and returns the binds
/// of the first container's `volumeMounts`. `lookup` reads a ConfigMap or
/// Secret of the pod's namespace (`kind`, `name`).
pub fn prepare(
    pod: &Value,
    sandbox: &Path,
    policy: &Policy<'_>,
    lookup: &dyn Fn(&str, &str) -> Option<Value>,
) -> Result<Vec<Bind>, Refusal> {
    let volumes: Vec<Value> = pod.pointer("/spec/volumes").and_then(Value::as_array).cloned().unwrap_or_default();
    let mounts: Vec<Value> =
        pod.pointer("/spec/containers/0/volumeMounts").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut binds = Vec::new();
    let mut made: BTreeMap<String, PathBuf> = BTreeMap::new();
    for (i, m) in mounts.iter().enumerate() {
        let field = format!("spec.containers[0].volumeMounts[{i}]");
        let text = |f: &str| m.get(f).and_then(Value::as_str).unwrap_or_default().to_string();
        let (name, mount_path, sub_path) = (text("name"), text("mountPath"), text("subPath"));
        if !plain_absolute(&mount_path) || mount_path == "/" {
            return Err(refuse(format!("{field}.mountPath: {mount_path:?} must be an absolute path without '..'")));
        }
        if !sub_path.is_empty() && !plain_relative(&sub_path) {
            return Err(refuse(format!("{field}.subPath: {sub_path:?} must be a relative path without '..'")));
        }
        let Some((j, volume)) =
            volumes.iter().enumerate().find(|(_, v)| v.get("name").and_then(Value::as_str) == Some(&name))
        else {
            return Err(refuse(format!("{field}.name: no volume {name:?} in spec.volumes")));
        };
        let vfield = format!("spec.volumes[{j}]");
        let (mut source, mut read_only) = match made.get(&name) {
            Some(dir) => (dir.clone(), false),
            None => {
                let made_one = make(pod, volume, &name, &vfield, sandbox, policy, lookup)?;
                made.insert(name.clone(), made_one.0.clone());
                made_one
            }
        };
        if !sub_path.is_empty() {
            source = source.join(&sub_path);
            if !source.exists() {
                std::fs::create_dir_all(&source).map_err(|e| refuse(format!("{field}.subPath: {e}")))?;
            }
        }
        read_only |= m.get("readOnly").and_then(Value::as_bool).unwrap_or(false);
        binds.push(Bind { host: source, container: mount_path, readonly: read_only });
    }
    Ok(binds)
}

/// Makes one volume; its host path, and whether it is read-only by nature.
fn make(
    pod: &Value,
    volume: &Value,
    name: &str,
    field: &str,
    sandbox: &Path,
    policy: &Policy<'_>,
    lookup: &dyn Fn(&str, &str) -> Option<Value>,
) -> Result<(PathBuf, bool), Refusal> {
    if !plain_relative(name) || name.contains('/') {
        return Err(refuse(format!("{field}.name: {name:?} cannot name a directory")));
    }
    let dir = sandbox.join("volumes").join(name);
    if let Some(e) = volume.get("emptyDir") {
        std::fs::create_dir_all(&dir).map_err(|err| refuse(format!("{}: {err}", dir.display())))?;
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777));
        }
        if e.get("medium").and_then(Value::as_str) == Some("Memory") && policy.mount_tmpfs && !is_mount_point(&dir) {
            let size = e
                .get("sizeLimit")
                .and_then(ringleader_api::quantity::of_json)
                .map(|m| u64::try_from(m.div_ceil(1000)).unwrap_or(u64::MAX))
                .filter(|b| *b > 0);
            mount_tmpfs(&dir, size).map_err(|err| refuse(format!("{field}.emptyDir (medium Memory): {err}")))?;
        }
        return Ok((dir, false));
    }
    if let Some(h) = volume.get("hostPath") {
        let path = h.get("path").and_then(Value::as_str).unwrap_or_default();
        host_path_allowed(path, policy).map_err(|m| refuse(format!("{field}.hostPath.path: {m}")))?;
        let kind = h.get("type").and_then(Value::as_str).unwrap_or_default();
        let p = Path::new(path);
        let check = |ok: bool, what: &str| {
            if ok {
                Ok(())
            } else {
                Err(refuse(format!("{field}.hostPath: hostPath type check failed: {path} is not a {what}")))
            }
        };
        match kind {
            "DirectoryOrCreate" if !p.exists() => {
                std::fs::create_dir_all(p).map_err(|e| refuse(format!("{field}.hostPath.path: {e}")))?;
            }
            "FileOrCreate" if !p.exists() => {
                std::fs::write(p, b"").map_err(|e| refuse(format!("{field}.hostPath.path: {e}")))?;
            }
            "Directory" => check(p.is_dir(), "directory")?,
            "File" => check(p.is_file(), "file")?,
            // Unset: no check; a missing path becomes a directory, as
            // containerd makes the source of a bind that is not there.
            "" if !p.exists() => {
                std::fs::create_dir_all(p).map_err(|e| refuse(format!("{field}.hostPath.path: {e}")))?;
            }
            "" | "DirectoryOrCreate" | "FileOrCreate" => {}
            "Socket" | "CharDevice" | "BlockDevice" => check(p.exists(), &kind.to_ascii_lowercase())?,
            other => {
                return Err(refuse(format!(
                    "{field}.hostPath.type: {other:?} is not one of \"\", DirectoryOrCreate, Directory, FileOrCreate, File, Socket, CharDevice, BlockDevice"
                )))
            }
        }
        if !p.exists() {
            return Err(refuse(format!("{field}.hostPath.path: {path} does not exist on this node")));
        }
        return Ok((p.to_path_buf(), false));
    }
    for (kind, key, secret) in [("configMap", "name", false), ("secret", "secretName", true)] {
        let Some(source) = volume.get(kind) else { continue };
        let object_name = source.get(key).and_then(Value::as_str).unwrap_or_default();
        let optional = source.get("optional").and_then(Value::as_bool).unwrap_or(false);
        let mode = source.get("defaultMode").and_then(Value::as_u64).map_or(0o644, |m| m as u32);
        let data = match lookup(if secret { "Secret" } else { "ConfigMap" }, object_name) {
            Some(obj) => object_data(&obj, secret),
            None if optional => BTreeMap::new(),
            None => {
                let what = if secret { "secret" } else { "configmap" };
                return Err(refuse(format!("{field}.{kind}: {what} {object_name:?} not found")));
            }
        };
        let files = projected(source, data, &format!("{field}.{kind}"))?;
        let _ = std::fs::remove_dir_all(&dir);
        write_files(&dir, &files, mode, &format!("{field}.{kind}"))?;
        return Ok((dir, true));
    }
    if let Some(source) = volume.get("downwardAPI") {
        let mut files = BTreeMap::new();
        for (i, item) in source.get("items").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let path = item.get("path").and_then(Value::as_str).unwrap_or_default();
            let Some(field_path) = item.pointer("/fieldRef/fieldPath").and_then(Value::as_str) else {
                return Err(refuse(format!("{field}.downwardAPI.items[{i}]: only fieldRef is supported")));
            };
            let value = field_ref(pod, field_path).ok_or_else(|| {
                refuse(format!("{field}.downwardAPI.items[{i}].fieldRef.fieldPath: {field_path:?} is not supported"))
            })?;
            files.insert(path.to_string(), value.into_bytes());
        }
        let _ = std::fs::remove_dir_all(&dir);
        write_files(&dir, &files, 0o644, &format!("{field}.downwardAPI"))?;
        return Ok((dir, true));
    }
    let kind = volume.as_object().and_then(|o| o.keys().find(|k| *k != "name").cloned()).unwrap_or_default();
    Err(refuse(format!(
        "{field}: volume type {kind:?} is not supported on this node (emptyDir, hostPath, configMap, secret, downwardAPI)"
    )))
}

/// Unmounts what volumes mounted under a pod's sandbox (tmpfs emptyDirs),
/// so the sandbox can be removed.
pub fn unmount_all(sandbox: &Path) {
    let Ok(dirs) = std::fs::read_dir(sandbox.join("volumes")) else { return };
    for d in dirs.flatten().map(|d| d.path()) {
        if is_mount_point(&d) {
            if let Ok(target) = std::ffi::CString::new(d.as_os_str().as_encoded_bytes()) {
                // SAFETY: a valid NUL-terminated path.
                unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(hidden: &[PathBuf]) -> Policy<'_> {
        Policy { hidden, allowed_host_paths: &[], mount_tmpfs: false }
    }

    #[test]
    fn host_paths_stay_out_of_the_agents_files_and_the_system() {
        let hidden = [PathBuf::from("/var/lib/ringleader")];
        let p = policy(&hidden);
        assert!(host_path_allowed("/data/imagenet", &p).is_ok());
        for bad in ["/", "/etc", "/etc/shadow", "/proc/1", "/var/lib/ringleader/nodes", "/var", "/x/../etc", "rel"] {
            assert!(host_path_allowed(bad, &p).is_err(), "{bad}");
        }
        let allowed = [PathBuf::from("/data")];
        let only = Policy { hidden: &hidden, allowed_host_paths: &allowed, mount_tmpfs: false };
        assert!(host_path_allowed("/data/x", &only).is_ok());
        let err = host_path_allowed("/home/x", &only).unwrap_err();
        assert!(err.contains("/home/x") && err.contains("/data"), "{err}");
    }

    #[test]
    fn volumes_become_binds_with_their_files() {
        let sandbox = tempfile::tempdir().unwrap();
        let pod = json!({
            "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "x"}},
            "spec": {
                "volumes": [
                    {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
                    {"name": "cfg", "configMap": {"name": "c", "items": [{"key": "a", "path": "sub/a.txt"}]}},
                    {"name": "key", "secret": {"secretName": "s", "defaultMode": 256}},
                    {"name": "info", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                ],
                "containers": [{"volumeMounts": [
                    {"name": "shm", "mountPath": "/dev/shm"},
                    {"name": "cfg", "mountPath": "/etc/cfg"},
                    {"name": "key", "mountPath": "/keys", "readOnly": true},
                    {"name": "info", "mountPath": "/etc/podinfo"},
                ]}],
            }
        });
        let lookup = |kind: &str, name: &str| match (kind, name) {
            ("ConfigMap", "c") => Some(json!({"data": {"a": "alpha", "b": "beta"}})),
            ("Secret", "s") => Some(json!({"data": {"id_rsa": "c2VjcmV0"}})),
            _ => None,
        };
        let binds = prepare(&pod, sandbox.path(), &policy(&[]), &lookup).unwrap();
        let at = |c: &str| binds.iter().find(|b| b.container == c).unwrap();
        assert!(!at("/dev/shm").readonly && at("/dev/shm").host.ends_with("volumes/shm"));
        assert_eq!(std::fs::read_to_string(at("/etc/cfg").host.join("sub/a.txt")).unwrap(), "alpha");
        assert!(!at("/etc/cfg").host.join("b").exists(), "items pick keys");
        assert_eq!(std::fs::read_to_string(at("/keys").host.join("id_rsa")).unwrap(), "secret");
        assert!(at("/keys").readonly);
        assert_eq!(std::fs::read_to_string(at("/etc/podinfo").host.join("labels")).unwrap(), "app=\"x\"\n");

        let mut missing = pod.clone();
        missing["spec"]["volumes"][1]["configMap"]["name"] = json!("nope");
        let (reason, message) = prepare(&missing, sandbox.path(), &policy(&[]), &lookup).unwrap_err();
        assert_eq!(reason, "CreateContainerConfigError");
        assert!(message.contains("spec.volumes[1].configMap") && message.contains("nope"), "{message}");
        let nfs = json!({"spec": {"volumes": [{"name": "n", "nfs": {"server": "x"}}],
            "containers": [{"volumeMounts": [{"name": "n", "mountPath": "/n"}]}]}});
        let (_, message) = prepare(&nfs, sandbox.path(), &policy(&[]), &lookup).unwrap_err();
        assert!(message.contains("\"nfs\"") && message.contains("not supported"), "{message}");
    }
}
