//! Secrets encrypted at rest, as kube-apiserver's `EncryptionConfiguration`
//! with an `aesgcm` provider encrypts them in etcd.
//!
//! Every stored `v1 Secret` (its row and its history events) is written as
//! `k8s:enc:aesgcm:v1:key1:` followed by the base64 of a random 96-bit
//! nonce and the AES-256-GCM ciphertext of the object's JSON, with the
//! object's key (`apiVersion/kind/namespace/name`) as additional data, so a
//! row copied under another name does not decrypt. Reads decrypt; a row
//! without the prefix (a store written before this) is read as plain JSON
//! and sealed when the store opens.
//!
//! The key is `<data-dir>/encryption.key` (32 random bytes, base64, 0600),
//! made at the first open. It is not in backups, as kube-apiserver's key is
//! not in etcd snapshots: a backup restored into another data directory
//! needs that directory's `encryption.key` copied from the original.

use crate::types::ObjectKey;
use crate::StoreError;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use ring::rand::{SecureRandom, SystemRandom};
use std::borrow::Cow;
use std::path::Path;

/// Name of the key file inside the data directory.
pub const KEY_FILE: &str = "encryption.key";

/// kube-apiserver's prefix for its aesgcm provider, with our one key's name.
const PREFIX: &str = "k8s:enc:aesgcm:v1:key1:";

/// Whether objects of this key are sealed.
pub(crate) fn sealed_kind(key: &ObjectKey) -> bool {
    key.kind == "Secret" && key.api_version == "v1"
}

/// Encrypts and decrypts the stored text of sealed kinds.
pub struct Sealer {
    key: LessSafeKey,
    random: SystemRandom,
}

fn aad(key: &ObjectKey) -> String {
    format!("{}/{}/{}/{}", key.api_version, key.kind, key.namespace, key.name)
}

impl Sealer {
    /// Reads `<dir>/encryption.key`, making it (0600) when absent.
    pub fn open(dir: &Path) -> Result<Sealer, StoreError> {
        let path = dir.join(KEY_FILE);
        let fail = |what: String| StoreError::Io(format!("{}: {what}", path.display()));
        let bytes = match std::fs::read_to_string(&path) {
            Ok(text) => STANDARD
                .decode(text.trim())
                .map_err(|e| fail(format!("not a base64 AES-256 key ({e}); it must hold 32 bytes in base64")))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut bytes = vec![0u8; 32];
                SystemRandom::new().fill(&mut bytes).map_err(|_| fail("no randomness to make a key from".into()))?;
                write_private(&path, &STANDARD.encode(&bytes)).map_err(|e| fail(e.to_string()))?;
                bytes
            }
            Err(e) => return Err(fail(e.to_string())),
        };
        Sealer::from_bytes(&bytes).ok_or_else(|| fail(format!("holds {} bytes; an AES-256 key is 32", bytes.len())))
    }

    fn from_bytes(bytes: &[u8]) -> Option<Sealer> {
        let unbound = UnboundKey::new(&AES_256_GCM, bytes).ok()?;
        Some(Sealer { key: LessSafeKey::new(unbound), random: SystemRandom::new() })
    }

    /// The text to store for `text`, the JSON of the object at `key`.
    pub fn seal<'t>(&self, key: &ObjectKey, text: &'t str) -> Result<Cow<'t, str>, StoreError> {
        if !sealed_kind(key) {
            return Ok(Cow::Borrowed(text));
        }
        let mut nonce = [0u8; NONCE_LEN];
        self.random.fill(&mut nonce).map_err(|_| StoreError::Io("no randomness for a nonce".into()))?;
        let mut sealed = text.as_bytes().to_vec();
        self.key
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(aad(key).as_bytes()), &mut sealed)
            .map_err(|_| StoreError::Io(format!("{}: encryption failed", aad(key))))?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        Ok(Cow::Owned(format!("{PREFIX}{}", STANDARD.encode(out))))
    }

    /// The JSON of the object at `key` from its stored text.
    pub fn open_text<'t>(&self, key: &ObjectKey, text: &'t str) -> Result<Cow<'t, str>, StoreError> {
        let Some(body) = text.strip_prefix(PREFIX) else {
            return Ok(Cow::Borrowed(text));
        };
        let unreadable = |why: &str| {
            StoreError::Io(format!(
                "{}: the stored Secret cannot be decrypted ({why}); is {KEY_FILE} in the data directory the key \
                 it was written with?",
                aad(key)
            ))
        };
        let mut bytes = STANDARD.decode(body).map_err(|_| unreadable("not base64"))?;
        if bytes.len() < NONCE_LEN {
            return Err(unreadable("too short"));
        }
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&bytes[..NONCE_LEN]);
        let plain = self
            .key
            .open_in_place(Nonce::assume_unique_for_key(nonce), Aad::from(aad(key).as_bytes()), &mut bytes[NONCE_LEN..])
            .map_err(|_| unreadable("authentication failed"))?;
        String::from_utf8(plain.to_vec()).map(Cow::Owned).map_err(|_| unreadable("not UTF-8"))
    }
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    {
        let mut f = std::fs::OpenOptions::new().create(true).truncate(true).write(true).mode(0o600).open(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

/// Whether `text` is sealed (for the open-time migration and tests).
pub(crate) fn is_sealed(text: &str) -> bool {
    text.starts_with(PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(kind: &str, name: &str) -> ObjectKey {
        ObjectKey { api_version: "v1".into(), kind: kind.into(), namespace: "default".into(), name: name.into() }
    }

    #[test]
    fn secrets_round_trip_and_other_kinds_pass_through() {
        let dir = tempfile::tempdir().unwrap();
        let s = Sealer::open(dir.path()).unwrap();
        let text = r#"{"data":{"password":"aHVudGVyMg=="}}"#;
        let sealed = s.seal(&key("Secret", "db"), text).unwrap();
        assert!(is_sealed(&sealed) && !sealed.contains("aHVudGVyMg"), "{sealed}");
        assert_eq!(s.open_text(&key("Secret", "db"), &sealed).unwrap(), text);
        assert_eq!(s.seal(&key("ConfigMap", "db"), text).unwrap(), text);
        // Plain text (a store from before sealing) reads as it is.
        assert_eq!(s.open_text(&key("Secret", "db"), text).unwrap(), text);
        // Two seals of the same text differ (fresh nonce).
        assert_ne!(s.seal(&key("Secret", "db"), text).unwrap(), sealed);
    }

    #[test]
    fn a_row_under_another_name_or_key_does_not_decrypt() {
        let dir = tempfile::tempdir().unwrap();
        let s = Sealer::open(dir.path()).unwrap();
        let sealed = s.seal(&key("Secret", "db"), "{}").unwrap().into_owned();
        let err = s.open_text(&key("Secret", "other"), &sealed).unwrap_err();
        assert!(err.to_string().contains("cannot be decrypted"), "{err}");
        let elsewhere = tempfile::tempdir().unwrap();
        let other = Sealer::open(elsewhere.path()).unwrap();
        assert!(other.open_text(&key("Secret", "db"), &sealed).is_err());
        // The same directory gives the same key back.
        assert_eq!(Sealer::open(dir.path()).unwrap().open_text(&key("Secret", "db"), &sealed).unwrap(), "{}");
    }

    #[test]
    fn the_key_file_is_private_and_a_bad_one_is_named() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        Sealer::open(dir.path()).unwrap();
        let mode = std::fs::metadata(dir.path().join(KEY_FILE)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(dir.path().join(KEY_FILE), STANDARD.encode([1u8; 16])).unwrap();
        let err = Sealer::open(dir.path()).err().unwrap().to_string();
        assert!(err.contains("holds 16 bytes; an AES-256 key is 32"), "{err}");
        std::fs::write(dir.path().join(KEY_FILE), "not base64!").unwrap();
        assert!(Sealer::open(dir.path()).err().unwrap().to_string().contains("not a base64 AES-256 key"));
    }
}
