//! pipelab's own CPU time, to set beside a run's wall time: what the
//! client side of a run cost (encoding, system calls, parsing replies),
//! which the server's `INFO commandstats` cannot see.

/// User plus system CPU time of this process so far, in µs
/// (`getrusage(RUSAGE_SELF)`: every thread, so any other work the process
/// did meanwhile is in it too); `None` if the call failed.
pub fn process_cpu_us() -> Option<u64> {
    // SAFETY: getrusage writes only the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return None;
    }
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Some(us(ru.ru_utime) + us(ru.ru_stime))
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_time_grows_with_work() {
        let before = super::process_cpu_us().unwrap();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(std::hint::black_box(i));
        }
        std::hint::black_box(x);
        assert!(super::process_cpu_us().unwrap() > before);
    }
}
