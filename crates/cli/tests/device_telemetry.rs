//! Device telemetry end to end: `ringleader agent --detect` on a machine
//! where NVML cannot be loaded (`RINGLEADER_NVML_LIBRARY` names a missing
//! library) and a scripted `nvidia-smi` comes first on the agent's PATH —
//! the agent discovers the GPU and reads its figures through the tool, the
//! Node carries them, `/metrics` exports them (and `promtool check metrics`
//! accepts the scrape where promtool is installed) and the history keeps
//! them; the virtual node `up` serves beside it publishes none.

mod common;

use common::{cluster_yaml, detecting_agent, fake_nvidia_smi, gpu_figures as figures, Plane};
use serde_json::Value;

const MIB: f64 = 1024.0 * 1024.0;

/// The value of the sample line starting with `prefix`.
fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines().find(|l| l.starts_with(prefix)).and_then(|l| l.rsplit(' ').next()).and_then(|v| v.parse().ok())
}

fn points(answer: &Value, name: &str) -> Vec<f64> {
    answer["series"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == name))
        .and_then(|s| s["points"].as_array())
        .map(|p| p.iter().filter_map(|p| p[1].as_f64()).collect())
        .unwrap_or_default()
}

#[test]
fn a_detected_gpu_reports_figures_through_nvidia_smi_a_virtual_node_none() {
    let p = Plane::start(&cluster_yaml(117, &[("virt-1", "hgx-h100-8")]), &["--history-interval", "1"]);
    let tools = tempfile::tempdir().expect("tempdir");
    fake_nvidia_smi(tools.path());
    let _agent = detecting_agent(&p, "real-1", "127.0.117.9", tools.path());

    let telemetry = |p: &Plane, node: &str| p.get("nodes", node).map(|n| n["status"]["deviceTelemetry"].clone());
    p.wait_for(60, "real-1's device figures", |p| telemetry(p, "real-1").is_some_and(|t| t.is_array()));
    let node = p.get("nodes", "real-1").expect("node");
    assert!(node["spec"]["topologyText"].as_str().is_some_and(|t| t.contains("GPU0")), "discovered: {node}");
    let t = &telemetry(&p, "real-1").expect("figures")[0];
    assert_eq!(t["id"], 0);
    assert_eq!(t["utilizationPercent"], 37.0);
    assert_eq!(t["memoryUsedBytes"].as_f64(), Some(1024.0 * MIB));
    assert_eq!(t["memoryTotalBytes"].as_f64(), Some(81559.0 * MIB));
    assert_eq!(t["temperatureC"], 34.0);
    assert!(t.get("powerW").is_none(), "[N/A] is absent, not zero: {t}");

    // The GPU gets busy; the figures follow into /metrics.
    std::fs::write(tools.path().join("figures"), figures(92, 60000, 61, "612.40")).expect("figures");
    let util = "ringleader_device_utilization_ratio{node=\"real-1\",device=\"0\",resource=\"nvidia.com/gpu\"";
    let mut text = String::new();
    p.wait_for(60, "the busy GPU in /metrics", |p| {
        text = p.rt.block_on(p.client.metrics_text()).unwrap_or_default();
        sample(&text, util) == Some(0.92)
    });
    let of = |family: &str| sample(&text, &format!("{family}{{node=\"real-1\",device=\"0\""));
    assert_eq!(of("ringleader_device_memory_used_bytes"), Some(60000.0 * MIB));
    assert_eq!(of("ringleader_device_memory_total_bytes"), Some(81559.0 * MIB));
    assert_eq!(of("ringleader_device_temperature_celsius"), Some(61.0));
    assert_eq!(of("ringleader_device_power_watts"), Some(612.4));
    // The virtual node: allocation and health, no invented figures.
    assert!(p.get("nodes", "virt-1").is_some_and(|n| n["status"].get("deviceTelemetry").is_none()));
    assert_eq!(sample(&text, "ringleader_device_healthy{node=\"virt-1\",device=\"0\""), Some(1.0), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("ringleader_device_") && l.contains("node=\"virt-1\"") && {
        let family = l.split('{').next().unwrap_or_default();
        !matches!(family, "ringleader_device_allocated" | "ringleader_device_healthy")
    }));
    common::promtool_check_metrics(&text);

    // The history keeps the figures as node series.
    let series = "node/real-1/device/0/utilization,node/real-1/device/0/power";
    p.wait_for(30, "device points in the history", |p| {
        p.rt.block_on(p.client.history(&[("series", series)]))
            .is_ok_and(|h| points(&h, "node/real-1/device/0/utilization").contains(&0.92))
    });
    let h = p.rt.block_on(p.client.history(&[("prefix", "node/real-1/device/")])).expect("history");
    let names: Vec<&str> = h["series"].as_array().into_iter().flatten().filter_map(|s| s["name"].as_str()).collect();
    for figure in ["utilization", "memory", "temperature", "power"] {
        assert!(names.contains(&format!("node/real-1/device/0/{figure}").as_str()), "{names:?}");
    }
    let unit = |name: &str| {
        h["series"].as_array().and_then(|s| s.iter().find(|s| s["name"] == name)).map(|s| s["unit"].clone())
    };
    assert_eq!(unit("node/real-1/device/0/power"), Some(Value::from("watts")));
    let virt = p.rt.block_on(p.client.history(&[("prefix", "node/virt-1/device/")])).expect("history");
    assert_eq!(virt["series"].as_array().map(Vec::len).unwrap_or(0), 0, "{virt}");
}
