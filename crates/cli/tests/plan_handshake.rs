//! `ringleader plan` writes MindCluster's device-plugin handshake on Ascend
//! pods at binding (seed 000): `huawei.com/AscendReal` and `huawei.com/kltDev`
//! equal to the chips chosen, and `ascend.kubectl.kubernetes.io/ascend-910-configuration`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn ascend_pods_carry_the_device_plugin_handshake() {
    let out = Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .args(["plan", "--cluster", "examples/cluster.yaml", "-f", "examples/", "-o", "json", "--now", "1000"])
        .current_dir(repo())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let placements = v["placements"].as_array().unwrap();
    let ascend: Vec<&serde_json::Value> =
        placements.iter().filter(|p| p["annotations"].get("huawei.com/Ascend910").is_some()).collect();
    assert!(!ascend.is_empty(), "{v}");
    for p in ascend {
        let a = &p["annotations"];
        let chips = &a["huawei.com/Ascend910"];
        assert_eq!(&a["huawei.com/AscendReal"], chips, "{p}");
        assert_eq!(&a["huawei.com/kltDev"], chips, "{p}");
        let config: serde_json::Value =
            serde_json::from_str(a["ascend.kubectl.kubernetes.io/ascend-910-configuration"].as_str().unwrap()).unwrap();
        let ids: Vec<String> =
            config["devices"].as_array().unwrap().iter().map(|d| d["device_id"].as_str().unwrap().into()).collect();
        let want: Vec<String> = p["devices"].as_array().unwrap().iter().map(|d| d.to_string()).collect();
        assert_eq!(ids, want, "{p}");
        assert!(config["pod_name"].as_str().unwrap().parse::<u32>().is_ok(), "{config}");
        assert!(config["server_id"].is_string(), "{config}");
    }
    let master = placements.iter().find(|p| p["pod"] == "default-test-pytorch-master-0").unwrap();
    let config = master["annotations"]["ascend.kubectl.kubernetes.io/ascend-910-configuration"].as_str().unwrap();
    assert!(config.contains(r#""pod_name":"0""#), "{config}");
}
