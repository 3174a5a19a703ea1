//! Fuzz target: Label and field selectors: parsed and matched.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ringleader_fuzz::selectors(data));
