//! Any text into the pipeline reader: it must answer (images or an error), never panic,
//! overflow or run away, and what it answers must hold together.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pullcheck_input::{Disposition, read_pipeline};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match read_pipeline("fuzz.yml", text) {
        Ok(uses) => {
            for u in uses {
                assert_eq!(u.origin.file.as_deref(), Some("fuzz.yml"));
                // Positions are 1-based and come in pairs.
                assert_eq!(u.origin.line.is_some(), u.origin.column.is_some());
                assert!(u.origin.line.is_none_or(|l| l >= 1));
                assert!(u.origin.column.is_none_or(|c| c >= 1));
                if let Disposition::Invalid(problems) | Disposition::UnknownPolicy { problems, .. } =
                    &u.disposition
                {
                    // A compiled build's problems have no position (its JSON is a
                    // machine's encoding); a source pipeline's always do.
                    for p in problems {
                        if let Some(at) = &p.at {
                            assert_eq!(at.file, "fuzz.yml");
                        }
                        assert!(!p.message.is_empty());
                    }
                }
            }
        }
        Err(e) => {
            assert_eq!(e.file.as_deref(), Some("fuzz.yml"));
            assert!(!e.message.is_empty());
        }
    }
});
