//! The one adapter between the service and the library's check API.

use std::time::{Duration, Instant};

use pullcheck::registry::Platform;
use pullcheck::report::Report;
use pullcheck::{CheckOptions, Checker, ImageSet};

use crate::AppState;

/// A request's own settings of its check.
#[derive(Debug, Clone)]
pub(crate) struct PerCheck {
    pub include_on_start: bool,
    pub deadline: Duration,
    pub deadline_start: Instant,
    pub platform: Option<Platform>,
}

/// Checks `sets` with the shared checker (its connections and tokens) and `per`'s
/// settings. A request naming a platform gets a checker of its own for now: the platform
/// is a client option in today's library.
// lead: replace by `state.checker.check_sets(sets, &CheckOptions { include_on_start,
// deadline, deadline_start, platform })` when the library API lands.
pub(crate) async fn run_check(
    state: &AppState,
    sets: Vec<ImageSet>,
    per: &PerCheck,
) -> Result<Report, String> {
    let options = CheckOptions {
        include_on_start: per.include_on_start,
        concurrency: state.concurrency,
        deadline: per.deadline,
        deadline_start: Some(per.deadline_start),
        ..CheckOptions::default()
    };
    let checker: Checker = match &per.platform {
        None => state.checker.with_options(options),
        Some(platform) => Checker::new(
            CheckOptions {
                request_timeout: state.client.request_timeout,
                tag_hints: state.client.tag_hints,
                registry: pullcheck::registry::ClientOptions {
                    platform: Some(platform.clone()),
                    ..state.client.clone()
                },
                ..options
            },
            state.checker.resolver().clone(),
            state.node.clone(),
        )
        .map_err(|e| e.to_string())?,
    };
    Ok(checker.check_sets(sets).await)
}
