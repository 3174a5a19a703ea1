//! The SSH key pair of a job whose pods reach each other over SSH (an
//! MPIJob launcher starting its workers, a Volcano job with the `ssh`
//! plugin). mpi-operator keeps a fresh key pair per job in Secret
//! `<job>-ssh`; here the pair is derived from a cluster seed (random, kept
//! by the caller) and the job's uid, so every pod of a job, including one
//! recreated after a fault or a restart of the control plane, gets the same
//! pair while two jobs never share one. The key is Ed25519 in the OpenSSH
//! format, under the file names mpi-operator mounts (`id_rsa`,
//! `id_rsa.pub`, `authorized_keys`): OpenSSH reads the key type from the
//! file, not its name.

use crate::env::SshKeys;
use crate::extras::JobExtras;
use base64::Engine;
use ringleader_api::model::{Job, JobKind};

/// Whether the job's pods get the key pair.
pub fn needed(job: &Job, extras: &JobExtras) -> bool {
    match job.kind {
        JobKind::MpiJob => true,
        JobKind::VolcanoJob => extras.volcano_plugins.contains_key("ssh"),
        _ => false,
    }
}

/// The key pair of `job`: the seed keyed with the job's uid (its
/// namespace and name when it has none) picks the key.
pub fn job_keys(cluster_seed: &[u8; 32], job: &Job, extras: &JobExtras) -> SshKeys {
    let id = match &extras.uid {
        Some(uid) => format!("uid:{uid}"),
        None => format!("name:{}/{}", job.namespace, job.name),
    };
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, cluster_seed);
    let tag = ring::hmac::sign(&key, id.as_bytes());
    let mut seed = [0u8; 32];
    seed.copy_from_slice(&tag.as_ref()[..32]);
    let check = u32::from_be_bytes([seed[0], seed[5], seed[11], seed[17]]);
    key_pair(&seed, check, &format!("{}@{}", job.name, job.namespace))
}

/// The Ed25519 key pair of a 32-byte private seed, in OpenSSH's formats:
/// `openssh-key-v1` unencrypted for the private key (`check` is the
/// check-integer pair inside it, random in ssh-keygen's output) and the
/// one-line public key, both ending with `comment`.
pub fn key_pair(seed: &[u8; 32], check: u32, comment: &str) -> SshKeys {
    let pair = ring::signature::Ed25519KeyPair::from_seed_unchecked(seed);
    let public: [u8; 32] = match pair {
        Ok(p) => {
            use ring::signature::KeyPair;
            let mut out = [0u8; 32];
            out.copy_from_slice(p.public_key().as_ref());
            out
        }
        // Any 32 bytes are a valid Ed25519 seed; ring refuses none.
        Err(_) => [0u8; 32],
    };
    let comment = comment.replace(['\n', '\r'], " ");
    let mut blob = Vec::new();
    string(&mut blob, b"ssh-ed25519");
    string(&mut blob, &public);

    let mut private = Vec::new();
    private.extend_from_slice(&check.to_be_bytes());
    private.extend_from_slice(&check.to_be_bytes());
    string(&mut private, b"ssh-ed25519");
    string(&mut private, &public);
    string(&mut private, &[&seed[..], &public[..]].concat());
    string(&mut private, comment.as_bytes());
    // Padded to the cipher block size ("none": 8) with 1, 2, 3, …
    let mut pad = 1u8;
    while private.len() % 8 != 0 {
        private.push(pad);
        pad += 1;
    }

    let mut file = b"openssh-key-v1\0".to_vec();
    string(&mut file, b"none");
    string(&mut file, b"none");
    string(&mut file, b"");
    file.extend_from_slice(&1u32.to_be_bytes());
    string(&mut file, &blob);
    string(&mut file, &private);

    let b64 = base64::engine::general_purpose::STANDARD;
    let body = b64.encode(&file);
    let mut private_key = String::from("-----BEGIN OPENSSH PRIVATE KEY-----\n");
    for chunk in body.as_bytes().chunks(70) {
        private_key.push_str(&String::from_utf8_lossy(chunk));
        private_key.push('\n');
    }
    private_key.push_str("-----END OPENSSH PRIVATE KEY-----\n");
    let public_key = format!("ssh-ed25519 {} {comment}\n", b64.encode(&blob));
    SshKeys { private_key, public_key }
}

/// An SSH wire-format string: big-endian length, then the bytes.
fn string(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pair_is_a_function_of_seed_and_job() {
        let a = key_pair(&[7; 32], 1, "a@default");
        assert_eq!(a, key_pair(&[7; 32], 1, "a@default"));
        assert_ne!(a.public_key, key_pair(&[8; 32], 1, "a@default").public_key);
        assert!(a.public_key.starts_with("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI"), "{}", a.public_key);
        assert!(a.public_key.ends_with(" a@default\n"));
        assert!(a.private_key.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA"));
        assert!(a.private_key.lines().all(|l| l.len() <= 70));
    }

    /// OpenSSH itself reads the private key back to the same public key.
    #[test]
    fn ssh_keygen_reads_the_private_key() {
        use std::os::unix::fs::PermissionsExt;
        let keys = key_pair(&[42; 32], 0x0102_0304, "job@ns");
        let dir = std::env::temp_dir().join(format!("ringleader-ssh-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = dir.join("id_rsa");
        std::fs::write(&file, &keys.private_key).expect("write key");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let out = std::process::Command::new("ssh-keygen").arg("-y").arg("-f").arg(&file).output();
        let _ = std::fs::remove_dir_all(&dir);
        let Ok(out) = out else {
            eprintln!("ssh-keygen not installed: format checked by the other test only");
            return;
        };
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout), keys.public_key);
    }
}
