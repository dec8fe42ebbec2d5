//! Shared by the integration tests: a scripted HTTP/1.1 server that can misbehave on
//! purpose (`server`), and certificates made at test time with the `openssl` CLI
//! (`pki`). Each test binary uses a part of it.

#![allow(dead_code)]

pub mod pki;
pub mod server;

use std::future::Future;
use std::time::{Duration, Instant};

/// Runs `work`, failing the test if it takes longer than `bound` (a hang guard, not a
/// benchmark), and returns its output with the time it took.
pub async fn guarded<T>(bound: Duration, work: impl Future<Output = T>) -> (T, Duration) {
    let started = Instant::now();
    match tokio::time::timeout(bound, work).await {
        Ok(out) => (out, started.elapsed()),
        Err(_) => panic!("hung: no result within {} ms", bound.as_millis()),
    }
}

/// The words a finding still carries as text (the transport's reason of a request
/// without an answer, why a platform could not be checked, a token server's transport
/// reason); empty for the typed findings.
pub fn why(a: &pullcheck_registry::Answer) -> &str {
    use pullcheck_registry::{AuthFailure, Finding};
    match &a.finding {
        Finding::RequestFailed { why, .. } | Finding::PlatformUnchecked { why, .. } => why,
        Finding::Authorization(AuthFailure::TokenUnreachable { failure, .. }) => &failure.why,
        _ => "",
    }
}

/// `n` failed attempts, each `failure`, as [`pullcheck_registry::AttemptHistory::failed`].
pub fn each(
    n: usize,
    failure: pullcheck_registry::FailedAttempt,
) -> Vec<pullcheck_registry::FailedAttempt> {
    vec![failure; n]
}

/// Whether `a` is a manifest served (200) to `method`.
pub fn served_to(a: &pullcheck_registry::Answer, method: pullcheck_registry::Method) -> bool {
    matches!(
        a.finding,
        pullcheck_registry::Finding::Served { method: m, status: 200, .. } if m == method
    )
}
