//! The storage of one series: a ring of recent samples at the sampling
//! interval and a ring of one-minute means, both of fixed capacity, so a
//! series never holds more than [`FINE_CAPACITY`] + [`COARSE_CAPACITY`]
//! points whatever its age. Times are unix seconds passed in by the caller;
//! nothing here reads a clock.

use std::collections::VecDeque;

/// Samples kept at the sampling interval: one hour at the default 10 s.
pub const FINE_CAPACITY: usize = 360;
/// Width of a downsampled point, seconds.
pub const COARSE_STEP: u32 = 60;
/// One-minute means kept: 24 hours.
pub const COARSE_CAPACITY: usize = 1440;

/// A bounded ring of `(unix seconds, value)` in increasing time.
#[derive(Debug, Clone)]
pub struct Ring {
    points: VecDeque<(u32, f32)>,
    capacity: usize,
    /// Whether a point was ever dropped for room.
    dropped: bool,
}

impl Ring {
    /// An empty ring holding at most `capacity` points (at least one).
    pub fn new(capacity: usize) -> Ring {
        Ring { points: VecDeque::new(), capacity: capacity.max(1), dropped: false }
    }

    /// Appends a point, dropping the oldest once full. A point not later
    /// than the last one replaces it: times stay strictly increasing even
    /// if the clock steps back.
    pub fn push(&mut self, t: u32, v: f32) {
        if let Some(last) = self.points.back_mut() {
            if t <= last.0 {
                last.1 = v;
                return;
            }
        }
        if self.points.len() >= self.capacity {
            self.points.pop_front();
            self.dropped = true;
        }
        self.points.push_back((t, v));
    }

    /// Time of the oldest point.
    pub fn oldest(&self) -> Option<u32> {
        self.points.front().map(|p| p.0)
    }

    /// Points at or after `since`, oldest first.
    pub fn since(&self, since: u32) -> impl Iterator<Item = (u32, f32)> + '_ {
        // Points are sorted: skip the older ones by binary search.
        let start = self.points.partition_point(|p| p.0 < since);
        self.points.range(start..).copied()
    }

    /// Number of points held.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Whether it holds no point.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }
}

/// The minute being summed before it becomes one coarse point.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Bucket {
    start: u32,
    sum: f64,
    count: u32,
}

impl Bucket {
    fn mean(&self) -> f32 {
        (self.sum / f64::from(self.count.max(1))) as f32
    }
}

/// Which ring a read was answered from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// The sampling interval.
    Fine,
    /// [`COARSE_STEP`] means.
    Coarse,
}

/// One series' two rings.
#[derive(Debug, Clone)]
pub struct Tiers {
    fine: Ring,
    coarse: Ring,
    bucket: Option<Bucket>,
}

impl Default for Tiers {
    fn default() -> Self {
        Tiers::new()
    }
}

impl Tiers {
    /// Empty rings of the standard capacities.
    pub fn new() -> Tiers {
        Tiers::with_capacities(FINE_CAPACITY, COARSE_CAPACITY)
    }

    /// Empty rings of the given capacities (tests use small ones).
    pub fn with_capacities(fine: usize, coarse: usize) -> Tiers {
        Tiers { fine: Ring::new(fine), coarse: Ring::new(coarse), bucket: None }
    }

    /// Records a sample taken at `t`. Non-finite values are not recorded
    /// (a gap, not a point).
    pub fn push(&mut self, t: u32, v: f64) {
        if !v.is_finite() {
            return;
        }
        self.fine.push(t, v as f32);
        let start = t - t % COARSE_STEP;
        match &mut self.bucket {
            Some(b) if b.start == start => {
                b.sum += v;
                b.count += 1;
            }
            // An earlier minute than the one open: the clock stepped back;
            // the fine ring took the sample, the coarse one keeps its order.
            Some(b) if start < b.start => {}
            open => {
                if let Some(done) = open.take() {
                    self.coarse.push(done.start, done.mean());
                }
                *open = Some(Bucket { start, sum: v, count: 1 });
            }
        }
    }

    /// Points since `since`: from the fine ring when it reaches back that
    /// far (or has dropped nothing yet), else the minute means, the minute
    /// still being summed included as the last point.
    pub fn read(&self, since: u32) -> (Resolution, Vec<(u32, f32)>) {
        let fine_covers = !self.fine.dropped || self.fine.oldest().is_some_and(|f| f <= since);
        if fine_covers {
            return (Resolution::Fine, self.fine.since(since).collect());
        }
        let mut points: Vec<(u32, f32)> = self.coarse.since(since).collect();
        if let Some(b) = self.bucket.filter(|b| b.start >= since) {
            points.push((b.start, b.mean()));
        }
        (Resolution::Coarse, points)
    }

    /// The newest sample.
    pub fn last(&self) -> Option<(u32, f32)> {
        self.fine.points.back().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_ring_drops_its_oldest_point() {
        let mut r = Ring::new(3);
        for t in 1..=5 {
            r.push(t * 10, t as f32);
        }
        assert_eq!(r.len(), 3);
        assert_eq!(r.since(0).collect::<Vec<_>>(), vec![(30, 3.0), (40, 4.0), (50, 5.0)]);
        assert_eq!(r.since(41).collect::<Vec<_>>(), vec![(50, 5.0)]);
        assert_eq!(r.since(51).count(), 0);
    }

    #[test]
    fn a_point_not_later_than_the_last_replaces_it() {
        let mut r = Ring::new(4);
        r.push(10, 1.0);
        r.push(20, 2.0);
        r.push(20, 3.0);
        r.push(15, 4.0);
        assert_eq!(r.since(0).collect::<Vec<_>>(), vec![(10, 1.0), (20, 4.0)]);
        assert_eq!(Ring::new(0).capacity, 1, "a zero capacity still holds the last point");
    }

    #[test]
    fn minutes_are_averaged_into_the_coarse_ring() {
        let mut t = Tiers::with_capacities(4, 10);
        // Six samples per minute for three minutes: values 0..18.
        for i in 0..18u32 {
            t.push(600 + i * 10, f64::from(i));
        }
        // The fine ring holds the last four samples only.
        let (res, fine) = t.read(740);
        assert_eq!(res, Resolution::Fine);
        assert_eq!(fine, vec![(740, 14.0), (750, 15.0), (760, 16.0), (770, 17.0)]);
        // Asking further back than the fine ring reaches: minute means,
        // the open minute last.
        let (res, coarse) = t.read(0);
        assert_eq!(res, Resolution::Coarse);
        assert_eq!(coarse, vec![(600, 2.5), (660, 8.5), (720, 14.5)]);
        assert_eq!(t.read(650).1, vec![(660, 8.5), (720, 14.5)]);
        assert_eq!(t.last(), Some((770, 17.0)));
    }

    #[test]
    fn a_young_series_is_read_at_full_resolution() {
        let mut t = Tiers::with_capacities(100, 10);
        for i in 0..13u32 {
            t.push(1000 + i * 10, 1.0);
        }
        // Older than anything held, but the fine ring holds it all.
        let (res, points) = t.read(0);
        assert_eq!(res, Resolution::Fine);
        assert_eq!(points.len(), 13);
    }

    #[test]
    fn the_coarse_ring_is_bounded_too() {
        let mut t = Tiers::with_capacities(2, 3);
        for minute in 0..10u32 {
            t.push(minute * COARSE_STEP, f64::from(minute));
        }
        let (_, points) = t.read(0);
        // Three closed minutes kept (6, 7, 8), then the open one (9).
        assert_eq!(points, vec![(360, 6.0), (420, 7.0), (480, 8.0), (540, 9.0)]);
    }

    #[test]
    fn non_finite_values_and_backward_clocks_leave_no_bad_points() {
        let mut t = Tiers::with_capacities(10, 10);
        t.push(120, 1.0);
        t.push(130, f64::NAN);
        t.push(140, f64::INFINITY);
        t.push(60, 5.0);
        t.push(180, 3.0);
        let (_, fine) = t.read(0);
        assert_eq!(fine, vec![(120, 5.0), (180, 3.0)]);
        assert!(fine.iter().all(|(_, v)| v.is_finite()));
        assert_eq!(t.coarse.since(0).collect::<Vec<_>>(), vec![(120, 1.0)]);
    }
}
