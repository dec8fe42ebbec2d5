//! The connection-level limits over real sockets on loopback: slow heads and bodies,
//! endless chunked bodies, many silent connections, the drain at shutdown, HTTP/2 early
//! answers (curl and a Rust client over TLS), and log text as data. Every wait is
//! bounded; the configured limits are short (300 ms) so that the module stays fast.

use std::io::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pullcheck_server::admission::{AdmissionMode, AdmissionOptions};
use pullcheck_server::logging::{LogFormat, subscriber};
use pullcheck_server::{ServeOptions, TlsFiles};
use pullcheck_testkit::{ImageKind, Registry};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::limits::{send_raw, slow_options};
use crate::tls::{client, make_cert};
use crate::util::{Hanging, TestServer, statuses, temp_dir};

const SHORT: Duration = Duration::from_millis(300);
/// The bound of every wait for an answer or a close.
const BOUND: Duration = Duration::from_secs(10);

/// Log lines written to memory, for a subscriber set on this thread.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Logs {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("logs")).into_owned()
    }

    fn bytes(&self) -> Vec<u8> {
        self.0.lock().expect("logs").clone()
    }

    /// A subscriber writing here in `format`; set it with `set_default` on a
    /// current-thread runtime, so that the server's tasks log into it too.
    fn subscriber(&self, format: LogFormat) -> Box<dyn tracing::Subscriber + Send + Sync> {
        let logs = self.clone();
        subscriber(
            format,
            "pullcheck=info,tower_http::trace=info",
            false,
            move || logs.clone(),
        )
    }
}

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("logs").extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Everything the server sends until it closes the connection (or `BOUND` passes:
/// then the test fails, the connection was not closed).
async fn read_until_closed(stream: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    let read = tokio::time::timeout(BOUND, stream.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "not closed within {BOUND:?}: {answer:?}");
    String::from_utf8_lossy(&answer).into_owned()
}

/// The status code of a raw HTTP/1.1 answer (0 when there is none).
fn status_of(answer: &str) -> u16 {
    answer
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}

/// The value of a header of a raw HTTP/1.1 answer.
fn header<'a>(answer: &'a str, name: &str) -> Option<&'a str> {
    let head = answer.split("\r\n\r\n").next()?;
    head.lines().skip(1).find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

/// Whether the server closed `stream` (EOF or a reset) within `within`.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 256];
    loop {
        match tokio::time::timeout(within, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

async fn connect(server: &TestServer) -> TcpStream {
    TcpStream::connect(server.addr).await.expect("connect")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_head_is_closed_at_the_header_read_timeout() {
    let server = TestServer::start(ServeOptions {
        header_read_timeout: SHORT,
        ..ServeOptions::default()
    })
    .await;
    // One byte of the head every 100 ms: each read is quick, the head never completes.
    let mut stream = connect(&server).await;
    let head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let started = Instant::now();
    let mut closed = false;
    for byte in head.iter() {
        if stream.write_all(&[*byte]).await.is_err() {
            closed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let closed = closed || closed_within(&mut stream, BOUND).await;
    assert!(closed, "the slow head's connection is closed");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "closed at the head deadline, not after the whole head: {:?}",
        started.elapsed()
    );
    // The service answers others meanwhile and after.
    assert_eq!(server.get("/healthz").await.0, 200);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_is_closed_at_the_idle_timeout() {
    let server = TestServer::start(ServeOptions {
        idle_timeout: SHORT,
        ..ServeOptions::default()
    })
    .await;
    let mut stream = connect(&server).await;
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("send");
    let mut buf = [0u8; 1024];
    let n = tokio::time::timeout(BOUND, stream.read(&mut buf))
        .await
        .expect("an answer")
        .expect("read");
    assert_eq!(status_of(&String::from_utf8_lossy(&buf[..n])), 200);
    // Kept alive, then closed with nothing in flight.
    assert!(
        closed_within(&mut stream, BOUND).await,
        "idle connection closed"
    );
    server.stop().await;
}

/// Sends `head`, then `chunk` every `every` until the server closes; the answer (all
/// that the server sent until it closed), from a task.
async fn trickle(
    server: &TestServer,
    head: &'static [u8],
    chunk: &'static [u8],
    every: Duration,
) -> tokio::task::JoinHandle<String> {
    let mut stream = connect(server).await;
    stream.write_all(head).await.expect("send");
    let (mut read, mut write) = stream.into_split();
    let writer = tokio::spawn(async move {
        for _ in 0..10_000 {
            tokio::time::sleep(every).await;
            if write.write_all(chunk).await.is_err() {
                break;
            }
        }
    });
    tokio::spawn(async move {
        let mut answer = Vec::new();
        let read = tokio::time::timeout(BOUND, read.read_to_end(&mut answer)).await;
        writer.abort();
        assert!(read.is_ok(), "not closed within {BOUND:?}");
        String::from_utf8_lossy(&answer).into_owned()
    })
}

const SLOW_BODY_HEAD: &[u8] = b"POST /v1/checks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_bodies_get_408_and_never_hold_the_check_slot() {
    let registry = Registry::anonymous().await.expect("registry");
    registry
        .push("team/app", "v1", ImageKind::OciManifest)
        .await
        .expect("push");
    let server = TestServer::start(ServeOptions {
        max_checks: 1,
        body_read_timeout: Duration::from_secs(2),
        ..ServeOptions::default()
    })
    .await;
    // Four clients send their 4096-byte bodies a byte every 200 ms.
    let mut slow = Vec::new();
    for _ in 0..4 {
        slow.push(trickle(&server, SLOW_BODY_HEAD, b" ", Duration::from_millis(200)).await);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    // With --max-checks 1, a real check still gets the slot while they trickle.
    let image = format!("{}/team/app:v1", registry.host());
    let (status, report) = server
        .check(None, &json!({"images": [{"reference": image}]}))
        .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(statuses(&report), [(image.clone(), "present".to_owned())]);
    assert!(
        slow.iter().all(|t| !t.is_finished()),
        "the slow bodies were still arriving during the check"
    );
    for task in slow {
        let answer = task.await.expect("joins");
        assert_eq!(status_of(&answer), 408, "{answer}");
        assert_eq!(header(&answer, "connection"), Some("close"), "{answer}");
        assert!(answer.contains("within body_read_timeout"), "{answer}");
    }
    // No check ran for them.
    assert_eq!(server.metric("pullcheck_checks_in_flight ").await, 0.0);
    server.stop().await;
}

const CHUNKED_HEAD: &[u8] = b"POST /v1/checks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_chunked_body_ends_with_408_or_413() {
    let server = TestServer::start(ServeOptions {
        body_read_timeout: SHORT,
        max_body: 64 * 1024,
        ..ServeOptions::default()
    })
    .await;
    // Slowly: the body deadline.
    let answer = trickle(
        &server,
        CHUNKED_HEAD,
        b"1\r\n \r\n",
        Duration::from_millis(20),
    )
    .await
    .await
    .expect("joins");
    assert_eq!(status_of(&answer), 408, "{answer}");
    // Quickly (a 4 KiB chunk a millisecond): the size limit, or the deadline first.
    static CHUNK: std::sync::LazyLock<Vec<u8>> = std::sync::LazyLock::new(|| {
        let mut chunk = b"1000\r\n".to_vec();
        chunk.extend(vec![b' '; 0x1000]);
        chunk.extend(b"\r\n");
        chunk
    });
    let answer = trickle(&server, CHUNKED_HEAD, &CHUNK, Duration::from_millis(1))
        .await
        .await
        .expect("joins");
    assert!(
        [408, 413].contains(&status_of(&answer)),
        "{}",
        answer.lines().next().unwrap_or_default()
    );
    server.stop().await;
}

#[tokio::test]
async fn healthz_answers_with_over_a_thousand_silent_connections_and_the_cap_logs_once() {
    let logs = Logs::default();
    let _default = tracing::subscriber::set_default(logs.subscriber(LogFormat::Json));
    const CAP: usize = 1000;
    const SILENT: usize = 1100;
    let server = TestServer::start(ServeOptions {
        max_connections: CAP,
        ..ServeOptions::default()
    })
    .await;
    let mut silent = Vec::new();
    for _ in 0..SILENT {
        silent.push(connect(&server).await);
    }
    // Let the server accept them all.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let answer = tokio::time::timeout(BOUND, server.http.get(server.url("/healthz")).send())
        .await
        .expect("healthz answered within the bound")
        .expect("healthz");
    assert_eq!(answer.status().as_u16(), 200);
    // The connections idle longest made room: more than SILENT - CAP were closed, and
    // no more than needed.
    let closed = futures::future::join_all(
        silent
            .iter_mut()
            .map(|s| closed_within(s, Duration::from_millis(200))),
    )
    .await
    .into_iter()
    .filter(|c| *c)
    .count();
    assert!(closed > SILENT - CAP, "{closed} closed");
    assert!(
        closed <= SILENT - CAP + 1,
        "{closed} closed: only those over the cap"
    );
    drop(silent);
    server.stop().await;
    let text = logs.text();
    let cap_lines = text
        .lines()
        .filter(|l| l.contains("connection cap reached"))
        .count();
    assert_eq!(cap_lines, 1, "one line per interval:\n{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_does_not_wait_for_a_half_sent_head() {
    let mut server = TestServer::start(ServeOptions {
        shutdown_grace: Duration::from_secs(30),
        ..ServeOptions::default()
    })
    .await;
    let mut half = connect(&server).await;
    half.write_all(b"POST /v1/checks HTTP/1.1\r\nHost: x\r\nContent-")
        .await
        .expect("send");
    let mut silent = connect(&server).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.signal_shutdown();
    tokio::time::timeout(BOUND, server.stop())
        .await
        .expect("stopped well before the 30 s grace");
    assert!(closed_within(&mut half, BOUND).await);
    assert!(closed_within(&mut silent, BOUND).await);
}

/// While a check is still running, a half-sent head is closed at the start of the
/// drain, not at the end of the grace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_sent_head_is_closed_at_once_while_a_check_runs_on() {
    let hanging = Hanging::start().await;
    let mut server = TestServer::start(ServeOptions {
        shutdown_grace: Duration::from_secs(30),
        ..slow_options()
    })
    .await;
    let _running = send_raw(&server, &hanging.host).await;
    assert!(Hanging::wait(&hanging.accepted, 1).await, "the check runs");
    let mut half = connect(&server).await;
    half.write_all(b"POST /v1/checks HTTP/1.1\r\nHost: x\r\nContent-")
        .await
        .expect("send");
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.signal_shutdown();
    assert!(
        closed_within(&mut half, Duration::from_secs(3)).await,
        "closed well before the 30 s grace"
    );
    drop(_running);
    tokio::time::timeout(BOUND, server.stop())
        .await
        .expect("stopped once the check's client left");
}

/// A raw HTTP/1.1 check request for `body`.
fn check_request(body: &str) -> String {
    format!(
        "POST /v1/checks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_drain_answers_503_with_retry_after_and_ends_running_checks_with_503() {
    let hanging = Hanging::start().await;
    let mut server = TestServer::start(ServeOptions {
        shutdown_grace: Duration::from_secs(1),
        ..slow_options()
    })
    .await;
    let mut running = send_raw(&server, &hanging.host).await;
    assert!(Hanging::wait(&hanging.accepted, 1).await, "the check runs");
    server.signal_shutdown();
    // /readyz says why it is not ready any more.
    let started = Instant::now();
    let readyz = loop {
        let mut stream = connect(&server).await;
        stream
            .write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .expect("send");
        let answer = read_until_closed(&mut stream).await;
        if status_of(&answer) == 503 {
            break answer;
        }
        assert!(started.elapsed() < BOUND, "still ready: {answer}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let readyz: Value =
        serde_json::from_str(readyz.split("\r\n\r\n").nth(1).unwrap_or_default()).expect("JSON");
    assert_eq!(readyz["ready"], false, "{readyz}");
    assert_eq!(readyz["reasons"][0]["component"], "shutdown", "{readyz}");
    // A new request during the drain: 503, Retry-After, Connection: close.
    let mut fresh = connect(&server).await;
    let body = r#"{"images": [{"reference": "registry.example.com/a:1"}]}"#;
    fresh
        .write_all(check_request(body).as_bytes())
        .await
        .expect("send");
    let answer = read_until_closed(&mut fresh).await;
    assert_eq!(status_of(&answer), 503, "{answer}");
    assert_eq!(header(&answer, "retry-after"), Some("1"), "{answer}");
    assert_eq!(header(&answer, "connection"), Some("close"), "{answer}");
    // The running check, at the end of the grace: 503 too, not a cut connection.
    let answer = read_until_closed(&mut running).await;
    assert_eq!(status_of(&answer), 503, "{answer}");
    assert_eq!(header(&answer, "retry-after"), Some("1"), "{answer}");
    assert!(answer.contains("(shutdown_grace)"), "{answer}");
    tokio::time::timeout(BOUND, server.stop())
        .await
        .expect("stopped");
}

/// The three early answers over HTTP/2 with TLS, each while the client is still sending
/// a 1 MiB body: 401 (no token), 413 (over --max-body by Content-Length) and 415 (not
/// JSON).
struct EarlyAnswers {
    server: TestServer,
    pem: Vec<u8>,
    cert: std::path::PathBuf,
    body: std::path::PathBuf,
}

const TOKEN: &str = "s3cret-token-for-tests";
const TRIES: usize = 20;

impl EarlyAnswers {
    /// `name`: the test's own directory (the tests run at once in one process).
    async fn start(name: &str) -> EarlyAnswers {
        let dir = temp_dir(name);
        let pem = make_cert(&dir, "early");
        let tokens = dir.join("tokens");
        std::fs::write(&tokens, format!("{TOKEN}\n")).expect("tokens");
        let body = dir.join("body.json");
        let mut file = std::fs::File::create(&body).expect("body");
        file.write_all(&vec![b' '; 1 << 20]).expect("body");
        let server = TestServer::start(ServeOptions {
            tls: Some(TlsFiles {
                cert: dir.join("early.crt"),
                key: dir.join("early.key"),
            }),
            api_token_file: Some(tokens),
            max_body: 1024,
            ..ServeOptions::default()
        })
        .await;
        EarlyAnswers {
            server,
            pem,
            cert: dir.join("early.crt"),
            body,
        }
    }

    /// (expected status, token, content type) of each case.
    fn cases() -> [(u16, Option<&'static str>, &'static str); 3] {
        [
            (401, None, "application/json"),
            (413, Some(TOKEN), "application/json"),
            (415, Some(TOKEN), "text/plain"),
        ]
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_early_answers_reach_a_rust_client_intact() {
    let early = EarlyAnswers::start("early-answers-rust").await;
    let http = client(&early.pem);
    let url = format!("https://{}/v1/checks", early.server.addr);
    let body = std::fs::read(&early.body).expect("body");
    for (expected, token, content_type) in EarlyAnswers::cases() {
        let mut got = Vec::new();
        for _ in 0..TRIES {
            let mut request = http
                .post(&url)
                .header("content-type", content_type)
                .body(body.clone());
            if let Some(t) = token {
                request = request.bearer_auth(t);
            }
            let response = tokio::time::timeout(BOUND, request.send())
                .await
                .expect("within the bound")
                .expect("an answer, not a stream error");
            assert_eq!(response.version(), reqwest::Version::HTTP_2);
            let status = response.status().as_u16();
            let text = response.text().await.expect("the whole body");
            assert!(text.contains("\"error\""), "{text}");
            got.push(status);
        }
        assert_eq!(got, vec![expected; TRIES]);
    }
    early.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_early_answers_reach_curl_intact() {
    let Ok(version) = std::process::Command::new("curl").arg("--version").output() else {
        eprintln!("SKIPPED: curl is not installed (scripts/install-deps.sh installs it)");
        return;
    };
    let version = String::from_utf8_lossy(&version.stdout).into_owned();
    assert!(
        version.contains("nghttp2"),
        "curl without HTTP/2: {version}"
    );
    let early = EarlyAnswers::start("early-answers-curl").await;
    let url = format!("https://{}/v1/checks", early.server.addr);
    for (expected, token, content_type) in EarlyAnswers::cases() {
        let (url, cert, body) = (url.clone(), early.cert.clone(), early.body.clone());
        let outcomes = tokio::task::spawn_blocking(move || {
            (0..TRIES)
                .map(|_| {
                    let mut curl = std::process::Command::new("curl");
                    curl.args(["-sS", "--http2", "--max-time", "10", "-o", "/dev/null"])
                        .args(["-w", "%{http_code} %{http_version}"])
                        .arg("--cacert")
                        .arg(&cert)
                        .args(["-H", &format!("content-type: {content_type}")])
                        .arg("--data-binary")
                        .arg(format!("@{}", body.display()));
                    if let Some(t) = token {
                        curl.args(["-H", &format!("authorization: Bearer {t}")]);
                    }
                    let output = curl.arg(&url).output().expect("curl runs");
                    (
                        output.status.code(),
                        String::from_utf8_lossy(&output.stdout).into_owned(),
                        String::from_utf8_lossy(&output.stderr).into_owned(),
                    )
                })
                .collect::<Vec<_>>()
        })
        .await
        .expect("joins");
        let wanted = (Some(0), format!("{expected} 2"), String::new());
        let good = outcomes.iter().filter(|o| **o == wanted).count();
        assert_eq!(good, TRIES, "{expected}: {outcomes:?}");
    }
    early.server.stop().await;
}

#[tokio::test]
async fn text_logs_escape_request_data() {
    let logs = Logs::default();
    let _default = tracing::subscriber::set_default(logs.subscriber(LogFormat::Text));
    let dir = temp_dir("log-escape");
    let pem = make_cert(&dir, "logs");
    let server = TestServer::start(ServeOptions {
        tls: Some(TlsFiles {
            cert: dir.join("logs.crt"),
            key: dir.join("logs.key"),
        }),
        admission: Some(AdmissionOptions {
            mode: AdmissionMode::Warn,
            exempt_images: Vec::new(),
            timeout: Duration::from_secs(5),
            client_ca: None,
            ..AdmissionOptions::default()
        }),
        ..ServeOptions::default()
    })
    .await;
    let forged = "1234\n2026-01-01T00:00:00Z  INFO forged: \x1b[31mred\x1b[0m";
    let review = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": forged,
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "operation": "DELETE",
            "namespace": "ns\x1b[2J",
            "name": "pod\nname"
        }
    });
    let answer = tokio::time::timeout(
        BOUND,
        client(&pem)
            .post(format!("https://{}/v1/admission", server.addr))
            .header("content-type", "application/json")
            .body(review.to_string())
            .send(),
    )
    .await
    .expect("within the bound")
    .expect("answer");
    assert_eq!(answer.status().as_u16(), 200);
    let answer: Value = serde_json::from_str(&answer.text().await.expect("body")).expect("JSON");
    assert_eq!(answer["response"]["uid"], forged);
    server.stop().await;
    let bytes = logs.bytes();
    assert!(!bytes.contains(&0x1b), "a raw ESC in the logs");
    let text = logs.text();
    let reviews: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("admission review"))
        .collect();
    assert_eq!(reviews.len(), 1, "{text}");
    assert!(
        reviews[0].contains(r"uid=1234\n2026-01-01T00:00:00Z  INFO forged: \u{1b}[31mred"),
        "{}",
        reviews[0]
    );
    assert!(!text.lines().any(|l| l.starts_with("2026-01-01")), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.contains("forged")).count(),
        1,
        "{text}"
    );
}

/// The router's layers answer without a socket (`tower::ServiceExt::oneshot`): `/readyz`
/// as JSON, 415 and 413 before any body is read.
#[tokio::test]
async fn the_router_layers_answer_through_oneshot() {
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt as _;
    let server = pullcheck_server::Server::bind(ServeOptions {
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        max_body: 16,
        ..ServeOptions::default()
    })
    .await
    .expect("binds");
    let app = pullcheck_server::router(server.state().clone());
    let answer = |request: Request<Body>| {
        let app = app.clone();
        async move {
            let response = app.oneshot(request).await.expect("infallible");
            let status = response.status().as_u16();
            let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
                .await
                .expect("body");
            let value: Value = serde_json::from_slice(&bytes).expect("JSON");
            (status, value)
        }
    };
    let (status, ready) = answer(
        Request::get("/readyz")
            .body(Body::empty())
            .expect("request"),
    )
    .await;
    assert_eq!((status, ready), (200, json!({"ready": true})));
    let (status, error) = answer(
        Request::post("/v1/checks")
            .header("content-type", "text/plain")
            .body(Body::from("{}"))
            .expect("request"),
    )
    .await;
    assert_eq!(status, 415, "{error}");
    let (status, error) = answer(
        Request::post("/v1/checks")
            .header("content-type", "application/json")
            .header("content-length", "17")
            .body(Body::from(r#"{"images": [{}]}"#.to_owned() + " "))
            .expect("request"),
    )
    .await;
    assert_eq!(status, 413, "{error}");
    assert_eq!(
        (
            &error["error"]["setting"],
            &error["error"]["limit"],
            &error["error"]["count"]
        ),
        (&json!("max_body"), &json!(16), &json!(17)),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http2_a_check_running_at_the_end_of_the_grace_gets_503() {
    let hanging = Hanging::start().await;
    let dir = temp_dir("drain-h2");
    let pem = make_cert(&dir, "drain");
    let mut server = TestServer::start(ServeOptions {
        shutdown_grace: Duration::from_secs(1),
        tls: Some(TlsFiles {
            cert: dir.join("drain.crt"),
            key: dir.join("drain.key"),
        }),
        ..slow_options()
    })
    .await;
    let request = client(&pem)
        .post(format!("https://{}/v1/checks", server.addr))
        .header("content-type", "application/json")
        .body(json!({"images": [{"reference": format!("{}/slow:v1", hanging.host)}]}).to_string())
        .send();
    let running = tokio::spawn(request);
    assert!(Hanging::wait(&hanging.accepted, 1).await, "the check runs");
    server.signal_shutdown();
    let response = tokio::time::timeout(BOUND, running)
        .await
        .expect("answered within the bound")
        .expect("joins")
        .expect("an answer, not a cut stream");
    assert_eq!(response.version(), reqwest::Version::HTTP_2);
    assert_eq!(response.status().as_u16(), 503);
    assert_eq!(response.headers()["retry-after"], "1");
    let text = response.text().await.expect("the whole body");
    assert!(text.contains("(shutdown_grace)"), "{text}");
    tokio::time::timeout(BOUND, server.stop())
        .await
        .expect("stopped");
}

/// A TLS connection (HTTP/1.1 by ALPN) to `server`, trusting `pem`.
async fn tls_connect(
    server: &TestServer,
    pem: &[u8],
) -> tokio_rustls::client::TlsStream<TcpStream> {
    use rustls::pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(pem) {
        roots.add(cert.expect("PEM")).expect("a CA");
    }
    let mut config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = connect(server).await;
    let name =
        rustls::pki_types::ServerName::IpAddress(std::net::IpAddr::from([127, 0, 0, 1]).into());
    tokio::time::timeout(BOUND, connector.connect(name, tcp))
        .await
        .expect("within the bound")
        .expect("TLS handshake")
}

/// A JSON `body` POSTed to `path` over TLS, answered within `within`.
async fn post_json(
    http: &reqwest::Client,
    server: &TestServer,
    path: &str,
    body: String,
    within: Duration,
) -> reqwest::Response {
    tokio::time::timeout(
        within,
        http.post(format!("https://{}{path}", server.addr))
            .header("content-type", "application/json")
            .body(body)
            .send(),
    )
    .await
    .expect("within the bound")
    .expect("answer")
}

/// Admission bodies take review slots (`--admission-max-reviews`), never the API's
/// `--max-body-reads`: callers without a token cannot lock token holders out of
/// `/v1/checks` by trickling reviews.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trickled_reviews_do_not_take_the_api_s_body_reads() {
    let dir = temp_dir("review-trickle");
    let pem = make_cert(&dir, "trickle");
    let server = TestServer::start(ServeOptions {
        tls: Some(TlsFiles {
            cert: dir.join("trickle.crt"),
            key: dir.join("trickle.key"),
        }),
        max_body_reads: 1,
        admission: Some(AdmissionOptions {
            max_reviews: 2,
            ..AdmissionOptions::default()
        }),
        ..ServeOptions::default()
    })
    .await;
    let head = "POST /v1/admission HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
                Content-Length: 1000\r\n\r\n{";
    let mut trickles = Vec::new();
    for _ in 0..2 {
        let mut stream = tls_connect(&server, &pem).await;
        stream.write_all(head.as_bytes()).await.expect("send");
        stream.flush().await.expect("flush");
        trickles.push(stream);
    }
    // Both review slots are held by the trickles: a third review gets 503 ...
    let http = client(&pem);
    let third = post_json(&http, &server, "/v1/admission", "{}".to_owned(), BOUND).await;
    assert_eq!(third.status().as_u16(), 503);
    assert_eq!(
        third.headers().get("retry-after").map(|v| v.as_bytes()),
        Some(&b"1"[..])
    );
    // ... while the API's one body read is free: its body is read (a 400 for an empty
    // request, not a 503).
    let check = post_json(&http, &server, "/v1/checks", "{}".to_owned(), BOUND).await;
    assert_eq!(check.status().as_u16(), 400);
    drop(trickles);
    server.stop().await;
}

/// An UPDATE compares each container with the old object's by one lookup: 50,000
/// unchanged containers (2.5 MB, under `--admission-max-body`) are answered within the
/// bound, allowed with nothing to check. (Compared pairwise, this took over 30 s.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_update_is_reduced_in_linear_time() {
    let dir = temp_dir("large-update");
    let pem = make_cert(&dir, "update");
    let server = TestServer::start(ServeOptions {
        tls: Some(TlsFiles {
            cert: dir.join("update.crt"),
            key: dir.join("update.key"),
        }),
        admission: Some(AdmissionOptions {
            mode: AdmissionMode::Deny,
            ..AdmissionOptions::default()
        }),
        ..ServeOptions::default()
    })
    .await;
    let containers: Vec<Value> = (0..50_000)
        .map(|i| json!({"name": format!("{i:x}"), "image": "a"}))
        .collect();
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                     "spec": {"containers": containers}});
    let review = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "operation": "UPDATE",
            "namespace": "ns",
            "name": "p",
            "object": pod,
            "oldObject": pod,
        }
    })
    .to_string();
    assert!(review.len() < 3 << 20, "{} bytes", review.len());
    let answer = post_json(
        &client(&pem),
        &server,
        "/v1/admission",
        review,
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(answer.status().as_u16(), 200);
    let answer: Value = serde_json::from_str(&answer.text().await.expect("body")).expect("JSON");
    assert_eq!(
        (&answer["response"]["uid"], &answer["response"]["allowed"]),
        (&json!("u-1"), &json!(true))
    );
    server.stop().await;
}
