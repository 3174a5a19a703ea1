//! The cluster's SSH seed: 32 random bytes kept in `<data-dir>/ssh-seed`
//! (mode 0600, hex) from which the controller derives each job's SSH key
//! pair (`ringleader_controller::ssh`), so a job keeps its keys across
//! restarts of `up` and pods recreated later match the running ones.

use anyhow::{bail, Context, Result};
use rand::RngCore;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where the seed is kept.
pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join("ssh-seed")
}

/// Reads the seed, creating a fresh random one when the file is absent.
pub fn load_or_create(data_dir: &Path) -> Result<[u8; 32]> {
    let file = path(data_dir);
    match std::fs::read_to_string(&file) {
        Ok(text) => return parse(text.trim()).with_context(|| format!("{}", file.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("{}", file.display())),
    }
    let mut seed = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut seed);
    let hex: String = seed.iter().map(|b| format!("{b:02x}")).collect();
    let tmp = data_dir.join(format!(".ssh-seed.{}", std::process::id()));
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .with_context(|| format!("{}", tmp.display()))?;
        f.write_all(format!("{hex}\n").as_bytes()).with_context(|| format!("{}", tmp.display()))?;
    }
    // Two planes starting on one directory at once end with one seed: the
    // first link wins and the other reads it.
    let linked = std::fs::hard_link(&tmp, &file);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(seed),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let text = std::fs::read_to_string(&file).with_context(|| format!("{}", file.display()))?;
            parse(text.trim()).with_context(|| format!("{}", file.display()))
        }
        Err(e) => Err(e).with_context(|| format!("{}", file.display())),
    }
}

fn parse(text: &str) -> Result<[u8; 32]> {
    if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!("the SSH seed must be 64 hex digits, found {} characters; delete the file for a new seed (running jobs' pods then get new keys when recreated)", text.len());
    }
    let mut seed = [0u8; 32];
    for (i, b) in seed.iter_mut().enumerate() {
        *b = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).context("hex digit")?;
    }
    Ok(seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_is_created_once_then_reused_and_a_bad_file_is_named() -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir()?;
        let first = load_or_create(dir.path())?;
        assert_eq!(load_or_create(dir.path())?, first);
        assert_eq!(std::fs::metadata(path(dir.path()))?.permissions().mode() & 0o777, 0o600);
        std::fs::write(path(dir.path()), "zz\n")?;
        let text = format!("{:#}", load_or_create(dir.path()).err().context("a bad seed was read")?);
        assert!(text.contains("ssh-seed") && text.contains("64 hex digits"), "{text}");
        Ok(())
    }
}
