//! Leader election through a `coordination.k8s.io/v1` Lease, as
//! client-go's leaderelection does it: the leader renews `spec.renewTime`
//! every `renew_every`; a replica takes the Lease over once it has not been
//! renewed for `spec.leaseDurationSeconds`. Every write carries the
//! resourceVersion it read, so of two replicas racing for an expired Lease
//! exactly one wins (the other gets 409 Conflict and follows).
//!
//! [`decide`] is the pure rule (time is an argument); [`LeaderElector`]
//! applies it to the API.

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use std::time::Duration;

/// Why a round of election could not be decided.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// The API answered with an error other than a lost race.
    #[error("lease {name}: {source}")]
    Api {
        /// The Lease.
        name: String,
        /// The error.
        source: kube::Error,
    },
    /// The configuration cannot work (the message names the field).
    #[error("leader election: {0}")]
    Config(String),
}

/// What a replica knows of the Lease.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseState {
    /// `spec.holderIdentity`.
    pub holder: Option<String>,
    /// `spec.renewTime`, Unix seconds.
    pub renewed_at: Option<f64>,
    /// `spec.leaseDurationSeconds`.
    pub duration_seconds: i32,
    /// `spec.leaseTransitions`.
    pub transitions: i32,
}

/// What a replica should do this round.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// No Lease yet: create it, holding it.
    Create,
    /// Ours: renew it.
    Renew,
    /// Expired (or released) under another holder: take it over.
    TakeOver,
    /// Another replica holds it until `until` (Unix seconds).
    Follow {
        /// The holder.
        holder: String,
        /// When it expires unless renewed.
        until: f64,
    },
}

/// The rule, for replica `me` at time `now` (Unix seconds).
pub fn decide(lease: Option<&LeaseState>, me: &str, now: f64) -> Decision {
    let Some(l) = lease else { return Decision::Create };
    match l.holder.as_deref().filter(|h| !h.is_empty()) {
        Some(h) if h == me => Decision::Renew,
        None => Decision::TakeOver,
        Some(h) => {
            let until = l.renewed_at.unwrap_or(f64::NEG_INFINITY) + f64::from(l.duration_seconds.max(1));
            if now > until {
                Decision::TakeOver
            } else {
                Decision::Follow { holder: h.to_string(), until }
            }
        }
    }
}

/// Where the Lease lives and how it is kept.
#[derive(Debug, Clone)]
pub struct LeaseConfig {
    /// Namespace of the Lease (`kube-system` by convention).
    pub namespace: String,
    /// Name of the Lease (`ringleader-manager`).
    pub name: String,
    /// This replica (host name and a random suffix, by convention).
    pub identity: String,
    /// `spec.leaseDurationSeconds`: how long a silent leader keeps it.
    pub duration: Duration,
    /// How often the leader renews and followers look again.
    pub retry: Duration,
}

impl LeaseConfig {
    /// Durations client-go uses by default: 15 s lease, 2 s retry.
    pub fn new(namespace: &str, name: &str, identity: &str) -> LeaseConfig {
        LeaseConfig {
            namespace: namespace.to_string(),
            name: name.to_string(),
            identity: identity.to_string(),
            duration: Duration::from_secs(15),
            retry: Duration::from_secs(2),
        }
    }

    fn validate(&self) -> Result<(), LeaseError> {
        if self.identity.is_empty() {
            return Err(LeaseError::Config("identity: required".into()));
        }
        if self.duration.as_secs() < 1 || self.duration.as_secs() > i32::MAX as u64 {
            return Err(LeaseError::Config(format!("duration: {:?} must be 1 s or more", self.duration)));
        }
        if self.retry.is_zero() || self.retry >= self.duration {
            return Err(LeaseError::Config(format!(
                "retry: {:?} must be above zero and below the duration {:?}",
                self.retry, self.duration
            )));
        }
        Ok(())
    }
}

fn unix(t: &MicroTime) -> f64 {
    t.0.as_microsecond() as f64 / 1e6
}

fn micro(now: f64) -> MicroTime {
    let micros = (now * 1e6).round() as i64;
    MicroTime(Timestamp::from_microsecond(micros).unwrap_or(Timestamp::UNIX_EPOCH))
}

fn state_of(lease: &Lease) -> LeaseState {
    let spec = lease.spec.clone().unwrap_or_default();
    LeaseState {
        holder: spec.holder_identity,
        renewed_at: spec.renew_time.as_ref().map(unix),
        duration_seconds: spec.lease_duration_seconds.unwrap_or(15),
        transitions: spec.lease_transitions.unwrap_or(0),
    }
}

/// Keeps (or waits for) the Lease for this replica.
pub struct LeaderElector {
    api: Api<Lease>,
    config: LeaseConfig,
}

impl LeaderElector {
    /// An elector over `client`'s cluster.
    pub fn new(client: kube::Client, config: LeaseConfig) -> Result<LeaderElector, LeaseError> {
        config.validate()?;
        Ok(LeaderElector { api: Api::namespaced(client, &config.namespace), config })
    }

    fn err(&self, source: kube::Error) -> LeaseError {
        LeaseError::Api { name: format!("{}/{}", self.config.namespace, self.config.name), source }
    }

    fn spec(&self, now: f64, acquired: Option<MicroTime>, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.config.identity.clone()),
            lease_duration_seconds: Some(self.config.duration.as_secs() as i32),
            acquire_time: acquired.or_else(|| Some(micro(now))),
            renew_time: Some(micro(now)),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }
    }

    /// One round at time `now`: whether this replica leads afterwards.
    /// A lost race (409 Conflict, 409 AlreadyExists) is not an error: the
    /// other replica leads.
    pub async fn round(&self, now: f64) -> Result<bool, LeaseError> {
        let current = self.api.get_opt(&self.config.name).await.map_err(|e| self.err(e))?;
        let decision = decide(current.as_ref().map(state_of).as_ref(), &self.config.identity, now);
        let written = match (decision, current) {
            (Decision::Follow { .. }, _) => return Ok(false),
            (Decision::Create, _) => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.config.name.clone()),
                        namespace: Some(self.config.namespace.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(self.spec(now, None, 0)),
                };
                self.api.create(&PostParams::default(), &lease).await.map(|_| ())
            }
            (Decision::Renew, Some(mut lease)) => {
                let old = lease.spec.clone().unwrap_or_default();
                lease.spec = Some(self.spec(now, old.acquire_time, old.lease_transitions.unwrap_or(0)));
                // The read resourceVersion stays in metadata: a replace is conditional on it.
                self.api.replace(&self.config.name, &PostParams::default(), &lease).await.map(|_| ())
            }
            (Decision::TakeOver, Some(mut lease)) => {
                let transitions = lease.spec.as_ref().and_then(|s| s.lease_transitions).unwrap_or(0);
                lease.spec = Some(self.spec(now, None, transitions.saturating_add(1)));
                self.api.replace(&self.config.name, &PostParams::default(), &lease).await.map(|_| ())
            }
            (Decision::Renew | Decision::TakeOver, None) => return Ok(false),
        };
        match written {
            Ok(()) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(self.err(e)),
        }
    }

    /// Gives the Lease up if this replica holds it, as client-go's
    /// `ReleaseOnCancel` does: no holder and a one-second duration, so the
    /// next replica leads at once instead of waiting out the Lease. Only
    /// for a replica that has stopped writing and stopped its rounds.
    pub async fn release(&self) -> Result<(), LeaseError> {
        let Some(mut lease) = self.api.get_opt(&self.config.name).await.map_err(|e| self.err(e))? else {
            return Ok(());
        };
        let mut spec = lease.spec.clone().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return Ok(());
        }
        spec.holder_identity = Some(String::new());
        spec.lease_duration_seconds = Some(1);
        lease.spec = Some(spec);
        match self.api.replace(&self.config.name, &PostParams::default(), &lease).await {
            Ok(_) => Ok(()),
            // Renewed or taken meanwhile: not ours to give up.
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
            Err(e) => Err(self.err(e)),
        }
    }

    /// Runs rounds every `retry` until `stop` turns true, telling `leading`
    /// whether this replica leads. An API error counts as not leading: a
    /// leader that cannot renew must stop acting before its Lease expires
    /// for the others.
    pub async fn run(
        &self,
        leading: tokio::sync::watch::Sender<bool>,
        mut stop: tokio::sync::watch::Receiver<bool>,
        clock: impl Fn() -> f64,
    ) {
        loop {
            let now = clock();
            let leads = match self.round(now).await {
                Ok(l) => l,
                Err(e) => {
                    tracing::warn!(error = %e, "leader election round failed");
                    false
                }
            };
            leading.send_if_modified(|was| std::mem::replace(was, leads) != leads);
            tokio::select! {
                _ = tokio::time::sleep(self.config.retry) => {}
                _ = stop.wait_for(|s| *s) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(by: &str, renewed_at: f64) -> LeaseState {
        LeaseState { holder: Some(by.into()), renewed_at: Some(renewed_at), duration_seconds: 15, transitions: 2 }
    }

    #[test]
    fn a_missing_lease_is_created_and_our_own_renewed() {
        assert_eq!(decide(None, "a", 100.0), Decision::Create);
        assert_eq!(decide(Some(&held("a", 0.0)), "a", 100.0), Decision::Renew, "ours even when late");
    }

    #[test]
    fn another_holder_is_followed_until_its_lease_runs_out() {
        assert_eq!(decide(Some(&held("b", 100.0)), "a", 110.0), Decision::Follow { holder: "b".into(), until: 115.0 });
        assert_eq!(decide(Some(&held("b", 100.0)), "a", 115.0), Decision::Follow { holder: "b".into(), until: 115.0 });
        assert_eq!(decide(Some(&held("b", 100.0)), "a", 115.001), Decision::TakeOver);
    }

    #[test]
    fn a_released_or_never_renewed_lease_is_taken() {
        let mut released = held("b", 100.0);
        released.holder = Some(String::new());
        assert_eq!(decide(Some(&released), "a", 101.0), Decision::TakeOver);
        let mut never = held("b", 0.0);
        never.renewed_at = None;
        assert_eq!(decide(Some(&never), "a", 0.0), Decision::TakeOver);
    }

    #[test]
    fn times_round_trip_at_microseconds() {
        let t = 1_764_000_000.123_456;
        assert!((unix(&micro(t)) - t).abs() < 1e-6);
    }

    #[test]
    fn configuration_is_checked() {
        let mut c = LeaseConfig::new("kube-system", "ringleader-manager", "a");
        assert!(c.validate().is_ok());
        c.retry = c.duration;
        assert!(c.validate().is_err_and(|e| e.to_string().contains("retry")));
        c.retry = Duration::from_secs(1);
        c.identity.clear();
        assert!(c.validate().is_err_and(|e| e.to_string().contains("identity")));
    }
}
