//! When received bytes reached this host: the kernel's receive stamps, for both ends of a
//! measurement — the load generator's lean client stamps each token event's arrival with
//! them, the simulator each request's.
//!
//! On Linux the kernel stamps every segment it receives when the socket asks for it
//! (`SO_TIMESTAMPING` with software receive stamps, [`RX_STAMPS`]), and `recvmsg` returns the
//! stamp beside the bytes ([`receive`]). That stamp is when the bytes reached this host's TCP
//! stack, however late the reading thread woke: a busy neighbour on its core, a thread busy
//! with other streams, or a host slow to wake a halted virtual CPU delays the read but not
//! the stamp. (The first socket on a machine to ask turns stamping on for all of them in a
//! kernel work item: bytes that arrive before it ran carry none, and are stamped at the read.)
//!
//! TCP's rule: segments queued unread are merged into one buffer that keeps the latest
//! segment's stamp, and a read returns the stamp of the last buffer it copied from. A read's
//! stamp is therefore exact for the last bytes it returned and an upper bound for earlier ones.
//!
//! The stamp is on CLOCK_REALTIME. It becomes an `Instant` (CLOCK_MONOTONIC) through its age
//! ([`kernel_instant`]): the wall clock read between two readings of the monotonic one, the
//! age subtracted from their midpoint. The two readings must be close ([`PAIR_SPAN`]): a vCPU
//! descheduled between a lone monotonic and a lone wall-clock reading would put its pause into
//! the age, and a token would read as arriving before its request was sent (3.9 ms early, seen
//! once in 2,000 requests on a 2-vCPU VM). A wall-clock step between the packet and the read
//! would show as an age below zero or above [`MAX_AGE`]; such a stamp is not used. A smaller
//! step is not seen: one CI run dated a request's arrival 0.2 to about 1 ms before its send, where
//! this VM, loaded, dates 450 of them 11 to 90 µs after it. Whoever reads a stamp keeps it no
//! earlier than what it knows came first (the load generator: a token's arrival, its request's
//! send).

use std::io;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Oldest kernel stamp believed: older means the wall clock moved between packet and read.
pub const MAX_AGE: Duration = Duration::from_secs(60);

/// Software receive stamps, reported as software stamps (0 where there are none).
#[cfg(target_os = "linux")]
pub const RX_STAMPS: u32 = libc::SOF_TIMESTAMPING_RX_SOFTWARE | libc::SOF_TIMESTAMPING_SOFTWARE;
#[cfg(not(target_os = "linux"))]
pub const RX_STAMPS: u32 = 0;

/// A kernel receive stamp: ns since the epoch on the wall clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WallStamp(pub i128);

/// Asks the kernel to stamp what `socket` receives with `flags` (`SO_TIMESTAMPING`).
#[cfg(target_os = "linux")]
pub fn ask_for_stamps(socket: &impl AsRawFd, flags: u32) -> io::Result<()> {
    let value = flags as libc::c_int;
    // SAFETY: a valid socket, and an int option value that lives across the call.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
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
pub fn ask_for_stamps(_: &impl AsRawFd, _: u32) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// One non-blocking read from `socket` and, when `stamped`, the kernel's software receive
/// stamp of the bytes it returned, if the kernel attached one (never off Linux).
pub fn receive(
    socket: &impl AsRawFd,
    buf: &mut [u8],
    stamped: bool,
) -> io::Result<(usize, Option<WallStamp>)> {
    #[cfg(target_os = "linux")]
    if stamped {
        return receive_stamped(socket.as_raw_fd(), buf);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = stamped; // no stamps off Linux
                     // SAFETY: a valid socket and a buffer of ours, written at most `buf.len()` bytes.
    let n = unsafe { libc::read(socket.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok((n as usize, None))
    }
}

/// [`receive`] with the stamp: `recvmsg` and its `SCM_TIMESTAMPING` message.
#[cfg(target_os = "linux")]
fn receive_stamped(
    fd: std::os::fd::RawFd,
    buf: &mut [u8],
) -> io::Result<(usize, Option<WallStamp>)> {
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
    let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
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
                    stamp = Some(WallStamp(
                        i128::from(ts[0].tv_sec) * 1_000_000_000 + i128::from(ts[0].tv_nsec),
                    ));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok((n as usize, stamp))
}

/// The monotonic instant of a kernel stamp taken on the wall clock: the two clocks read
/// together (`clock_pair`), the stamp's age on the wall clock taken from the monotonic
/// reading, and never later than `read_at`, when the read that returned its bytes was over.
pub fn kernel_instant(stamp: WallStamp, read_at: Instant) -> Option<Instant> {
    let now = clock_pair(read_clocks);
    let age = now.wall_ns - stamp.0;
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

/// The widest bracket of monotonic readings around a wall-clock reading taken at once: a few
/// hundred ns on a quiet host, tens of µs at the worst without a pause between them.
pub const PAIR_SPAN: Duration = Duration::from_micros(20);

/// Brackets tried before the narrowest is taken.
const PAIR_TRIES: usize = 4;

/// The monotonic and the wall clock at one moment.
#[derive(Clone, Copy, Debug, PartialEq)]
struct ClockPair {
    monotonic: Instant,
    wall_ns: i128,
}

/// The two clocks at one moment, from `read` (a monotonic reading, the wall clock, the
/// monotonic again): the first bracket within [`PAIR_SPAN`], else the narrowest of
/// [`PAIR_TRIES`]; the monotonic moment is the bracket's midpoint.
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
fn read_clocks() -> (Instant, i128, Instant) {
    let before = Instant::now();
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    let after = Instant::now();
    (before, wall, after)
}

#[cfg(test)]
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
        let stamp = WallStamp(wall_ns);
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
        let ahead = WallStamp(wall_ns + 5_000_000_000);
        assert_eq!(kernel_instant(ahead, read_at), None);
        let stale = WallStamp(wall_ns - 61_000_000_000);
        assert_eq!(kernel_instant(stale, read_at), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_socket_that_asked_reads_its_bytes_with_their_arrival() {
        use std::io::Write;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        ask_for_stamps(&server, RX_STAMPS).unwrap();
        // The first socket on a machine to ask turns stamping on for all of them, and the
        // kernel does that in a work item (`net_enable_timestamp`): bytes that arrive before
        // it ran carry no stamp.
        std::thread::sleep(Duration::from_millis(20));
        let sent = Instant::now();
        client.write_all(b"hello").unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let mut buf = [0u8; 16];
        let (n, stamp) = receive(&server, &mut buf, true).unwrap();
        let read_at = Instant::now();
        assert_eq!(&buf[..n], b"hello");
        let at = kernel_instant(stamp.expect("a stamp"), read_at).unwrap();
        // Stamped when the bytes arrived, not 20 ms later when they were read.
        assert!(at + Duration::from_micros(200) >= sent, "{:?}", sent - at);
        assert!(at < sent + Duration::from_millis(10), "{:?}", at - sent);
        // Asking for a flag the kernel refuses (bit 31 is none) fails.
        assert!(ask_for_stamps(&server, 1 << 31).is_err());
    }
}
