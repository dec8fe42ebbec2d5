//! Helpers shared by the test modules of this binary.

use pullcheck_testkit::TempDir;

/// A scratch directory for one test, removed when the value is dropped.
pub fn temp_dir(name: &str) -> TempDir {
    TempDir::new(name).expect("temp dir")
}

/// Checks `images` (`--image` syntax) as one Pod with `pull_secrets`, on `checker`.
pub async fn check_one_set(
    checker: &pullcheck::Checker,
    images: &[String],
    pull_secrets: pullcheck::credentials::Keyring,
) -> pullcheck::report::Report {
    let uses = images
        .iter()
        .map(|i| pullcheck::input::parse_image_arg(i).expect("image"))
        .collect();
    checker
        .check_sets(
            vec![pullcheck::ImageSet {
                uses,
                pull_secrets,
                warnings: Vec::new(),
            }],
            &pullcheck::CheckOptions::default(),
        )
        .await
}

/// The row of `reference` (as written) in `report`.
pub fn image<'a>(
    report: &'a pullcheck::report::Report,
    reference: &str,
) -> &'a pullcheck::report::ImageReport {
    report
        .images
        .iter()
        .find(|i| i.reference == reference)
        .unwrap_or_else(|| panic!("{reference} not in report:\n{}", report.to_json()))
}
