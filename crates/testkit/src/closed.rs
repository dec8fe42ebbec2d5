//! A loopback port where nothing listens, held for as long as the value lives.

use std::net::SocketAddr;

/// A `127.0.0.1` TCP port that is bound and never listened on: a connection to it is
/// refused (`ECONNREFUSED`), and, while this value lives, no other socket in the
/// process or on the machine can be given the port.
///
/// A listener that is bound and then dropped does not give that guarantee: the kernel
/// may hand its port to the next `bind(…:0)`, in a test running in parallel, whose
/// server then answers where a test expected a refusal (seen in CI).
#[derive(Debug)]
pub struct ClosedPort {
    _socket: tokio::net::TcpSocket,
    addr: SocketAddr,
}

impl ClosedPort {
    /// Binds a fresh socket on `127.0.0.1:0` without listening.
    ///
    /// # Panics
    /// If the machine cannot create or bind a TCP socket (a broken test machine).
    pub fn new() -> ClosedPort {
        let socket = tokio::net::TcpSocket::new_v4().expect("create a TCP socket");
        let any: SocketAddr = "127.0.0.1:0".parse().expect("address");
        socket.bind(any).expect("bind 127.0.0.1:0");
        let addr = socket.local_addr().expect("local address");
        ClosedPort {
            _socket: socket,
            addr,
        }
    }

    /// The port number.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `127.0.0.1:PORT`, as an image reference's registry host or a URL's authority.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }
}

impl Default for ClosedPort {
    fn default() -> ClosedPort {
        ClosedPort::new()
    }
}
