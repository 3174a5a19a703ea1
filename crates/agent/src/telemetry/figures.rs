//! What one read of a node's device tool gives: each device's figures, or
//! why the tool could not be read.

/// One device's figures; `None` where the tool could not read a figure.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DeviceFigures {
    /// Device ID as the Node numbers it.
    pub id: u32,
    /// Busy time over the tool's last sample period, percent (GPU
    /// utilisation; AI-core use on Ascend).
    pub utilization_percent: Option<f64>,
    /// Device memory in use, bytes (HBM on Ascend training chips).
    pub memory_used_bytes: Option<u64>,
    /// Device memory, bytes.
    pub memory_total_bytes: Option<u64>,
    /// Temperature, °C.
    pub temperature_c: Option<f64>,
    /// Power draw, W.
    pub power_w: Option<f64>,
}

/// One read of every device.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// Unix time of the read.
    pub at: f64,
    /// The figures, or why the tool could not be read.
    pub devices: Result<Vec<DeviceFigures>, String>,
}
