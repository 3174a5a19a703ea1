//! The agent's log endpoint trusting the API server's client certificate,
//! as a kubelet trusts kube-apiserver's `--kubelet-client-certificate`: a
//! real endpoint over TLS on loopback, certificates made with rcgen. One
//! signed by the configured CA reads a pod's log with no token; one from
//! another CA is refused; no certificate and no token is 401; a token still
//! works; and without a client CA a certificate counts for nothing.

mod common;

use common::{get_as as get, TestResult, TestServer};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};
use ringleader_client::{tls, TlsFiles};
use ringleader_server::kubelet;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);
const LOG: &str = "hello from the sandbox\n";

/// A CA: its certificate (PEM) and what signs with it.
fn ca(name: &str) -> Result<(String, Issuer<'static, KeyPair>), rcgen::Error> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    let cert = params.self_signed(&key)?;
    Ok((cert.pem(), Issuer::new(params, key)))
}

/// What kube-apiserver presents to kubelets, as `k8s-env.sh` makes it:
/// certificate and key PEM concatenated (what reqwest's identity reads).
fn kubelet_client(issuer: &Issuer<'_, KeyPair>) -> Result<String, rcgen::Error> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    params.distinguished_name.push(DnType::CommonName, "kube-apiserver-kubelet-client");
    params.distinguished_name.push(DnType::OrganizationName, "system:masters");
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, issuer)?;
    Ok(format!("{}{}", cert.pem(), key.serialize_pem()))
}

/// A log endpoint over `agent_dir` serving node `n1`, with `client_ca` or
/// without; its URL, its CA and what stops it.
async fn endpoint(
    api: &TestServer,
    agent_dir: &Path,
    client_ca: Option<&Path>,
) -> Result<(String, String, tokio::sync::watch::Sender<bool>), Box<dyn std::error::Error + Send + Sync>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let bound = listener.local_addr()?;
    let files = TlsFiles::load_or_create(agent_dir, &tls::server_names(bound, None, &[]))?;
    let config = match client_ca {
        Some(ca) => kubelet::client_ca_tls(&files, ca)?,
        None => files.server_config()?,
    };
    let (stop, closing) = tokio::sync::watch::channel(false);
    let router = kubelet::router(api.client.clone(), agent_dir.to_path_buf(), vec!["n1".to_string()], closing.clone());
    let mut closed = closing;
    tokio::spawn(kubelet::serve_tls(listener, router, Arc::new(config), async move {
        let _ = closed.wait_for(|s| *s).await;
    }));
    Ok((format!("https://{bound}"), files.ca_pem, stop))
}

fn http(server_ca: &str, identity: Option<&str>) -> Result<reqwest::Client, reqwest::Error> {
    let mut builder = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(server_ca.as_bytes())?)
        .timeout(WAIT);
    if let Some(pem) = identity {
        builder = builder.identity(reqwest::Identity::from_pem(pem.as_bytes())?);
    }
    builder.build()
}

/// The API server and a pod `default/a` bound to `n1` whose sandbox log is
/// in `agent_dir`.
async fn setup(agent_dir: &Path) -> Result<TestServer, Box<dyn std::error::Error + Send + Sync>> {
    let api = TestServer::start().await?;
    api.state.store().create(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "a", "namespace": "default"},
        "spec": {"nodeName": "n1", "containers": [{"name": "main", "image": "busybox"}]},
        "status": {"phase": "Running"},
    }))?;
    let sandbox = agent_dir.join("nodes/n1/pods/default_a");
    std::fs::create_dir_all(&sandbox)?;
    std::fs::write(sandbox.join("log"), LOG)?;
    Ok(api)
}

#[tokio::test]
async fn the_api_servers_certificate_reads_logs_and_others_are_refused() -> TestResult {
    let agent = tempfile::tempdir()?;
    let api = setup(agent.path()).await?;
    let (ca_pem, issuer) = ca("cluster CA")?;
    let ca_path = agent.path().join("client-ca.crt");
    std::fs::write(&ca_path, &ca_pem)?;
    let (url, server_ca, stop) = endpoint(&api, agent.path(), Some(&ca_path)).await?;
    let logs = format!("{url}/containerLogs/default/a/main");

    // kube-apiserver: a certificate from the CA, no token.
    let apiserver = http(&server_ca, Some(&kubelet_client(&issuer)?))?;
    assert_eq!(get(&apiserver, &logs, None).await?, (200, LOG.to_string()));
    assert_eq!(get(&apiserver, &format!("{logs}?tailLines=1&timestamps=false"), None).await?.1, LOG);
    // Still only pods of this agent's nodes.
    let (code, body) = get(&apiserver, &format!("{url}/containerLogs/default/missing/main"), None).await?;
    assert_eq!(code, 404, "{body}");

    // A certificate from another CA: the handshake fails or the answer is 401.
    let (_, other_issuer) = ca("another CA")?;
    let stranger = http(&server_ca, Some(&kubelet_client(&other_issuer)?))?;
    match get(&stranger, &logs, None).await {
        Ok((code, body)) => assert_eq!(code, 401, "a certificate from another CA was accepted: {body}"),
        Err(e) => assert!(e.is_connect() || e.is_request(), "unexpected failure: {e}"),
    }

    // No certificate and no token: 401; the token path still works.
    let anonymous = http(&server_ca, None)?;
    let (code, body) = get(&anonymous, &logs, None).await?;
    assert_eq!(code, 401, "{body}");
    assert_eq!(get(&anonymous, &logs, Some(&api.token)).await?, (200, LOG.to_string()));
    let _ = stop.send(true);
    Ok(())
}

#[tokio::test]
async fn without_a_client_ca_a_certificate_counts_for_nothing() -> TestResult {
    let agent = tempfile::tempdir()?;
    let api = setup(agent.path()).await?;
    let (_, issuer) = ca("cluster CA")?;
    let (url, server_ca, stop) = endpoint(&api, agent.path(), None).await?;
    let logs = format!("{url}/containerLogs/default/a/main");
    let holder = http(&server_ca, Some(&kubelet_client(&issuer)?))?;
    let (code, body) = get(&holder, &logs, None).await?;
    assert_eq!(code, 401, "{body}");
    assert_eq!(get(&holder, &logs, Some(&api.token)).await?, (200, LOG.to_string()));
    let _ = stop.send(true);
    Ok(())
}

#[tokio::test]
async fn a_bad_client_ca_file_is_named() -> TestResult {
    let agent = tempfile::tempdir()?;
    let files = TlsFiles::load_or_create(agent.path(), &["127.0.0.1".to_string()])?;
    let missing = agent.path().join("nope.crt");
    let err = kubelet::client_ca_tls(&files, &missing).err().ok_or("a missing client CA was accepted")?;
    assert!(err.to_string().contains("nope.crt") && err.to_string().contains("cannot read"), "{err}");
    let empty = agent.path().join("empty.crt");
    std::fs::write(&empty, "not a certificate\n")?;
    let err = kubelet::client_ca_tls(&files, &empty).err().ok_or("a file with no certificate was accepted")?;
    assert!(err.to_string().contains("empty.crt") && err.to_string().contains("no PEM certificate"), "{err}");
    Ok(())
}
