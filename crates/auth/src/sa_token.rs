//! ServiceAccount tokens: ES256 JWTs with Kubernetes' claims, minted for
//! the `serviceaccounts/token` subresource (a TokenRequest) and accepted as
//! bearer tokens besides those of [`crate::identity`].
//!
//! The signing key is one P-256 key per data directory, created at first
//! start in `<data-dir>/service-account.key` (PKCS#8 DER, mode 0600) and
//! reused after, so tokens outlive a restart as they outlive one of
//! kube-apiserver. A token says who it is for; whether that ServiceAccount
//! (and the pod or Secret it is bound to) still exists with the same uid is
//! for the caller to check against the store ([`still_bound`]), as
//! kube-apiserver's legacy-free validator does on every request.

use crate::identity::{Identity, AUTHENTICATED_GROUP};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The issuer written into every token (kube-apiserver's default
/// `--service-account-issuer` in a cluster named `cluster.local`).
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// The audience the API server accepts (kube-apiserver's `--api-audiences`
/// defaults to the issuer), and the one a TokenRequest without audiences gets.
pub const API_AUDIENCE: &str = ISSUER;
/// The signing key's file inside the data directory.
pub const KEY_FILE: &str = "service-account.key";
/// The user name prefix of a ServiceAccount (`system:serviceaccount:<ns>:<name>`).
pub const USER_PREFIX: &str = "system:serviceaccount:";
/// The group of every ServiceAccount; `system:serviceaccounts:<ns>` is the
/// group of those of one namespace.
pub const ALL_GROUP: &str = "system:serviceaccounts";

/// A named object with its uid, as the `kubernetes.io` claim carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRef {
    pub name: String,
    pub uid: String,
}

/// The private `kubernetes.io` claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KubernetesClaim {
    pub namespace: String,
    pub serviceaccount: ObjectRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<ObjectRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<ObjectRef>,
}

/// Every claim of a token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    pub iss: String,
    pub sub: String,
    pub aud: Vec<String>,
    pub exp: i64,
    pub iat: i64,
    pub nbf: i64,
    #[serde(rename = "kubernetes.io")]
    pub kubernetes: KubernetesClaim,
}

impl Claims {
    /// The claims of a token for `account` in `namespace`, valid for
    /// `seconds` from `now` (Unix seconds) for `audiences` (the API's when
    /// empty), bound to `pod` or `secret` when given.
    pub fn new(
        namespace: &str,
        account: ObjectRef,
        audiences: &[String],
        now: i64,
        seconds: i64,
        pod: Option<ObjectRef>,
        secret: Option<ObjectRef>,
    ) -> Claims {
        let aud = if audiences.is_empty() { vec![API_AUDIENCE.to_string()] } else { audiences.to_vec() };
        Claims {
            iss: ISSUER.to_string(),
            sub: format!("{USER_PREFIX}{namespace}:{}", account.name),
            aud,
            exp: now.saturating_add(seconds),
            iat: now,
            nbf: now,
            kubernetes: KubernetesClaim { namespace: namespace.to_string(), serviceaccount: account, pod, secret },
        }
    }

    /// Who the token stands for: `system:serviceaccount:<ns>:<name>` in
    /// `system:serviceaccounts`, `system:serviceaccounts:<ns>` and
    /// `system:authenticated`.
    pub fn identity(&self) -> Identity {
        let ns = &self.kubernetes.namespace;
        Identity::new(
            format!("{USER_PREFIX}{ns}:{}", self.kubernetes.serviceaccount.name),
            [ALL_GROUP.to_string(), format!("{ALL_GROUP}:{ns}"), AUTHENTICATED_GROUP.to_string()],
        )
    }
}

/// Signs and checks tokens with one key.
pub struct Signer {
    encoding: EncodingKey,
    decoding: DecodingKey,
    key_id: String,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer").field("key_id", &self.key_id).finish_non_exhaustive()
    }
}

impl Signer {
    /// A signer over a fresh key that lives in memory only (tests, and a
    /// server without a data directory: its tokens die with it).
    pub fn generate() -> Result<Signer, String> {
        Signer::from_pkcs8(&new_key()?)
    }

    /// A signer over a PKCS#8 DER P-256 key.
    pub fn from_pkcs8(der: &[u8]) -> Result<Signer, String> {
        use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der, &ring::rand::SystemRandom::new())
            .map_err(|e| format!("not a PKCS#8 P-256 private key: {e}"))?;
        let public = pair.public_key().as_ref();
        // As kube-apiserver's key id: a digest of the public key, so a
        // verifier holding several keys can tell which one signed.
        let digest = ring::digest::digest(&ring::digest::SHA256, public);
        let key_id = digest.as_ref().iter().take(16).map(|b| format!("{b:02x}")).collect();
        Ok(Signer { encoding: EncodingKey::from_ec_der(der), decoding: DecodingKey::from_ec_der(public), key_id })
    }

    /// The signer of `data_dir`: its key file read, or created (0600) when absent.
    pub fn load_or_create(data_dir: &Path) -> Result<Signer, String> {
        let path = key_path(data_dir);
        match std::fs::read(&path) {
            Ok(der) => Signer::from_pkcs8(&der).map_err(|e| format!("{}: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(data_dir).map_err(|e| format!("{}: {e}", data_dir.display()))?;
                let der = new_key()?;
                ringleader_client::tls::write_atomic(&path, &der, 0o600).map_err(|e| e.to_string())?;
                Signer::from_pkcs8(&der)
            }
            Err(e) => Err(format!("{}: cannot read: {e}", path.display())),
        }
    }

    /// The signed token of `claims`.
    pub fn mint(&self, claims: &Claims) -> Result<String, String> {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.key_id.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).map_err(|e| format!("cannot sign the token: {e}"))
    }

    /// The claims of `token` when this key signed it, it is valid at `now`
    /// (Unix seconds) and it is for one of `audiences`; otherwise why not.
    pub fn verify(&self, token: &str, audiences: &[&str], now: i64) -> Result<Claims, String> {
        let mut validation = Validation::new(Algorithm::ES256);
        // Time and audience are checked below, against `now` and `audiences`.
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        validation.required_spec_claims.clear();
        validation.set_issuer(&[ISSUER]);
        let claims = jsonwebtoken::decode::<Claims>(token, &self.decoding, &validation)
            .map_err(|e| format!("invalid token: {e}"))?
            .claims;
        if now >= claims.exp {
            return Err("service account token has expired".into());
        }
        if now < claims.nbf {
            return Err("service account token is not valid yet".into());
        }
        if !claims.aud.iter().any(|a| audiences.contains(&a.as_str())) {
            return Err(format!("token audiences {:?} is invalid for the target audiences {audiences:?}", claims.aud));
        }
        let expected =
            format!("{USER_PREFIX}{}:{}", claims.kubernetes.namespace, claims.kubernetes.serviceaccount.name);
        if claims.sub != expected {
            return Err(format!("sub {:?} does not name the token's service account", claims.sub));
        }
        Ok(claims)
    }
}

/// The key file of a data directory.
pub fn key_path(data_dir: &Path) -> PathBuf {
    data_dir.join(KEY_FILE)
}

fn new_key() -> Result<Vec<u8>, String> {
    use ring::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
    EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &ring::rand::SystemRandom::new())
        .map(|doc| doc.as_ref().to_vec())
        .map_err(|e| format!("cannot make a service account signing key: {e}"))
}

/// Whether `token` has a JWT's shape (three dot-separated parts), so the
/// other token sources need not try it.
pub fn looks_like_jwt(token: &str) -> bool {
    token.split('.').count() == 3 && token.starts_with("ey")
}

/// Whether what the token names is still there: its ServiceAccount and,
/// when bound, its pod or Secret, each as stored now (`None`: absent) with
/// the uid the token carries. Worded as kube-apiserver logs it.
pub fn still_bound(
    claims: &Claims,
    account: Option<&Value>,
    pod: Option<&Value>,
    secret: Option<&Value>,
) -> Result<(), String> {
    let k = &claims.kubernetes;
    let uid = |v: &Value| v.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default().to_string();
    let check = |what: &str, wanted: &ObjectRef, found: Option<&Value>| match found {
        None => Err(format!("{what} {}/{} has been deleted", k.namespace, wanted.name)),
        Some(v) if uid(v) != wanted.uid => {
            Err(format!("{what} UID ({}) does not match claim ({})", uid(v), wanted.uid))
        }
        Some(_) => Ok(()),
    };
    check("service account", &k.serviceaccount, account)?;
    if let Some(p) = &k.pod {
        check("pod", p, pod)?;
    }
    if let Some(s) = &k.secret {
        check("secret", s, secret)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn robot() -> ObjectRef {
        ObjectRef { name: "robot".into(), uid: "uid-1".into() }
    }

    fn claims(now: i64, seconds: i64, audiences: &[String]) -> Claims {
        Claims::new("ns1", robot(), audiences, now, seconds, None, None)
    }

    #[test]
    fn a_minted_token_verifies_as_its_service_account() -> Result<(), String> {
        let signer = Signer::generate()?;
        let token = signer.mint(&claims(1000, 3600, &[]))?;
        assert!(looks_like_jwt(&token));
        let got = signer.verify(&token, &[API_AUDIENCE], 1001)?;
        assert_eq!(got.sub, "system:serviceaccount:ns1:robot");
        assert_eq!((got.iat, got.nbf, got.exp), (1000, 1000, 4600));
        let id = got.identity();
        assert_eq!(id.user, "system:serviceaccount:ns1:robot");
        assert!(id.in_group("system:serviceaccounts") && id.in_group("system:serviceaccounts:ns1"));
        assert!(id.in_group(AUTHENTICATED_GROUP) && !id.in_group(crate::identity::MASTERS_GROUP));
        Ok(())
    }

    #[test]
    fn expired_early_and_foreign_audience_tokens_are_refused() -> Result<(), String> {
        let signer = Signer::generate()?;
        let token = signer.mint(&claims(1000, 600, &[]))?;
        assert!(signer.verify(&token, &[API_AUDIENCE], 1599).is_ok());
        let e = signer.verify(&token, &[API_AUDIENCE], 1600).err().unwrap_or_default();
        assert!(e.contains("expired"), "{e}");
        let e = signer.verify(&token, &[API_AUDIENCE], 999).err().unwrap_or_default();
        assert!(e.contains("not valid yet"), "{e}");
        let vault = signer.mint(&claims(1000, 600, &["vault".to_string()]))?;
        let e = signer.verify(&vault, &[API_AUDIENCE], 1001).err().unwrap_or_default();
        assert!(e.contains("audiences") && e.contains("vault"), "{e}");
        assert!(signer.verify(&vault, &["vault"], 1001).is_ok());
        Ok(())
    }

    #[test]
    fn another_keys_or_a_tampered_token_is_refused() -> Result<(), String> {
        let (signer, other) = (Signer::generate()?, Signer::generate()?);
        let token = other.mint(&claims(1000, 600, &[]))?;
        let e = signer.verify(&token, &[API_AUDIENCE], 1001).err().unwrap_or_default();
        assert!(e.contains("InvalidSignature"), "{e}");
        // The payload swapped for one naming another account, signature kept.
        let mine = signer.mint(&claims(1000, 600, &[]))?;
        let parts: Vec<&str> = mine.split('.').collect();
        let mut admin = claims(1000, 600, &[]);
        admin.kubernetes.serviceaccount.name = "admin".into();
        admin.sub = "system:serviceaccount:ns1:admin".into();
        let forged_body = signer.mint(&admin)?;
        let body = forged_body.split('.').nth(1).unwrap_or_default();
        let forged = format!("{}.{}.{}", parts[0], body, parts[2]);
        assert!(signer.verify(&forged, &[API_AUDIENCE], 1001).is_err());
        assert!(signer.verify("ey.not.ajwt", &[API_AUDIENCE], 1001).is_err());
        Ok(())
    }

    #[test]
    fn the_key_is_kept_owner_only_and_reused() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let first = Signer::load_or_create(dir.path())?;
        let token = first.mint(&claims(1000, 600, &[]))?;
        let again = Signer::load_or_create(dir.path())?;
        assert!(again.verify(&token, &[API_AUDIENCE], 1001).is_ok(), "a restart keeps tokens valid");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(key_path(dir.path()))?.permissions().mode() & 0o777, 0o600);
        }
        std::fs::write(key_path(dir.path()), b"junk")?;
        let e = Signer::load_or_create(dir.path()).err().unwrap_or_default();
        assert!(e.contains(KEY_FILE) && e.contains("PKCS#8"), "{e}");
        Ok(())
    }

    #[test]
    fn a_deleted_or_recreated_account_or_pod_unbinds_the_token() {
        let pod = ObjectRef { name: "p".into(), uid: "pod-1".into() };
        let c = Claims::new("ns1", robot(), &[], 0, 600, Some(pod), None);
        let obj = |uid: &str| json!({"metadata": {"uid": uid}});
        assert_eq!(still_bound(&c, Some(&obj("uid-1")), Some(&obj("pod-1")), None), Ok(()));
        let e = still_bound(&c, None, Some(&obj("pod-1")), None).err().unwrap_or_default();
        assert_eq!(e, "service account ns1/robot has been deleted");
        let e = still_bound(&c, Some(&obj("uid-2")), Some(&obj("pod-1")), None).err().unwrap_or_default();
        assert_eq!(e, "service account UID (uid-2) does not match claim (uid-1)");
        let e = still_bound(&c, Some(&obj("uid-1")), None, None).err().unwrap_or_default();
        assert_eq!(e, "pod ns1/p has been deleted");
    }
}
