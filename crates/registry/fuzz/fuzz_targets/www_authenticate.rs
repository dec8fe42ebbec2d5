//! `WWW-Authenticate` parsing and the authorization plan on arbitrary bytes: no panic,
//! and the invariants `pullcheck_registry::fuzzing::www_authenticate` checks.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    pullcheck_registry::fuzzing::www_authenticate(data);
});
