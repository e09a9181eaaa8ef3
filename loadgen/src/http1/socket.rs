//! A lean connection's socket: reads and writes on tokio's reactor, and when each read's
//! bytes arrived.
//!
//! On Linux the kernel stamps every segment it receives when the socket asks for it
//! (`SO_TIMESTAMPING` with software receive stamps), and `recvmsg` returns the stamp beside the
//! bytes. That stamp is when the bytes reached this host's TCP stack, however late this
//! thread woke to read them: a busy neighbour on the runner's core, or a thread busy with other
//! streams, delays the read but not the stamp. Without it ([`TokenClock::Read`], or a kernel
//! that gives none) a read is stamped when it returned.
//!
//! TCP's rule: segments queued unread are merged into one buffer that keeps the latest
//! segment's stamp, and a read returns the stamp of the last buffer it copied from. A read's
//! stamp is therefore exact for the last bytes it returned and an upper bound for earlier ones;
//! the client counts the token events that shared a read with a later one.
//!
//! The stamp is on CLOCK_REALTIME. It becomes an `Instant` (CLOCK_MONOTONIC) through its age:
//! the wall clock read between two readings of the monotonic one, the age subtracted from
//! their midpoint. The two readings must be close ([`PAIR_SPAN`]): a vCPU descheduled between
//! a lone monotonic and a lone wall-clock reading would put its pause into the age, and a
//! token would read as arriving before its request was sent (3.9 ms early, seen once in
//! 2,000 requests on a 2-vCPU VM). A wall-clock step between the packet and the read would
//! show as an age below zero or above [`MAX_AGE`]; such a stamp is not used.

use spec::TokenClock;
use std::io::{self, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use tokio::io::unix::AsyncFd;

/// Oldest kernel stamp believed: older means the wall clock moved between packet and read.
const MAX_AGE: Duration = Duration::from_secs(60);

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

/// Software receive stamps, reported as software stamps.
#[cfg(target_os = "linux")]
const RX_STAMPS: u32 = libc::SOF_TIMESTAMPING_RX_SOFTWARE | libc::SOF_TIMESTAMPING_SOFTWARE;
#[cfg(not(target_os = "linux"))]
const RX_STAMPS: u32 = 0;

/// Asks the kernel to stamp what `stream` receives with `flags`; false where it refuses.
fn ask_for_stamps(stream: &TcpStream, flags: u32) -> bool {
    match set_stamping(stream, flags) {
        Ok(()) => true,
        Err(e) => {
            tracing::debug!(
                "no kernel receive timestamps ({e}): token arrivals are stamped when read"
            );
            false
        }
    }
}

#[cfg(target_os = "linux")]
fn set_stamping(stream: &TcpStream, flags: u32) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let value = flags as libc::c_int;
    // SAFETY: a valid socket, and an int option value that lives across the call.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPING,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn set_stamping(_: &TcpStream, _: u32) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// One read from the socket and, when `stamped`, the kernel's software receive stamp of the
/// bytes it returned (CLOCK_REALTIME), if the kernel attached one.
#[cfg(target_os = "linux")]
fn receive(
    stream: &TcpStream,
    buf: &mut [u8],
    stamped: bool,
) -> io::Result<(usize, Option<libc::timespec>)> {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    if !stamped {
        return (&*stream).read(buf).map(|n| (n, None));
    }
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // Room for one `scm_timestamping` (three timespecs) and its header, 8-byte aligned.
    let mut control = [0u64; 16];
    // SAFETY: msghdr is plain data; every pointer set below outlives the recvmsg call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: a valid socket and a msghdr whose buffers are ours.
    let n = unsafe { libc::recvmsg(stream.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp = None;
    // SAFETY: the CMSG_* macros walk the control buffer recvmsg filled, within its length.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPING
            {
                // ts[0] is the software stamp; ts[2] the raw hardware one (not asked for).
                let ts: [libc::timespec; 3] =
                    std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                if ts[0].tv_sec != 0 || ts[0].tv_nsec != 0 {
                    stamp = Some(ts[0]);
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok((n as usize, stamp))
}

#[cfg(not(target_os = "linux"))]
fn receive(stream: &TcpStream, buf: &mut [u8], _: bool) -> io::Result<(usize, Option<()>)> {
    use std::io::Read;
    (&*stream).read(buf).map(|n| (n, None))
}

/// The monotonic instant of a kernel stamp taken on the wall clock: the two clocks read
/// together ([`clock_pair`]), the stamp's age on the wall clock taken from the monotonic
/// reading, and never later than `read_at`, when the read that returned its bytes was over.
#[cfg(target_os = "linux")]
fn kernel_instant(stamp: libc::timespec, read_at: Instant) -> Option<Instant> {
    let now = clock_pair(read_clocks);
    let age = now.wall_ns - timespec_ns(stamp);
    // The two clocks were read a few tens of ns apart: a stamp up to a µs "ahead" is that.
    let age = match age {
        a if a < -1_000 => return None,
        a => Duration::from_nanos(a.max(0) as u64),
    };
    if age > MAX_AGE {
        return None;
    }
    now.monotonic.checked_sub(age).map(|at| at.min(read_at))
}

#[cfg(target_os = "linux")]
fn timespec_ns(t: libc::timespec) -> i128 {
    i128::from(t.tv_sec) * 1_000_000_000 + i128::from(t.tv_nsec)
}

/// The widest bracket of monotonic readings around a wall-clock reading taken at once: a few
/// hundred ns on a quiet host, tens of µs at the worst without a pause between them.
#[cfg(target_os = "linux")]
const PAIR_SPAN: Duration = Duration::from_micros(20);

/// Brackets tried before the narrowest is taken.
#[cfg(target_os = "linux")]
const PAIR_TRIES: usize = 4;

/// The monotonic and the wall clock at one moment.
#[cfg(target_os = "linux")]
#[derive(Clone, Copy, Debug, PartialEq)]
struct ClockPair {
    monotonic: Instant,
    wall_ns: i128,
}

/// The two clocks at one moment, from `read` (a monotonic reading, the wall clock, the
/// monotonic again): the first bracket within [`PAIR_SPAN`], else the narrowest of
/// [`PAIR_TRIES`]; the monotonic moment is the bracket's midpoint.
#[cfg(target_os = "linux")]
fn clock_pair(mut read: impl FnMut() -> (Instant, i128, Instant)) -> ClockPair {
    let mut narrowest: Option<(Duration, ClockPair)> = None;
    for _ in 0..PAIR_TRIES {
        let (before, wall_ns, after) = read();
        let span = after.saturating_duration_since(before);
        let pair = ClockPair {
            monotonic: before + span / 2,
            wall_ns,
        };
        if span <= PAIR_SPAN {
            return pair;
        }
        if narrowest.is_none_or(|(widest, _)| span < widest) {
            narrowest = Some((span, pair));
        }
    }
    narrowest.expect("at least one try").1
}

/// A monotonic reading, the wall clock (ns since the epoch), the monotonic again.
#[cfg(target_os = "linux")]
fn read_clocks() -> (Instant, i128, Instant) {
    let mut wall = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let before = Instant::now();
    // SAFETY: clock_gettime writes the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut wall) };
    let after = Instant::now();
    (before, timespec_ns(wall), after)
}

#[cfg(not(target_os = "linux"))]
fn kernel_instant(_: (), _: Instant) -> Option<Instant> {
    None
}

/// `stream` asking for a flag the kernel refuses (bit 31 is no SOF_TIMESTAMPING_* flag: EINVAL).
#[cfg(test)]
pub(super) fn refused_flags_fall_back(stream: TcpStream) -> io::Result<Socket> {
    Socket::asking(stream, Some(1 << 31))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// A fake clock's brackets: each `(before, wall, after)` in µs, the monotonic readings
    /// from `origin`.
    fn brackets(
        origin: Instant,
        reads: &[(u64, i128, u64)],
    ) -> impl FnMut() -> (Instant, i128, Instant) + '_ {
        let mut at = reads.iter();
        move || {
            let &(before, wall, after) = at.next().expect("no more reads");
            (
                origin + Duration::from_micros(before),
                wall * 1_000,
                origin + Duration::from_micros(after),
            )
        }
    }

    #[test]
    fn a_pause_between_the_clocks_is_read_again_not_put_into_the_age() {
        let origin = Instant::now();
        // The first bracket holds a 4 ms pause: a lone monotonic reading before the wall
        // clock would put it into every age, and a token 4 ms before its request's send.
        let pair = clock_pair(brackets(
            origin,
            &[(0, 5_000, 4_000), (4_010, 9_010, 4_012)],
        ));
        assert_eq!(
            pair,
            ClockPair {
                monotonic: origin + Duration::from_micros(4_011),
                wall_ns: 9_010_000,
            }
        );
    }

    #[test]
    fn with_no_narrow_bracket_the_narrowest_is_taken() {
        let origin = Instant::now();
        let wide = [(0, 1, 100), (200, 2, 250), (300, 3, 400), (500, 4, 560)];
        assert_eq!(
            clock_pair(brackets(origin, &wide)),
            ClockPair {
                monotonic: origin + Duration::from_micros(225),
                wall_ns: 2_000,
            }
        );
    }

    #[test]
    fn a_stamp_converts_to_the_monotonic_moment_it_was_taken() {
        // A "packet" stamped on the wall clock now, read 30 ms later.
        let (before, wall_ns, after) = read_clocks();
        std::thread::sleep(Duration::from_millis(30));
        let stamp = libc::timespec {
            tv_sec: (wall_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (wall_ns % 1_000_000_000) as libc::c_long,
        };
        let read_at = Instant::now();
        let at = kernel_instant(stamp, read_at).expect("a fresh stamp is used");
        // Within the bracket it was taken in, give or take a wall clock's slew over 30 ms.
        let slack = Duration::from_micros(200);
        assert!(
            at + slack >= before && at <= after + slack,
            "{at:?} not in {before:?}..{after:?}"
        );
        // A stamp from the future (a wall-clock step back) is not used; nor is one over a
        // minute old.
        let ahead = libc::timespec {
            tv_sec: stamp.tv_sec + 5,
            ..stamp
        };
        assert_eq!(kernel_instant(ahead, read_at), None);
        let stale = libc::timespec {
            tv_sec: stamp.tv_sec - 61,
            ..stamp
        };
        assert_eq!(kernel_instant(stale, read_at), None);
    }
}
