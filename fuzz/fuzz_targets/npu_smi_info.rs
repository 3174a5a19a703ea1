//! Fuzz target: `npu-smi info` text: parsed and matched to an Ascend profile.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ringleader_fuzz::npu_smi_info(data));
