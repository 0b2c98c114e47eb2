//! The cycle counter: reads around the timed body (Intel's method: serialize before the first
//! read, `rdtscp` after the body), and its frequency.

use std::time::{Duration, Instant};

/// Reads the TSC after all earlier instructions completed (lfence; rdtsc). No lfence follows:
/// the body may start while `rdtsc` executes, as it would after the thesis' `getticks()` (a
/// plain `rdtsc`). A fence there made every instruction of the body wait out the whole
/// pipeline: measured on AMD EPYC here, the dormant probe's 1-byte `nop` then cost 2.6 ns and
/// LTTng's inline state test 4.4 ns (case 3 read 1.16x and 1.25x case 0); without it both read
/// 1.00-1.02x, and traps (case 1) serialize by themselves.
#[inline(always)]
pub fn start() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: lfence/rdtsc have no memory effects; x86_64 always has them.
    unsafe {
        use core::arch::x86_64::{_mm_lfence, _rdtsc};
        _mm_lfence();
        _rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    fallback_ns()
}

/// Reads the TSC once the timed body completed (rdtscp; lfence).
#[inline(always)]
pub fn stop() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: rdtscp writes only `aux`; lfence has no memory effects.
    unsafe {
        use core::arch::x86_64::{__rdtscp, _mm_lfence};
        let mut aux = 0u32;
        let t = __rdtscp(&mut aux);
        _mm_lfence();
        t
    }
    #[cfg(not(target_arch = "x86_64"))]
    fallback_ns()
}

#[cfg(not(target_arch = "x86_64"))]
fn fallback_ns() -> u64 {
    use std::sync::OnceLock;
    static T0: OnceLock<Instant> = OnceLock::new();
    T0.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// Ticks per second, measured against the monotonic clock over `window`.
pub fn calibrate(window: Duration) -> f64 {
    let (t0, c0) = (Instant::now(), start());
    while t0.elapsed() < window {
        std::hint::spin_loop();
    }
    let (c1, t1) = (stop(), Instant::now());
    (c1 - c0) as f64 / (t1 - t0).as_secs_f64()
}

/// The counter's resolution in ticks: some TSCs advance in steps (AMD Zen: 100 MHz updates,
/// 26 ticks at 2.6 GHz, with an occasional 1-tick correction). Reads separated by irregular
/// waits land on multiples of the step; see [`step_of`].
pub fn step_ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: rdtsc has no memory effects.
    let read = || unsafe { core::arch::x86_64::_rdtsc() };
    #[cfg(not(target_arch = "x86_64"))]
    let read = fallback_ns;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut deltas = Vec::with_capacity(4096);
    for _ in 0..4096 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let t0 = read();
        for _ in 0..(x & 255) {
            std::hint::black_box(());
        }
        deltas.push(read().wrapping_sub(t0));
    }
    step_of(&deltas)
}

/// The largest step (up to 128 ticks: 26 at 2.6 GHz, 40 at 4 GHz) such that 90% of `deltas` lie within one tick of one of
/// its multiples; 1 for a counter without steps (irregular waits spread its deltas evenly).
pub fn step_of(deltas: &[u64]) -> u64 {
    let near = |s: u64| {
        deltas
            .iter()
            .filter(|&&d| matches!(d % s, 0 | 1) || d % s == s - 1)
            .count()
    };
    (4..=128)
        .rev()
        .find(|&s| near(s) * 10 >= deltas.len() * 9)
        .unwrap_or(1)
}

/// Converts a tick delta to nanoseconds.
#[inline(always)]
pub fn to_ns(ticks: u64, ns_per_tick: f64) -> u64 {
    (ticks as f64 * ns_per_tick).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_found_and_a_fine_counter_has_none() {
        // AMD Zen at 2.596 GHz: multiples of 26 with 1-tick corrections.
        let stepped: Vec<u64> = (0..4000u64)
            .map(|i| 26 * (1 + i % 7) - u64::from(i % 23 == 0))
            .collect();
        assert_eq!(step_of(&stepped), 26);
        let fine: Vec<u64> = (0..4000u64).map(|i| 30 + (i * 7919) % 600).collect();
        assert_eq!(step_of(&fine), 1);
    }

    #[test]
    fn counter_moves_forward_and_calibrates_plausibly() {
        let a = start();
        let b = stop();
        assert!(b >= a);
        let hz = calibrate(Duration::from_millis(20));
        assert!(hz > 1e8 && hz < 1e11, "implausible TSC frequency {hz}");
    }

    #[test]
    fn conversion_rounds() {
        assert_eq!(to_ns(3, 0.5), 2);
        assert_eq!(to_ns(1000, 1.0 / 2.5), 400);
    }
}
