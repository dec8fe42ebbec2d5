//! Any text as an `--image` argument: an image use or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pullcheck_input::{PullPolicy, parse_image_arg};

fuzz_target!(|arg: &str| {
    if let Ok(u) = parse_image_arg(arg) {
        assert!(!u.image.is_empty());
        assert!(arg.starts_with(&u.image));
        if u.image.len() == arg.len() {
            assert_eq!(u.policy, PullPolicy::Always);
        }
    }
});
