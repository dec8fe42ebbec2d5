//! Starting the service in process, talking to it, and a registry that never answers.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use pullcheck_server::{ServeOptions, Server};
use serde_json::Value;

/// A running service; stopped (and awaited) by [`TestServer::stop`].
pub struct TestServer {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<Result<(), pullcheck_server::ServeError>>>,
    pub http: reqwest::Client,
}

impl TestServer {
    pub async fn start(options: ServeOptions) -> TestServer {
        let options = ServeOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            ..options
        };
        let server = Server::bind(options).await.expect("server starts");
        let addr = server.local_addr();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(server.run(async move {
            let _ = rx.await;
        }));
        TestServer {
            addr,
            stop: Some(tx),
            task: Some(task),
            http: reqwest::Client::new(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// POSTs `body` as JSON to /v1/checks with `token` (if any); the status, the
    /// headers and the body text.
    pub async fn post(
        &self,
        token: Option<&str>,
        body: &str,
    ) -> (u16, reqwest::header::HeaderMap, String) {
        let mut request = self
            .http
            .post(self.url("/v1/checks"))
            .header("content-type", "application/json")
            .body(body.to_owned());
        if let Some(t) = token {
            request = request.bearer_auth(t);
        }
        let response = request.send().await.expect("answer");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        (status, headers, response.text().await.expect("body"))
    }

    /// POSTs and parses a JSON answer.
    pub async fn check(&self, token: Option<&str>, body: &Value) -> (u16, Value) {
        let (status, _, text) = self.post(token, &body.to_string()).await;
        let value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        (status, value)
    }

    pub async fn get(&self, path: &str) -> (u16, String) {
        let response = self.http.get(self.url(path)).send().await.expect("answer");
        let status = response.status().as_u16();
        (status, response.text().await.expect("body"))
    }

    /// The value of a metric line that starts with `prefix` (e.g.
    /// `pullcheck_checks_in_flight `), or 0 when absent.
    pub async fn metric(&self, prefix: &str) -> f64 {
        let (_, text) = self.get("/metrics").await;
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0.0)
    }

    /// Sends the shutdown signal without waiting (the drain begins); [`TestServer::stop`]
    /// then waits for the end.
    pub fn signal_shutdown(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }

    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.expect("joins").expect("stops cleanly");
        }
    }
}

/// The statuses of a report's images, by reference.
pub fn statuses(report: &Value) -> Vec<(String, String)> {
    report["images"]
        .as_array()
        .map(|images| {
            images
                .iter()
                .map(|i| {
                    (
                        i["reference"].as_str().unwrap_or_default().to_owned(),
                        i["status"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A fresh directory under the temp dir.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pullcheck-server-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

/// A "registry" on loopback that accepts connections and never answers; counts the
/// connections accepted and those the client closed.
pub struct Hanging {
    pub host: String,
    pub accepted: Arc<AtomicUsize>,
    pub closed: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Hanging {
    pub async fn start() -> Hanging {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let host = listener.local_addr().expect("addr").to_string();
        let accepted = Arc::new(AtomicUsize::new(0));
        let closed = Arc::new(AtomicUsize::new(0));
        let (a, c) = (accepted.clone(), closed.clone());
        let task = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                a.fetch_add(1, Ordering::SeqCst);
                let c = c.clone();
                tokio::spawn(async move {
                    use tokio::io::AsyncReadExt as _;
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = stream.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                    }
                    c.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        Hanging {
            host,
            accepted,
            closed,
            task,
        }
    }

    /// Waits until `counter` reaches `n`, for up to 10 s.
    pub async fn wait(counter: &AtomicUsize, n: usize) -> bool {
        for _ in 0..200 {
            if counter.load(Ordering::SeqCst) >= n {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }
}

impl Drop for Hanging {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A token-auth registry whose only user is `ci` with `password`, holding `images`
/// (repository, tag, kind).
pub async fn token_registry(
    password: &str,
    images: &[(&str, &str, pullcheck_testkit::ImageKind)],
) -> pullcheck_testkit::Registry {
    use pullcheck_testkit::{Auth, Registry, TokenPolicy, User};
    let registry = Registry::builder()
        .auth(Auth::Token(TokenPolicy::new(vec![User::new(
            "ci", password,
        )])))
        .start()
        .await
        .expect("token registry");
    for (repository, tag, kind) in images {
        registry.push(repository, tag, *kind).await.expect("push");
    }
    registry
}

/// The service's options for the cluster a kubeconfig names (written by the stand-in
/// API's `write_kubeconfig`), required at start.
pub fn on_cluster(kubeconfig: PathBuf) -> ServeOptions {
    ServeOptions {
        cluster: Some(pullcheck_kube::ClusterOptions {
            kubeconfig: Some(kubeconfig),
            context: None,
            namespace: String::new(),
        }),
        cluster_required: true,
        ..ServeOptions::default()
    }
}
