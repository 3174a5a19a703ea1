//! Fuzz target: `nvidia-smi topo -m` text: parsed and made a profile.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ringleader_fuzz::nvidia_smi_topo(data));
