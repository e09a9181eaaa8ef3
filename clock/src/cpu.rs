//! What the machine's CPUs did during a measurement: this process's CPU time (what a
//! benchmark cost the client) and the time the hypervisor stole from every CPU (what can
//! make both client and simulator late whatever they do).

use std::time::Duration;

/// CPU time (user + system) this process has used.
pub fn cpu_time() -> Duration {
    // SAFETY: getrusage writes into the struct we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Time the hypervisor has stolen from all of this machine's CPUs (`/proc/stat`, Linux).
pub fn steal_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let ticks = steal_ticks(&stat)?;
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (per_second > 0).then(|| Duration::from_secs_f64(ticks as f64 / per_second as f64))
}

/// The steal column (the 8th number) of `/proc/stat`'s aggregate `cpu` line.
fn steal_ticks(stat: &str) -> Option<u64> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    line.split_whitespace().nth(8)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_is_the_eighth_number_of_the_cpu_line() {
        let stat =
            "cpu  2748694 720970 214620 969348 8346 0 4778 68040 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n";
        assert_eq!(steal_ticks(stat), Some(68040));
        assert_eq!(steal_ticks("cpu0 1 2\n"), None);
    }
}
