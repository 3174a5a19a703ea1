//! A vNPU's identity in pod annotations, both ways: the name a static vNPU
//! gets (`huawei.com/Ascend310P-2c: Ascend310P-2c-<vNPU ID>-<chip ID>`, the
//! device name MindCluster's device plugin reports for a vNPU made with
//! npu-smi), and, read back from a bound pod's annotations, what the pod
//! takes from its chip — so a later scheduling pass packs the chip's other
//! AI cores as one pass placing both pods would.

use ringleader_api::ascend as keys;
use ringleader_api::devices::{classify, Family};
use ringleader_api::DeviceKind;
use ringleader_topology::alloc::vnpu;
use ringleader_topology::{DeviceUse, Profile};
use std::collections::BTreeMap;

/// npu-smi numbers a chip's vNPUs from `100 + 16 × chip ID` (the range
/// `npu-smi set -t create-vnpu -v` accepts), one per slot.
pub const FIRST_VNPU_ID: u32 = 100;
/// vNPU IDs per chip.
pub const VNPU_IDS_PER_CHIP: u32 = 16;

/// The vNPU ID of the `slot`-th vNPU on chip `chip_id`.
pub fn vnpu_id(chip_id: u32, slot: u32) -> u32 {
    FIRST_VNPU_ID + VNPU_IDS_PER_CHIP * chip_id + slot
}

/// The device name of a static vNPU of resource `huawei.com/<short>`:
/// `<short>-<vNPU ID>-<chip ID>` (`Ascend910-2c-100-0`).
pub fn static_name(resource: &str, chip_id: u32, slot: u32) -> String {
    let short = resource.trim_start_matches("huawei.com/");
    format!("{short}-{}-{chip_id}", vnpu_id(chip_id, slot))
}

/// The vNPU ID in a static vNPU device name (`Ascend910-2c-100-0` → 100).
pub fn id_of_static_name(name: &str) -> Option<u32> {
    let mut parts = name.rsplit('-');
    let _chip: u32 = parts.next()?.parse().ok()?;
    parts.next()?.parse().ok()
}

/// The vNPU mode a bound pod's annotations show: `Some(true)` for a static
/// vNPU (`huawei.com/Ascend310P-2c: …`), `Some(false)` for a dynamic one
/// (`huawei.com/npu-core: …`), `None` for neither.
pub fn mode_of(annotations: &BTreeMap<String, String>) -> Option<bool> {
    annotations.keys().find_map(|k| match classify(k)?.1 {
        DeviceKind::StaticVnpu { .. } => Some(true),
        DeviceKind::DynamicVnpu => Some(false),
        _ => None,
    })
}

/// What a bound pod takes from its chip, read from its annotations: the
/// template of `huawei.com/npu-core: <chip>-<template>` (dynamic) or of the
/// static vNPU resource it was given. `None`: it holds no vNPU (whole chips,
/// or annotations this profile cannot read).
pub fn held_use(profile: &Profile, annotations: &BTreeMap<String, String>) -> Option<DeviceUse> {
    let spec = profile.vnpu.as_ref()?;
    let template = annotations.iter().find_map(|(k, v)| {
        if k == keys::NPU_CORE {
            return spec.template(v.split_once('-')?.1);
        }
        match classify(k)? {
            (Family::Ascend, DeviceKind::StaticVnpu { template }) => {
                id_of_static_name(v)?;
                vnpu::static_template(spec, &template)
            }
            _ => None,
        }
    })?;
    Some(vnpu::add(spec, &DeviceUse::default(), template))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ids_round_trip() {
        assert_eq!(static_name("huawei.com/Ascend310P-2c", 3, 1), "Ascend310P-2c-149-3");
        assert_eq!(id_of_static_name("Ascend310P-2c-149-3"), Some(149));
        assert_eq!(id_of_static_name("Ascend910-6c.1cpu.16g-100-0"), Some(100));
        assert_eq!(id_of_static_name("Ascend910-2c"), None);
        assert_eq!(id_of_static_name("garbage"), None);
    }
}
