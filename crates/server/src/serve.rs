//! Serving the API: plain HTTP on loopback ([`serve`]) or HTTPS
//! ([`serve_tls`]) through a TLS server bounded per client and in all
//! ([`bounded_tls_server`], which the agent's endpoint uses too), the
//! built-in RBAC objects written before the first request.

use crate::conn_limits;
use crate::pipeline::router;
use crate::state::ServerState;
use std::future::Future;
use std::sync::Arc;

/// What the store must hold before the first request: the built-in RBAC
/// roles and bindings (absent ones created, edited ones left alone). A
/// server that cannot write them does not start: without them every
/// identity but the admin would be refused everything.
async fn prepare(state: &ServerState, listening: std::net::SocketAddr) -> std::io::Result<()> {
    let store = state.store().clone();
    let created = tokio::task::spawn_blocking(move || ringleader_auth::rbac::ensure_builtins(&store))
        .await
        .map_err(std::io::Error::other)?
        .map_err(|e| std::io::Error::other(format!("cannot create the built-in RBAC roles: {e}")))?;
    let store = state.store().clone();
    let namespaces = tokio::task::spawn_blocking(move || ensure_namespaces(&store))
        .await
        .map_err(std::io::Error::other)?
        .map_err(|e| std::io::Error::other(format!("cannot create the namespaces: {e}")))?;
    let store = state.store().clone();
    tokio::task::spawn_blocking(move || ensure_kubernetes_service(&store, listening))
        .await
        .map_err(std::io::Error::other)?
        .map_err(|e| std::io::Error::other(format!("cannot create the kubernetes Service: {e}")))?;
    if namespaces > 0 {
        tracing::info!(created = namespaces, "namespaces created (the built-in ones and those already in use)");
    }
    if created > 0 {
        tracing::info!(created, "built-in RBAC roles and bindings created");
    }
    Ok(())
}

/// Creates the built-in namespaces and one for every namespace objects are
/// already in (a store written before namespaces were objects), so nothing
/// stored is left in a namespace that does not exist. Returns how many.
fn ensure_namespaces(store: &ringleader_store::Store) -> Result<usize, ringleader_store::StoreError> {
    use ringleader_api::kinds::namespace;
    let mut names: std::collections::BTreeSet<String> = namespace::BUILTIN.iter().map(|n| n.to_string()).collect();
    names.extend(store.namespaces_in_use()?);
    let mut created = 0;
    for name in names {
        if store.get(&crate::admission::namespaces::key(&name))?.is_some() {
            continue;
        }
        match store.create(namespace::object(&name)) {
            Ok(_) => created += 1,
            Err(ringleader_store::StoreError::AlreadyExists(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(created)
}

/// The `kubernetes` Service in `default` (created when absent, as
/// kube-apiserver's reconciler does) and its Endpoints and EndpointSlice,
/// rewritten each start to name this server's address and port (a server
/// on every address is named by loopback). `kubectl cluster-info` reads them.
fn ensure_kubernetes_service(
    store: &ringleader_store::Store,
    listening: std::net::SocketAddr,
) -> Result<(), ringleader_store::StoreError> {
    use ringleader_api::kinds::service;
    let address = match listening.ip() {
        std::net::IpAddr::V4(ip) if !ip.is_unspecified() => ip,
        _ => std::net::Ipv4Addr::LOCALHOST,
    };
    let port = listening.port();
    let svc = service::kubernetes(&service::ServiceRange::default(), port);
    let key = ringleader_store::ObjectKey::of(&svc)?;
    match store.get(&key)? {
        None => match store.create(svc) {
            Ok(_) | Err(ringleader_store::StoreError::AlreadyExists(_)) => {}
            Err(e) => return Err(e),
        },
        Some(current) => {
            // Kept as it is but for the port it forwards to.
            let mut ports = current.object.pointer("/spec/ports").cloned().unwrap_or_default();
            for p in ports.as_array_mut().into_iter().flatten() {
                if p.get("name").and_then(serde_json::Value::as_str) == Some("https") {
                    p["targetPort"] = serde_json::json!(port);
                }
            }
            store.patch(&key, &serde_json::json!({"spec": {"ports": ports}}), None)?;
        }
    }
    for object in service::kubernetes_endpoints(address, port) {
        store.apply(object)?;
    }
    Ok(())
}

/// Serves the API on `listener` until `shutdown` completes; open watch and
/// log streams are then ended and in-flight requests finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: ServerState,
    shutdown: impl Future + Send + 'static,
) -> std::io::Result<()> {
    prepare(&state, listener.local_addr()?).await?;
    let closer = state.clone();
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router(state))
        .with_graceful_shutdown(async move {
            shutdown.await;
            closer.close_streams();
        })
        .await
}

/// A TLS server on `listener` bounded as `limits` say: connections capped
/// per client address and in all before any handshake (TCP_NODELAY on each:
/// without it a response's last TLS record waits for the client's delayed
/// ACK — about 40 ms a page; kubectl paging 50,000 pods took 19 s instead of
/// under 2), the handshake and each request head timed. A connection that
/// never sends a request is closed however slowly it trickles bytes.
pub(crate) fn bounded_tls_server(
    listener: tokio::net::TcpListener,
    tls: Arc<rustls::ServerConfig>,
    limits: conn_limits::ConnLimits,
    handle: axum_server::Handle<std::net::SocketAddr>,
) -> axum_server::Server<std::net::SocketAddr, axum_server::tls_rustls::RustlsAcceptor<conn_limits::CappedAcceptor>> {
    let acceptor =
        axum_server::tls_rustls::RustlsAcceptor::new(axum_server::tls_rustls::RustlsConfig::from_config(tls))
            .handshake_timeout(limits.header_timeout)
            .acceptor(conn_limits::CappedAcceptor::new(conn_limits::Counter::new(limits)));
    let mut server = axum_server::Server::from_listener(listener)
        .acceptor(acceptor)
        .handle(handle)
        .first_request_timeout(limits.header_timeout);
    server.http_builder().http1().header_read_timeout(limits.header_timeout);
    server
}

/// [`serve`] over TLS: the same routes and the same graceful shutdown, with
/// each connection's handshake done in its own task (one slow or silent
/// client cannot hold up accepting others).
pub async fn serve_tls(
    listener: tokio::net::TcpListener,
    state: ServerState,
    tls: Arc<rustls::ServerConfig>,
    shutdown: impl Future + Send + 'static,
) -> std::io::Result<()> {
    prepare(&state, listener.local_addr()?).await?;
    let handle = axum_server::Handle::<std::net::SocketAddr>::new();
    let (closer, stopper) = (state.clone(), handle.clone());
    let signal = tokio::spawn(async move {
        shutdown.await;
        // Streams first: graceful shutdown waits for every open response.
        closer.close_streams();
        stopper.graceful_shutdown(None);
    });
    let server = bounded_tls_server(listener, tls, state.conn_limits(), handle);
    let served = server.serve(router(state).into_make_service()).await;
    signal.abort();
    served
}
