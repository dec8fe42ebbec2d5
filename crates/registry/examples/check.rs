//! Checks one manifest and prints the answer.
//!
//! ```text
//! cargo run -p pullcheck-registry --example check -- HOST REPOSITORY REFERENCE [USER]
//! ```
//!
//! With `USER`, the password is read from the `REGISTRY_PASSWORD` environment variable
//! (never from the command line). `PLATFORM=linux/arm64` also checks that an index
//! lists that platform; `CERTS_DIR=/etc/docker/certs.d` uses Docker's per-host
//! certificates. The whole check has 30 s. `HOST` such as `127.0.0.1:5000` or `localhost:5000`
//! may fall back to plain HTTP.

use std::time::{Duration, Instant};

use pullcheck_registry::{Client, ClientOptions, Credential, Endpoint, Platform};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [host, repository, reference, rest @ ..] = args.as_slice() else {
        eprintln!("usage: check HOST REPOSITORY REFERENCE [USER]");
        std::process::exit(2);
    };
    let credential = match rest.first() {
        Some(user) => Credential::Basic {
            username: user.clone(),
            password: std::env::var("REGISTRY_PASSWORD")
                .unwrap_or_default()
                .into(),
        },
        None => Credential::Anonymous,
    };
    let loopback =
        host.starts_with("localhost") || host.starts_with("127.") || host.starts_with("[::1]");
    let endpoint = Endpoint {
        allow_http: loopback,
        skip_verify: false,
        ..Endpoint::new(host.clone())
    };
    let platform = match std::env::var("PLATFORM").ok().map(|p| Platform::parse(&p)) {
        Some(Err(e)) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
        Some(Ok(p)) => Some(p),
        None => None,
    };
    let options = ClientOptions {
        platform,
        certs_dir: std::env::var_os("CERTS_DIR").map(Into::into),
        deadline: Some(Instant::now() + Duration::from_secs(30)),
        ..ClientOptions::default()
    };
    let client = match Client::new(options) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    match client
        .authorize(&endpoint, &credential, std::slice::from_ref(repository))
        .await
    {
        Err(e) => {
            println!("{:?}: {e} {:?}", e.status, e.failure);
            std::process::exit(1);
        }
        Ok(session) => {
            let answer = session.check(repository, reference).await;
            // The facts as data; the `pullcheck` engine words them for its report.
            println!(
                "{:?} {:?} {:?} ({} attempts)",
                answer.status, answer.reason, answer.missing, answer.attempts
            );
            println!("{:?}", answer.finding);
            for e in &answer.errors {
                println!("error {}: {}", e.code, e.message);
            }
            if !answer.history.failed.is_empty() {
                println!("failed attempts: {:?}", answer.history);
            }
            if let Some(digest) = answer.digest {
                println!("{digest}");
            }
            println!("({} requests)", client.request_count());
        }
    }
}
