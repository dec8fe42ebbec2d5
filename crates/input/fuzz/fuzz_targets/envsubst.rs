//! Any text as a `${VAR}` template, with any values: a result or an error, never a panic,
//! in bounded time and memory.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pullcheck_input::envsubst::{MAX_OUTPUT, Template};

fuzz_target!(|input: (&str, &str)| {
    let (text, value) = input;
    if let Ok(template) = Template::parse(text) {
        let _ = template.variables();
        if let Ok(out) = template.eval(&mut |_| value.to_owned()) {
            assert!(out.len() <= MAX_OUTPUT);
        }
    }
});
