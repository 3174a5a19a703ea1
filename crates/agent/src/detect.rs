//! Device discovery for `ringleader agent --detect`: what accelerators the
//! machine has, how they are linked, and which are unhealthy — then and as
//! it changes.
//!
//! NVIDIA GPUs are read through NVML, loaded at run time by `nvml-wrapper`
//! (libloading; no link-time dependency, so the agent runs on machines
//! without a driver), with the link matrix from `nvidia-smi topo -m`. Ascend
//! NPUs are read from `npu-smi info`. The tool text goes into the Node as
//! `spec.topologyText` / `spec.npuSmiText`, checked by the scheduler's own
//! parsers first, so a node is never registered with hardware the scheduler
//! cannot model. Commands and NVML sit behind traits so that tests run on
//! fixture texts.

use crate::config::{Hardware, VirtualNode};
use ringleader_topology::parse::{npu_smi, nvidia_smi, ParseError};
use ringleader_topology::LinkSpeeds;
use std::collections::BTreeMap;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// The command printing the GPU link matrix.
pub const NVIDIA_SMI_TOPO: &str = "nvidia-smi topo -m";
/// The command printing the NPU table.
pub const NPU_SMI_INFO: &str = "npu-smi info";
/// How long one vendor tool may run: both hang when the driver is wedged.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// Why discovery failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DetectError {
    /// Neither NVIDIA nor Ascend devices were found.
    #[error(
        "no accelerators detected ({}); pass --profile <name> to declare the node's hardware \
         (`ringleader profiles` lists the built-in ones)",
        .tried.join("; ")
    )]
    NothingFound {
        /// What was tried and why it found nothing.
        tried: Vec<String>,
    },
    /// A vendor tool could not be run or failed.
    #[error("`{command}`: {message}")]
    Command {
        /// The command line.
        command: String,
        /// What went wrong.
        message: String,
    },
    /// A vendor tool printed something the parser refuses.
    #[error("`{command}` output, {}: {message}", if *.line > 0 { format!("line {line}") } else { "whole table".to_string() })]
    Parse {
        /// The command line.
        command: String,
        /// 1-based line of its output (0: not one line).
        line: usize,
        /// The parser's message (with the offending token).
        message: String,
    },
    /// NVML and `nvidia-smi` disagree, or NVML failed after loading.
    #[error("NVML: {0}")]
    Nvml(String),
    /// A bad argument.
    #[error("{0}")]
    Invalid(String),
}

fn parse_error(command: &str, e: ParseError) -> DetectError {
    DetectError::Parse { command: command.to_string(), line: e.line, message: e.to_string() }
}

// ----- commands -----

/// Why a command gave no output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunError {
    /// The program is not installed (not on `PATH`).
    NotFound,
    /// It ran and failed, or could not be started, or timed out.
    Failed(String),
}

/// Runs the vendor tools; tests substitute fixture texts.
pub trait CommandRunner: Send + Sync {
    /// Standard output of `program args`, when it exits 0.
    fn output(&self, program: &str, args: &[&str]) -> Result<String, RunError>;
}

/// Runs real commands, each bounded by [`COMMAND_TIMEOUT`].
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemRunner;

impl CommandRunner for SystemRunner {
    fn output(&self, program: &str, args: &[&str]) -> Result<String, RunError> {
        run_bounded(program, args, COMMAND_TIMEOUT)
    }
}

fn run_bounded(program: &str, args: &[&str], timeout: Duration) -> Result<String, RunError> {
    let mut child = match Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(RunError::NotFound),
        Err(e) => return Err(RunError::Failed(format!("cannot start: {e}"))),
    };
    // Read the pipes on their own threads: a child blocked on a full pipe
    // would otherwise never exit.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!("timed out after {} s", timeout.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => break Err(format!("wait failed: {e}")),
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    match status {
        Ok(s) if s.success() => Ok(stdout),
        Ok(s) => {
            let said = stderr.trim();
            let said = if said.is_empty() { stdout.trim() } else { said };
            Err(RunError::Failed(format!("{s}: {}", said.lines().take(3).collect::<Vec<_>>().join(" / "))))
        }
        Err(m) => Err(RunError::Failed(m)),
    }
}

fn run(runner: &dyn CommandRunner, command: &str) -> Result<String, RunError> {
    let mut words = command.split_whitespace();
    let program = words.next().unwrap_or_default();
    let args: Vec<&str> = words.collect();
    runner.output(program, &args)
}

// ----- NVML -----

/// One GPU as NVML reports it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GpuStatus {
    /// NVML index (the `GPU<n>` of `nvidia-smi`, the device ID in the Node).
    pub index: u32,
    /// Product name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// `GPU-…` UUID.
    pub uuid: String,
    /// Total memory, MiB.
    pub memory_mib: u64,
    /// Why the GPU must not be used, when it must not.
    pub problem: Option<String>,
}

/// NVML as the agent uses it; tests substitute fixtures.
pub trait GpuReader: Send {
    /// Every GPU with its health, in index order.
    fn read(&mut self) -> Result<Vec<GpuStatus>, String>;
}

/// XIDs caused by the application, not the GPU (as the NVIDIA device plugin
/// skips them): graphics engine exception, MMU fault, reset channel
/// verification, preemptive cleanup, video decoder error, context switch
/// timeout.
const APPLICATION_XIDS: [u64; 6] = [13, 31, 43, 45, 68, 109];

/// The real NVML.
pub struct NvmlReader {
    nvml: &'static nvml_wrapper::Nvml,
    /// Critical-XID events, where the driver supports them.
    events: Option<nvml_wrapper::EventSet<'static>>,
    /// GPUs that raised a critical XID: it stays until the GPU is reset,
    /// and a reset restarts the agent.
    xid: BTreeMap<u32, String>,
}

impl std::fmt::Debug for NvmlReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvmlReader").field("events", &self.events.is_some()).field("xid", &self.xid).finish()
    }
}

impl NvmlReader {
    /// Loads `libnvidia-ml.so.1` and initialises NVML; an error (no driver,
    /// no library) says why.
    pub fn open() -> Result<NvmlReader, String> {
        let nvml = open_nvml()?;
        // Leaked once per process so that the event set, which borrows it,
        // can live in the reader beside it; NVML is a process-wide singleton.
        let nvml: &'static nvml_wrapper::Nvml = Box::leak(Box::new(nvml));
        let events = xid_events(nvml);
        Ok(NvmlReader { nvml, events, xid: BTreeMap::new() })
    }

    fn drain_events(&mut self) {
        use nvml_wrapper::bitmasks::event::EventTypes;
        use nvml_wrapper::enums::event::XidError;
        let Some(set) = &self.events else { return };
        // Bounded: the driver queues a finite number, and a storm waits for the next poll.
        for _ in 0..256 {
            let Ok(ev) = set.wait(0) else { break };
            if !ev.event_type.contains(EventTypes::CRITICAL_XID_ERROR) {
                continue;
            }
            let xid = match ev.event_data {
                Some(XidError::Value(x)) if APPLICATION_XIDS.contains(&x) => continue,
                Some(XidError::Value(x)) => x.to_string(),
                _ => "unknown".to_string(),
            };
            if let Ok(i) = ev.device.index() {
                self.xid.insert(i, format!("critical XID {xid}"));
            }
        }
    }
}

/// Environment variable naming the NVML library to load (a driver
/// installed outside the loader's path; a path that does not exist makes
/// NVML absent, as on a machine without the driver).
pub const NVML_LIBRARY_ENV: &str = "RINGLEADER_NVML_LIBRARY";

/// Loads NVML (`libnvidia-ml.so.1`, or [`NVML_LIBRARY_ENV`]) and
/// initialises it; an error (no driver, no library) says why.
pub fn open_nvml() -> Result<nvml_wrapper::Nvml, String> {
    let library = std::env::var_os(NVML_LIBRARY_ENV).filter(|p| !p.is_empty());
    let mut builder = nvml_wrapper::Nvml::builder();
    if let Some(path) = &library {
        builder.lib_path(path);
    }
    builder.init().map_err(|e| match e {
        nvml_wrapper::error::NvmlError::LibloadingError(e) => match &library {
            Some(p) => format!("libnvidia-ml not loadable from {NVML_LIBRARY_ENV}={} ({e})", p.to_string_lossy()),
            None => format!("libnvidia-ml not loadable ({e})"),
        },
        e => e.to_string(),
    })
}

fn xid_events(nvml: &'static nvml_wrapper::Nvml) -> Option<nvml_wrapper::EventSet<'static>> {
    use nvml_wrapper::bitmasks::event::EventTypes;
    let mut set = nvml.create_event_set().ok()?;
    for i in 0..nvml.device_count().ok()? {
        let Ok(d) = nvml.device_by_index(i) else { continue };
        // Registering an unsupported type would free the set (nvml-wrapper
        // consumes it), so ask first.
        if d.supported_event_types().is_ok_and(|t| t.contains(EventTypes::CRITICAL_XID_ERROR)) {
            set = d.register_events(EventTypes::CRITICAL_XID_ERROR, set).ok()?;
        }
    }
    Some(set)
}

impl GpuReader for NvmlReader {
    fn read(&mut self) -> Result<Vec<GpuStatus>, String> {
        use nvml_wrapper::error::NvmlError;
        self.drain_events();
        let count = self.nvml.device_count().map_err(|e| format!("device count: {e}"))?;
        let mut gpus = Vec::new();
        for index in 0..count {
            let d = match self.nvml.device_by_index(index) {
                Ok(d) => d,
                Err(e) => {
                    gpus.push(GpuStatus { index, problem: Some(format!("unreachable: {e}")), ..Default::default() });
                    continue;
                }
            };
            let lost = |e: &NvmlError| matches!(e, NvmlError::GpuLost | NvmlError::Unknown);
            let mut problem = None;
            let name = d.name().unwrap_or_else(|e| {
                if lost(&e) {
                    problem = Some(format!("unreachable: {e}"));
                }
                String::new()
            });
            let uuid = d.uuid().unwrap_or_default();
            let memory_mib = match d.memory_info() {
                Ok(m) => m.total / (1024 * 1024),
                Err(e) => {
                    if lost(&e) {
                        problem = Some(format!("unreachable: {e}"));
                    }
                    0
                }
            };
            if problem.is_none() && matches!(d.are_pages_pending_retired(), Ok(true)) {
                problem = Some("memory pages pending retirement (needs a reset)".to_string());
            }
            if problem.is_none() {
                problem = self.xid.get(&index).cloned();
            }
            gpus.push(GpuStatus { index, name, uuid, memory_mib, problem });
        }
        Ok(gpus)
    }
}

/// GPUs as `nvidia-smi --query-gpu` lists them, where NVML itself cannot
/// be loaded (a driver outside the loader's path that `nvidia-smi` finds).
/// A GPU the tool cannot open is missing from the list, or reads `[GPU is
/// lost]`: unhealthy either way.
pub struct SmiGpuReader {
    runner: Box<dyn CommandRunner>,
}

impl std::fmt::Debug for SmiGpuReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SmiGpuReader")
    }
}

impl SmiGpuReader {
    /// Reads through `runner`.
    pub fn new(runner: Box<dyn CommandRunner>) -> SmiGpuReader {
        SmiGpuReader { runner }
    }

    fn query(&self) -> Result<Vec<GpuStatus>, RunError> {
        use crate::telemetry::parse::{nvidia_smi_inventory, NVIDIA_SMI_INVENTORY_FIELDS};
        let fields = format!("--query-gpu={NVIDIA_SMI_INVENTORY_FIELDS}");
        let text = self.runner.output("nvidia-smi", &[&fields, "--format=csv,noheader,nounits"])?;
        let gpus =
            nvidia_smi_inventory(&text).map_err(|e| RunError::Failed(format!("`nvidia-smi {fields}` output, {e}")))?;
        Ok(gpus
            .into_iter()
            .map(|g| GpuStatus {
                index: g.index,
                name: g.name,
                uuid: g.uuid,
                memory_mib: g.memory_mib,
                problem: g.problem,
            })
            .collect())
    }
}

impl GpuReader for SmiGpuReader {
    fn read(&mut self) -> Result<Vec<GpuStatus>, String> {
        self.query().map_err(|e| match e {
            RunError::NotFound => "nvidia-smi is no longer installed".to_string(),
            RunError::Failed(m) => format!("nvidia-smi: {m}"),
        })
    }
}

/// NVML, else `nvidia-smi` where it lists GPUs; the error says why neither.
fn open_gpu_reader(runner: Box<dyn CommandRunner>) -> Result<Box<dyn GpuReader>, String> {
    let nvml_error = match NvmlReader::open() {
        Ok(r) => return Ok(Box::new(r)),
        Err(why) => why,
    };
    let smi = SmiGpuReader::new(runner);
    match smi.query() {
        Ok(gpus) if !gpus.is_empty() => {
            tracing::info!(%nvml_error, "GPUs read through nvidia-smi");
            Ok(Box::new(smi))
        }
        Ok(_) => Err(format!("{nvml_error}; nvidia-smi lists no GPUs")),
        Err(RunError::NotFound) => Err(format!("{nvml_error}; nvidia-smi not installed")),
        Err(RunError::Failed(m)) => Err(format!("{nvml_error}; nvidia-smi: {m}")),
    }
}

// ----- discovery -----

/// One discovered device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Device ID as the Node numbers it (`status.unhealthyDevices` uses these).
    pub id: u32,
    /// Product or chip name.
    pub name: String,
    /// GPU UUID, or the NPU's PCIe bus ID.
    pub identity: String,
    /// Total memory (HBM where the tool tells it), MiB; 0 when unknown.
    pub memory_mib: u64,
    /// Why it is unhealthy, when it is.
    pub problem: Option<String>,
}

impl From<GpuStatus> for DeviceInfo {
    fn from(g: GpuStatus) -> DeviceInfo {
        DeviceInfo { id: g.index, name: g.name, identity: g.uuid, memory_mib: g.memory_mib, problem: g.problem }
    }
}

/// Where health is re-read from.
pub enum HealthProbe {
    /// NVML.
    Nvml(Box<dyn GpuReader>),
    /// `npu-smi info`.
    NpuSmi(Box<dyn CommandRunner>),
}

impl std::fmt::Debug for HealthProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HealthProbe::Nvml(_) => "HealthProbe::Nvml",
            HealthProbe::NpuSmi(_) => "HealthProbe::NpuSmi",
        })
    }
}

/// What discovery found.
#[derive(Debug)]
pub struct Detected {
    /// The Node's hardware statement (tool text, validated).
    pub hardware: Hardware,
    /// The devices, in the Node's order.
    pub devices: Vec<DeviceInfo>,
    /// IDs of the unhealthy devices, sorted.
    pub unhealthy: Vec<u32>,
    /// Labels describing the devices (GPU feature discovery's names), for
    /// node selectors such as `nvidia.com/gpu.product`.
    pub labels: BTreeMap<String, String>,
    probe: HealthProbe,
}

impl Detected {
    /// `node` with the detected hardware, and the detected labels where the
    /// node does not set them itself.
    pub fn apply(&self, mut node: VirtualNode) -> VirtualNode {
        for (k, v) in &self.labels {
            node.labels.entry(k.clone()).or_insert_with(|| v.clone());
        }
        node.with_hardware(self.hardware.clone())
    }

    /// A monitor re-reading health where discovery read it, starting from
    /// what discovery saw.
    pub fn into_monitor(self) -> HealthMonitor {
        let ids = self.devices.iter().map(|d| d.id).collect();
        HealthMonitor { probe: self.probe, ids, last: self.unhealthy }
    }
}

/// Discovers this machine's devices: NVML (or `nvidia-smi --query-gpu`
/// where NVML does not load) + `nvidia-smi topo -m`, else `npu-smi`.
pub fn detect() -> Result<Detected, DetectError> {
    detect_with(open_gpu_reader(Box::new(SystemRunner)), Box::new(SystemRunner))
}

/// [`detect`] with NVML (or why it could not be opened) and the command
/// runner given.
pub fn detect_with(
    nvml: Result<Box<dyn GpuReader>, String>,
    runner: Box<dyn CommandRunner>,
) -> Result<Detected, DetectError> {
    let mut tried = Vec::new();
    match nvml {
        Ok(mut reader) => {
            let gpus = reader.read().map_err(DetectError::Nvml)?;
            if gpus.is_empty() {
                tried.push("NVML: loaded, no GPUs".to_string());
            } else {
                return detect_nvidia(reader, gpus, runner.as_ref());
            }
        }
        Err(why) => tried.push(format!("NVML: {why}")),
    }
    match run(runner.as_ref(), NPU_SMI_INFO) {
        Ok(text) => detect_ascend(text, runner),
        Err(RunError::NotFound) => {
            tried.push("npu-smi: not installed".to_string());
            Err(DetectError::NothingFound { tried })
        }
        Err(RunError::Failed(m)) => Err(DetectError::Command { command: NPU_SMI_INFO.to_string(), message: m }),
    }
}

fn detect_nvidia(
    reader: Box<dyn GpuReader>,
    gpus: Vec<GpuStatus>,
    runner: &dyn CommandRunner,
) -> Result<Detected, DetectError> {
    let text = run(runner, NVIDIA_SMI_TOPO).map_err(|e| DetectError::Command {
        command: NVIDIA_SMI_TOPO.to_string(),
        message: match e {
            RunError::NotFound => {
                "nvidia-smi is not installed, but NVML found GPUs: it is needed for the link matrix".to_string()
            }
            RunError::Failed(m) => m,
        },
    })?;
    let profile = nvidia_smi::profile_from_topo("detected", &text, LinkSpeeds::default(), "NVIDIA GPU")
        .map_err(|e| parse_error(NVIDIA_SMI_TOPO, e))?;
    let topo_ids: Vec<u32> = profile.devices.iter().map(|d| d.id).collect();
    let nvml_ids: Vec<u32> = gpus.iter().map(|g| g.index).collect();
    if topo_ids != nvml_ids {
        return Err(DetectError::Nvml(format!(
            "NVML reports GPUs {nvml_ids:?} but `{NVIDIA_SMI_TOPO}` lists {topo_ids:?}"
        )));
    }
    let mut labels = BTreeMap::new();
    if let Some(g) = gpus.first() {
        labels.insert("nvidia.com/gpu.product".to_string(), label_value(&g.name));
        labels.insert("nvidia.com/gpu.memory".to_string(), g.memory_mib.to_string());
    }
    labels.insert("nvidia.com/gpu.count".to_string(), gpus.len().to_string());
    let devices: Vec<DeviceInfo> = gpus.into_iter().map(DeviceInfo::from).collect();
    Ok(Detected {
        hardware: Hardware::TopologyText(text),
        unhealthy: unhealthy_ids(&devices),
        devices,
        labels,
        probe: HealthProbe::Nvml(reader),
    })
}

/// A label value as GPU feature discovery writes product names: spaces to
/// dashes, other characters a label may not hold dropped, at most 63.
fn label_value(name: &str) -> String {
    let v: String = name
        .trim()
        .chars()
        .map(|c| if c == ' ' { '-' } else { c })
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .take(63)
        .collect();
    v.trim_matches(|c: char| !c.is_ascii_alphanumeric()).to_string()
}

fn unhealthy_ids(devices: &[DeviceInfo]) -> Vec<u32> {
    let mut ids: Vec<u32> = devices.iter().filter(|d| d.problem.is_some()).map(|d| d.id).collect();
    ids.sort_unstable();
    ids
}

/// The NPU table's devices, in the Node's order and numbering.
fn npu_devices(text: &str) -> Result<Vec<DeviceInfo>, DetectError> {
    let info = npu_smi::parse_info(text).map_err(|e| parse_error(NPU_SMI_INFO, e))?;
    let (profile, _) = npu_smi::profile_from_info(&info).map_err(|e| parse_error(NPU_SMI_INFO, e))?;
    Ok(profile
        .devices
        .iter()
        .zip(&info.chips)
        .map(|(d, c)| DeviceInfo {
            id: d.id,
            name: c.name.clone(),
            identity: c.bus_id.clone(),
            memory_mib: c.hbm_total_mb.or(c.memory_total_mb).unwrap_or(0),
            problem: (!c.is_healthy()).then(|| format!("npu-smi Health: {}", c.health)),
        })
        .collect())
}

fn detect_ascend(text: String, runner: Box<dyn CommandRunner>) -> Result<Detected, DetectError> {
    let devices = npu_devices(&text)?;
    Ok(Detected {
        hardware: Hardware::NpuSmiText(text),
        unhealthy: unhealthy_ids(&devices),
        devices,
        labels: BTreeMap::new(),
        probe: HealthProbe::NpuSmi(runner),
    })
}

// ----- health as it changes -----

/// A change in which devices the hardware reports unhealthy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthUpdate {
    /// Unhealthy device IDs, sorted: the whole set, not a difference.
    pub unhealthy: Vec<u32>,
    /// Why, per unhealthy device.
    pub reasons: BTreeMap<u32, String>,
}

/// Re-reads device health and says when the unhealthy set changes.
#[derive(Debug)]
pub struct HealthMonitor {
    probe: HealthProbe,
    /// Every device ID of the node.
    ids: Vec<u32>,
    last: Vec<u32>,
}

impl HealthMonitor {
    /// The unhealthy set last reported (discovery's, before any change).
    pub fn current(&self) -> &[u32] {
        &self.last
    }

    /// Reads health once; `Some` when the unhealthy set differs from the
    /// last one. A failed read makes every device unhealthy: the agent
    /// cannot vouch for hardware it cannot see.
    pub fn poll(&mut self) -> Option<HealthUpdate> {
        let read: Result<Vec<DeviceInfo>, String> = match &mut self.probe {
            HealthProbe::Nvml(r) => r.read().map(|gpus| gpus.into_iter().map(DeviceInfo::from).collect()),
            HealthProbe::NpuSmi(runner) => match run(runner.as_ref(), NPU_SMI_INFO) {
                Ok(text) => npu_devices(&text).map_err(|e| e.to_string()),
                Err(RunError::NotFound) => Err(format!("`{NPU_SMI_INFO}`: npu-smi is no longer installed")),
                Err(RunError::Failed(m)) => Err(format!("`{NPU_SMI_INFO}`: {m}")),
            },
        };
        let mut reasons = BTreeMap::new();
        match read {
            Ok(devices) => {
                // A device that vanished from the listing is as bad as one reported broken.
                for id in self.ids.iter().filter(|id| !devices.iter().any(|d| d.id == **id)) {
                    reasons.insert(*id, "no longer listed".to_string());
                }
                // IDs the node does not have cannot be reported (the Node would not parse).
                for d in devices.into_iter().filter(|d| self.ids.contains(&d.id)) {
                    if let Some(p) = d.problem {
                        reasons.insert(d.id, p);
                    }
                }
            }
            Err(e) => {
                for id in &self.ids {
                    reasons.insert(*id, format!("health read failed: {e}"));
                }
            }
        }
        let unhealthy: Vec<u32> = reasons.keys().copied().collect();
        if unhealthy == self.last {
            return None;
        }
        self.last = unhealthy.clone();
        Some(HealthUpdate { unhealthy, reasons })
    }

    /// Polls every `interval` on its own thread (NVML calls and `npu-smi`
    /// block) and sends each change; the thread ends when the receiver is
    /// dropped.
    pub fn spawn(mut self, interval: Duration) -> Result<mpsc::UnboundedReceiver<HealthUpdate>, DetectError> {
        if interval.is_zero() {
            return Err(DetectError::Invalid("health interval: must be greater than zero".to_string()));
        }
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::Builder::new()
            .name("device-health".to_string())
            .spawn(move || {
                while !tx.is_closed() {
                    std::thread::sleep(interval);
                    if let Some(update) = self.poll() {
                        if tx.send(update).is_err() {
                            break;
                        }
                    }
                }
            })
            .map_err(|e| DetectError::Invalid(format!("cannot start the health thread: {e}")))?;
        Ok(rx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AgentConfig;
    use std::sync::{Arc, Mutex};

    const HGX_H100: &str = include_str!("../../topology/tests/data/hgx-h100.topo");
    const PCIE_4090: &str = include_str!("../../topology/tests/data/pcie-4090.topo");
    const NPU_910: &str = include_str!("../tests/data/npu-smi-910-8.txt");

    /// Answers commands from a table the test can change; anything else is not installed.
    #[derive(Clone, Default)]
    struct Fixtures(Arc<Mutex<BTreeMap<String, Result<String, RunError>>>>);

    impl Fixtures {
        fn with(self, command: &str, out: Result<&str, RunError>) -> Fixtures {
            self.set(command, out);
            self
        }
        fn set(&self, command: &str, out: Result<&str, RunError>) {
            if let Ok(mut m) = self.0.lock() {
                m.insert(command.to_string(), out.map(str::to_string));
            }
        }
    }

    impl CommandRunner for Fixtures {
        fn output(&self, program: &str, args: &[&str]) -> Result<String, RunError> {
            let line = std::iter::once(program).chain(args.iter().copied()).collect::<Vec<_>>().join(" ");
            self.0.lock().ok().and_then(|m| m.get(&line).cloned()).unwrap_or(Err(RunError::NotFound))
        }
    }

    /// NVML answering from a list the test can change.
    #[derive(Clone)]
    struct FakeNvml(Arc<Mutex<Result<Vec<GpuStatus>, String>>>);

    impl FakeNvml {
        fn new(name: &str, count: u32, memory_mib: u64) -> FakeNvml {
            let gpus = (0..count)
                .map(|index| GpuStatus {
                    index,
                    name: name.to_string(),
                    uuid: format!("GPU-{index:08x}-0000-0000-0000-000000000000"),
                    memory_mib,
                    problem: None,
                })
                .collect();
            FakeNvml(Arc::new(Mutex::new(Ok(gpus))))
        }
        fn set_problem(&self, index: u32, problem: Option<&str>) {
            if let Ok(mut g) = self.0.lock() {
                if let Ok(gpus) = g.as_mut() {
                    gpus[index as usize].problem = problem.map(str::to_string);
                }
            }
        }
        fn fail(&self, why: &str) {
            if let Ok(mut g) = self.0.lock() {
                *g = Err(why.to_string());
            }
        }
        fn boxed(&self) -> Result<Box<dyn GpuReader>, String> {
            Ok(Box::new(self.clone()))
        }
    }

    impl GpuReader for FakeNvml {
        fn read(&mut self) -> Result<Vec<GpuStatus>, String> {
            self.0.lock().map_err(|e| e.to_string())?.clone()
        }
    }

    fn no_nvml() -> Result<Box<dyn GpuReader>, String> {
        Err("libnvidia-ml not loadable (libnvidia-ml.so.1: cannot open shared object file)".to_string())
    }

    fn validates(node: VirtualNode) -> Result<(), String> {
        AgentConfig::new("/tmp/x", vec![node]).validate().map_err(|e| e.to_string())
    }

    #[test]
    fn nvlink_box_is_read_from_nvml_and_the_topo_matrix() {
        let nvml = FakeNvml::new("NVIDIA H100 80GB HBM3", 8, 81559);
        nvml.set_problem(3, Some("critical XID 79"));
        let run = Fixtures::default().with(NVIDIA_SMI_TOPO, Ok(HGX_H100));
        let d = detect_with(nvml.boxed(), Box::new(run)).unwrap();
        assert_eq!(d.hardware, Hardware::TopologyText(HGX_H100.to_string()));
        assert_eq!(d.devices.len(), 8);
        assert_eq!(d.devices[5].identity, "GPU-00000005-0000-0000-0000-000000000000");
        assert_eq!(d.unhealthy, [3]);
        assert_eq!(d.labels["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3");
        assert_eq!(d.labels["nvidia.com/gpu.count"], "8");
        assert_eq!(d.labels["nvidia.com/gpu.memory"], "81559");

        let node = d.apply(VirtualNode::new("gpu-0", "", "127.0.1.1").with_label("nvidia.com/gpu.count", "mine"));
        assert_eq!(node.labels["nvidia.com/gpu.count"], "mine", "the node's own labels win");
        validates(node.clone()).unwrap();
        let obj = crate::node::node_object(&node);
        assert!(obj["spec"].get("profile").is_none());
        let api: ringleader_api::kinds::cluster::Node = serde_json::from_value(obj).unwrap();
        let text = api.spec.topology_text.unwrap();
        let m = nvidia_smi::parse_topo(&text).unwrap();
        assert_eq!(m.gpus.len(), 8);
        assert_eq!(m.gpu_links[0][7].code(), "NV18");
    }

    #[test]
    fn pcie_box_and_a_count_mismatch() {
        let nvml = FakeNvml::new("NVIDIA GeForce RTX 4090", 8, 24564);
        let run = Fixtures::default().with(NVIDIA_SMI_TOPO, Ok(PCIE_4090));
        let d = detect_with(nvml.boxed(), Box::new(run.clone())).unwrap();
        assert!(d.unhealthy.is_empty());
        assert_eq!(d.labels["nvidia.com/gpu.product"], "NVIDIA-GeForce-RTX-4090");
        validates(d.apply(VirtualNode::new("pc", "", "127.0.1.1"))).unwrap();
        let m = nvidia_smi::parse_topo(PCIE_4090).unwrap();
        assert!(m.gpu_links.iter().flatten().all(|k| !k.code().starts_with("NV")));

        let four = FakeNvml::new("NVIDIA GeForce RTX 4090", 4, 24564);
        let err = detect_with(four.boxed(), Box::new(run)).unwrap_err().to_string();
        assert!(err.contains("NVML reports GPUs [0, 1, 2, 3]") && err.contains(NVIDIA_SMI_TOPO), "{err}");
    }

    #[test]
    fn ascend_910_box_with_one_unhealthy_npu() {
        let run = Fixtures::default().with(NPU_SMI_INFO, Ok(NPU_910));
        let d = detect_with(no_nvml(), Box::new(run)).unwrap();
        assert_eq!(d.hardware, Hardware::NpuSmiText(NPU_910.to_string()));
        assert_eq!(d.devices.iter().map(|d| d.id).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
        assert_eq!(d.unhealthy, [6]);
        assert_eq!(d.devices[6].problem.as_deref(), Some("npu-smi Health: Critical"));
        assert_eq!(d.devices[2].identity, "0000:81:00.0");
        assert_eq!(d.devices[2].memory_mib, 32768);
        let node = d.apply(VirtualNode::new("npu-0", "atlas-800-910", "127.0.1.1"));
        assert_eq!(node.profile, "", "the detected text replaces the profile");
        validates(node.clone()).unwrap();
        let patch = crate::node::registration_patch(&node);
        assert_eq!(patch["spec"]["profile"], serde_json::Value::Null);
        assert_eq!(patch["spec"]["npuSmiText"], NPU_910);
        let info = npu_smi::parse_info(NPU_910).unwrap();
        assert_eq!(npu_smi::profile_from_info(&info).unwrap().0.name, "atlas-800-910");
    }

    #[test]
    fn without_nvml_gpus_are_read_through_nvidia_smi() {
        use crate::telemetry::parse::NVIDIA_SMI_INVENTORY_FIELDS;
        let query = format!("nvidia-smi --query-gpu={NVIDIA_SMI_INVENTORY_FIELDS} --format=csv,noheader,nounits");
        let listing: String = (0..8)
            .map(|i| format!("{i}, GPU-{i:08x}-0000-0000-0000-000000000000, 81559, NVIDIA H100 80GB HBM3\n"))
            .collect();
        let run = Fixtures::default().with(NVIDIA_SMI_TOPO, Ok(HGX_H100)).with(&query, Ok(&listing));
        let reader: Box<dyn GpuReader> = Box::new(SmiGpuReader::new(Box::new(run.clone())));
        let d = detect_with(Ok(reader), Box::new(run.clone())).unwrap();
        assert_eq!(d.devices.len(), 8);
        assert_eq!(d.labels["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3");
        assert_eq!(d.devices[2].memory_mib, 81559);
        let mut m = d.into_monitor();
        assert_eq!(m.poll(), None);
        // GPU 5 falls off the bus: nvidia-smi prints a line of its own instead.
        let lost = listing.replacen(
            "5, GPU-00000005-0000-0000-0000-000000000000, 81559, NVIDIA H100 80GB HBM3",
            "Unable to determine the device handle for GPU 0000:9D:00.0: Unknown Error",
            1,
        );
        run.set(&query, Ok(&lost));
        let u = m.poll().unwrap();
        assert_eq!(u.unhealthy, [5]);
        assert_eq!(u.reasons[&5], "no longer listed");
        run.set(&query, Ok("0, [GPU is lost], [GPU is lost], [GPU is lost]\n"));
        let u = m.poll().unwrap();
        assert_eq!(u.reasons[&0], "nvidia-smi: [GPU is lost]");
        run.set(&query, Ok(&listing));
        assert_eq!(m.poll().unwrap().unhealthy, Vec::<u32>::new());
        run.set(&query, Ok("garbage"));
        let u = m.poll().unwrap();
        assert_eq!(u.unhealthy.len(), 8, "an unreadable listing vouches for no GPU");
        assert!(u.reasons[&3].contains("line 1"), "{:?}", u.reasons);
    }

    #[test]
    fn nothing_found_asks_for_a_profile() {
        let err = detect_with(no_nvml(), Box::new(Fixtures::default())).unwrap_err();
        assert!(matches!(err, DetectError::NothingFound { .. }));
        let msg = err.to_string();
        assert!(msg.contains("--profile") && msg.contains("libnvidia-ml") && msg.contains("npu-smi"), "{msg}");
        // NVML loaded on a machine with no GPU counts as none found too.
        let empty = FakeNvml::new("x", 0, 0);
        let msg = detect_with(empty.boxed(), Box::new(Fixtures::default())).unwrap_err().to_string();
        assert!(msg.contains("no GPUs") && msg.contains("--profile"), "{msg}");
    }

    #[test]
    fn malformed_tool_output_names_the_command_and_line() {
        let nvml = FakeNvml::new("NVIDIA H100 80GB HBM3", 8, 81559);
        let bad = HGX_H100.replacen("GPU3\tNV18", "GPU3\tNV?", 1);
        let run = Fixtures::default().with(NVIDIA_SMI_TOPO, Ok(&bad));
        let err = detect_with(nvml.boxed(), Box::new(run)).unwrap_err();
        assert!(matches!(err, DetectError::Parse { line: 5, .. }), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains("`nvidia-smi topo -m` output, line 5") && msg.contains("NV?"), "{msg}");

        let run =
            Fixtures::default().with(NVIDIA_SMI_TOPO, Err(RunError::Failed("exit status: 9: driver gone".into())));
        let msg = detect_with(nvml.boxed(), Box::new(run)).unwrap_err().to_string();
        assert!(msg.contains("`nvidia-smi topo -m`: exit status: 9"), "{msg}");
        let msg = detect_with(nvml.boxed(), Box::new(Fixtures::default())).unwrap_err().to_string();
        assert!(msg.contains("nvidia-smi is not installed"), "{msg}");

        let bad = NPU_910.replacen("| 3     910A", "| x     910A", 1);
        let run = Fixtures::default().with(NPU_SMI_INFO, Ok(&bad));
        let msg = detect_with(no_nvml(), Box::new(run)).unwrap_err().to_string();
        assert!(msg.contains("`npu-smi info` output, line 16") && msg.contains("NPU ID"), "{msg}");
    }

    #[test]
    fn config_accepts_tool_text_only_when_it_parses() {
        let bad = HGX_H100.replacen("GPU3\tNV18", "GPU3\tNV?", 1);
        let node = VirtualNode::new("n", "", "127.0.1.1").with_hardware(Hardware::TopologyText(bad));
        let msg = validates(node).unwrap_err();
        assert!(msg.contains("nodes[0].topologyText") && msg.contains("line 5"), "{msg}");
        let mut both = VirtualNode::new("n", "hgx-h100-8", "127.0.1.1");
        both.npu_smi_text = Some(NPU_910.to_string());
        assert!(validates(both).unwrap_err().contains("exactly one of profile, topologyText or npuSmiText"));
        let none = VirtualNode::new("n", "", "127.0.1.1");
        assert!(validates(none).unwrap_err().contains("nodes[0].profile: required"));
        let npu = VirtualNode::new("n", "", "127.0.1.1").with_hardware(Hardware::NpuSmiText("| nothing |".into()));
        assert!(validates(npu).unwrap_err().contains("nodes[0].npuSmiText"));
    }

    #[test]
    fn absent_nvml_fails_cleanly() {
        // This machine has no NVIDIA driver: the library is not there to load.
        // (On one that has it, opening must succeed and list what it sees.)
        match NvmlReader::open() {
            Err(why) => {
                assert!(why.contains("libnvidia-ml") || why.contains("driver"), "{why}");
                let err = detect_with(Err(why), Box::new(Fixtures::default())).unwrap_err();
                assert!(err.to_string().contains("NVML: "), "{err}");
            }
            Ok(mut nvml) => assert!(nvml.read().is_ok()),
        }
    }

    #[test]
    fn monitor_reports_changes_only() {
        let nvml = FakeNvml::new("NVIDIA H100 80GB HBM3", 8, 81559);
        nvml.set_problem(1, Some("memory pages pending retirement (needs a reset)"));
        let run = Fixtures::default().with(NVIDIA_SMI_TOPO, Ok(HGX_H100));
        let mut m = detect_with(nvml.boxed(), Box::new(run)).unwrap().into_monitor();
        assert_eq!(m.current(), [1]);
        assert_eq!(m.poll(), None);
        nvml.set_problem(4, Some("critical XID 48"));
        let u = m.poll().unwrap();
        assert_eq!(u.unhealthy, [1, 4]);
        assert_eq!(u.reasons[&4], "critical XID 48");
        assert_eq!(m.poll(), None);
        nvml.set_problem(1, None);
        nvml.set_problem(4, None);
        assert_eq!(m.poll().unwrap().unhealthy, Vec::<u32>::new());
        nvml.fail("device count: GPU is lost");
        let u = m.poll().unwrap();
        assert_eq!(u.unhealthy, (0..8).collect::<Vec<_>>());
        assert!(u.reasons[&0].contains("GPU is lost"));
    }

    #[test]
    fn monitor_rereads_npu_smi() {
        let run = Fixtures::default().with(NPU_SMI_INFO, Ok(NPU_910));
        let mut m = detect_with(no_nvml(), Box::new(run.clone())).unwrap().into_monitor();
        assert_eq!(m.poll(), None);
        let recovered = NPU_910.replace("Critical", "OK      ");
        let worse = recovered.replacen("| 0     910A           | OK      ", "| 0     910A           | Alarm   ", 1);
        run.set(NPU_SMI_INFO, Ok(&worse));
        let u = m.poll().unwrap();
        assert_eq!(u.unhealthy, [0]);
        assert_eq!(u.reasons[&0], "npu-smi Health: Alarm");
        run.set(NPU_SMI_INFO, Ok(&recovered));
        assert_eq!(m.poll().unwrap().unhealthy, Vec::<u32>::new());
        run.set(NPU_SMI_INFO, Err(RunError::Failed("timed out after 30 s".into())));
        let u = m.poll().unwrap();
        assert_eq!(u.unhealthy.len(), 8);
        assert!(u.reasons[&7].contains("`npu-smi info`: timed out"), "{:?}", u.reasons);
    }

    #[tokio::test]
    async fn spawned_monitor_sends_changes_and_stops_with_its_receiver() {
        let nvml = FakeNvml::new("NVIDIA H100 80GB HBM3", 8, 81559);
        let run = Fixtures::default().with(NVIDIA_SMI_TOPO, Ok(HGX_H100));
        let d = detect_with(nvml.boxed(), Box::new(run.clone())).unwrap();
        let mut rx = d.into_monitor().spawn(Duration::from_millis(10)).unwrap();
        nvml.set_problem(7, Some("critical XID 79"));
        let u = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.unwrap().unwrap();
        assert_eq!(u.unhealthy, [7]);
        drop(rx);

        let d = detect_with(nvml.boxed(), Box::new(run)).unwrap();
        let err = d.into_monitor().spawn(Duration::ZERO).unwrap_err();
        assert!(err.to_string().contains("health interval"));
    }

    #[test]
    fn system_runner_bounds_and_reports_commands() {
        assert_eq!(run_bounded("sh", &["-c", "echo hi"], Duration::from_secs(10)), Ok("hi\n".to_string()));
        assert_eq!(run_bounded("ringleader-no-such-tool", &[], Duration::from_secs(10)), Err(RunError::NotFound));
        match run_bounded("sh", &["-c", "echo broken >&2; exit 3"], Duration::from_secs(10)) {
            Err(RunError::Failed(m)) => assert!(m.contains("3") && m.contains("broken"), "{m}"),
            other => panic!("expected a failure, got {other:?}"),
        }
        let started = Instant::now();
        match run_bounded("sleep", &["5"], Duration::from_millis(200)) {
            Err(RunError::Failed(m)) => assert!(m.contains("timed out"), "{m}"),
            other => panic!("expected a timeout, got {other:?}"),
        }
        assert!(started.elapsed() < Duration::from_secs(4));
    }

    #[test]
    fn label_values_are_kubernetes_safe() {
        assert_eq!(label_value(" NVIDIA A100-SXM4-80GB "), "NVIDIA-A100-SXM4-80GB");
        assert_eq!(label_value("Tesla V100 (16GB)"), "Tesla-V100-16GB");
        assert!(label_value(&"x".repeat(100)).len() <= 63);
    }
}
