#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz::agentx_trace(data));
