//! The API's certificates: a private CA per data directory (`ca.crt`,
//! `ca.key`) and a server certificate it signs (`server.crt`, `server.key`),
//! made with rcgen at first start and reused after, so a kubeconfig that
//! embeds the CA stays valid across restarts. The CA is never replaced
//! behind the user's back (copies of the kubeconfig trust it); the server
//! certificate is a derived file, reissued whenever it no longer passes the
//! check a client makes (other CA, a name not covered, near expiry, a key
//! that does not match). Everything TLS uses rustls with the `ring` provider.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};
use rustls::client::danger::ServerCertVerifier;
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The CA certificate inside the data directory (what clients trust).
pub const CA_CERT_FILE: &str = "ca.crt";
/// The CA's private key (mode 0600).
pub const CA_KEY_FILE: &str = "ca.key";
/// The API server's certificate, signed by the CA.
pub const SERVER_CERT_FILE: &str = "server.crt";
/// The API server's private key (mode 0600).
pub const SERVER_KEY_FILE: &str = "server.key";

/// Names every server certificate covers: what local clients dial.
pub const LOOPBACK_NAMES: &[&str] = &["localhost", "127.0.0.1", "::1"];

const CA_VALIDITY_DAYS: i64 = 3650;
const SERVER_VALIDITY_DAYS: i64 = 365;
// A certificate this close to its end is reissued at start, so a plane
// restarted now and then never serves an expired one.
const RENEW_BEFORE: Duration = Duration::from_secs(30 * 24 * 3600);
// Clocks of clients a little behind ours must not see a "not yet valid" cert.
const BACKDATE: time::Duration = time::Duration::hours(1);

/// Why the certificate files could not be loaded or made: names the file.
#[derive(Debug, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct TlsError {
    /// The file (or directory) concerned.
    pub path: PathBuf,
    /// What is wrong with it.
    pub message: String,
}

impl TlsError {
    fn new(path: &Path, message: impl Into<String>) -> TlsError {
        TlsError { path: path.to_path_buf(), message: message.into() }
    }
}

/// The CA and server certificate of a data directory, as PEM.
#[derive(Clone)]
pub struct TlsFiles {
    /// The data directory they live in.
    pub dir: PathBuf,
    /// `ca.crt`: what clients trust (kubeconfig `certificate-authority-data`).
    pub ca_pem: String,
    /// `server.crt`.
    pub cert_pem: String,
    key_pem: String,
    /// The names `server.crt` was checked to cover.
    pub names: Vec<String>,
    /// Whether this call made a new CA.
    pub ca_created: bool,
    /// Why `server.crt` was (re)issued by this call (`None`: reused as is).
    pub reissued: Option<String>,
}

impl std::fmt::Debug for TlsFiles {
    // Private keys stay out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsFiles")
            .field("dir", &self.dir)
            .field("names", &self.names)
            .field("ca_created", &self.ca_created)
            .field("reissued", &self.reissued)
            .finish_non_exhaustive()
    }
}

/// The names a server certificate must cover for a listener bound to
/// `bound`: the loopback names, the bound IP when it is neither loopback
/// nor unspecified, `host` (the host part of `--listen`) when it is a name,
/// and `extra` (`--tls-san`). Duplicates are dropped, order kept.
pub fn server_names(bound: SocketAddr, host: Option<&str>, extra: &[String]) -> Vec<String> {
    let mut names: Vec<String> = LOOPBACK_NAMES.iter().map(|s| s.to_string()).collect();
    let ip = bound.ip();
    if !ip.is_loopback() && !ip.is_unspecified() {
        names.push(ip.to_string());
    }
    if let Some(h) = host.map(|h| h.trim_start_matches('[').trim_end_matches(']')).filter(|h| !h.is_empty()) {
        // An IP literal in --listen is already covered by the bound address.
        if h.parse::<IpAddr>().is_err() {
            names.push(h.to_ascii_lowercase());
        }
    }
    names.extend(extra.iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()));
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    names
}

impl TlsFiles {
    /// The path of `ca.crt` of a data directory.
    pub fn ca_path(data_dir: &Path) -> PathBuf {
        data_dir.join(CA_CERT_FILE)
    }

    /// Loads the data directory's CA (making one when neither `ca.crt` nor
    /// `ca.key` exists) and its server certificate, reissuing the latter
    /// when it does not verify against the CA for every name in `names`
    /// until at least 30 days from now.
    pub fn load_or_create(data_dir: &Path, names: &[String]) -> Result<TlsFiles, TlsError> {
        std::fs::create_dir_all(data_dir).map_err(|e| TlsError::new(data_dir, format!("cannot create: {e}")))?;
        if names.is_empty() {
            return Err(TlsError::new(&data_dir.join(SERVER_CERT_FILE), "no name to issue the certificate for"));
        }
        let (ca_pem, ca_key_pem, ca_created) = load_or_create_ca(data_dir)?;
        let ca_key_path = data_dir.join(CA_KEY_FILE);
        let ca_key = KeyPair::from_pem(&ca_key_pem)
            .map_err(|e| TlsError::new(&ca_key_path, format!("not a private key ringleader can use: {e}")))?;
        let ca_path = data_dir.join(CA_CERT_FILE);
        let issuer = Issuer::from_ca_cert_pem(&ca_pem, ca_key)
            .map_err(|e| TlsError::new(&ca_path, format!("not a CA certificate ringleader can use: {e}")))?;
        let verifier = verifier(&ca_pem, &ca_path)?;

        let cert_path = data_dir.join(SERVER_CERT_FILE);
        let key_path = data_dir.join(SERVER_KEY_FILE);
        let existing = match (read_optional(&cert_path)?, read_optional(&key_path)?) {
            (Some(cert), Some(key)) => Some((cert, key)),
            _ => None,
        };
        let reason = match &existing {
            None => Some("no server certificate yet".to_string()),
            Some((cert, key)) => check_server(&verifier, cert, key, names).err(),
        };
        let (cert_pem, key_pem) = match (existing, &reason) {
            (Some(pair), None) => pair,
            _ => {
                let (cert, key) = issue_server(&issuer, names)
                    .map_err(|e| TlsError::new(&cert_path, format!("cannot issue the server certificate: {e}")))?;
                // A fresh certificate that fails the check means ca.key is not ca.crt's key.
                if let Err(e) = check_server(&verifier, &cert, &key, names) {
                    return Err(TlsError::new(
                        &ca_key_path,
                        format!("a certificate signed with this key does not verify against {CA_CERT_FILE} ({e}): the two files do not belong together; remove both to make a new CA (kubeconfigs that embed the old one must then be replaced)"),
                    ));
                }
                write_atomic(&key_path, key.as_bytes(), 0o600)?;
                write_atomic(&cert_path, cert.as_bytes(), 0o644)?;
                (cert, key)
            }
        };
        Ok(TlsFiles {
            dir: data_dir.to_path_buf(),
            ca_pem,
            cert_pem,
            key_pem,
            names: names.to_vec(),
            ca_created,
            reissued: reason,
        })
    }

    /// A rustls server configuration serving `server.crt`, offering h2 and
    /// HTTP/1.1 by ALPN (kubectl takes h2 when offered).
    pub fn server_config(&self) -> Result<rustls::ServerConfig, TlsError> {
        self.server_config_verifying(Arc::new(rustls::server::NoClientAuth))
    }

    /// [`TlsFiles::server_config`] that asks callers for a certificate and
    /// checks it with `clients` (the agent's log endpoint trusting the API
    /// server's, see `ringleader_server::kubelet::client_ca_tls`).
    pub fn server_config_verifying(
        &self,
        clients: Arc<dyn rustls::server::danger::ClientCertVerifier>,
    ) -> Result<rustls::ServerConfig, TlsError> {
        let cert_path = self.dir.join(SERVER_CERT_FILE);
        let key_path = self.dir.join(SERVER_KEY_FILE);
        let certs = CertificateDer::pem_slice_iter(self.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| TlsError::new(&cert_path, format!("not a PEM certificate: {e}")))?;
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes())
            .map_err(|e| TlsError::new(&key_path, format!("not a PEM private key: {e}")))?;
        let mut config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::new(&cert_path, format!("TLS setup: {e}")))?
            .with_client_cert_verifier(clients)
            .with_single_cert(certs, key)
            .map_err(|e| TlsError::new(&cert_path, format!("does not go with {SERVER_KEY_FILE}: {e}")))?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(config)
    }
}

/// The crypto provider everything here uses: ring, named explicitly so a
/// second provider compiled into the binary cannot make rustls guess.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn load_or_create_ca(dir: &Path) -> Result<(String, String, bool), TlsError> {
    let cert_path = dir.join(CA_CERT_FILE);
    let key_path = dir.join(CA_KEY_FILE);
    match (read_optional(&cert_path)?, read_optional(&key_path)?) {
        (Some(cert), Some(key)) => Ok((cert, key, false)),
        (None, None) => {
            let (cert, key) = issue_ca().map_err(|e| TlsError::new(&cert_path, format!("cannot make a CA: {e}")))?;
            // The key first: a crash in between leaves a key without a
            // certificate, which the next start reports rather than a CA
            // certificate nobody can sign with.
            write_atomic(&key_path, key.as_bytes(), 0o600)?;
            write_atomic(&cert_path, cert.as_bytes(), 0o644)?;
            Ok((cert, key, true))
        }
        (Some(_), None) => Err(TlsError::new(
            &key_path,
            format!("missing while {CA_CERT_FILE} exists; restore it, or remove {CA_CERT_FILE} too to make a new CA (kubeconfigs that embed the old one must then be replaced)"),
        )),
        (None, Some(_)) => Err(TlsError::new(
            &cert_path,
            format!("missing while {CA_KEY_FILE} exists; restore it, or remove {CA_KEY_FILE} too to make a new CA"),
        )),
    }
}

fn issue_ca() -> Result<(String, String), rcgen::Error> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, "ringleader CA");
    params.distinguished_name.push(DnType::OrganizationName, "ringleader");
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - BACKDATE;
    params.not_after = now + time::Duration::days(CA_VALIDITY_DAYS);
    let cert = params.self_signed(&key)?;
    Ok((cert.pem(), key.serialize_pem()))
}

fn issue_server(issuer: &Issuer<'_, KeyPair>, names: &[String]) -> Result<(String, String), rcgen::Error> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(names.to_vec())?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, "ringleader API server");
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - BACKDATE;
    params.not_after = now + time::Duration::days(SERVER_VALIDITY_DAYS);
    let cert = params.signed_by(&key, issuer)?;
    Ok((cert.pem(), key.serialize_pem()))
}

fn verifier(ca_pem: &str, ca_path: &Path) -> Result<Arc<WebPkiServerVerifier>, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        let cert = cert.map_err(|e| TlsError::new(ca_path, format!("not a PEM certificate: {e}")))?;
        roots.add(cert).map_err(|e| TlsError::new(ca_path, format!("not a usable CA certificate: {e}")))?;
    }
    if roots.is_empty() {
        return Err(TlsError::new(ca_path, "holds no certificate"));
    }
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
        .build()
        .map_err(|e| TlsError::new(ca_path, format!("not a usable CA certificate: {e}")))
}

/// Whether a server certificate and key would be accepted by a client that
/// trusts the CA, for every name, from now until [`RENEW_BEFORE`] from now.
fn check_server(
    verifier: &WebPkiServerVerifier,
    cert_pem: &str,
    key_pem: &str,
    names: &[String],
) -> Result<(), String> {
    let certs = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{SERVER_CERT_FILE} is not a PEM certificate: {e}"))?;
    let Some((leaf, rest)) = certs.split_first() else {
        return Err(format!("{SERVER_CERT_FILE} holds no certificate"));
    };
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
        .map_err(|e| format!("{SERVER_KEY_FILE} is not a PEM private key: {e}"))?;
    rustls::sign::CertifiedKey::from_der(certs.clone(), key, &provider())
        .map_err(|e| format!("{SERVER_KEY_FILE} does not go with {SERVER_CERT_FILE}: {e}"))?;
    let now = UnixTime::now();
    let later = UnixTime::since_unix_epoch(Duration::from_secs(now.as_secs().saturating_add(RENEW_BEFORE.as_secs())));
    for name in names {
        let server_name =
            ServerName::try_from(name.as_str()).map_err(|e| format!("{name:?} is not a host name or IP: {e}"))?;
        for at in [now, later] {
            verifier
                .verify_server_cert(leaf, rest, &server_name, &[], at)
                .map_err(|e| format!("{SERVER_CERT_FILE} does not serve {name} until 30 days from now: {e}"))?;
        }
    }
    Ok(())
}

fn read_optional(path: &Path) -> Result<Option<String>, TlsError> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok(None),
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(TlsError::new(path, format!("cannot read: {e}"))),
    }
}

/// Writes `path` whole or not at all (a temporary file renamed over it),
/// created with `mode` so a secret is never readable by others, not even
/// for a moment.
pub fn write_atomic(path: &Path, contents: &[u8], mode: u32) -> Result<(), TlsError> {
    // Unchanged contents are not rewritten: a restart on a full disk must
    // not fail on files it already has.
    if std::fs::read(path).is_ok_and(|old| old == contents) {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            if std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o777 == mode) {
                return Ok(());
            }
        }
    }
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(mode);
        }
        #[cfg(not(unix))]
        let _ = mode;
        let mut file = opts.open(&tmp)?;
        // A file left by an earlier run keeps its mode through open(): set it.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        file.write_all(contents)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        TlsError::new(path, format!("cannot write: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cover_loopback_the_bound_address_and_extra() {
        let any: SocketAddr = "0.0.0.0:6443".parse().unwrap();
        assert_eq!(server_names(any, Some("0.0.0.0"), &[]), vec!["localhost", "127.0.0.1", "::1"]);
        let lan: SocketAddr = "10.1.2.3:6443".parse().unwrap();
        assert_eq!(
            server_names(lan, Some("Gpu-Box"), &["api.example".into(), "localhost".into()]),
            vec!["localhost", "127.0.0.1", "::1", "10.1.2.3", "gpu-box", "api.example"]
        );
        let v6: SocketAddr = "[::1]:6443".parse().unwrap();
        assert_eq!(server_names(v6, Some("[::1]"), &[]), vec!["localhost", "127.0.0.1", "::1"]);
    }

    #[test]
    fn keys_are_owner_only_and_a_lone_ca_cert_is_refused() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let names: Vec<String> = LOOPBACK_NAMES.iter().map(|s| s.to_string()).collect();
        let files = TlsFiles::load_or_create(dir.path(), &names)?;
        assert!(files.ca_created);
        assert!(!format!("{files:?}").contains("PRIVATE"));
        files.server_config()?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            for f in [CA_KEY_FILE, SERVER_KEY_FILE] {
                let mode = std::fs::metadata(dir.path().join(f))?.permissions().mode();
                assert_eq!(mode & 0o777, 0o600, "{f}");
            }
        }
        std::fs::remove_file(dir.path().join(CA_KEY_FILE))?;
        let err = TlsFiles::load_or_create(dir.path(), &names).err().ok_or("a CA without its key was accepted")?;
        assert!(err.to_string().contains(CA_KEY_FILE) && err.to_string().contains("missing"), "{err}");
        Ok(())
    }

    #[test]
    fn a_mismatched_ca_key_is_named() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let names = vec!["localhost".to_string()];
        TlsFiles::load_or_create(dir.path(), &names)?;
        let other = tempfile::tempdir()?;
        TlsFiles::load_or_create(other.path(), &names)?;
        std::fs::copy(other.path().join(CA_KEY_FILE), dir.path().join(CA_KEY_FILE))?;
        std::fs::remove_file(dir.path().join(SERVER_CERT_FILE))?;
        let err = TlsFiles::load_or_create(dir.path(), &names).err().ok_or("a foreign CA key was accepted")?;
        assert!(err.to_string().contains("do not belong together"), "{err}");
        std::fs::write(dir.path().join(CA_CERT_FILE), "garbage")?;
        let err = TlsFiles::load_or_create(dir.path(), &names).err().ok_or("garbage CA accepted")?;
        assert!(err.to_string().contains(CA_CERT_FILE), "{err}");
        Ok(())
    }
}
