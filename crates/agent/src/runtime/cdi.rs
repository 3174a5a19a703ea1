//! CDI device names for a container's NVIDIA chips. Where
//! nvidia-container-toolkit wrote a CDI spec (`nvidia-ctk cdi generate`,
//! kind `nvidia.com/gpu`, one device per GPU index) the container gets
//! `nvidia.com/gpu=<index>` for each of its chips and the runtime applies
//! the spec's edits (device nodes, driver libraries, hooks), as NVIDIA's
//! device plugin asks for with `--device-list-strategy=cdi-cri`; without
//! one, the device nodes go in directly.
//!
//! Only `kind` and the device names of the spec files are read (written
//! here: the `container-device-interface` crate brings a JSON Schema
//! validator and the OCI runtime types for what is two fields).

use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// CDI kind of NVIDIA GPUs.
pub const NVIDIA_GPU: &str = "nvidia.com/gpu";

/// Where CDI specs are, as the runtimes look (`/etc/cdi`, then `/var/run/cdi`).
pub fn default_spec_dirs() -> Vec<PathBuf> {
    vec![PathBuf::from("/etc/cdi"), PathBuf::from("/var/run/cdi")]
}

#[derive(Deserialize)]
struct Spec {
    kind: String,
    #[serde(default)]
    devices: Vec<Device>,
}

#[derive(Deserialize)]
struct Device {
    name: String,
}

/// The device names of `kind` the specs (`*.json`, `*.yaml`) in `dirs`
/// declare; unreadable or malformed files are skipped, as runtimes skip them.
pub fn declared(dirs: &[PathBuf], kind: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        for path in entries.filter_map(Result::ok).map(|e| e.path()) {
            if !is_spec_file(&path) {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else { continue };
            // JSON is YAML: one parser reads both.
            match serde_yaml_ng::from_str::<Spec>(&text) {
                Ok(spec) if spec.kind == kind => names.extend(spec.devices.into_iter().map(|d| d.name)),
                Ok(_) => {}
                Err(e) => tracing::debug!(spec = %path.display(), error = %e, "a CDI spec is unreadable"),
            }
        }
    }
    names
}

fn is_spec_file(path: &Path) -> bool {
    matches!(path.extension().and_then(|e| e.to_str()), Some("json" | "yaml" | "yml"))
}

/// `nvidia.com/gpu=<index>` for every chip, when the specs declare each
/// one; `None` otherwise (the container then gets device nodes).
pub fn gpu_names(chips: &[u32], declared: &BTreeSet<String>) -> Option<Vec<String>> {
    if chips.is_empty() || !chips.iter().all(|c| declared.contains(&c.to_string())) {
        return None;
    }
    Some(chips.iter().map(|c| format!("{NVIDIA_GPU}={c}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chips_get_cdi_names_only_when_a_spec_declares_every_one() {
        let etc = tempfile::tempdir().unwrap();
        let run = tempfile::tempdir().unwrap();
        // As `nvidia-ctk cdi generate` writes it (YAML), and a JSON one of another vendor.
        std::fs::write(
            etc.path().join("nvidia.yaml"),
            "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: \"0\"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n\
             - name: \"1\"\n  containerEdits: {deviceNodes: [{path: /dev/nvidia1}]}\n- name: GPU-8a9f\n- name: all\n\
             containerEdits:\n  deviceNodes: [{path: /dev/nvidiactl}]\n",
        )
        .unwrap();
        std::fs::write(
            run.path().join("other.json"),
            r#"{"cdiVersion":"0.6.0","kind":"vendor.com/fpga","devices":[{"name":"2"}]}"#,
        )
        .unwrap();
        std::fs::write(run.path().join("broken.json"), "{not yaml: [").unwrap();
        std::fs::write(run.path().join("notes.txt"), "kind: nvidia.com/gpu\ndevices: [{name: \"7\"}]\n").unwrap();
        let dirs = [etc.path().to_path_buf(), run.path().to_path_buf(), PathBuf::from("/no/such/dir")];
        let names = declared(&dirs, NVIDIA_GPU);
        assert_eq!(names, ["0", "1", "GPU-8a9f", "all"].into_iter().map(String::from).collect());
        assert_eq!(gpu_names(&[1, 0], &names), Some(vec!["nvidia.com/gpu=1".into(), "nvidia.com/gpu=0".into()]));
        assert_eq!(gpu_names(&[0, 2], &names), None, "chip 2 has no CDI device: device nodes then");
        assert_eq!(gpu_names(&[], &names), None);
        assert_eq!(declared(&dirs, "vendor.com/fpga"), ["2".to_string()].into());
    }
}
