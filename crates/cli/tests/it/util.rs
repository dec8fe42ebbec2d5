//! Helpers shared by the test modules of this binary.

use pullcheck_testkit::TempDir;

/// A scratch directory for one test, removed when the value is dropped.
pub fn temp_dir(name: &str) -> TempDir {
    TempDir::new(name).expect("temp dir")
}
