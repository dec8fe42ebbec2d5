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
