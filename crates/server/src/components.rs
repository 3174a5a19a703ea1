//! The registry of components' liveness (the manager's loop, in `up`),
//! shared in memory between the server and what it reports on: a heartbeat
//! costs a lock, not a store write and a watch event to every client as a
//! Lease object would. `/livez` and `/readyz` ([`crate::health`]) read it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Components' liveness, shared between the server and what it reports on.
#[derive(Clone, Default)]
pub struct Health {
    inner: Arc<Mutex<Registry>>,
}

#[derive(Default)]
struct Registry {
    components: BTreeMap<String, Component>,
    /// Node heartbeat timeout; `None`: no `agents` check.
    agents: Option<Duration>,
}

struct Component {
    stale_after: Duration,
    registered: Instant,
    last_beat: Option<Instant>,
    stopped: Option<String>,
}

/// One component's handle on the registry.
#[derive(Clone)]
pub struct ComponentHealth {
    health: Health,
    name: String,
}

impl ComponentHealth {
    /// The component is alive and working.
    pub fn beat(&self) {
        if let Some(c) = self.health.lock().components.get_mut(&self.name) {
            c.last_beat = Some(Instant::now());
        }
    }

    /// The component ended (and will not beat again); `why` says how.
    pub fn stopped(&self, why: impl Into<String>) {
        if let Some(c) = self.health.lock().components.get_mut(&self.name) {
            c.stopped = Some(why.into());
        }
    }
}

impl Health {
    /// An empty registry: only `ping` and `store` are checked.
    pub fn new() -> Health {
        Health::default()
    }

    /// Registers a component that fails its checks when it has not beaten
    /// for `stale_after` (before its first beat it is alive for that long
    /// after registration, and not ready).
    pub fn component(&self, name: &str, stale_after: Duration) -> ComponentHealth {
        let c = Component { stale_after, registered: Instant::now(), last_beat: None, stopped: None };
        self.lock().components.insert(name.to_string(), c);
        ComponentHealth { health: self.clone(), name: name.to_string() }
    }

    /// Marks the registered component `name` stopped (others are ignored).
    pub fn component_stopped(&self, name: &str, why: &str) {
        if let Some(c) = self.lock().components.get_mut(name) {
            c.stopped = Some(why.to_string());
        }
    }

    /// Adds the `agents` readiness check: a node is stale when its last
    /// heartbeat is older than `timeout` (the manager's NotReady timeout).
    pub fn with_agents(self, timeout: Duration) -> Health {
        self.lock().agents = Some(timeout);
        self
    }

    /// Each registered component's check at `now` (readiness when
    /// `ready`: not ready before its first beat), and the `agents` timeout.
    #[allow(clippy::type_complexity)]
    pub(crate) fn outcomes(
        &self,
        ready: bool,
        now: Instant,
    ) -> (Vec<(String, Result<Option<String>, String>)>, Option<Duration>) {
        let registry = self.lock();
        let components =
            registry.components.iter().map(|(name, c)| (name.clone(), component_check(c, ready, now))).collect();
        (components, registry.agents)
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        // A panic elsewhere while holding the lock leaves plain data behind.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn component_check(c: &Component, ready: bool, now: Instant) -> Result<Option<String>, String> {
    if let Some(why) = &c.stopped {
        return Err(format!("stopped: {why}"));
    }
    let limit = c.stale_after.as_secs_f64();
    match c.last_beat {
        Some(beat) if now.duration_since(beat) > c.stale_after => {
            Err(format!("no heartbeat for {:.0} s (limit {limit:.0} s)", now.duration_since(beat).as_secs_f64()))
        }
        Some(_) => Ok(None),
        // Starting: alive for a while, not ready until its first beat.
        None if ready => Err("starting: no heartbeat yet".into()),
        None if now.duration_since(c.registered) > c.stale_after => {
            Err(format!("no heartbeat since it started {limit:.0} s ago"))
        }
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_component_is_alive_while_starting_but_ready_only_after_a_beat() {
        let now = Instant::now();
        let c = Component { stale_after: Duration::from_secs(30), registered: now, last_beat: None, stopped: None };
        assert_eq!(component_check(&c, false, now), Ok(None));
        assert_eq!(component_check(&c, true, now), Err("starting: no heartbeat yet".into()));
        let beaten = Component { last_beat: Some(now), ..c };
        assert_eq!(component_check(&beaten, true, now + Duration::from_secs(1)), Ok(None));
        assert_eq!(
            component_check(&beaten, false, now + Duration::from_secs(45)),
            Err("no heartbeat for 45 s (limit 30 s)".into())
        );
        let stopped = Component { stopped: Some("store: disk full".into()), ..beaten };
        assert_eq!(component_check(&stopped, false, now), Err("stopped: store: disk full".into()));
    }
}
