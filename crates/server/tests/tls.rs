//! HTTPS end to end: a server on 127.0.0.1:0 with the data directory's
//! generated certificates, clients built from the kubeconfig written for
//! it (lists, creates, a watch over h2 and over HTTP/1.1), refusal of a
//! client that does not trust the CA, reuse of the files across starts and
//! reissue of the server certificate when its names change.

mod common;

use base64::Engine;
use common::{pod, TestResult};
use futures_util::StreamExt;
use ringleader_client::kubeconfig::{self, Kubeconfig};
use ringleader_client::tls::{self, CA_CERT_FILE, SERVER_CERT_FILE};
use ringleader_client::{Client, TlsFiles, Token};
use ringleader_observability::Metrics;
use ringleader_registry::resources::PODS;
use ringleader_server::{serve_tls, ServerState};
use ringleader_store::Store;
use serde_json::json;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

/// An HTTPS server over a data directory, as `ringleader up` starts one.
struct TlsServer {
    url: String,
    token: Token,
    files: TlsFiles,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl TlsServer {
    async fn start(dir: &Path, extra_names: &[String]) -> Result<TlsServer, Box<dyn std::error::Error + Send + Sync>> {
        let store = Store::open(&dir.join("store"))?;
        let token = Token::load_or_create(dir)?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let bound = listener.local_addr()?;
        let names = tls::server_names(bound, Some("127.0.0.1"), extra_names);
        let files = TlsFiles::load_or_create(dir, &names)?;
        let config = Arc::new(files.server_config()?);
        let url = format!("https://{bound}");
        Kubeconfig::single(&url, Some(&files.ca_pem), token.as_str()).write(&kubeconfig::path(dir))?;
        let state = ServerState::new(store, token.clone(), Metrics::new());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(serve_tls(listener, state, config, async move {
            let _ = rx.await;
        }));
        Ok(TlsServer { url, token, files, stop: Some(tx), task })
    }

    /// Stops it and waits: graceful shutdown must not hang on open streams.
    async fn shut_down(mut self) -> TestResult {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        tokio::time::timeout(WAIT, self.task).await???;
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubeconfig_client_lists_creates_and_watches_over_https() -> TestResult {
    let dir = tempfile::tempdir()?;
    let server = TlsServer::start(dir.path(), &[]).await?;
    let client = Client::from_kubeconfig(&kubeconfig::path(dir.path()))?;
    assert_eq!(client.base(), server.url);
    assert!(!format!("{client:?}").contains(server.token.as_str()), "the token stays out of Debug");

    let list = client.list(PODS, Some("default"), None).await?;
    assert!(list.items.is_empty());
    let mut watch = client.watch(PODS, Some("default"), Some(list.resource_version)).await?;
    client.create(PODS, "default", &pod("tls-a", json!({"app": "x"}))).await?;
    let event = tokio::time::timeout(WAIT, watch.next()).await?.ok_or("watch ended")??;
    assert_eq!((event.event_type.as_str(), event.object["metadata"]["name"].as_str()), ("ADDED", Some("tls-a")));
    assert_eq!(client.get(PODS, "default", "tls-a").await?["metadata"]["labels"]["app"], "x");

    // kubectl takes h2 when ALPN offers it; a watch must stream over it too.
    let h2 = client
        .http()
        .get(format!("{}/api/v1/namespaces/default/pods?watch=true", server.url))
        .bearer_auth(server.token.as_str())
        .send()
        .await?;
    assert_eq!(h2.version(), reqwest::Version::HTTP_2);
    let mut h2_body = h2.bytes_stream();
    let first = tokio::time::timeout(WAIT, h2_body.next()).await?.ok_or("h2 watch ended")??;
    assert!(String::from_utf8_lossy(&first).contains("tls-a"), "{first:?}");

    let ca = reqwest::Certificate::from_pem(server.files.ca_pem.as_bytes())?;
    let h1 = reqwest::Client::builder().use_rustls_tls().add_root_certificate(ca).http1_only().build()?;
    let r = h1.get(format!("{}/api/v1/namespaces/default/pods", server.url)).bearer_auth(server.token.as_str());
    let r = r.send().await?;
    assert_eq!((r.version(), r.status().as_u16()), (reqwest::Version::HTTP_11, 200));
    let r = h1.get(format!("{}/api/v1/namespaces/default/pods", server.url)).send().await?;
    assert_eq!(r.status().as_u16(), 401, "TLS does not replace the token");

    // Shutdown ends the open watches (HTTP/1.1 and h2) instead of waiting on them.
    server.shut_down().await?;
    let rest = tokio::time::timeout(WAIT, watch.next()).await?;
    assert!(rest.is_none() || matches!(rest, Some(Err(_))), "{rest:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_does_not_trust_the_ca_is_refused_at_the_handshake() -> TestResult {
    let dir = tempfile::tempdir()?;
    let server = TlsServer::start(dir.path(), &[]).await?;

    // The system's roots only.
    let stranger = reqwest::Client::builder().use_rustls_tls().build()?;
    let err = stranger.get(format!("{}/healthz", server.url)).send().await.err().ok_or("an unknown CA was trusted")?;
    let chain = error_chain(&err);
    assert!(err.is_connect() && chain.contains("certificate"), "{chain}");

    // Another data directory's CA.
    let other = tempfile::tempdir()?;
    let other_ca = TlsFiles::load_or_create(other.path(), &["127.0.0.1".to_string()])?.ca_pem;
    let wrong = Client::with_ca(&server.url, server.token.as_str(), other_ca.as_bytes())?;
    let err = wrong.list(PODS, Some("default"), None).await.err().ok_or("a foreign CA was trusted")?;
    assert!(matches!(err, ringleader_client::ClientError::Http { .. }), "{err:?}");

    // Plain HTTP to the TLS port gets no API answer.
    let plain = reqwest::Client::new();
    let answer = plain.get(format!("{}/healthz", server.url.replacen("https", "http", 1))).send().await;
    assert!(answer.map_or(true, |r| r.status().as_u16() != 200));

    // The data directory's own CA is trusted by from_data_dir.
    assert!(Client::from_data_dir(&server.url, dir.path())?.healthy().await);
    server.shut_down().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_are_reused_across_starts_and_the_server_cert_reissued_when_names_change() -> TestResult {
    let dir = tempfile::tempdir()?;
    let first = TlsServer::start(dir.path(), &[]).await?;
    assert!(first.files.ca_created && first.files.reissued.is_some());
    let old_kubeconfig = std::fs::read_to_string(kubeconfig::path(dir.path()))?;
    let first_cert = first.files.cert_pem.clone();
    first.shut_down().await?;

    // A restart on another port: same CA, same server certificate.
    let second = TlsServer::start(dir.path(), &[]).await?;
    assert!(!second.files.ca_created);
    assert_eq!(second.files.reissued, None);
    assert_eq!(second.files.cert_pem, first_cert);
    // The kubeconfig from before still verifies the server (only the port moved).
    let old: Kubeconfig = serde_yaml_ng::from_str(&old_kubeconfig)?;
    let conn = old.connection(None, dir.path())?;
    let again = Client::with_ca(&second.url, &conn.token, conn.ca_pem.as_deref().ok_or("no CA")?)?;
    again.list(PODS, Some("default"), None).await?;
    second.shut_down().await?;

    // A new name: the CA stays, the server certificate is reissued to cover it.
    let ca_before = std::fs::read_to_string(dir.path().join(CA_CERT_FILE))?;
    let third = TlsServer::start(dir.path(), &["api.ringleader.test".to_string()]).await?;
    assert!(!third.files.ca_created);
    let why = third.files.reissued.clone().ok_or("not reissued for a new name")?;
    assert!(why.contains("api.ringleader.test"), "{why}");
    assert_eq!(std::fs::read_to_string(dir.path().join(CA_CERT_FILE))?, ca_before);
    assert_ne!(std::fs::read_to_string(dir.path().join(SERVER_CERT_FILE))?, first_cert);
    // The new certificate answers to the new name (resolved to the test server).
    let bound: SocketAddr = third.url.trim_start_matches("https://").parse()?;
    let ca = reqwest::Certificate::from_pem(ca_before.as_bytes())?;
    let by_name = reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(ca)
        .resolve("api.ringleader.test", bound)
        .build()?;
    let r = by_name.get(format!("https://api.ringleader.test:{}/healthz", bound.port())).send().await?;
    assert_eq!(r.status().as_u16(), 200);
    third.shut_down().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kubeconfig_has_what_kubectl_reads() -> TestResult {
    let dir = tempfile::tempdir()?;
    let server = TlsServer::start(dir.path(), &[]).await?;
    let path = kubeconfig::path(dir.path());
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&path)?)?;
    let s = |v: &serde_yaml_ng::Value| v.as_str().map(str::to_string).unwrap_or_default();
    assert_eq!(s(&doc["apiVersion"]), "v1");
    assert_eq!(s(&doc["kind"]), "Config");
    assert_eq!(s(&doc["current-context"]), "ringleader");
    let cluster = &doc["clusters"][0];
    assert_eq!(s(&cluster["name"]), "ringleader");
    assert_eq!(s(&cluster["cluster"]["server"]), server.url);
    assert!(server.url.starts_with("https://127.0.0.1:"), "{}", server.url);
    let ca = base64::engine::general_purpose::STANDARD.decode(s(&cluster["cluster"]["certificate-authority-data"]))?;
    assert_eq!(ca, std::fs::read(dir.path().join(CA_CERT_FILE))?);
    assert_eq!(s(&doc["users"][0]["name"]), "ringleader");
    assert_eq!(s(&doc["users"][0]["user"]["token"]), server.token.as_str());
    let context = &doc["contexts"][0];
    assert_eq!(s(&context["name"]), "ringleader");
    assert_eq!(
        (s(&context["context"]["cluster"]), s(&context["context"]["user"]), s(&context["context"]["namespace"])),
        ("ringleader".into(), "ringleader".into(), "default".into())
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path)?.permissions().mode() & 0o777, 0o600);
        let key = std::fs::metadata(dir.path().join(tls::CA_KEY_FILE))?.permissions().mode();
        assert_eq!(key & 0o777, 0o600);
    }
    // No temporary file is left beside it.
    let leftovers: Vec<String> = std::fs::read_dir(dir.path())?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    server.shut_down().await
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
