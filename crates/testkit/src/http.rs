//! A minimal HTTP client for the harness's own requests: plain HTTP, and HTTPS (one
//! connection per request, HTTP/1.1) to a registry served over TLS.
//!
//! A new client is made per public call so pooled connections never outlive
//! the tokio runtime that created them (tests each have their own runtime).

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::HeaderMap;
use hyper::{Method, Request};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::Error;

/// The `User-Agent` of every request the harness sends; the access-log
/// reader leaves such requests out of [`Registry::requests`](crate::Registry::requests).
pub(crate) const HARNESS_USER_AGENT: &str = "pullcheck-testkit-harness";

/// A response, body fully read.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl Reply {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub(crate) fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

#[derive(Clone)]
pub(crate) struct Http {
    client: Client<HttpConnector, Full<Bytes>>,
    /// For `https://` URLs: trusts the registry's CA only.
    tls: Option<tokio_rustls::TlsConnector>,
}

impl Http {
    pub(crate) fn new() -> Self {
        let client = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(32)
            .build_http();
        Http { client, tls: None }
    }

    /// A client that also speaks HTTPS, trusting only the CA certificates in `ca`.
    pub(crate) fn with_ca(ca: &std::path::Path) -> Result<Self, Error> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        let bad = |e: String| Error::Unsupported(format!("{}: {e}", ca.display()));
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(ca).map_err(|e| bad(e.to_string()))? {
            roots
                .add(cert.map_err(|e| bad(e.to_string()))?)
                .map_err(|e| bad(e.to_string()))?;
        }
        let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| bad(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let mut http = Http::new();
        http.tls = Some(tokio_rustls::TlsConnector::from(std::sync::Arc::new(
            config,
        )));
        Ok(http)
    }

    pub(crate) async fn send(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<Reply, Error> {
        let fail = |message: String| Error::Http {
            method: method.to_string(),
            url: url.to_string(),
            message,
        };
        let mut req = Request::builder()
            .method(method.clone())
            .uri(url)
            .header("user-agent", HARNESS_USER_AGENT);
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let req = req.body(Full::new(body)).map_err(|e| fail(e.to_string()))?;
        let resp = match (&self.tls, url.strip_prefix("https://")) {
            (Some(tls), Some(rest)) => {
                let authority = rest.split('/').next().unwrap_or(rest);
                send_tls(tls, authority, req).await.map_err(fail)?
            }
            _ => self
                .client
                .request(req)
                .await
                .map_err(|e| fail(format!("{e:?}")))?,
        };
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| fail(e.to_string()))?
            .to_bytes();
        Ok(Reply {
            status,
            headers,
            body,
        })
    }
}

/// One request over a new TLS connection to `authority` (`IP:PORT`).
async fn send_tls(
    tls: &tokio_rustls::TlsConnector,
    authority: &str,
    mut req: Request<Full<Bytes>>,
) -> Result<hyper::Response<hyper::body::Incoming>, String> {
    let addr: std::net::SocketAddr = authority
        .parse()
        .map_err(|_| format!("{authority}: not an IP:PORT"))?;
    let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    let stream = tls.connect(name, tcp).await.map_err(|e| e.to_string())?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    // The request line of a connection-level client is the path alone.
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    *req.uri_mut() = path.parse().map_err(|_| "bad path".to_string())?;
    req.headers_mut().insert(
        hyper::header::HOST,
        authority.parse().map_err(|_| "bad host".to_string())?,
    );
    sender.send_request(req).await.map_err(|e| e.to_string())
}

/// Serves HTTP/1.1 on `listener` until `stop` fires (or its sender is dropped), each
/// request answered by `handle`: the accept loop of the harness's in-process servers
/// (the token server and the Kubernetes stand-in).
pub(crate) async fn serve_until<H, Fut>(
    listener: std::net::TcpListener,
    mut stop: tokio::sync::oneshot::Receiver<()>,
    handle: H,
) where
    H: Fn(Request<hyper::body::Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = hyper::Response<Full<Bytes>>> + Send + 'static,
{
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    loop {
        let stream = tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => continue,
            },
        };
        let handle = handle.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let answer = handle(req);
                async move { Ok::<_, std::convert::Infallible>(answer.await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}
