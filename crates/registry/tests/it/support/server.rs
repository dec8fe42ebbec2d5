//! A scripted HTTP/1.1 server on loopback. A script maps each request to a response,
//! or to a fault: a delay, a TCP reset, raw bytes that are not HTTP, or silence. It
//! records every request and counts connections, over plain TCP or behind TLS.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request as the script sees it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub target: String,
    pub authorization: Option<String>,
    pub accept: Option<String>,
    /// Every header, name in lower case, in order.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Request {
    /// The values of header `name` (lower case), in order.
    pub fn header(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The path, without the query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }
}

/// What goes wrong instead of (or before) an answer.
#[derive(Debug, Clone)]
pub enum Fault {
    /// Wait this long, then send the response.
    Delay(Duration),
    /// Close the connection with a TCP reset instead of answering.
    Reset,
    /// Write these bytes instead of an HTTP answer, then close.
    Raw(Vec<u8>),
    /// Never answer; keep the connection open.
    Hang,
    /// Send the head and this much of the body, then stall with the connection open.
    StallBody(usize),
}

/// One canned answer.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub fault: Option<Fault>,
}

impl Response {
    /// The same response after `fault`.
    pub fn with(mut self, fault: Fault) -> Response {
        self.fault = Some(fault);
        self
    }
}

/// A response with these headers and body (`Content-Length` is added).
pub fn respond(status: u16, headers: &[(&str, &str)], body: &str) -> Response {
    Response {
        status,
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        body: body.to_string(),
        fault: None,
    }
}

/// No answer but `fault`.
pub fn fault(fault: Fault) -> Response {
    respond(0, &[], "").with(fault)
}

type Script = Arc<dyn Fn(&Request) -> Response + Send + Sync>;

/// A running server; it lives as long as the test's runtime.
pub struct Server {
    /// `127.0.0.1:PORT`.
    pub host: String,
    seen: Arc<Mutex<Vec<Request>>>,
    connections: Arc<AtomicUsize>,
}

impl Server {
    /// `METHOD target` of every request so far.
    pub fn seen(&self) -> Vec<String> {
        self.requests()
            .iter()
            .map(|r| format!("{} {}", r.method, r.target))
            .collect()
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Request> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// Serves `script` on a loopback port (keep-alive, Content-Length bodies only). TLS
/// client hellos get a plain-HTTP 400 and a close, as a plain server would send.
pub async fn serve(script: impl Fn(&Request) -> Response + Send + Sync + 'static) -> Server {
    serve_with("127.0.0.1:0", script, None).await
}

/// [`serve`] on another loopback address (`127.0.0.2:0`, ...), with `host` naming it.
pub async fn serve_at(
    bind: &str,
    script: impl Fn(&Request) -> Response + Send + Sync + 'static,
) -> Server {
    serve_with(bind, script, None).await
}

/// [`serve`] behind TLS with this server configuration (the scripted faults but
/// `Reset` work the same).
pub async fn serve_tls(
    script: impl Fn(&Request) -> Response + Send + Sync + 'static,
    config: Arc<rustls::ServerConfig>,
) -> Server {
    serve_with("127.0.0.1:0", script, Some(config)).await
}

async fn serve_with(
    bind: &str,
    script: impl Fn(&Request) -> Response + Send + Sync + 'static,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> Server {
    let script: Script = Arc::new(script);
    let listener = TcpListener::bind(bind).await.expect("bind");
    let host = listener.local_addr().expect("addr").to_string();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let connections = Arc::new(AtomicUsize::new(0));
    let (log, count) = (seen.clone(), connections.clone());
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let (script, log) = (script.clone(), log.clone());
            match &acceptor {
                None => {
                    tokio::spawn(connection(socket, script, log));
                }
                Some(acceptor) => {
                    let acceptor = acceptor.clone();
                    tokio::spawn(async move {
                        if let Ok(tls) = acceptor.accept(socket).await {
                            connection(tls, script, log).await;
                        }
                    });
                }
            }
        }
    });
    Server {
        host,
        seen,
        connections,
    }
}

/// The stream under a connection, for the faults that need the socket itself.
trait Socket: AsyncRead + AsyncWrite + Unpin + Send + 'static {
    /// Sets a zero linger time, so that dropping the socket sends a reset.
    fn reset_on_drop(&self);
}

impl Socket for TcpStream {
    fn reset_on_drop(&self) {
        let _ = self.set_zero_linger();
    }
}

impl Socket for tokio_rustls::server::TlsStream<TcpStream> {
    fn reset_on_drop(&self) {
        self.get_ref().0.reset_on_drop();
    }
}

async fn connection(mut socket: impl Socket, script: Script, seen: Arc<Mutex<Vec<Request>>>) {
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
        let mut accept = None;
        let mut headers = Vec::new();
        for line in lines {
            if let Some((name, value)) = line.split_once(':') {
                let value = value.trim().to_string();
                headers.push((name.to_ascii_lowercase(), value.clone()));
                match name.to_ascii_lowercase().as_str() {
                    "content-length" => length = value.parse().unwrap_or(0),
                    "authorization" => authorization = Some(value),
                    "accept" => accept = Some(value),
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
            accept,
            headers,
            body,
        };
        seen.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(request.clone());
        let response = script(&request);
        match &response.fault {
            Some(Fault::Delay(d)) => tokio::time::sleep(*d).await,
            Some(Fault::Reset) => {
                socket.reset_on_drop();
                return;
            }
            Some(Fault::Raw(bytes)) => {
                let _ = socket.write_all(bytes).await;
                let _ = socket.shutdown().await;
                return;
            }
            Some(Fault::Hang) => {
                std::future::pending::<()>().await;
            }
            Some(Fault::StallBody(_)) | None => {}
        }
        let mut out = format!(
            "HTTP/1.1 {} Scripted\r\nContent-Length: {}\r\n",
            response.status,
            response.body.len()
        );
        for (name, value) in &response.headers {
            out.push_str(&format!("{name}: {value}\r\n"));
        }
        out.push_str("\r\n");
        let mut bytes = out.into_bytes();
        if request.method != "HEAD" {
            bytes.extend_from_slice(response.body.as_bytes());
        }
        if let Some(Fault::StallBody(sent)) = response.fault {
            let head = bytes.len() - response.body.len();
            let _ = socket.write_all(&bytes[..head + sent]).await;
            let _ = socket.flush().await;
            std::future::pending::<()>().await;
        }
        if socket.write_all(&bytes).await.is_err() {
            return;
        }
    }
}
