//! Bounds on what slow or numerous clients can hold: a time to send a
//! request's head and body, and caps on open connections per client address
//! and in all. Watches and `logs -f` answers are long on purpose: nothing
//! here times a response.

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// How long and how many, as `ringleader up` flags set them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnLimits {
    /// Time from accepting a connection (or the end of the previous answer)
    /// to a request's complete head.
    pub header_timeout: Duration,
    /// Time to receive a request's whole body once its head is in.
    pub body_timeout: Duration,
    /// Open connections from one client address.
    pub per_client: usize,
    /// Open connections in all.
    pub total: usize,
}

impl Default for ConnLimits {
    /// kube-apiserver's 30 s for a head (Go's ReadHeaderTimeout there is
    /// unset, but its 60 s request timeout covers it); a minute for 64 MiB
    /// of body; caps well under the default 1,024-fd soft limit per client
    /// and under what a 65,536-fd service unit allows in all.
    fn default() -> ConnLimits {
        ConnLimits {
            header_timeout: Duration::from_secs(30),
            body_timeout: Duration::from_secs(60),
            per_client: 256,
            total: 8192,
        }
    }
}

/// Open connections, by client address.
#[derive(Debug, Default)]
struct Open {
    by_client: HashMap<IpAddr, usize>,
    total: usize,
}

/// Counts connections and refuses those over a cap (closed at once, before
/// any TLS handshake, so they cost one fd for a moment).
#[derive(Debug, Clone)]
pub(crate) struct Counter {
    limits: ConnLimits,
    open: Arc<Mutex<Open>>,
}

impl Counter {
    pub(crate) fn new(limits: ConnLimits) -> Counter {
        Counter { limits, open: Arc::default() }
    }

    /// A slot for a connection from `client`, or `None` when a cap is reached.
    fn admit(&self, client: IpAddr) -> Option<Slot> {
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mine = open.by_client.get(&client).copied().unwrap_or(0);
        if mine >= self.limits.per_client || open.total >= self.limits.total {
            return None;
        }
        open.by_client.insert(client, mine + 1);
        open.total += 1;
        Some(Slot { client, open: self.open.clone() })
    }
}

/// One admitted connection; its drop frees the slot.
#[derive(Debug)]
struct Slot {
    client: IpAddr,
    open: Arc<Mutex<Open>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        open.total = open.total.saturating_sub(1);
        if let Some(n) = open.by_client.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                open.by_client.remove(&self.client);
            }
        }
    }
}

/// A TCP connection that holds its slot while open.
#[derive(Debug)]
pub(crate) struct Counted {
    tcp: TcpStream,
    _slot: Slot,
}

impl AsyncRead for Counted {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}

/// The acceptor under TLS: TCP_NODELAY (a response's last TLS record must
/// not wait for the client's delayed ACK) and the connection caps.
#[derive(Debug, Clone)]
pub(crate) struct CappedAcceptor {
    counter: Counter,
}

impl CappedAcceptor {
    pub(crate) fn new(counter: Counter) -> CappedAcceptor {
        CappedAcceptor { counter }
    }
}

impl<S> axum_server::accept::Accept<TcpStream, S> for CappedAcceptor {
    type Stream = Counted;
    type Service = S;
    type Future = std::future::Ready<io::Result<(Counted, S)>>;

    fn accept(&self, tcp: TcpStream, service: S) -> Self::Future {
        let admitted = tcp.peer_addr().and_then(|peer| {
            self.counter.admit(peer.ip()).ok_or_else(|| {
                tracing::debug!(client = %peer.ip(), "connection refused: too many open");
                io::Error::other(format!("too many open connections from {}", peer.ip()))
            })
        });
        std::future::ready(admitted.map(|slot| {
            let _ = tcp.set_nodelay(true);
            (Counted { tcp, _slot: slot }, service)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_per_client_and_in_all_and_frees_on_drop() {
        let counter = Counter::new(ConnLimits { per_client: 2, total: 3, ..ConnLimits::default() });
        let (a, b) = (IpAddr::from([127, 0, 0, 2]), IpAddr::from([127, 0, 0, 1]));
        let first = counter.admit(a);
        let second = counter.admit(a);
        assert!(first.is_some() && second.is_some());
        assert!(counter.admit(a).is_none(), "a third from one client");
        let other = counter.admit(b);
        assert!(other.is_some());
        assert!(counter.admit(b).is_none(), "a fourth in all");
        drop(first);
        assert!(counter.admit(a).is_some(), "a freed slot is reused");
        drop((second, other));
        let open = counter.open.lock().map(|o| (o.total, o.by_client.len())).unwrap_or_default();
        assert_eq!(open, (0, 0));
    }
}
