//! A minimal plain-HTTP client for the harness's own requests.
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
}

impl Http {
    pub(crate) fn new() -> Self {
        let client = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(32)
            .build_http();
        Http { client }
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
        let resp = self
            .client
            .request(req)
            .await
            .map_err(|e| fail(format!("{e:?}")))?;
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
