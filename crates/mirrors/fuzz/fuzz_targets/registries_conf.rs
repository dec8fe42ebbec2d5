//! Fuzzes the registries.conf parser (as a main file and as a drop-in) and CRI-O
//! resolution over what it parses.
//!
//! Checks: no panic on any input; errors have a message naming the file; a parsed
//! configuration resolves every reference without panicking, to a non-empty endpoint
//! list (never all blocked), `Blocked`, or `Unresolvable`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pullcheck_mirrors::MirrorConfig;
use pullcheck_mirrors::registries_conf::RegistriesConf;

#[path = "check.rs"]
mod check;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let main = RegistriesConf::parse("fuzz.conf", text);
    let drop_in = RegistriesConf::parse_drop_in("fuzz.conf", text);
    for result in [&main, &drop_in] {
        if let Err(e) = result {
            let msg = e.to_string();
            assert!(msg.starts_with("fuzz.conf: ") && msg.len() > "fuzz.conf: ".len(), "{msg}");
        }
    }
    if let Ok(mut conf) = main {
        let mut hints = check::quoted(text);
        hints.extend(conf.registries().iter().map(|r| r.prefix.clone()));
        let refs = check::references(&hints);
        check::resolve_all(&MirrorConfig::from_registries_conf(conf.clone()), &refs);
        // The same text merged over itself as a drop-in.
        if conf.merge_drop_in("fuzz-drop-in.conf", text).is_ok() {
            check::resolve_all(&MirrorConfig::from_registries_conf(conf), &refs);
        }
    }
});
