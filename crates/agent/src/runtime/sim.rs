//! The simulated runtime's clock arithmetic: a pod that started at `started`
//! (Unix seconds) with `duration` seconds ends at `started + duration`, also
//! after an agent restart (the pod is adopted, not restarted).

use std::time::Duration;

/// How long from `now` until a pod started at `started` with `duration` is
/// done (zero when already past).
pub fn remaining(now: f64, started: f64, duration: f64) -> Duration {
    let left = started + duration - now;
    if left.is_finite() && left > 0.0 {
        Duration::from_secs_f64(left.min(1e9))
    } else {
        Duration::ZERO
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remaining_time_never_goes_negative() {
        assert_eq!(remaining(10.0, 10.0, 2.5), Duration::from_millis(2500));
        assert_eq!(remaining(100.0, 10.0, 2.5), Duration::ZERO);
        assert_eq!(remaining(10.0, 9.0, 1.0), Duration::ZERO);
        assert_eq!(remaining(0.0, f64::NAN, 1.0), Duration::ZERO);
    }
}
