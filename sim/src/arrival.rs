//! When each request reached the server: every accepted socket asks the kernel for receive
//! stamps ([`clock::received`]), and a request's handler takes the latest stamp its
//! connection read, the one of the bytes that completed its head. The truth keeps it as
//! [`crate::RequestTruth::arrived`], beside `received` (the handler's start).
//!
//! Between the two lie the server's wake-up and its parsing. On a virtual machine whose host is
//! slow to wake a halted vCPU that wake-up took milliseconds, and a client's span from its send
//! then rightly held it while the handler's span did not: a test holds the client's span to
//! the server's from `arrived` instead, the same moment on the wire seen from both ends.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;

/// The latest arrival one connection read, until a request takes it.
#[derive(Default)]
pub(crate) struct Arrivals(Mutex<Option<Instant>>);

impl Arrivals {
    fn note(&self, at: Instant) {
        *self.0.lock().expect("arrivals lock") = Some(at);
    }

    /// The latest arrival read, once: a request's handler takes it as it starts (the next
    /// request's bytes come after its response, and replace it).
    pub fn take(&self) -> Option<Instant> {
        self.0.lock().expect("arrivals lock").take()
    }
}

/// An accepted connection whose reads note when their bytes arrived.
pub(crate) struct StampedStream {
    inner: TcpStream,
    /// Whether the kernel agreed to stamp what it receives (not where it gives no stamps).
    stamped: bool,
    arrivals: Arc<Arrivals>,
}

impl StampedStream {
    pub fn new(inner: TcpStream, arrivals: Arc<Arrivals>) -> StampedStream {
        let stamped = clock::received::ask_for_stamps(&inner, clock::received::RX_STAMPS).is_ok();
        StampedStream {
            inner,
            stamped,
            arrivals,
        }
    }
}

impl AsyncRead for StampedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.stamped {
            // No stamps from this kernel: the read's return, never later than the handler's
            // start.
            let before = buf.filled().len();
            let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
            if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
                this.arrivals.note(Instant::now());
            }
            return polled;
        }
        loop {
            ready!(this.inner.poll_read_ready(cx))?;
            let into = buf.initialize_unfilled();
            let inner = &this.inner;
            // A read that would block clears the readiness, and the next poll waits for more.
            match inner.try_io(Interest::READABLE, || {
                clock::received::receive(inner, into, true)
            }) {
                Ok((n, stamp)) => {
                    let read_at = Instant::now();
                    if n > 0 {
                        let at = stamp.and_then(|s| clock::received::kernel_instant(s, read_at));
                        this.arrivals.note(at.unwrap_or(read_at));
                    }
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for StampedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, bytes)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
