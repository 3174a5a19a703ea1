//! How an agent learns its containers ended: one `ListContainers` a second
//! for all of them (kubelet's PLEG relist), not a `ContainerStatus` poll per
//! container — at a thousand containers those polls were two thousand calls
//! a second, and starts queued behind them. Each container's waiter wakes
//! on every new list and asks the runtime about its own container only once
//! the list shows it exited or no longer shows it.

use super::cri::LABEL_MANAGED;
use ringleader_cri::{v1, Cri};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Lists in a row the runtime may fail to answer before its containers
/// count as lost (a restarting runtime answers again within seconds).
const LOST_AFTER: u32 = 600;

/// The latest list: container ID → CRI state.
#[derive(Clone, Debug)]
enum Listing {
    /// No list yet.
    Pending,
    States(Arc<HashMap<String, i32>>),
    /// The runtime stopped answering: why.
    Lost(String),
}

/// The agent's relist, shared by its containers' waiters.
#[derive(Clone)]
pub struct Relist {
    rx: watch::Receiver<Listing>,
}

impl Relist {
    /// Lists the agent's containers every `every` until every waiter and
    /// this handle are gone.
    pub fn spawn(mut cri: Cri, every: Duration) -> Relist {
        let (tx, rx) = watch::channel(Listing::Pending);
        tokio::spawn(async move {
            let mut failures = 0u32;
            while !tx.is_closed() {
                let filter = v1::ContainerFilter {
                    label_selector: HashMap::from([(LABEL_MANAGED.to_string(), "true".to_string())]),
                    ..Default::default()
                };
                let req = v1::ListContainersRequest { filter: Some(filter) };
                match cri.runtime.list_containers(req).await {
                    Ok(r) => {
                        failures = 0;
                        let states = r.into_inner().containers.into_iter().map(|c| (c.id, c.state)).collect();
                        tx.send_replace(Listing::States(Arc::new(states)));
                    }
                    Err(e) => {
                        failures += 1;
                        if failures > LOST_AFTER {
                            tx.send_replace(Listing::Lost(e.message().to_string()));
                        }
                    }
                }
                tokio::time::sleep(every).await;
            }
        });
        Relist { rx }
    }

    /// The container's status once it has exited; an error once the
    /// runtime no longer has it or stopped answering.
    pub async fn wait(&self, cri: &mut Cri, container: &str) -> Result<v1::ContainerStatus, String> {
        let mut rx = self.rx.clone();
        loop {
            let state = match &*rx.borrow_and_update() {
                Listing::Pending => None,
                Listing::States(states) => Some(states.get(container).copied()),
                Listing::Lost(why) => {
                    return Err(format!("the runtime stopped answering about container {container}: {why}"))
                }
            };
            // Exited, or not in a list (which may have been taken just
            // before the container was made): ask about it alone.
            if matches!(state, Some(None)) || state == Some(Some(v1::ContainerState::ContainerExited as i32)) {
                match super::cri::status(cri, container).await {
                    Ok(Some(s)) if s.state == v1::ContainerState::ContainerExited as i32 => return Ok(s),
                    Ok(Some(_)) => {}
                    Ok(None) => return Err(format!("container {container} is gone from the runtime")),
                    // The next list says more.
                    Err(_) => {}
                }
            }
            if rx.changed().await.is_err() {
                return Err("the agent's relist of the runtime stopped".to_string());
            }
        }
    }
}
