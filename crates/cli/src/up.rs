//! `ringleader up`: the whole control plane in one process ([`crate::plane`])
//! until Ctrl-C or SIGTERM; then it stops in order, pods running on under
//! their shims for the next `up` to adopt.

use crate::plane::{start, UpArgs};
use crate::support::stop_signal;
use anyhow::{bail, Result};
use ringleader_client::Token;
use std::time::Duration;

/// How long the rest of the plane gets to stop once a component died.
const STOP_AFTER_DEATH: Duration = Duration::from_secs(30);
/// How long the plane gets to stop after SIGTERM or Ctrl-C before `up`
/// exits anyway: a component stuck retrying a write (a full disk) must not
/// keep it running. Under the 10 s a supervisor commonly waits before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

pub fn run(args: UpArgs) -> Result<()> {
    let rt = tokio::runtime::Runtime::new()?;
    let result = serve(&rt, &args);
    // A blocking call still waiting (a store write retried on a full disk)
    // must not hold the exit: the runtime's drop would wait for it.
    rt.shutdown_timeout(Duration::from_secs(1));
    result
}

fn serve(rt: &tokio::runtime::Runtime, args: &UpArgs) -> Result<()> {
    rt.block_on(async {
        let mut plane = start(args).await?;
        if args.no_agent {
            println!("ringleader up: API at {} (control plane only: nodes join with `ringleader agent`)", plane.url);
        } else {
            println!("ringleader up: API at {} ({} nodes)", plane.url, plane.nodes.len());
        }
        for n in &plane.nodes {
            println!("  node {:<12} {:<16} {}", n.name, n.profile, n.address);
        }
        println!("data in {}; token in {}", args.data_dir.display(), Token::path(&args.data_dir).display());
        let kubeconfig = std::path::absolute(&plane.kubeconfig).unwrap_or_else(|_| plane.kubeconfig.clone());
        println!("kubectl: export KUBECONFIG={} && kubectl get pods", kubeconfig.display());
        println!("try: ringleader apply -f examples/demo/pytorchjob-h100.yaml && ringleader get pods -w");
        let died = tokio::select! {
            signal = stop_signal() => {
                signal?;
                // Pods run on under their shims, as containers outlive a
                // restarted kubelet: the next `up` on the data dir adopts them.
                tracing::info!("stop signal received: stopping the plane");
                None
            }
            death = plane.first_death() => Some(death),
        };
        let Some((name, why)) = died else {
            return match tokio::time::timeout(STOP_GRACE, plane.stop()).await {
                Ok(r) => r,
                Err(_) => {
                    eprintln!(
                        "ringleader up: the plane did not stop within {} s of the stop signal; exiting anyway",
                        STOP_GRACE.as_secs()
                    );
                    Ok(())
                }
            };
        };
        // Serving on without it would be a plane that accepts jobs and never
        // runs them: stop the rest (pods run on for the next `up`) and fail.
        eprintln!("ringleader up: the {name} stopped ({why}); stopping the plane");
        if tokio::time::timeout(STOP_AFTER_DEATH, plane.stop()).await.is_err() {
            eprintln!("ringleader up: the other components did not stop within {} s", STOP_AFTER_DEATH.as_secs());
        }
        bail!("the {name} stopped: {why}")
    })
}
