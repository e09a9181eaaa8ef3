#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz::report_render(data));
