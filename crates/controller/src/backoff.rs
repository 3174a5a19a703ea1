//! Restart back-off of a replica, as the kubelet's CrashLoopBackOff: each
//! restart of the same slot after a failure waits 10 s, then 20 s, 40 s …
//! up to 5 min; a failure 10 min or more after the previous restart (the
//! replica ran that long without failing) starts again at 10 s. Pure
//! arithmetic on seconds: the caller passes `now`.
//!
//! The state lives in the job's status (`status.ringleader.backoff`, one
//! entry per slot), so a restarted manager keeps counting where it was.

use serde::{Deserialize, Serialize};

/// Seconds of the first restart delay (kubelet: 10 s).
pub const DEFAULT_BASE_SECS: u64 = 10;
/// Longest restart delay (kubelet: 5 min).
pub const DEFAULT_MAX_SECS: u64 = 300;
/// A failure this long after the previous restart starts over at the base
/// delay (kubelet forgets a back-off after twice its maximum: 10 min).
pub const DEFAULT_RESET_AFTER_SECS: u64 = 600;

/// Back-off settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackoffConfig {
    /// First delay; 0 turns back-off off (restarts at once).
    pub base_secs: u64,
    /// Cap of the doubling.
    pub max_secs: u64,
    /// Quiet time after which the delay starts again from `base_secs`.
    pub reset_after_secs: u64,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        BackoffConfig {
            base_secs: DEFAULT_BASE_SECS,
            max_secs: DEFAULT_MAX_SECS,
            reset_after_secs: DEFAULT_RESET_AFTER_SECS,
        }
    }
}

/// The back-off of one slot: the delay of its last restart and when that
/// restart may happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotBackoff {
    /// Seconds the last restart waited.
    pub delay: u64,
    /// When the replacement may be created (seconds since the epoch).
    pub until: u64,
    /// Restarts after failures counted in this back-off run.
    pub restarts: u32,
}

impl SlotBackoff {
    /// Whether the slot is still waiting at `now`.
    pub fn waiting(&self, now: u64) -> bool {
        now < self.until
    }
}

impl BackoffConfig {
    /// The back-off of a slot whose replica failed at `now`, given the
    /// slot's previous one; `None` when back-off is off.
    pub fn next(&self, previous: Option<&SlotBackoff>, now: u64) -> Option<SlotBackoff> {
        if self.base_secs == 0 {
            return None;
        }
        let max = self.max_secs.max(self.base_secs);
        let (delay, restarts) = match previous {
            Some(p) if now.saturating_sub(p.until) < self.reset_after_secs => {
                (p.delay.saturating_mul(2).clamp(self.base_secs, max), p.restarts.saturating_add(1))
            }
            _ => (self.base_secs, 1),
        };
        Some(SlotBackoff { delay, until: now.saturating_add(delay), restarts })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_from_ten_seconds_to_five_minutes() {
        let cfg = BackoffConfig::default();
        let mut now = 1_000;
        let mut prev: Option<SlotBackoff> = None;
        let mut delays = Vec::new();
        for _ in 0..8 {
            let b = cfg.next(prev.as_ref(), now).expect("on");
            delays.push(b.delay);
            assert_eq!(b.until, now + b.delay);
            // The replacement starts when allowed and crashes 3 s later.
            now = b.until + 3;
            prev = Some(b);
        }
        assert_eq!(delays, [10, 20, 40, 80, 160, 300, 300, 300]);
        assert_eq!(prev.map(|p| p.restarts), Some(8));
    }

    #[test]
    fn ten_minutes_without_failing_starts_over() {
        let cfg = BackoffConfig::default();
        let b = cfg.next(None, 0).expect("on");
        let b = cfg.next(Some(&b), b.until + 5).expect("on");
        assert_eq!(b.delay, 20);
        // Ran 599 s since its restart: still counting.
        let c = cfg.next(Some(&b), b.until + 599).expect("on");
        assert_eq!(c.delay, 40);
        // Ran 600 s: forgiven.
        let d = cfg.next(Some(&b), b.until + 600).expect("on");
        assert_eq!((d.delay, d.restarts), (10, 1));
    }

    #[test]
    fn scaled_and_disabled_settings() {
        let cfg = BackoffConfig { base_secs: 1, max_secs: 4, reset_after_secs: 60 };
        let mut prev = None;
        let delays: Vec<u64> = (0..5)
            .map(|i| {
                let b = cfg.next(prev.as_ref(), i * 10).expect("on");
                prev = Some(b);
                b.delay
            })
            .collect();
        assert_eq!(delays, [1, 2, 4, 4, 4]);
        assert_eq!(BackoffConfig { base_secs: 0, ..cfg }.next(None, 5), None);
        // A cap below the base never shortens the first delay.
        let odd = BackoffConfig { base_secs: 30, max_secs: 5, reset_after_secs: 60 };
        assert_eq!(odd.next(None, 0).map(|b| b.delay), Some(30));
        assert!(odd.next(None, 0).is_some_and(|b| b.waiting(29) && !b.waiting(30)));
    }
}
