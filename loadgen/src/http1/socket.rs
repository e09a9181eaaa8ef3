//! A lean connection's socket: reads and writes on tokio's reactor, and when each read's
//! bytes arrived.
//!
//! With [`TokenClock::Kernel`] the socket asks the kernel for receive stamps
//! ([`clock::received`]: when the bytes reached this host's TCP stack, however late this
//! thread woke to read them); without them ([`TokenClock::Read`], or a kernel that gives none)
//! a read is stamped when it returned. A read's stamp is exact for the last bytes it returned
//! and an upper bound for earlier ones (TCP merges segments queued unread): the client counts
//! the token events that shared a read with a later one.

use clock::received::{kernel_instant, receive, RX_STAMPS};
use spec::TokenClock;
use std::io::{self, Write};
use std::net::TcpStream;
use std::time::Instant;
use tokio::io::unix::AsyncFd;

/// When a read's bytes arrived, and who said so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub at: Instant,
    /// The kernel's receive stamp; false: the read's return.
    pub kernel: bool,
}

impl Stamp {
    /// A stamp taken now, by this thread.
    pub fn read_now() -> Stamp {
        Stamp {
            at: Instant::now(),
            kernel: false,
        }
    }
}

/// A connected, non-blocking TCP socket on tokio's reactor.
pub struct Socket {
    fd: AsyncFd<TcpStream>,
    /// Whether the kernel was asked for receive stamps (and agreed).
    kernel_stamps: bool,
}

impl Socket {
    /// Connects to `host:port` with Nagle off, asking for kernel receive stamps when `clock`
    /// says so.
    pub async fn connect(host: &str, port: u16, clock: TokenClock) -> io::Result<Socket> {
        let stream = tokio::net::TcpStream::connect((host, port)).await?;
        stream.set_nodelay(true)?;
        Socket::new(stream.into_std()?, clock)
    }

    /// Wraps a connected non-blocking stream.
    pub fn new(stream: TcpStream, clock: TokenClock) -> io::Result<Socket> {
        Socket::asking(stream, (clock == TokenClock::Kernel).then_some(RX_STAMPS))
    }

    /// Wraps `stream`, asking the kernel to stamp what it receives with `flags` (if any).
    fn asking(stream: TcpStream, flags: Option<u32>) -> io::Result<Socket> {
        let kernel_stamps = flags.is_some_and(|f| ask_for_stamps(&stream, f));
        Ok(Socket {
            fd: register(stream)?,
            kernel_stamps,
        })
    }

    /// Whether reads carry the kernel's receive stamps.
    #[cfg(test)]
    pub fn kernel_stamps(&self) -> bool {
        self.kernel_stamps
    }

    pub async fn write_all(&self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let mut ready = self.fd.writable().await?;
            match ready.try_io(|fd| {
                let mut stream: &TcpStream = fd.get_ref();
                stream.write(bytes)
            }) {
                Ok(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(Ok(n)) => bytes = &bytes[n..],
                Ok(Err(e)) => return Err(e),
                Err(_would_block) => {}
            }
        }
        Ok(())
    }

    /// Reads into `buf`: how many bytes (0 at the end of the stream) and when they arrived.
    pub async fn read(&self, buf: &mut [u8]) -> io::Result<(usize, Stamp)> {
        loop {
            let mut ready = self.fd.readable().await?;
            let got = ready.try_io(|fd| receive(fd.get_ref(), buf, self.kernel_stamps));
            let Ok(got) = got else { continue };
            let (n, kernel) = got?;
            let read_at = Instant::now();
            // A read that did not fill the buffer drained the socket: wait for the next
            // readiness event instead of a read that would only say "would block" (tokio's
            // own TcpStream does the same).
            if n > 0 && n < buf.len() {
                ready.clear_ready();
            }
            let stamp = match kernel.and_then(|t| kernel_instant(t, read_at)) {
                Some(at) => Stamp { at, kernel: true },
                None => Stamp {
                    at: read_at,
                    kernel: false,
                },
            };
            return Ok((n, stamp));
        }
    }
}

/// `stream` on tokio's reactor, for reads and writes.
fn register(stream: TcpStream) -> io::Result<AsyncFd<TcpStream>> {
    // SAFETY: a std TcpStream owns its descriptor, open and the same until it is dropped
    // with the AsyncFd.
    unsafe { AsyncFd::register(stream) }.map_err(io::Error::from)
}

/// Asks the kernel to stamp what `stream` receives with `flags`; false where it refuses.
fn ask_for_stamps(stream: &TcpStream, flags: u32) -> bool {
    match clock::received::ask_for_stamps(stream, flags) {
        Ok(()) => true,
        Err(e) => {
            tracing::debug!(
                "no kernel receive timestamps ({e}): token arrivals are stamped when read"
            );
            false
        }
    }
}

/// `stream` asking for a flag the kernel refuses (bit 31 is no SOF_TIMESTAMPING_* flag: EINVAL).
#[cfg(test)]
pub(super) fn refused_flags_fall_back(stream: TcpStream) -> io::Result<Socket> {
    Socket::asking(stream, Some(1 << 31))
}
