//! The Kubernetes Container Runtime Interface as a client: the `runtime.v1`
//! messages and services generated from k8s.io/cri-api's published proto
//! (vendored in `proto/`), and a connection to a runtime's unix socket, as
//! kubelet makes it (`unix:///run/containerd/containerd.sock`).

use hyper_util::rt::TokioIo;
use std::path::PathBuf;
use std::time::Duration;
use tonic::transport::{Channel, Endpoint, Uri};

/// The generated `runtime.v1` package.
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod v1 {
    tonic::include_proto!("runtime.v1");
}

pub use v1::image_service_client::ImageServiceClient;
pub use v1::runtime_service_client::RuntimeServiceClient;

/// Why a runtime could not be reached.
#[derive(Debug)]
pub struct ConnectError(pub String);

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConnectError {}

/// The socket path of a CRI endpoint: `unix:///path` or a bare path (the
/// forms kubelet's `--container-runtime-endpoint` takes).
pub fn socket_path(endpoint: &str) -> Result<PathBuf, ConnectError> {
    let path = endpoint.strip_prefix("unix://").unwrap_or(endpoint);
    if !path.starts_with('/') {
        return Err(ConnectError(format!(
            "CRI endpoint {endpoint:?}: not allowed; want unix:///absolute/path/to/socket"
        )));
    }
    Ok(PathBuf::from(path))
}

/// Both services of one runtime over one connection.
#[derive(Clone, Debug)]
pub struct Cri {
    pub runtime: RuntimeServiceClient<Channel>,
    pub image: ImageServiceClient<Channel>,
    pub endpoint: String,
}

/// Largest gRPC message accepted: kubelet's limit (16 MiB), which large
/// `ListContainers` answers need.
pub const MAX_MESSAGE: usize = 16 << 20;

impl Cri {
    /// Connects to the runtime at `endpoint` and asks its version (so a
    /// socket that does not answer CRI fails here, within `timeout`).
    pub async fn connect(endpoint: &str, timeout: Duration) -> Result<(Cri, v1::VersionResponse), ConnectError> {
        let path = socket_path(endpoint)?;
        let fail =
            |what: &str, e: &dyn std::fmt::Display| ConnectError(format!("CRI endpoint {endpoint}: {what}: {e}"));
        // The URI is unused: every connection goes to the socket.
        let endpoint_uri = Endpoint::from_static("http://localhost").connect_timeout(timeout);
        let channel = endpoint_uri.connect_with_connector(tower::service_fn(move |_: Uri| {
            let path = path.clone();
            async move { Ok::<_, std::io::Error>(TokioIo::new(tokio::net::UnixStream::connect(path).await?)) }
        }));
        let channel = tokio::time::timeout(timeout, channel)
            .await
            .map_err(|e| fail("connecting", &e))?
            .map_err(|e| fail("connecting", &e))?;
        let runtime = RuntimeServiceClient::new(channel.clone())
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE);
        let image = ImageServiceClient::new(channel)
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE);
        let mut cri = Cri { runtime, image, endpoint: endpoint.to_string() };
        let version = tokio::time::timeout(timeout, cri.runtime.version(v1::VersionRequest { version: "v1".into() }))
            .await
            .map_err(|e| fail("Version", &e))?
            .map_err(|e| fail("Version", &e.message()))?
            .into_inner();
        Ok((cri, version))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_unix_sockets() {
        assert_eq!(
            socket_path("unix:///run/containerd/containerd.sock").unwrap(),
            PathBuf::from("/run/containerd/containerd.sock")
        );
        assert_eq!(socket_path("/run/x.sock").unwrap(), PathBuf::from("/run/x.sock"));
        let err = socket_path("tcp://127.0.0.1:1").unwrap_err().to_string();
        assert!(err.contains("tcp://127.0.0.1:1") && err.contains("unix:///"), "{err}");
    }

    #[tokio::test]
    async fn a_socket_nobody_serves_is_a_clear_error() {
        let dir = std::env::temp_dir().join(format!("cri-none-{}", std::process::id()));
        let endpoint = format!("unix://{}/none.sock", dir.display());
        let err = Cri::connect(&endpoint, Duration::from_secs(2)).await.unwrap_err().to_string();
        assert!(err.contains(&endpoint) && err.contains("connecting"), "{err}");
    }
}
