//! [`Clock`]: the recorder's time source, read once per event.
//!
//! On x86-64 with an invariant time-stamp counter (one that ticks at a constant rate in every
//! power state, which CPUID reports), a reading is `rdtsc` minus the counter at the
//! recorder's start: raw ticks, a few nanoseconds to read. Elsewhere it is nanoseconds since
//! the start from `Instant`. Ticks become nanoseconds only at export ([`Clock::scale`]), by
//! the ratio of `Instant`'s elapsed time to the ticks elapsed since the start, so the counter
//! never needs a calibration pause.

use std::time::Instant;

/// A recorder's clock.
pub(crate) struct Clock {
    /// Time zero, and the reference the counter's rate is measured against.
    start: Instant,
    /// The time-stamp counter at `start`, if it is used.
    tsc0: Option<u64>,
}

/// The factor that turns [`Clock::ticks`] into nanoseconds, measured at one moment.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scale(pub(super) f64);

impl Scale {
    /// Nanoseconds since the clock's start for a reading of `ticks`.
    #[inline]
    pub(crate) fn nanos(self, ticks: u64) -> u64 {
        // `as` saturates: a reading beyond `u64::MAX` nanoseconds cannot occur.
        (ticks as f64 * self.0) as u64
    }
}

impl Clock {
    /// A clock whose zero is now.
    pub(crate) fn new() -> Clock {
        let tsc0 = tsc::invariant().then(tsc::read);
        Clock {
            start: Instant::now(),
            tsc0,
        }
    }

    /// Ticks since the clock's start.
    #[inline]
    pub(crate) fn ticks(&self) -> u64 {
        match self.tsc0 {
            Some(t0) => tsc::read().wrapping_sub(t0),
            None => nanos_since(self.start),
        }
    }

    /// The current factor from ticks to nanoseconds: the nanoseconds `Instant` counted since
    /// the start over the ticks counted meanwhile (1 when the ticks are nanoseconds, or when
    /// no tick has passed yet).
    pub(crate) fn scale(&self) -> Scale {
        match self.tsc0 {
            Some(t0) => {
                let ticks = tsc::read().wrapping_sub(t0);
                let nanos = nanos_since(self.start);
                if ticks == 0 || nanos == 0 {
                    Scale(1.0)
                } else {
                    Scale(nanos as f64 / ticks as f64)
                }
            }
            None => Scale(1.0),
        }
    }
}

/// Nanoseconds since `start`, saturating.
#[inline]
fn nanos_since(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// The time-stamp counter (x86-64), or its absence (elsewhere, and under Miri and loom).
#[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
mod tsc {
    use core::arch::x86_64::{__cpuid, _rdtsc};

    /// Whether the counter is invariant: CPUID leaf 0x8000_0007, bit 8 of EDX.
    pub(super) fn invariant() -> bool {
        // Leaf 0x8000_0000 gives the highest extended leaf; every x86-64 CPU has it.
        let max = __cpuid(0x8000_0000).eax;
        max >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0
    }

    /// The counter now.
    #[inline]
    pub(super) fn read() -> u64 {
        // SAFETY: `rdtsc` exists on every x86-64 CPU and only reads a register.
        unsafe { _rdtsc() }
    }
}

/// No counter: [`Clock`] uses `Instant`.
#[cfg(not(all(target_arch = "x86_64", not(miri), not(loom))))]
mod tsc {
    pub(super) fn invariant() -> bool {
        false
    }

    pub(super) fn read() -> u64 {
        0
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Clock;

    #[test]
    fn readings_grow_and_scale_to_elapsed_nanoseconds() {
        let c = Clock::new();
        let a = c.ticks();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = c.ticks();
        assert!(b > a);
        let ns = c.scale().nanos(b - a);
        // At least the sleep; at most a generous bound for a busy machine.
        assert!((20_000_000..2_000_000_000).contains(&ns), "{ns} ns");
    }
}
