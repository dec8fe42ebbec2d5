//! [`LatencyProxy`]: a TCP forwarder on `127.0.0.1` that adds a fixed one-way delay
//! in each direction, so that a registry on loopback is as many round trips away as a
//! real one (the kernel here has no `netem`). It counts the connections it accepted,
//! and among them those that opened with a TLS handshake record, so that a benchmark
//! can tell how many connections (and HTTPS attempts) a client made.
//!
//! Each direction is a reader that stamps every chunk it reads with the time it was
//! read and a writer that writes it `delay` later: bytes are delayed, not throttled,
//! and a chunk read while an earlier one waits is not delayed twice (the link is
//! pipelined, as a real one is). An end of stream is passed on, `delay` later, as a
//! half-close. There is no bandwidth limit and no loss.
//!
//! The TCP handshake: the kernel completes a client's `connect` to the proxy at once,
//! so the proxy charges it instead: what the client sends is delivered no earlier than
//! three one-way delays after the connection was accepted (SYN, SYN-ACK, then the
//! first data), as on a real link where the client's first byte leaves one round trip
//! after its SYN.
//!
//! With [`ProxyOptions::tls`] the proxy also terminates TLS (rustls, HTTP/1.1 by
//! ALPN) and forwards the plaintext; chained behind a delaying proxy it puts a TLS
//! front on a plain-HTTP server such as the harness's token server.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::Error;

/// How a [`LatencyProxy`] forwards.
#[derive(Clone, Default)]
pub struct ProxyOptions {
    /// Added to every byte in each direction (one way): a delay of 10 ms makes a
    /// round trip of 20 ms. Zero forwards at once (to measure the proxy's own cost).
    pub delay: Duration,
    /// Terminate TLS with this server configuration and forward plaintext.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Keep the first 64 KiB a client sends on each plain (not TLS) connection, for
    /// [`LatencyProxy::plain_bytes`]: a test reads what went over plain HTTP.
    pub record_plain: bool,
}

impl std::fmt::Debug for ProxyOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyOptions")
            .field("delay", &self.delay)
            .field("tls", &self.tls.is_some())
            .field("record_plain", &self.record_plain)
            .finish()
    }
}

/// What a proxy has seen so far.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ProxyStats {
    /// TCP connections accepted.
    pub connections: u64,
    /// Of those, connections whose first byte was a TLS handshake record (0x16): the
    /// HTTPS attempts.
    pub tls: u64,
    /// Of those, connections that sent something else first (plain HTTP).
    pub plain: u64,
    /// Of those, connections the client closed before sending anything (a connection
    /// opened ahead and never used).
    pub silent: u64,
    /// Connections that could not reach the target.
    pub failed: u64,
    /// Connections accepted and not ended yet (both directions closed, or the client
    /// closed it before sending anything): what is open now.
    pub open: u64,
}

#[derive(Debug, Default)]
struct Counters {
    connections: AtomicU64,
    tls: AtomicU64,
    plain: AtomicU64,
    silent: AtomicU64,
    failed: AtomicU64,
    open: AtomicU64,
    /// With [`ProxyOptions::record_plain`]: what each plain connection's client sent.
    plain_bytes: Mutex<Vec<Arc<Mutex<Vec<u8>>>>>,
}

/// How much of each plain connection [`ProxyOptions::record_plain`] keeps.
const RECORD_LIMIT: usize = 64 * 1024;

/// A running proxy; dropping it stops accepting (connections already open run on).
#[derive(Debug)]
pub struct LatencyProxy {
    addr: SocketAddr,
    counters: Arc<Counters>,
    task: tokio::task::JoinHandle<()>,
}

impl LatencyProxy {
    /// Listens on a free `127.0.0.1` port and forwards every connection to `target`
    /// (which must be a loopback address) as `options` say.
    ///
    /// # Errors
    /// [`Error::Io`] when the listener cannot be bound, or [`Error::Unsupported`] when
    /// `target` is not a loopback address.
    pub async fn start(target: SocketAddr, options: ProxyOptions) -> Result<LatencyProxy, Error> {
        if !target.ip().is_loopback() {
            return Err(Error::Unsupported(format!(
                "the latency proxy forwards to loopback only, not {target}"
            )));
        }
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| Error::io("binding the latency proxy", e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::io("binding the latency proxy", e))?;
        let counters = Arc::new(Counters::default());
        let task = tokio::spawn(accept_loop(
            listener,
            target,
            options,
            Arc::clone(&counters),
        ));
        Ok(LatencyProxy {
            addr,
            counters,
            task,
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `127.0.0.1:PORT`.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// With [`ProxyOptions::record_plain`], the bytes each plain (not TLS) connection's
    /// client has sent so far (up to 64 KiB each), in the order they were accepted;
    /// empty without it.
    pub fn plain_bytes(&self) -> Vec<Vec<u8>> {
        let recorded = self
            .counters
            .plain_bytes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        recorded
            .iter()
            .map(|b| b.lock().map(|b| b.clone()).unwrap_or_default())
            .collect()
    }

    /// The counts so far.
    pub fn stats(&self) -> ProxyStats {
        let c = &self.counters;
        ProxyStats {
            connections: c.connections.load(Ordering::Relaxed),
            tls: c.tls.load(Ordering::Relaxed),
            plain: c.plain.load(Ordering::Relaxed),
            silent: c.silent.load(Ordering::Relaxed),
            failed: c.failed.load(Ordering::Relaxed),
            open: c.open.load(Ordering::Relaxed),
        }
    }
}

impl Drop for LatencyProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_loop(
    listener: TcpListener,
    target: SocketAddr,
    options: ProxyOptions,
    counters: Arc<Counters>,
) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        counters.connections.fetch_add(1, Ordering::Relaxed);
        counters.open.fetch_add(1, Ordering::Relaxed);
        let options = options.clone();
        let counters = Arc::clone(&counters);
        let accepted = Instant::now();
        tokio::spawn(async move {
            let _open = Open(Arc::clone(&counters));
            let _ = client.set_nodelay(true);
            let mut first = [0u8; 1];
            let plain = match client.peek(&mut first).await {
                Ok(1) if first[0] == 0x16 => {
                    counters.tls.fetch_add(1, Ordering::Relaxed);
                    false
                }
                Ok(1) => {
                    counters.plain.fetch_add(1, Ordering::Relaxed);
                    true
                }
                Ok(0) => {
                    counters.silent.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                _ => false,
            };
            let record = (plain && options.record_plain).then(|| {
                let bytes = Arc::new(Mutex::new(Vec::new()));
                counters
                    .plain_bytes
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(Arc::clone(&bytes));
                bytes
            });
            let Ok(upstream) = TcpStream::connect(target).await else {
                counters.failed.fetch_add(1, Ordering::Relaxed);
                return;
            };
            let _ = upstream.set_nodelay(true);
            match options.tls {
                Some(config) => {
                    let acceptor = tokio_rustls::TlsAcceptor::from(config);
                    let Ok(tls) = acceptor.accept(client).await else {
                        return;
                    };
                    forward(tls, upstream, options.delay, accepted).await;
                }
                None => match record {
                    Some(bytes) => {
                        let client = Recorded {
                            inner: client,
                            bytes,
                        };
                        forward(client, upstream, options.delay, accepted).await;
                    }
                    None => forward(client, upstream, options.delay, accepted).await,
                },
            }
        });
    }
}

/// Counts a connection as open until its task ends.
struct Open(Arc<Counters>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A connection whose reads are also kept ([`ProxyOptions::record_plain`]).
struct Recorded<C> {
    inner: C,
    bytes: Arc<Mutex<Vec<u8>>>,
}

impl<C: AsyncRead + Unpin> AsyncRead for Recorded<C> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let mut kept = self
                .bytes
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let new = &buf.filled()[before..];
            let room = RECORD_LIMIT.saturating_sub(kept.len());
            kept.extend_from_slice(&new[..new.len().min(room)]);
        }
        polled
    }
}

impl<C: AsyncWrite + Unpin> AsyncWrite for Recorded<C> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Copies both ways, each delayed by `delay`, until both directions have ended; the
/// client's bytes arrive no earlier than the handshake allows (`accepted + 3 delay`).
async fn forward<C>(client: C, upstream: TcpStream, delay: Duration, accepted: Instant)
where
    C: AsyncRead + AsyncWrite + Send + 'static,
{
    let (client_read, client_write) = tokio::io::split(client);
    let (upstream_read, upstream_write) = upstream.into_split();
    let up = pipe(client_read, upstream_write, delay, accepted + delay * 3);
    let down = pipe(upstream_read, client_write, delay, accepted);
    futures::future::join(up, down).await;
}

/// One direction: what is read at `t` is written at `max(t + delay, not_before)`; an
/// end of stream is a shutdown of the writer, as late.
async fn pipe<R, W>(mut from: R, mut to: W, delay: Duration, not_before: Instant)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    if delay.is_zero() {
        let _ = tokio::io::copy(&mut from, &mut to).await;
        let _ = to.shutdown().await;
        return;
    }
    // Unbounded: the reader never waits for the writer, as on a wire; the sender is
    // the registry or a client on this machine, so what is in flight stays small.
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Option<Vec<u8>>)>();
    let reader = tokio::spawn(async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match from.read(&mut buf).await {
                Ok(0) | Err(_) => {
                    let _ = tx.send(((Instant::now() + delay).max(not_before), None));
                    return;
                }
                Ok(n) => {
                    let due = (Instant::now() + delay).max(not_before);
                    if tx.send((due, Some(buf[..n].to_vec()))).is_err() {
                        return;
                    }
                }
            }
        }
    });
    while let Some((due, chunk)) = rx.recv().await {
        tokio::time::sleep_until(due).await;
        match chunk {
            Some(bytes) => {
                if to.write_all(&bytes).await.is_err() {
                    break;
                }
            }
            None => {
                let _ = to.shutdown().await;
                break;
            }
        }
    }
    reader.abort();
}

/// A rustls server configuration (aws-lc provider, TLS 1.2 and 1.3, ALPN `http/1.1`)
/// from a PEM certificate chain and a PEM private key, for [`ProxyOptions::tls`].
///
/// # Errors
/// [`Error::Io`] when a file cannot be read, [`Error::Unsupported`] when it holds no
/// usable certificate or key.
pub fn tls_server_config(
    cert: &std::path::Path,
    key: &std::path::Path,
) -> Result<Arc<rustls::ServerConfig>, Error> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let bad = |what: &std::path::Path, e: rustls::pki_types::pem::Error| {
        Error::Unsupported(format!("{}: {e}", what.display()))
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| bad(cert, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| bad(cert, e))?;
    let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| bad(key, e))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Unsupported(format!("TLS versions: {e}")))?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)
        .map_err(|e| Error::Unsupported(format!("{}: {e}", cert.display())))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn echo_server() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let (mut r, mut w) = s.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        addr
    }

    #[tokio::test]
    async fn delays_each_direction_and_counts_connections() {
        let target = echo_server().await;
        let proxy = LatencyProxy::start(
            target,
            ProxyOptions {
                delay: Duration::from_millis(30),
                tls: None,
                record_plain: false,
            },
        )
        .await
        .unwrap();
        let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
        let started = std::time::Instant::now();
        s.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
        let mut buf = [0u8; 16];
        s.read_exact(&mut buf).await.unwrap();
        let rtt = started.elapsed();
        assert_eq!(&buf, b"GET / HTTP/1.1\r\n");
        // The handshake's round trip, then the request's.
        assert!(rtt >= Duration::from_millis(120), "{rtt:?}");
        assert!(rtt < Duration::from_millis(1000), "{rtt:?}");
        let _ = TcpStream::connect(proxy.addr()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let stats = proxy.stats();
        assert_eq!(stats.connections, 2);
        assert_eq!(stats.plain, 1);
        assert_eq!(stats.tls, 0);
    }

    #[tokio::test]
    async fn refuses_a_target_off_loopback() {
        let target: SocketAddr = "192.0.2.1:80".parse().unwrap();
        assert!(
            LatencyProxy::start(target, ProxyOptions::default())
                .await
                .is_err()
        );
    }
}
