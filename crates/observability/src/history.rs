//! The embedded history behind charts and `ringleader top`: per node, pod,
//! job and queue, a few figures sampled on a fixed interval from the
//! metrics' store aggregate (never from a list of the store), each kept in
//! two fixed rings ([`ring`]): the last [`ring::FINE_CAPACITY`] samples
//! (1 h at the default 10 s) and [`ring::COARSE_CAPACITY`] one-minute means
//! (24 h). The number of series is capped as well
//! ([`Config::max_series`]): when a new series finds no room, the series
//! written longest ago goes (those of deleted objects first, as they are
//! no longer written); a series not written for 24 h is dropped. So the
//! memory is bounded (about 14 KiB a series at most) whatever the cluster
//! does. Served read-only by [`http`] at
//! `/apis/ringleader.io/v1alpha1/history`.

pub mod names;
pub mod ring;

use ring::{Resolution, Tiers};
use std::collections::BTreeMap;

/// Seconds a series is kept after its last sample.
pub const RETAIN_SECS: u32 = 86_400;
/// Shortest and longest sampling interval, seconds: at most one sample a
/// second (points are whole seconds), at least one a minute (the coarse
/// ring's step).
pub const INTERVAL_RANGE: std::ops::RangeInclusive<u32> = 1..=60;

/// How the history samples and how much it keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Seconds between samples, within [`INTERVAL_RANGE`].
    pub interval_secs: u32,
    /// Most series kept at once.
    pub max_series: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config { interval_secs: 10, max_series: 4000 }
    }
}

impl Config {
    /// The configuration, or an error naming the bad field and what is allowed.
    pub fn new(interval_secs: u32, max_series: usize) -> Result<Config, String> {
        if !INTERVAL_RANGE.contains(&interval_secs) {
            return Err(format!(
                "history interval: {interval_secs} s is out of range; allowed {} to {} seconds",
                INTERVAL_RANGE.start(),
                INTERVAL_RANGE.end()
            ));
        }
        if max_series == 0 {
            return Err("history series: 0 keeps no history; allowed at least 1".to_string());
        }
        Ok(Config { interval_secs, max_series })
    }
}

#[derive(Debug, Clone)]
struct Entry {
    tiers: Tiers,
    /// Time of the last sample.
    touched: u32,
    /// Creation order, to break ties between series touched together.
    seq: u64,
}

/// Every series, bounded in number and in points.
#[derive(Debug, Clone)]
pub struct History {
    config: Config,
    series: BTreeMap<String, Entry>,
    next_seq: u64,
    /// When the next sample is due (unix seconds).
    next_due: u32,
    /// New series turned away because one round alone had more than the cap.
    dropped: u64,
}

impl History {
    /// An empty history.
    pub fn new(config: Config) -> History {
        History { config, series: BTreeMap::new(), next_seq: 0, next_due: 0, dropped: 0 }
    }

    /// The configuration.
    pub fn config(&self) -> Config {
        self.config
    }

    /// `Some(t)` when a sample is due at `now` (unix seconds): `t` is the
    /// sample's time, and the next one is due one interval after the
    /// interval boundary `t` falls in.
    pub fn due(&mut self, now: f64) -> Option<u32> {
        if !now.is_finite() || now < 0.0 || now >= f64::from(u32::MAX) {
            return None;
        }
        let t = now as u32;
        if t < self.next_due {
            return None;
        }
        let interval = self.config.interval_secs.max(1);
        self.next_due = (t / interval).saturating_add(1).saturating_mul(interval);
        Some(t)
    }

    /// Records one round of samples taken at `t`.
    pub fn record(&mut self, t: u32, figures: impl IntoIterator<Item = (String, f64)>) {
        self.series.retain(|_, e| e.touched.saturating_add(RETAIN_SECS) >= t);
        let mut fresh: Vec<(String, f64)> = Vec::new();
        for (name, v) in figures {
            match self.series.get_mut(&name) {
                Some(e) => {
                    e.tiers.push(t, v);
                    e.touched = t;
                }
                None => fresh.push((name, v)),
            }
        }
        fresh.sort_by(|a, b| a.0.cmp(&b.0));
        fresh.dedup_by(|later, first| {
            let same = later.0 == first.0;
            if same {
                first.1 = later.1;
            }
            same
        });
        let max = self.config.max_series.max(1);
        let wanted = (self.series.len() + fresh.len()).saturating_sub(max);
        if wanted > 0 {
            self.evict(t, wanted);
        }
        for (name, v) in fresh {
            if self.series.len() >= max {
                self.dropped += 1;
                continue;
            }
            let mut tiers = Tiers::new();
            tiers.push(t, v);
            self.series.insert(name, Entry { tiers, touched: t, seq: self.next_seq });
            self.next_seq += 1;
        }
    }

    /// Removes up to `n` series not written at `t`, the longest unwritten first.
    fn evict(&mut self, t: u32, n: usize) {
        let mut idle: Vec<(u32, u64, String)> = self
            .series
            .iter()
            .filter(|(_, e)| e.touched < t)
            .map(|(name, e)| (e.touched, e.seq, name.clone()))
            .collect();
        idle.sort();
        for (_, _, name) in idle.into_iter().take(n) {
            self.series.remove(&name);
        }
    }

    /// A series' points since `since`, or `None` when it is not held.
    pub fn read(&self, name: &str, since: u32) -> Option<(Resolution, Vec<(u32, f32)>)> {
        self.series.get(name).map(|e| e.tiers.read(since))
    }

    /// Names of the series held that start with `prefix`, in order.
    pub fn names_with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.series.range(prefix.to_string()..).map(|(k, _)| k.as_str()).take_while(move |k| k.starts_with(prefix))
    }

    /// Series held.
    pub fn len(&self) -> usize {
        self.series.len()
    }

    /// Whether no series is held.
    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }

    /// New series turned away so far for want of room.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(names: &[&str], v: f64) -> Vec<(String, f64)> {
        names.iter().map(|n| (n.to_string(), v)).collect()
    }

    #[test]
    fn samples_fall_due_once_per_interval() {
        let mut h = History::new(Config { interval_secs: 10, max_series: 10 });
        assert_eq!(h.due(1003.5), Some(1003));
        assert_eq!(h.due(1009.9), None);
        assert_eq!(h.due(1010.0), Some(1010));
        // A stall skips the missed rounds rather than catching up.
        assert_eq!(h.due(1047.0), Some(1047));
        assert_eq!(h.due(1049.0), None);
        assert_eq!(h.due(f64::NAN), None);
        assert_eq!(h.due(-1.0), None);
    }

    #[test]
    fn the_series_written_longest_ago_makes_room() {
        let mut h = History::new(Config { interval_secs: 10, max_series: 3 });
        h.record(10, figures(&["pod/a/gone/cpu", "pod/a/p1/cpu", "pod/a/p2/cpu"], 1.0));
        // gone is deleted: not written at 20.
        h.record(20, figures(&["pod/a/p1/cpu", "pod/a/p2/cpu"], 2.0));
        h.record(30, figures(&["pod/a/p1/cpu", "pod/a/p2/cpu", "pod/a/p3/cpu"], 3.0));
        assert_eq!(h.len(), 3);
        assert!(h.read("pod/a/gone/cpu", 0).is_none());
        assert_eq!(h.read("pod/a/p3/cpu", 0).map(|r| r.1), Some(vec![(30, 3.0)]));
        assert_eq!(h.read("pod/a/p1/cpu", 0).map(|r| r.1.len()), Some(3));
        // A round with more new series than the cap keeps what fits and
        // never evicts what it just wrote.
        h.record(40, figures(&["n/1", "n/2", "n/3", "n/4", "n/5"], 1.0));
        assert_eq!(h.len(), 3);
        assert_eq!(h.dropped(), 2);
        assert_eq!(h.names_with_prefix("n/").collect::<Vec<_>>(), vec!["n/1", "n/2", "n/3"]);
    }

    #[test]
    fn series_unwritten_for_a_day_expire() {
        let mut h = History::new(Config { interval_secs: 10, max_series: 10 });
        h.record(100, figures(&["node/n1/cpu", "node/n2/cpu"], 1.0));
        h.record(100 + RETAIN_SECS, figures(&["node/n1/cpu"], 1.0));
        assert_eq!(h.names_with_prefix("node/").count(), 2, "kept for a whole day");
        h.record(101 + RETAIN_SECS, figures(&["node/n1/cpu"], 1.0));
        assert_eq!(h.names_with_prefix("node/").collect::<Vec<_>>(), vec!["node/n1/cpu"]);
    }

    #[test]
    fn prefixes_select_in_order_and_configs_are_checked() {
        let mut h = History::new(Config::default());
        h.record(1, figures(&["pod/b/x/cpu", "pod/a/y/cpu", "pod/a/x/memory", "pod/a/x/cpu", "pod/a/x/cpu"], 1.0));
        assert_eq!(
            h.names_with_prefix("pod/a/").collect::<Vec<_>>(),
            vec!["pod/a/x/cpu", "pod/a/x/memory", "pod/a/y/cpu"]
        );
        assert_eq!(h.names_with_prefix("").count(), 4);
        assert!(Config::new(0, 10).err().is_some_and(|e| e.contains("interval") && e.contains("1 to 60")));
        assert!(Config::new(61, 10).is_err());
        assert!(Config::new(10, 0).err().is_some_and(|e| e.contains("series")));
        assert_eq!(Config::new(1, 5), Ok(Config { interval_secs: 1, max_series: 5 }));
    }
}
