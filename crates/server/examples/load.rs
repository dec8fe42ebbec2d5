//! A bounded load run against a running `pullcheck serve`: TOTAL checks of one request
//! body, CONCURRENCY at a time; prints one JSON line with the counts and latencies.
//!
//! ```text
//! cargo run --release -p pullcheck-server --example load -- \
//!     URL BODY_FILE TOTAL CONCURRENCY [TOKEN_FILE]
//! ```
//! Used by `bench/serve-load.sh`. The token, if any, is the first word of TOKEN_FILE's
//! first line; it is never printed.

use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::main]
async fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, body_file, total, concurrency, rest @ ..] = args.as_slice() else {
        return Err("usage: load URL BODY_FILE TOTAL CONCURRENCY [TOKEN_FILE]".into());
    };
    let body = std::fs::read_to_string(body_file).map_err(|e| format!("{body_file}: {e}"))?;
    let total: usize = total.parse().map_err(|e| format!("TOTAL: {e}"))?;
    let concurrency: usize = concurrency
        .parse()
        .map_err(|e| format!("CONCURRENCY: {e}"))?;
    let token = match rest.first() {
        Some(f) => std::fs::read_to_string(f)
            .map_err(|e| format!("{f}: {e}"))?
            .split_whitespace()
            .next()
            .map(str::to_owned),
        None => None,
    };
    let client = reqwest::Client::new();
    let semaphore = Arc::new(tokio::sync::Semaphore::new(concurrency));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(total);
    for _ in 0..total {
        let permit = semaphore
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| e.to_string())?;
        let (client, url, body, token) = (client.clone(), url.clone(), body.clone(), token.clone());
        tasks.push(tokio::spawn(async move {
            let _permit = permit;
            let t = Instant::now();
            let mut request = client
                .post(&url)
                .header("content-type", "application/json")
                .body(body);
            if let Some(token) = &token {
                request = request.bearer_auth(token);
            }
            let outcome = match request.send().await {
                Ok(r) => {
                    let status = r.status().as_u16();
                    let text = r.text().await.unwrap_or_default();
                    let exit = serde_json::from_str::<serde_json::Value>(&text)
                        .ok()
                        .and_then(|v| v["exit_code"].as_i64());
                    (status, exit)
                }
                Err(_) => (0, None),
            };
            (t.elapsed(), outcome)
        }));
    }
    let mut latencies: Vec<Duration> = Vec::with_capacity(total);
    let (mut ok, mut not_200, mut failed_checks, mut transport) = (0usize, 0usize, 0usize, 0usize);
    for task in tasks {
        let (latency, (status, exit)) = task.await.map_err(|e| e.to_string())?;
        latencies.push(latency);
        match (status, exit) {
            (0, _) => transport += 1,
            (200, Some(0)) => ok += 1,
            (200, _) => failed_checks += 1,
            _ => not_200 += 1,
        }
    }
    let wall = started.elapsed();
    latencies.sort();
    let pct = |p: f64| {
        let i = ((latencies.len() as f64 - 1.0) * p).round() as usize;
        latencies.get(i).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    println!(
        "{}",
        serde_json::json!({
            "total": total, "concurrency": concurrency, "exit_0": ok,
            "exit_not_0": failed_checks, "http_not_200": not_200, "transport_errors": transport,
            "p50_ms": pct(0.5), "p99_ms": pct(0.99), "max_ms": pct(1.0),
            "wall_s": wall.as_secs_f64(),
            "checks_per_s": total as f64 / wall.as_secs_f64(),
        })
    );
    Ok(())
}
