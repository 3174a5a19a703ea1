//! Device telemetry of real accelerators: utilisation, memory, temperature
//! and power per device, read where discovery found the devices (`agent
//! --detect`) — NVIDIA through NVML, or through `nvidia-smi --query-gpu`
//! where NVML cannot be loaded; Ascend through `npu-smi info` — and
//! published in the Node's `status.deviceTelemetry`. Nodes whose hardware
//! is a declared profile (virtual nodes, the simulated runtime) have no
//! source and publish nothing: there is nothing real to report.
//!
//! The tools are read on a thread of their own (NVML calls and the tools
//! block); the agent publishes a reading only when a figure moved by more
//! than the tools' own jitter, or every [`REFRESH_ROUNDS`] readings, so an
//! idle machine costs one Node write every few minutes.

pub mod figures;
pub mod parse;

pub use figures::{DeviceFigures, Reading};

use crate::config::Hardware;
use crate::detect::{CommandRunner, RunError, SystemRunner};
use serde_json::{json, Map, Value};
use std::time::Duration;
use tokio::sync::watch;

/// The Node status field the figures go to.
pub const STATUS_FIELD: &str = "deviceTelemetry";
/// A reading whose figures have not moved is still published after this
/// many readings, so the `at` of the last one shows the source is alive.
pub const REFRESH_ROUNDS: u32 = 30;
/// Most devices one reading holds (a tool listing more is cut there).
pub const MAX_DEVICES: usize = 64;

impl DeviceFigures {
    /// Whether `other` differs by more than the jitter of a steady device:
    /// 5 points of utilisation, 2 °C, 5 W or 5 %, 1 % of memory or 64 MiB,
    /// or a figure appearing or vanishing.
    pub fn moved(&self, other: &DeviceFigures) -> bool {
        fn apart(a: Option<f64>, b: Option<f64>, by: impl Fn(f64) -> f64) -> bool {
            match (a, b) {
                (Some(a), Some(b)) => (a - b).abs() >= by(a.abs().max(b.abs())),
                (None, None) => false,
                _ => true,
            }
        }
        let memory_step = |_: f64| {
            let total = self.memory_total_bytes.or(other.memory_total_bytes).unwrap_or(0) as f64;
            (total / 100.0).max(64.0 * 1024.0 * 1024.0)
        };
        let as_f64 = |v: Option<u64>| v.map(|v| v as f64);
        self.id != other.id
            || self.memory_total_bytes != other.memory_total_bytes
            || apart(self.utilization_percent, other.utilization_percent, |_| 5.0)
            || apart(self.temperature_c, other.temperature_c, |_| 2.0)
            || apart(self.power_w, other.power_w, |m| (m * 0.05).max(5.0))
            || apart(as_f64(self.memory_used_bytes), as_f64(other.memory_used_bytes), memory_step)
    }

    /// The device's entry in `status.deviceTelemetry`; absent figures are
    /// left out.
    pub fn to_json(&self, at: f64) -> Value {
        let mut m = Map::new();
        m.insert("id".into(), json!(self.id));
        let mut put = |k: &str, v: Option<Value>| {
            if let Some(v) = v {
                m.insert(k.into(), v);
            }
        };
        put("utilizationPercent", self.utilization_percent.map(|v| json!(v)));
        put("memoryUsedBytes", self.memory_used_bytes.map(|v| json!(v)));
        put("memoryTotalBytes", self.memory_total_bytes.map(|v| json!(v)));
        put("temperatureC", self.temperature_c.map(|v| json!(v)));
        put("powerW", self.power_w.map(|v| json!(v)));
        m.insert("at".into(), json!(at));
        Value::Object(m)
    }
}

/// Whether a reading is worth a Node write after `last` (what the node
/// shows now), `rounds` readings after it was written.
pub fn due(last: Option<&[DeviceFigures]>, rounds: u32, now: &[DeviceFigures]) -> bool {
    match last {
        None => true,
        Some(_) if rounds >= REFRESH_ROUNDS => true,
        Some(last) => last.len() != now.len() || last.iter().zip(now).any(|(a, b)| a.moved(b)),
    }
}

/// Merge patch setting the node's figures (`None`: removing them, when the
/// tool can no longer be read — stale figures would be invented ones).
pub fn node_patch(devices: Option<&[DeviceFigures]>, at: f64) -> Value {
    let value = match devices {
        Some(d) => Value::Array(d.iter().map(|d| d.to_json(at)).collect()),
        None => Value::Null,
    };
    json!({"status": {STATUS_FIELD: value}})
}

/// Where a node's figures are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vendor {
    /// NVML, else `nvidia-smi --query-gpu`.
    Nvidia,
    /// `npu-smi info`.
    Ascend,
}

impl Vendor {
    /// The vendor of detected hardware; `None` for a declared profile,
    /// whose devices are not this machine's.
    pub fn of(hardware: &Hardware) -> Option<Vendor> {
        match hardware {
            Hardware::Profile(_) => None,
            Hardware::TopologyText(_) => Some(Vendor::Nvidia),
            Hardware::NpuSmiText(_) => Some(Vendor::Ascend),
        }
    }
}

/// Reads every device's figures.
pub trait Sampler: Send {
    /// One read.
    fn read(&mut self) -> Result<Vec<DeviceFigures>, String>;
}

/// NVML.
struct NvmlSampler(nvml_wrapper::Nvml);

impl Sampler for NvmlSampler {
    fn read(&mut self) -> Result<Vec<DeviceFigures>, String> {
        use nvml_wrapper::enum_wrappers::device::TemperatureSensor;
        let count = self.0.device_count().map_err(|e| format!("NVML device count: {e}"))?;
        let mut out = Vec::new();
        for index in 0..count.min(MAX_DEVICES as u32) {
            // A GPU NVML cannot open is left out: its health is the monitor's to report.
            let Ok(d) = self.0.device_by_index(index) else { continue };
            let memory = d.memory_info().ok();
            out.push(DeviceFigures {
                id: index,
                utilization_percent: d.utilization_rates().ok().map(|u| f64::from(u.gpu)),
                memory_used_bytes: memory.as_ref().map(|m| m.used),
                memory_total_bytes: memory.as_ref().map(|m| m.total),
                temperature_c: d.temperature(TemperatureSensor::Gpu).ok().map(f64::from),
                power_w: d.power_usage().ok().map(|mw| f64::from(mw) / 1000.0),
            });
        }
        Ok(out)
    }
}

/// A vendor tool, run once per read.
struct CommandSampler {
    runner: Box<dyn CommandRunner>,
    program: &'static str,
    args: Vec<String>,
    parse: fn(&str) -> Result<Vec<DeviceFigures>, parse::FiguresError>,
}

impl Sampler for CommandSampler {
    fn read(&mut self) -> Result<Vec<DeviceFigures>, String> {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        let line = format!("{} {}", self.program, args.join(" "));
        let text = self.runner.output(self.program, &args).map_err(|e| match e {
            RunError::NotFound => format!("`{line}`: {} is not installed", self.program),
            RunError::Failed(m) => format!("`{line}`: {m}"),
        })?;
        let mut devices = (self.parse)(&text).map_err(|e| format!("`{line}` output, {e}"))?;
        devices.truncate(MAX_DEVICES);
        Ok(devices)
    }
}

/// The `nvidia-smi` telemetry query through `runner`.
pub fn nvidia_smi_sampler(runner: Box<dyn CommandRunner>) -> Box<dyn Sampler> {
    Box::new(CommandSampler {
        runner,
        program: "nvidia-smi",
        args: vec![format!("--query-gpu={}", parse::NVIDIA_SMI_FIELDS), "--format=csv,noheader,nounits".into()],
        parse: parse::nvidia_smi_query,
    })
}

/// `npu-smi info` through `runner`.
pub fn npu_smi_sampler(runner: Box<dyn CommandRunner>) -> Box<dyn Sampler> {
    Box::new(CommandSampler { runner, program: "npu-smi", args: vec!["info".into()], parse: parse::npu_smi_info })
}

/// This machine's sampler for `vendor`: NVML when it loads (see
/// [`crate::detect::open_nvml`]), else `nvidia-smi`; `npu-smi` for Ascend.
pub fn sampler(vendor: Vendor) -> Box<dyn Sampler> {
    match vendor {
        Vendor::Nvidia => match crate::detect::open_nvml() {
            Ok(nvml) => Box::new(NvmlSampler(nvml)),
            Err(why) => {
                tracing::info!(%why, "device telemetry through nvidia-smi (NVML not loadable)");
                nvidia_smi_sampler(Box::new(SystemRunner))
            }
        },
        Vendor::Ascend => npu_smi_sampler(Box::new(SystemRunner)),
    }
}

/// Reads `sampler` every `interval` on its own thread and hands each
/// reading to the agent (through [`crate::AgentConfig::device_telemetry`]);
/// the thread ends when every receiver is dropped.
pub fn spawn(mut sampler: Box<dyn Sampler>, interval: Duration) -> Result<watch::Receiver<Option<Reading>>, String> {
    if interval.is_zero() {
        return Err("device telemetry interval: must be greater than zero".to_string());
    }
    let (tx, rx) = watch::channel(None);
    std::thread::Builder::new()
        .name("device-telemetry".to_string())
        .spawn(move || {
            while !tx.is_closed() {
                let devices = sampler.read();
                let reading = Reading { at: ringleader_api::time::now(), devices };
                if tx.send(Some(reading)).is_err() {
                    break;
                }
                std::thread::sleep(interval);
            }
        })
        .map_err(|e| format!("cannot start the device telemetry thread: {e}"))?;
    Ok(rx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    fn gpu(id: u32, util: f64, used_mib: u64, temp: f64, power: Option<f64>) -> DeviceFigures {
        DeviceFigures {
            id,
            utilization_percent: Some(util),
            memory_used_bytes: Some(used_mib << 20),
            memory_total_bytes: Some(81559 << 20),
            temperature_c: Some(temp),
            power_w: power,
        }
    }

    #[test]
    fn only_meaningful_moves_or_the_refresh_are_due() {
        let a = vec![gpu(0, 30.0, 1000, 40.0, Some(100.0)), gpu(1, 0.0, 4, 30.0, None)];
        assert!(due(None, 0, &a), "the first reading is published");
        let jitter = vec![gpu(0, 33.0, 1040, 41.0, Some(103.0)), gpu(1, 2.0, 4, 31.5, None)];
        assert!(!due(Some(&a), 1, &jitter), "jitter is not worth a write");
        assert!(due(Some(&a), REFRESH_ROUNDS, &jitter), "but the refresh is");
        for moved in [
            vec![gpu(0, 36.0, 1000, 40.0, Some(100.0)), a[1].clone()],
            vec![gpu(0, 30.0, 1900, 40.0, Some(100.0)), a[1].clone()],
            vec![gpu(0, 30.0, 1000, 42.0, Some(100.0)), a[1].clone()],
            vec![gpu(0, 30.0, 1000, 40.0, Some(106.0)), a[1].clone()],
            vec![gpu(0, 30.0, 1000, 40.0, None), a[1].clone()],
            vec![a[0].clone()],
        ] {
            assert!(due(Some(&a), 1, &moved), "{moved:?}");
        }
        // 5 % of a big draw is more than 5 W.
        let big = vec![gpu(0, 30.0, 1000, 40.0, Some(600.0))];
        assert!(!due(Some(&big), 1, &[gpu(0, 30.0, 1000, 40.0, Some(620.0))]));
    }

    #[test]
    fn patches_leave_absent_figures_out_and_clear_with_null() {
        let p = node_patch(Some(&[gpu(3, 12.5, 2, 50.0, None)]), 1_700_000_000.5);
        let entry = &p["status"][STATUS_FIELD][0];
        assert_eq!(entry["id"], 3);
        assert_eq!(entry["utilizationPercent"], 12.5);
        assert_eq!(entry["memoryUsedBytes"], 2 << 20);
        assert_eq!(entry["temperatureC"], 50.0);
        assert_eq!(entry["at"], 1_700_000_000.5);
        assert!(entry.get("powerW").is_none(), "absent, not zero: {entry}");
        assert_eq!(node_patch(None, 1.0), json!({"status": {STATUS_FIELD: null}}));
    }

    #[test]
    fn only_detected_hardware_has_a_vendor() {
        assert_eq!(Vendor::of(&Hardware::Profile("hgx-h100-8".into())), None);
        assert_eq!(Vendor::of(&Hardware::TopologyText(String::new())), Some(Vendor::Nvidia));
        assert_eq!(Vendor::of(&Hardware::NpuSmiText(String::new())), Some(Vendor::Ascend));
    }

    /// Answers one command line with text the test changes.
    #[derive(Clone)]
    struct Tool(Arc<Mutex<(String, Result<String, RunError>)>>);

    impl CommandRunner for Tool {
        fn output(&self, program: &str, args: &[&str]) -> Result<String, RunError> {
            let line = std::iter::once(program).chain(args.iter().copied()).collect::<Vec<_>>().join(" ");
            let g = self.0.lock().map_err(|e| RunError::Failed(e.to_string()))?;
            if line == g.0 {
                g.1.clone()
            } else {
                Err(RunError::NotFound)
            }
        }
    }

    #[test]
    fn command_samplers_run_the_documented_command_lines() {
        let query = format!("nvidia-smi --query-gpu={} --format=csv,noheader,nounits", parse::NVIDIA_SMI_FIELDS);
        let tool = Tool(Arc::new(Mutex::new((query, Ok("0, GPU-a, 5, 10, 100, 30, [N/A]\n".to_string())))));
        let mut s = nvidia_smi_sampler(Box::new(tool.clone()));
        let r = s.read().expect("read");
        assert_eq!((r[0].utilization_percent, r[0].power_w), (Some(5.0), None));
        if let Ok(mut g) = tool.0.lock() {
            g.1 = Err(RunError::Failed("exit status: 9: NVIDIA-SMI has failed".into()));
        }
        let e = s.read().expect_err("fails");
        assert!(e.contains("nvidia-smi --query-gpu=") && e.contains("exit status: 9"), "{e}");
        if let Ok(mut g) = tool.0.lock() {
            g.1 = Ok("garbage".into());
        }
        assert!(s.read().expect_err("refused").contains("line 1"));
        let e = npu_smi_sampler(Box::new(tool)).read().expect_err("not installed");
        assert!(e.contains("npu-smi is not installed"), "{e}");
    }

    struct Counting(Arc<Mutex<u32>>);

    impl Sampler for Counting {
        fn read(&mut self) -> Result<Vec<DeviceFigures>, String> {
            let mut n = self.0.lock().map_err(|e| e.to_string())?;
            *n += 1;
            Ok(vec![DeviceFigures { id: *n, ..Default::default() }])
        }
    }

    #[tokio::test]
    async fn the_thread_hands_over_readings_and_stops_with_its_receivers() {
        let count = Arc::new(Mutex::new(0));
        let mut rx = spawn(Box::new(Counting(count.clone())), Duration::from_millis(5)).expect("spawn");
        for _ in 0..2 {
            tokio::time::timeout(Duration::from_secs(10), rx.changed()).await.expect("in time").expect("open");
        }
        let reading = rx.borrow_and_update().clone().expect("a reading");
        assert!(reading.at > 1.6e9);
        assert!(reading.devices.is_ok_and(|d| d[0].id >= 1));
        drop(rx);
        let settled = *count.lock().expect("lock");
        std::thread::sleep(Duration::from_millis(100));
        assert!(*count.lock().expect("lock") <= settled + 1, "the thread ended with its receiver");
        assert!(spawn(Box::new(Counting(count)), Duration::ZERO).is_err());
    }
}
