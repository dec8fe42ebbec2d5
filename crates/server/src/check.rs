//! The one adapter between the service and the library's check API.

use pullcheck::report::Report;

use crate::AppState;

/// Checks a request's image sets and placeholder ([`pullcheck_sources::Ready::check`])
/// with the shared checker (its connections, tokens, ping state and request limit).
/// Never fails: problems are images' statuses.
pub(crate) async fn run(state: &AppState, ready: pullcheck_sources::Ready) -> Report {
    ready.check(&state.checker).await
}
