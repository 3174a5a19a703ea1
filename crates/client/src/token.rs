//! The API's bearer token of a data directory (`<data-dir>/token`): made
//! once, read by every command and agent on the machine, compared in time
//! independent of the value.

use rand::RngCore;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Name of the token file inside the data directory.
pub const TOKEN_FILE: &str = "token";

/// The API's bearer token.
#[derive(Clone)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    // Never print the secret into logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    /// A token with this value.
    pub fn new(value: impl Into<String>) -> Token {
        Token(value.into())
    }

    /// A fresh random token (32 bytes, hex), kept nowhere.
    pub fn random() -> Token {
        let mut bytes = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        Token(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// The path of the token file of a data directory.
    pub fn path(data_dir: &Path) -> PathBuf {
        data_dir.join(TOKEN_FILE)
    }

    /// Reads `<data_dir>/token`, creating the directory and a fresh random
    /// token (32 bytes, hex) if the file is absent or empty.
    pub fn load_or_create(data_dir: &Path) -> std::io::Result<Token> {
        let path = Token::path(data_dir);
        if let Some(token) = Token::read(&path)? {
            return Ok(token);
        }
        std::fs::create_dir_all(data_dir)?;
        let value = Token::random().0;
        let tmp = data_dir.join(format!(".{TOKEN_FILE}.{}", std::process::id()));
        {
            let mut opts = std::fs::OpenOptions::new();
            opts.write(true).create(true).truncate(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                opts.mode(0o600);
            }
            let mut file = opts.open(&tmp)?;
            file.write_all(value.as_bytes())?;
            file.write_all(b"\n")?;
            file.sync_all()?;
        }
        // Two processes starting at once must end up with one token: the
        // first hard link wins and the loser reads the winner's file.
        match std::fs::hard_link(&tmp, &path) {
            Ok(()) => {
                std::fs::remove_file(&tmp)?;
                Ok(Token(value))
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                std::fs::remove_file(&tmp)?;
                match Token::read(&path)? {
                    Some(t) => Ok(t),
                    None => Err(std::io::Error::other(format!("{}: empty token file", path.display()))),
                }
            }
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    /// Reads an existing token file (`None` when absent or empty).
    pub fn read(path: &Path) -> std::io::Result<Option<Token>> {
        match std::fs::read_to_string(path) {
            Ok(text) if !text.trim().is_empty() => Ok(Some(Token(text.trim().to_string()))),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The secret, for a client's `Authorization` header.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `candidate` is the token, in time independent of where they differ.
    pub fn matches(&self, candidate: &str) -> bool {
        let (a, b) = (self.0.as_bytes(), candidate.as_bytes());
        let mut diff = a.len() ^ b.len();
        for (i, x) in a.iter().enumerate() {
            let y = b.get(i).copied().unwrap_or(0);
            diff |= usize::from(x ^ y);
        }
        diff == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_once_then_reused_with_owner_only_mode() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let data = dir.path().join("data");
        let a = Token::load_or_create(&data)?;
        let b = Token::load_or_create(&data)?;
        assert_eq!(a.as_str(), b.as_str());
        assert_eq!(a.as_str().len(), 64);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(Token::path(&data))?.permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        Ok(())
    }

    #[test]
    fn compares_whole_strings() {
        let t = Token::new("abcd");
        assert!(t.matches("abcd"));
        assert!(!t.matches("abc"));
        assert!(!t.matches("abcde"));
        assert!(!t.matches("abce"));
        assert!(!t.matches(""));
    }
}
