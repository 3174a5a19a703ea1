//! Leader election against a real kube-apiserver (`scripts/k8s-env.sh`):
//! of two replicas exactly one leads; the other follows while the leader
//! renews, and takes the Lease over once the leader has been silent for the
//! lease duration; a replica racing with a stale read loses (409) instead
//! of taking a Lease another holds. SKIPPED without the cached binaries,
//! unless `RINGLEADER_REQUIRE_K8S=1`.

mod k8s_env;

use k8s_env::Env;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use ringleader_kube::{LeaderElector, LeaseConfig};
use std::time::Duration;

fn config(identity: &str) -> LeaseConfig {
    let mut c = LeaseConfig::new("kube-system", "ringleader-manager", identity);
    c.duration = Duration::from_secs(2);
    c.retry = Duration::from_millis(500);
    c
}

#[test]
fn one_replica_leads_and_another_takes_over_when_it_falls_silent() {
    let Some(env) = Env::start("one_replica_leads_and_another_takes_over_when_it_falls_silent") else { return };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let client = env.client().await.expect("kube client");
        let a = LeaderElector::new(client.clone(), config("replica-a")).expect("a");
        let b = LeaderElector::new(client.clone(), config("replica-b")).expect("b");
        // Times are the test's own clock: the rule reads renewTime against it.
        let t0 = 1_000_000.0;
        assert!(a.round(t0).await.expect("a creates"), "the first replica creates and holds the Lease");
        assert!(!b.round(t0 + 0.5).await.expect("b follows"), "the Lease is held");
        assert!(a.round(t0 + 1.0).await.expect("a renews"));
        assert!(!b.round(t0 + 2.9).await.expect("b follows"), "renewed at t0+1, held until t0+3");
        // a falls silent: after the duration b takes over, and a, back, follows.
        assert!(b.round(t0 + 3.1).await.expect("b takes over"), "expired: taken over");
        assert!(!a.round(t0 + 3.2).await.expect("a follows"), "a's old lease is b's now");
        let api: Api<Lease> = Api::namespaced(client.clone(), "kube-system");
        let lease = api.get("ringleader-manager").await.expect("lease");
        let spec = lease.spec.expect("spec");
        assert_eq!(spec.holder_identity.as_deref(), Some("replica-b"));
        assert_eq!(spec.lease_transitions, Some(1));
        assert_eq!(spec.lease_duration_seconds, Some(2));

        // Two replicas that both see it expired race: the apiserver's
        // resourceVersion check lets exactly one win.
        let c = LeaderElector::new(client.clone(), config("replica-c")).expect("c");
        let (won_a, won_c) = tokio::join!(a.round(t0 + 10.0), c.round(t0 + 10.0));
        let wins = [won_a.expect("a races"), won_c.expect("c races")].iter().filter(|w| **w).count();
        assert_eq!(wins, 1, "exactly one replica takes an expired Lease");
    });
}
