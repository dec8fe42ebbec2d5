//! Helpers shared by the test modules of this binary.

use std::process::Output;

use pullcheck_testkit::TempDir;

/// A scratch directory for one test, removed when the value is dropped.
pub fn temp_dir(name: &str) -> TempDir {
    TempDir::new(name).expect("temp dir")
}

/// What a run of the binary printed: its stdout, then its stderr, as text.
pub fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}
