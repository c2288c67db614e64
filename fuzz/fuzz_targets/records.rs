//! The connection's record layer and greeting.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    privlogit_protocols::transport::fuzz_records(data);
});
