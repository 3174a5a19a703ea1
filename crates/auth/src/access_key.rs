//! Access keys (seed 004: the platform's OpenAPI is reached with an AK/SK
//! pair): a request signed with HMAC-SHA256 under a user's secret key is
//! that user, with the same RBAC as the user's bearer token.
//!
//! The registry is `<data-dir>/accesskeys.yaml` (0600), beside
//! `tokens.yaml` and for the same reasons (writable while the server is
//! down, never readable through the API it unlocks). Unlike a bearer
//! token, a secret key must be known to the server to check a signature,
//! so it is kept sealed with the store's `encryption.key` (AES-256-GCM, as
//! Secrets are; [`ringleader_store::seal`]), never in the clear; it is
//! printed once, when made.
//!
//! The scheme (docs/platform.md, "Access keys"), a simplified AWS SigV4:
//!
//! ```text
//! Authorization: RL-HMAC-SHA256 Credential=<AK>, Signature=<hex HMAC-SHA256(SK, string-to-sign)>
//! X-RL-Timestamp: <unix seconds>
//!
//! string-to-sign = "RL-HMAC-SHA256\n" + timestamp + "\n" + METHOD + "\n" + path + "\n"
//!                  + canonical query + "\n" + hex SHA-256 of the body
//! ```
//!
//! The canonical query is the query's `name=value` pairs exactly as sent
//! (still percent-encoded), sorted, joined by `&`. A timestamp more than
//! [`WINDOW_SECONDS`] from the server's clock is refused; a request
//! replayed within the window is accepted (as SigV4 without a nonce).

use crate::identity::Identity;
use rand::RngCore;
use ringleader_store::ObjectKey;
use ringleader_store::Sealer;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The `Authorization` scheme.
pub const SCHEME: &str = "RL-HMAC-SHA256";
/// The header carrying the signed time (unix seconds).
pub const TIMESTAMP_HEADER: &str = "x-rl-timestamp";
/// How far a signed time may be from the server's clock, either way.
pub const WINDOW_SECONDS: i64 = 300;
/// Name of the registry inside the data directory.
pub const ACCESS_KEYS_FILE: &str = "accesskeys.yaml";
/// The start of every access key id (as AWS's `AKIA`).
const AK_PREFIX: &str = "RLAK";

/// One key of the registry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AccessKeyEntry {
    /// The access key id (AK), public.
    pub access_key_id: String,
    /// User the key signs as.
    pub user: String,
    /// Groups (without the implied `system:authenticated`).
    #[serde(default)]
    pub groups: Vec<String>,
    /// The secret key, sealed with `encryption.key`.
    pub sealed_secret: String,
    /// A disabled key authenticates nothing.
    #[serde(default)]
    pub disabled: bool,
    /// When it was made (RFC 3339).
    #[serde(default)]
    pub created_at: String,
}

/// The whole `accesskeys.yaml`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AccessKeyFile {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub keys: Vec<AccessKeyEntry>,
}

/// The registry's path in a data directory.
pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(ACCESS_KEYS_FILE)
}

/// The sealing's additional data: the key id, so a sealed secret copied to
/// another entry does not open.
fn seal_key(ak: &str) -> ObjectKey {
    // Sealer seals Secrets only; the access key's secret is one.
    ObjectKey::new("v1", "Secret", "", &format!("accesskey.{ak}"))
}

/// Reads the registry (an absent file is an empty one).
pub fn read(data_dir: &Path) -> Result<AccessKeyFile, String> {
    let p = path(data_dir);
    let text = match std::fs::read_to_string(&p) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(AccessKeyFile::default()),
        Err(e) => return Err(format!("{}: cannot read: {e}", p.display())),
    };
    if text.trim().is_empty() {
        return Ok(AccessKeyFile::default());
    }
    serde_yaml_ng::from_str(&text).map_err(|e| format!("{}: not an access key registry: {e}", p.display()))
}

/// Serializes this process's read-modify-writes of the registry: two keys
/// made at once must both be kept.
static WRITES: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `change` on the registry and writes it back, one change at a time.
fn update<T>(data_dir: &Path, change: impl FnOnce(&mut AccessKeyFile) -> Result<T, String>) -> Result<T, String> {
    let _held = WRITES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut file = read(data_dir)?;
    let out = change(&mut file)?;
    write(data_dir, file)?;
    Ok(out)
}

fn write(data_dir: &Path, mut file: AccessKeyFile) -> Result<(), String> {
    let p = path(data_dir);
    file.api_version = "ringleader.io/v1alpha1".into();
    file.kind = "AccessKeyRegistry".into();
    let text = serde_yaml_ng::to_string(&file).map_err(|e| format!("{}: cannot render: {e}", p.display()))?;
    let text = format!(
        "# Written by `ringleader accesskey`: access key ids, their users and their secrets sealed with encryption.key.\n{text}"
    );
    ringleader_client::tls::write_atomic(&p, text.as_bytes(), 0o600).map_err(|e| e.to_string())
}

fn random_text(alphabet: &[u8], n: usize) -> String {
    let mut bytes = vec![0u8; n];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    bytes.iter().map(|b| char::from(alphabet[usize::from(*b) % alphabet.len()])).collect()
}

/// Makes a key pair for `user` in `groups`, records it and answers
/// `(access key id, secret key)`: the secret is not shown again.
pub fn create(data_dir: &Path, user: &str, groups: &[String], created_at: &str) -> Result<(String, String), String> {
    crate::identity::check_names(user, groups)?;
    std::fs::create_dir_all(data_dir).map_err(|e| format!("{}: {e}", data_dir.display()))?;
    // Alphabets of 32 (no I, O, 0, 1) and 64 symbols: sizes that divide 256 keep the draw uniform.
    let ak = format!("{AK_PREFIX}{}", random_text(b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789", 16));
    let sk = random_text(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", 40);
    update(data_dir, |file| {
        // Under the lock: the first key of a data directory makes encryption.key.
        let sealer = Sealer::open(data_dir).map_err(|e| e.to_string())?;
        let sealed = sealer.seal(&seal_key(&ak), &sk).map_err(|e| e.to_string())?.into_owned();
        file.keys.push(AccessKeyEntry {
            access_key_id: ak.clone(),
            user: user.to_string(),
            groups: groups.to_vec(),
            sealed_secret: sealed,
            disabled: false,
            created_at: created_at.to_string(),
        });
        Ok(())
    })?;
    Ok((ak, sk))
}

/// Disables or enables a key (`Err` names an unknown key).
pub fn set_disabled(data_dir: &Path, ak: &str, disabled: bool) -> Result<(), String> {
    update(data_dir, |file| {
        let entry = file.keys.iter_mut().find(|k| k.access_key_id == ak).ok_or_else(|| unknown(ak))?;
        entry.disabled = disabled;
        Ok(())
    })
}

/// Deletes a key (`Err` names an unknown key).
pub fn delete(data_dir: &Path, ak: &str) -> Result<(), String> {
    update(data_dir, |file| {
        let before = file.keys.len();
        file.keys.retain(|k| k.access_key_id != ak);
        if file.keys.len() == before {
            return Err(unknown(ak));
        }
        Ok(())
    })
}

fn unknown(ak: &str) -> String {
    format!("access key {ak:?} not found (ringleader accesskey list shows the keys)")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Lower-case hex SHA-256 of a body.
pub fn body_digest(body: &[u8]) -> String {
    hex(ring::digest::digest(&ring::digest::SHA256, body).as_ref())
}

/// The query's pairs as sent, sorted, joined by `&` (`""` for none).
pub fn canonical_query(query: &str) -> String {
    let mut pairs: Vec<&str> = query.split('&').filter(|p| !p.is_empty()).collect();
    pairs.sort_unstable();
    pairs.join("&")
}

/// The text a request's signature is over.
pub fn string_to_sign(method: &str, path: &str, query: &str, timestamp: &str, body: &[u8]) -> String {
    format!(
        "{SCHEME}\n{timestamp}\n{}\n{path}\n{}\n{}",
        method.to_ascii_uppercase(),
        canonical_query(query),
        body_digest(body)
    )
}

/// Hex HMAC-SHA256 of `text` under `secret`.
pub fn signature(secret: &str, text: &str) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    hex(ring::hmac::sign(&key, text.as_bytes()).as_ref())
}

/// The `Authorization` value for a request (what a client sends).
pub fn authorization(
    ak: &str,
    sk: &str,
    method: &str,
    path: &str,
    query: &str,
    timestamp: &str,
    body: &[u8],
) -> String {
    let sig = signature(sk, &string_to_sign(method, path, query, timestamp, body));
    format!("{SCHEME} Credential={ak}, Signature={sig}")
}

/// `(access key id, signature)` of an `Authorization` value of this scheme.
fn parse(header: &str) -> Result<(&str, &str), String> {
    let rest = header.strip_prefix(SCHEME).map(str::trim_start).ok_or_else(|| format!("not the {SCHEME} scheme"))?;
    let (mut ak, mut sig) = (None, None);
    for part in rest.split(',').map(str::trim) {
        match part.split_once('=') {
            Some(("Credential", v)) => ak = Some(v.trim()),
            Some(("Signature", v)) => sig = Some(v.trim()),
            _ => return Err(format!("{part:?} is not Credential=<access key id> or Signature=<hex>")),
        }
    }
    match (ak, sig) {
        (Some(a), Some(s)) if !a.is_empty() && !s.is_empty() => Ok((a, s)),
        _ => Err(format!("the Authorization header needs `{SCHEME} Credential=<access key id>, Signature=<hex>`")),
    }
}

/// A request to authenticate.
pub struct Signed<'a> {
    pub authorization: &'a str,
    /// The `X-RL-Timestamp` header, if sent.
    pub timestamp: Option<&'a str>,
    pub method: &'a str,
    pub path: &'a str,
    pub query: &'a str,
    pub body: &'a [u8],
}

/// Who signed `request`, or why it is refused (the 401's message). `now`
/// is the server's clock in unix seconds.
pub fn authenticate(data_dir: &Path, request: &Signed<'_>, now: i64) -> Result<Identity, String> {
    let (ak, presented) = parse(request.authorization)?;
    let stamp = request
        .timestamp
        .ok_or_else(|| format!("a signed request needs the {TIMESTAMP_HEADER} header (unix seconds)"))?;
    let at: i64 = stamp.trim().parse().map_err(|_| format!("{TIMESTAMP_HEADER} {stamp:?} is not unix seconds"))?;
    if (now - at).abs() > WINDOW_SECONDS {
        return Err(format!(
            "{TIMESTAMP_HEADER} {at} is {} s from the server's clock ({now}); a signature holds for {WINDOW_SECONDS} s either way",
            now - at
        ));
    }
    let file = read(data_dir)?;
    let entry = file.keys.iter().find(|k| k.access_key_id == ak).ok_or_else(|| format!("unknown access key {ak:?}"))?;
    if entry.disabled {
        return Err(format!("access key {ak:?} is disabled"));
    }
    let sealer = Sealer::open(data_dir).map_err(|e| e.to_string())?;
    let secret = sealer.open_text(&seal_key(ak), &entry.sealed_secret).map_err(|e| e.to_string())?;
    let text = string_to_sign(request.method, request.path, request.query, stamp.trim(), request.body);
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    let presented = decode_hex(presented).ok_or_else(|| "Signature is not hex".to_string())?;
    // Constant-time comparison of the signatures.
    ring::hmac::verify(&key, text.as_bytes(), &presented).map_err(|_| {
        format!(
            "signature does not match for access key {ak:?}: sign \"{}\" with the secret key",
            text.escape_default()
        )
    })?;
    Ok(Identity::new(entry.user.clone(), entry.groups.clone()))
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signed<'a>(auth: &'a str, ts: &'a str, body: &'a [u8]) -> Signed<'a> {
        Signed {
            authorization: auth,
            timestamp: Some(ts),
            method: "GET",
            path: "/api/v1/namespaces/ws-a/pods",
            query: "limit=5&labelSelector=a%3Db",
            body,
        }
    }

    #[test]
    fn a_signed_request_is_its_user_and_any_change_or_old_time_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (ak, sk) = create(dir.path(), "alice", &[], "2026-01-01T00:00:00Z").expect("create");
        let text = std::fs::read_to_string(path(dir.path())).expect("registry");
        assert!(text.contains(&ak) && !text.contains(&sk), "the secret is sealed: {text}");
        let auth =
            authorization(&ak, &sk, "GET", "/api/v1/namespaces/ws-a/pods", "labelSelector=a%3Db&limit=5", "1000", b"");
        let who = authenticate(dir.path(), &signed(&auth, "1000", b""), 1100).map(|i| i.user);
        assert_eq!(who, Ok("alice".to_string()), "the query's order does not matter");
        let e = authenticate(dir.path(), &signed(&auth, "1000", b"x"), 1100).unwrap_err();
        assert!(e.contains("signature does not match"), "{e}");
        let e = authenticate(dir.path(), &signed(&auth, "1000", b""), 1000 + WINDOW_SECONDS + 1).unwrap_err();
        assert!(e.contains("a signature holds for 300 s"), "{e}");
        set_disabled(dir.path(), &ak, true).expect("disable");
        assert_eq!(
            authenticate(dir.path(), &signed(&auth, "1000", b""), 1000),
            Err(format!("access key {ak:?} is disabled"))
        );
        delete(dir.path(), &ak).expect("delete");
        assert_eq!(
            authenticate(dir.path(), &signed(&auth, "1000", b""), 1000),
            Err(format!("unknown access key {ak:?}"))
        );
    }

    #[test]
    fn keys_made_at_once_are_all_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::thread::scope(|s| {
            for i in 0..8 {
                let d = dir.path();
                s.spawn(move || create(d, &format!("u{i}"), &[], "2026-01-01T00:00:00Z").expect("create"));
            }
        });
        assert_eq!(read(dir.path()).map(|f| f.keys.len()), Ok(8));
    }

    #[test]
    fn the_string_to_sign_is_as_documented() {
        assert_eq!(
            string_to_sign("get", "/api/v1/pods", "b=2&a=1", "1700000000", b""),
            "RL-HMAC-SHA256\n1700000000\nGET\n/api/v1/pods\na=1&b=2\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert!(parse("RL-HMAC-SHA256 Credential=RLAK1, Signature=ab").is_ok());
        assert!(parse("RL-HMAC-SHA256 Credential=RLAK1").is_err());
    }
}
