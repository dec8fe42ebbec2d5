//! `pullcheck-load`: a bounded load run against `pullcheck serve`, for the benchmark.
//!
//! Sends `--requests N` POSTs of one JSON body to a URL, at most `--concurrency C` at a
//! time, over keep-alive connections (a pool of at most C), and prints one JSON object:
//! the count of answers by HTTP status, transport errors, wall time in seconds and the
//! latency percentiles in milliseconds (p50, p90, p99, max; nearest-rank). Exit 0 when
//! every answer was a 200, 1 otherwise, 2 on bad usage. Plain HTTP on loopback only: it
//! refuses a URL whose host is not 127.0.0.0/8, `localhost` or `[::1]`.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

const HELP: &str = "\
pullcheck-load: a bounded load run against pullcheck serve

USAGE:
    pullcheck-load --url URL --body FILE [--token-file FILE] [-n N] [-c C]

    --url URL          e.g. http://127.0.0.1:8080/v1/checks (loopback only)
    --body FILE        the JSON request body
    --token-file FILE  the bearer token (first line of FILE)
    -n, --requests N   requests in all (default 2000)
    -c, --concurrency C  requests in flight at once (default 64)
";

struct Options {
    url: String,
    body: Vec<u8>,
    token: Option<String>,
    requests: usize,
    concurrency: usize,
}

fn parse(args: &[String]) -> Result<Option<Options>, String> {
    let (mut url, mut body, mut token) = (None, None, None);
    let (mut requests, mut concurrency) = (2000usize, 64usize);
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if matches!(flag.as_str(), "-h" | "--help") {
            return Ok(None);
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |v: &str| {
            v.parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("{flag}: {v:?} is not a positive number"))
        };
        match flag.as_str() {
            "--url" => url = Some(value.clone()),
            "--body" => {
                body = Some(std::fs::read(value).map_err(|e| format!("--body {value}: {e}"))?)
            }
            "--token-file" => {
                let text = std::fs::read_to_string(value)
                    .map_err(|e| format!("--token-file {value}: {e}"))?;
                token = text.lines().next().map(|l| l.trim().to_owned());
            }
            "-n" | "--requests" => requests = number(value)?,
            "-c" | "--concurrency" => concurrency = number(value)?,
            other => return Err(format!("unknown option {other:?}; try --help")),
        }
    }
    let url = url.ok_or("--url is required")?;
    let host = url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .ok_or_else(|| format!("--url {url:?}: only http:// URLs"))?;
    let name = host.rsplit_once(':').map_or(host, |(h, _)| h);
    if !(name.starts_with("127.") || name == "localhost" || name == "[::1]") {
        return Err(format!("--url {url:?}: loopback addresses only"));
    }
    Ok(Some(Options {
        url,
        body: body.ok_or("--body is required")?,
        token,
        requests,
        concurrency,
    }))
}

/// The value at rank `ceil(p * n)` of sorted `values` (nearest-rank percentile).
fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1].as_secs_f64() * 1000.0
}

async fn run(opts: Options) -> Result<bool, String> {
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(opts.concurrency)
        .build_http();
    let body = Bytes::from(opts.body);
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let workers = (0..opts.concurrency.min(opts.requests)).map(|_| {
        let (client, body, next) = (client.clone(), body.clone(), Arc::clone(&next));
        let (url, token, total) = (opts.url.clone(), opts.token.clone(), opts.requests);
        tokio::spawn(async move {
            let mut seen = Vec::new();
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < total {
                let mut request =
                    hyper::Request::post(&url).header("content-type", "application/json");
                if let Some(t) = &token {
                    request = request.header("authorization", format!("Bearer {t}"));
                }
                let Ok(request) = request.body(Full::new(body.clone())) else {
                    seen.push((None, Duration::ZERO));
                    continue;
                };
                let sent = Instant::now();
                let status = match client.request(request).await {
                    Ok(response) => {
                        let status = response.status().as_u16();
                        match response.into_body().collect().await {
                            Ok(_) => Some(status),
                            Err(_) => None,
                        }
                    }
                    Err(_) => None,
                };
                seen.push((status, sent.elapsed()));
            }
            seen
        })
    });
    let mut by_status: BTreeMap<String, usize> = BTreeMap::new();
    let mut latencies = Vec::with_capacity(opts.requests);
    for worker in futures::future::join_all(workers).await {
        for (status, took) in worker.map_err(|e| format!("a worker failed: {e}"))? {
            let key = status.map_or_else(|| "error".to_owned(), |s| s.to_string());
            *by_status.entry(key).or_default() += 1;
            latencies.push(took);
        }
    }
    let wall = started.elapsed().as_secs_f64();
    latencies.sort();
    let ok = by_status.get("200").copied().unwrap_or(0);
    let summary = serde_json::json!({
        "requests": latencies.len(),
        "concurrency": opts.concurrency,
        "by_status": by_status,
        "wall_s": wall,
        "per_second": latencies.len() as f64 / wall.max(f64::EPSILON),
        "p50_ms": percentile(&latencies, 0.50),
        "p90_ms": percentile(&latencies, 0.90),
        "p99_ms": percentile(&latencies, 0.99),
        "max_ms": latencies.last().map_or(0.0, |d| d.as_secs_f64() * 1000.0),
    });
    println!("{summary}");
    Ok(ok == latencies.len())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = match parse(&args) {
        Ok(Some(o)) => o,
        Ok(None) => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("pullcheck-load: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("pullcheck-load: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run(opts)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("pullcheck-load: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let values: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&values, 0.50), 50.0);
        assert_eq!(percentile(&values, 0.99), 99.0);
        assert_eq!(percentile(&values[..1], 0.99), 1.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }

    #[test]
    fn only_loopback_urls() {
        let args = |url: &str| -> Vec<String> {
            ["--url", url, "--body", "/dev/null"]
                .map(String::from)
                .to_vec()
        };
        assert!(parse(&args("http://127.0.0.1:8080/v1/checks")).is_ok());
        assert!(parse(&args("http://[::1]:8080/v1/checks")).is_ok());
        let refused = parse(&args("http://registry.example.com/v1/checks"));
        assert!(refused.is_err_and(|e| e.contains("loopback")));
        assert!(parse(&args("https://127.0.0.1/v1/checks")).is_err());
    }
}
