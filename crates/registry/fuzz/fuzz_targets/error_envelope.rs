//! The registry error envelope on arbitrary bytes: no panic, and the invariants
//! `pullcheck_registry::fuzzing::error_envelope` checks.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    pullcheck_registry::fuzzing::error_envelope(data);
});
