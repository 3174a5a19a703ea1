//! `/livez` and `/readyz` over HTTP, open to anyone but detailed only to
//! the admin (issue 29), in kube-apiserver's
//! wording: `ok` or 500 listing every check, `?verbose`, `?exclude=`; the
//! manager's heartbeat (starting, beating, stale, stopped) and the agents'
//! (stale nodes listed, failing only when none is left).

use ringleader_client::Token;
use ringleader_observability::Metrics;
use ringleader_server::{serve, Health, ServerState};
use ringleader_store::Store;
use serde_json::json;
use std::time::Duration;

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

struct Server {
    url: String,
    store: Store,
    token: String,
    _dir: tempfile::TempDir,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn start(health: Option<Health>) -> Result<Server, Box<dyn std::error::Error + Send + Sync>> {
    let dir = tempfile::tempdir()?;
    let store = Store::open(&dir.path().join("store"))?;
    let token = Token::load_or_create(dir.path())?;
    let mut state = ServerState::new(store.clone(), token.clone(), Metrics::new());
    if let Some(h) = health {
        state = state.with_health(h);
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(serve(listener, state, async move {
        let _ = rx.await;
    }));
    Ok(Server { url, store, token: token.as_str().to_string(), _dir: dir, _stop: tx })
}

/// Status and body of a GET by the admin (whom the details are for).
async fn get(s: &Server, path: &str) -> Result<(u16, String), Box<dyn std::error::Error + Send + Sync>> {
    let r = reqwest::Client::new().get(format!("{}{path}", s.url)).bearer_auth(&s.token).send().await?;
    Ok((r.status().as_u16(), r.text().await?))
}

/// Status and body of a GET without a token.
async fn get_anonymous(s: &Server, path: &str) -> Result<(u16, String), Box<dyn std::error::Error + Send + Sync>> {
    let r = reqwest::get(format!("{}{path}", s.url)).await?;
    Ok((r.status().as_u16(), r.text().await?))
}

fn node(name: &str, last_heartbeat: f64) -> serde_json::Value {
    json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node", "metadata": {"name": name},
           "spec": {"profile": "hgx-h100-8"}, "status": {"ready": true, "lastHeartbeat": last_heartbeat}})
}

#[tokio::test]
async fn a_server_alone_checks_itself_and_its_store() -> TestResult {
    let s = start(None).await?;
    assert_eq!(get(&s, "/readyz").await?, (200, "ok".to_string()));
    assert_eq!(get(&s, "/livez").await?, (200, "ok".to_string()));
    assert_eq!(get(&s, "/readyz?verbose").await?, (200, "[+]ping ok\n[+]store ok\nreadyz check passed\n".to_string()));
    assert_eq!(get(&s, "/livez?verbose=1").await?, (200, "[+]ping ok\n[+]store ok\nlivez check passed\n".to_string()));
    let (code, body) = get(&s, "/readyz?verbose&exclude=store&exclude=etcd").await?;
    assert_eq!(code, 200);
    assert_eq!(
        body,
        "[+]ping ok\n[+]store excluded: ok\n\
         warn: some health checks cannot be excluded: no matches for \"etcd\"\nreadyz check passed\n"
    );
    Ok(())
}

#[tokio::test]
async fn the_manager_is_live_while_starting_ready_once_it_beats_and_failed_when_stopped() -> TestResult {
    let health = Health::new();
    let manager = health.component("manager", Duration::from_secs(1));
    let s = start(Some(health)).await?;

    // Starting: alive, not ready; the failing check is named with why.
    assert_eq!(get(&s, "/livez").await?, (200, "ok".to_string()));
    let (code, body) = get(&s, "/readyz").await?;
    assert_eq!(code, 500);
    assert_eq!(body, "[+]ping ok\n[+]store ok\n[-]manager failed: starting: no heartbeat yet\nreadyz check failed\n");
    // Anyone else learns the status only.
    assert_eq!(get_anonymous(&s, "/readyz?verbose").await?, (500, "readyz check failed\n".to_string()));

    manager.beat();
    assert_eq!(get(&s, "/readyz").await?, (200, "ok".to_string()));
    assert_eq!(get_anonymous(&s, "/readyz?verbose").await?, (200, "ok".to_string()));
    assert_eq!(get_anonymous(&s, "/livez?verbose").await?, (200, "ok".to_string()));
    assert_eq!(
        get(&s, "/readyz?verbose").await?,
        (200, "[+]ping ok\n[+]store ok\n[+]manager ok\nreadyz check passed\n".to_string())
    );

    // A loop that stopped beating (wedged) fails liveness too.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let (code, body) = get(&s, "/livez").await?;
    assert_eq!(code, 500, "{body}");
    // The seconds shown are those elapsed: 2 or more on a slow machine.
    assert!(body.contains("[-]manager failed: no heartbeat for ") && body.contains(" s (limit 1 s)\n"), "{body}");
    assert!(body.ends_with("livez check failed\n"), "{body}");
    assert_eq!(get(&s, "/livez?exclude=manager").await?, (200, "ok".to_string()));

    manager.beat();
    manager.stopped("store: database or disk is full");
    let (code, body) = get(&s, "/livez").await?;
    assert_eq!(code, 500);
    assert!(body.contains("[-]manager failed: stopped: store: database or disk is full\n"), "{body}");
    Ok(())
}

#[tokio::test]
async fn stale_agents_are_listed_and_fail_readiness_only_when_all_are_gone() -> TestResult {
    let health = Health::new().with_agents(Duration::from_secs(40));
    let s = start(Some(health)).await?;
    assert_eq!(
        get(&s, "/readyz?verbose").await?,
        (200, "[+]ping ok\n[+]store ok\n[+]agents ok: no nodes\nreadyz check passed\n".to_string())
    );
    let now = ringleader_api::time::now();
    s.store.create(node("n1", now))?;
    s.store.create(node("n2", now - 100.0))?;
    assert_eq!(get(&s, "/readyz").await?, (200, "ok".to_string()));
    let (code, body) = get(&s, "/readyz?verbose").await?;
    assert_eq!(code, 200);
    assert!(body.contains("[+]agents ok: 1 of 2 nodes heartbeating; stale: n2 (last heartbeat 100 s ago)\n"), "{body}");
    // Liveness does not depend on nodes.
    assert_eq!(get(&s, "/livez?verbose").await?, (200, "[+]ping ok\n[+]store ok\nlivez check passed\n".to_string()));

    let n1 = ringleader_store::ObjectKey::new("ringleader.io/v1alpha1", "Node", "", "n1");
    s.store.patch(&n1, &json!({"status": {"ready": false}}), None)?;
    let (code, body) = get(&s, "/readyz").await?;
    assert_eq!(code, 500);
    assert!(body.contains("[-]agents failed: no node is heartbeating: n1 (last heartbeat "), "{body}");
    assert!(body.contains(", n2 (last heartbeat 100 s ago)\n"), "{body}");
    assert!(body.ends_with("readyz check failed\n"), "{body}");
    Ok(())
}
