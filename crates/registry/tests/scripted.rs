//! Answers a real distribution never gives, from a scripted HTTP/1.1 server on loopback:
//! HEAD refused (405, 501), rate limits, 5xx, a wrong digest, a challenge that only
//! repositories send, an OAuth2 realm, and a server that never answers.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pullcheck_registry::{Client, ClientOptions, Credential, Endpoint, Missing, Status};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const D1: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const D2: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

/// One request as the script sees it.
#[derive(Debug, Clone)]
struct Request {
    method: String,
    target: String,
    authorization: Option<String>,
    body: String,
}

/// One canned answer.
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

fn respond(status: u16, headers: &[(&str, &str)], body: &str) -> Response {
    Response {
        status,
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        body: body.to_string(),
    }
}

type Script = Arc<dyn Fn(&Request) -> Response + Send + Sync>;

struct Server {
    host: String,
    seen: Arc<Mutex<Vec<Request>>>,
}

impl Server {
    fn seen(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|r| format!("{} {}", r.method, r.target))
            .collect()
    }

    fn requests(&self) -> Vec<Request> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Serves `script` on a loopback port (keep-alive, Content-Length bodies only). TLS
/// client hellos get a plain-HTTP 400 and a close, as a plain server would send.
async fn serve(script: impl Fn(&Request) -> Response + Send + Sync + 'static) -> Server {
    let script: Script = Arc::new(script);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let host = listener.local_addr().expect("addr").to_string();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(connection(socket, script.clone(), log.clone()));
        }
    });
    Server { host, seen }
}

async fn connection(mut socket: TcpStream, script: Script, seen: Arc<Mutex<Vec<Request>>>) {
    let mut buffer = Vec::new();
    loop {
        let head_end = loop {
            if let Some(i) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let mut chunk = [0u8; 4096];
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
            if buffer.first() == Some(&0x16) {
                // A TLS ClientHello.
                let _ = socket
                    .write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
                    .await;
                return;
            }
        };
        let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let mut first = lines.next().unwrap_or_default().split(' ');
        let method = first.next().unwrap_or_default().to_string();
        let target = first.next().unwrap_or_default().to_string();
        let mut length = 0usize;
        let mut authorization = None;
        for line in lines {
            if let Some((name, value)) = line.split_once(':') {
                let value = value.trim().to_string();
                match name.to_ascii_lowercase().as_str() {
                    "content-length" => length = value.parse().unwrap_or(0),
                    "authorization" => authorization = Some(value),
                    _ => {}
                }
            }
        }
        while buffer.len() < head_end + length {
            let mut chunk = [0u8; 4096];
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        }
        let body = String::from_utf8_lossy(&buffer[head_end..head_end + length]).into_owned();
        buffer.drain(..head_end + length);
        let request = Request {
            method,
            target,
            authorization,
            body,
        };
        seen.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(request.clone());
        let response = script(&request);
        let mut out = format!(
            "HTTP/1.1 {} Scripted\r\nContent-Length: {}\r\n",
            response.status,
            response.body.len()
        );
        for (name, value) in &response.headers {
            out.push_str(&format!("{name}: {value}\r\n"));
        }
        out.push_str("\r\n");
        if request.method != "HEAD" {
            out.push_str(&response.body);
        }
        if socket.write_all(out.as_bytes()).await.is_err() {
            return;
        }
    }
}

fn endpoint(server: &Server) -> Endpoint {
    Endpoint {
        host: server.host.clone(),
        allow_http: true,
        skip_verify: false,
    }
}

fn client() -> Client {
    Client::new(ClientOptions::default()).expect("client")
}

fn repos(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn head_not_allowed_falls_back_to_get() {
    let server = serve(|r| match (r.method.as_str(), r.target.as_str()) {
        ("GET", "/v2/") => respond(200, &[], ""),
        ("HEAD", _) => respond(405, &[], ""),
        ("GET", "/v2/app/manifests/v1") => respond(
            200,
            &[
                ("Docker-Content-Digest", D1),
                ("Content-Type", "application/vnd.oci.image.manifest.v1+json"),
            ],
            "{}",
        ),
        ("GET", "/v2/app/manifests/gone") => respond(
            404,
            &[("Content-Type", "application/json")],
            r#"{"errors":[{"code":"NAME_UNKNOWN","message":"repository name not known to registry"}]}"#,
        ),
        _ => respond(501, &[], ""),
    })
    .await;
    let session = client()
        .authorize(&endpoint(&server), &Credential::Anonymous, &repos(&["app"]))
        .await
        .expect("authorize");
    let a = session.check("app", "v1").await;
    assert_eq!(a.status, Status::Present, "{a:?}");
    assert_eq!(a.digest.as_deref(), Some(D1));
    assert!(a.detail.starts_with("GET 200"), "{}", a.detail);
    // The GET's error body decides the repository at once: no tag list.
    let a = session.check("app", "gone").await;
    assert_eq!(
        (a.status, a.missing),
        (Status::Missing, Some(Missing::Repository))
    );
    assert_eq!(
        server.seen(),
        vec![
            "GET /v2/",
            "HEAD /v2/app/manifests/v1",
            "GET /v2/app/manifests/v1",
            "HEAD /v2/app/manifests/gone",
            "GET /v2/app/manifests/gone",
        ]
    );
}

#[tokio::test]
async fn rate_limits_server_errors_and_wrong_digests() {
    let server = serve(|r| match r.target.as_str() {
        "/v2/" => respond(200, &[], ""),
        "/v2/app/manifests/limited" => respond(
            429,
            &[("Retry-After", "7")],
            r#"{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}"#,
        ),
        "/v2/app/manifests/broken" => respond(503, &[], ""),
        t if t.starts_with("/v2/app/manifests/sha256:") => {
            respond(200, &[("Docker-Content-Digest", D2)], "")
        }
        "/v2/app/manifests/odd" => respond(418, &[], ""),
        _ => respond(404, &[], ""),
    })
    .await;
    let session = client()
        .authorize(&endpoint(&server), &Credential::Anonymous, &repos(&["app"]))
        .await
        .expect("authorize");

    let a = session.check("app", "limited").await;
    assert_eq!(a.status, Status::Unreachable);
    assert_eq!(a.http_status, Some(429));
    assert!(a.detail.contains("rate limited") && a.detail.contains("retry after 7 s"));

    let a = session.check("app", "broken").await;
    assert_eq!((a.status, a.http_status), (Status::Unreachable, Some(503)));
    assert!(a.detail.contains("HTTP 503"), "{}", a.detail);

    let a = session.check("app", D1).await;
    assert_eq!(a.status, Status::Unreachable);
    assert!(
        a.detail.contains(&format!(
            "registry {} returned digest {D2} for {D1}",
            server.host
        )),
        "{}",
        a.detail
    );

    let a = session.check("app", "odd").await;
    assert_eq!((a.status, a.http_status), (Status::Unreachable, Some(418)));
}

#[tokio::test]
async fn challenge_met_only_on_a_repository_is_adopted_once() {
    // `/v2/` is open; manifests want a Bearer token from the same server's realm.
    let server_host = Arc::new(Mutex::new(String::new()));
    let realm_host = server_host.clone();
    let server = serve(move |r| {
        let host = realm_host.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let challenge = format!(r#"Bearer realm="http://{host}/token",service="scripted""#);
        match (r.target.as_str(), r.authorization.as_deref()) {
            ("/v2/", _) => respond(200, &[], ""),
            (t, _) if t.starts_with("/token?") => {
                respond(200, &[], r#"{"token":"tok-1","expires_in":300}"#)
            }
            (_, Some("Bearer tok-1")) => respond(200, &[("Docker-Content-Digest", D1)], ""),
            _ => respond(401, &[("WWW-Authenticate", challenge.as_str())], ""),
        }
    })
    .await;
    *server_host.lock().unwrap_or_else(|e| e.into_inner()) = server.host.clone();

    let session = client()
        .authorize(
            &endpoint(&server),
            &Credential::Anonymous,
            &repos(&["a", "b"]),
        )
        .await
        .expect("authorize");
    let a = session.check("a", "v1").await;
    assert_eq!(a.status, Status::Present, "{a:?}");
    let a = session.check("b", "v1").await;
    assert_eq!(a.status, Status::Present, "{a:?}");
    assert_eq!(
        server.seen(),
        vec![
            "GET /v2/".to_string(),
            "HEAD /v2/a/manifests/v1".to_string(),
            "GET /token?service=scripted&scope=repository%3Aa%3Apull&scope=repository%3Ab%3Apull"
                .to_string(),
            "HEAD /v2/a/manifests/v1".to_string(),
            "HEAD /v2/b/manifests/v1".to_string(),
        ]
    );
}

#[tokio::test]
async fn identity_token_is_exchanged_through_the_oauth2_form() {
    let server_host = Arc::new(Mutex::new(String::new()));
    let realm_host = server_host.clone();
    let server = serve(move |r| {
        let host = realm_host.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let challenge = format!(r#"Bearer realm="http://{host}/oauth",service="svc""#);
        match (
            r.method.as_str(),
            r.target.as_str(),
            r.authorization.as_deref(),
        ) {
            ("GET", "/v2/", None) => respond(401, &[("WWW-Authenticate", challenge.as_str())], ""),
            ("POST", "/oauth", None) => respond(
                200,
                &[],
                r#"{"access_token":"oauth-access","expires_in":120,"refresh_token":"next"}"#,
            ),
            ("HEAD", _, Some("Bearer oauth-access")) => respond(200, &[], ""),
            _ => respond(401, &[("WWW-Authenticate", challenge.as_str())], ""),
        }
    })
    .await;
    *server_host.lock().unwrap_or_else(|e| e.into_inner()) = server.host.clone();
    let session = client()
        .authorize(
            &endpoint(&server),
            &Credential::IdentityToken("refresh-me".into()),
            &repos(&["x/y"]),
        )
        .await
        .expect("authorize");
    assert_eq!(session.check("x/y", "1").await.status, Status::Present);
    let post = server
        .requests()
        .into_iter()
        .find(|r| r.method == "POST")
        .expect("a POST");
    let form: Vec<(String, String)> = url::form_urlencoded::parse(post.body.as_bytes())
        .into_owned()
        .collect();
    let get = |k: &str| {
        form.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(get("grant_type"), "refresh_token");
    assert_eq!(get("refresh_token"), "refresh-me");
    assert_eq!(get("service"), "svc");
    assert_eq!(get("client_id"), "pullcheck");
    assert_eq!(get("scope"), "repository:x/y:pull");
}

#[tokio::test]
async fn unparseable_and_unsupported_challenges_fail_authorize() {
    let server = serve(|_| respond(401, &[("WWW-Authenticate", "Negotiate")], "")).await;
    let err = client()
        .authorize(&endpoint(&server), &Credential::Anonymous, &repos(&["a"]))
        .await
        .expect_err("unsupported");
    assert_eq!(err.status, Status::NoAccess);
    assert!(
        err.message
            .contains("unsupported authentication (negotiate)"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn silent_server_times_out_with_the_configured_limit() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let host = listener.local_addr().expect("addr").to_string();
    // Accepts and then says nothing, holding each connection open.
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let client = Client::new(ClientOptions {
        request_timeout: Duration::from_millis(300),
        ..ClientOptions::default()
    })
    .expect("client");
    let err = client
        .authorize(
            &Endpoint {
                host: host.clone(),
                allow_http: false,
                skip_verify: false,
            },
            &Credential::Anonymous,
            &repos(&["a"]),
        )
        .await
        .expect_err("silent");
    assert_eq!(err.status, Status::Unreachable);
    assert_eq!(
        err.message,
        format!("registry {host} unreachable over https: timed out after 300 ms")
    );
}
