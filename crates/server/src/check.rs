//! The one adapter between the service and the library's check API.

use std::time::{Duration, Instant};

use pullcheck::registry::Platform;
use pullcheck::report::Report;
use pullcheck::{CheckOptions, ImageSet};

use crate::AppState;

/// A request's own settings of its check.
#[derive(Debug, Clone)]
pub(crate) struct PerCheck {
    pub include_on_start: bool,
    pub deadline: Duration,
    pub deadline_start: Instant,
    pub platform: Option<Platform>,
}

/// Checks `sets` with the shared checker (its connections, tokens, ping state and
/// request limit) and `per`'s settings. Never fails: problems are images' statuses.
pub(crate) async fn run_check(state: &AppState, sets: Vec<ImageSet>, per: &PerCheck) -> Report {
    let options = CheckOptions {
        include_on_start: per.include_on_start,
        deadline: per.deadline,
        deadline_start: Some(per.deadline_start),
        platform: per.platform.clone(),
    };
    state.checker.check_sets(sets, &options).await
}
