//! Online backups with SQLite's backup API and restores that check the file
//! before it replaces anything.
//!
//! A backup reads the store through a read-only connection of its own, all
//! pages in one step: one read transaction, so the copy is one consistent
//! version even while `ringleader up` writes (WAL readers do not block the
//! writer), and a read-only connection neither checkpoints nor removes the
//! WAL of a store another process has open.

use crate::safety::{self, Files};
use crate::StoreError;
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};

fn io_at(path: &Path) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |e| StoreError::Io(format!("{}: {e}", path.display()))
}

/// Copies the store of data directory `dir` into `out` (written beside it
/// and renamed into place, so `out` is never half-written). Safe while the
/// store is open elsewhere. Returns the store version copied.
pub fn backup(dir: &Path, out: &Path) -> Result<u64, StoreError> {
    let files = Files::of(dir);
    if !files.db.exists() {
        return Err(StoreError::Io(format!("{}: no store here to back up", files.db.display())));
    }
    safety::check_files(&files)?;
    let src =
        Connection::open_with_flags(&files.db, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
            .map_err(io_at(&files.db))?;
    src.busy_timeout(std::time::Duration::from_secs(30)).map_err(io_at(&files.db))?;
    let name = out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = out.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        // Secrets and tokens are in it: 0600 from the start, as the store's
        // own file (SQLite keeps an existing file's mode).
        {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(true)
                .write(true)
                .mode(0o600)
                .open(&tmp)
                .map_err(|e| StoreError::Io(format!("{}: {e}", tmp.display())))?;
        }
        let mut dst = Connection::open(&tmp).map_err(io_at(&tmp))?;
        {
            let b = rusqlite::backup::Backup::new(&src, &mut dst).map_err(io_at(&tmp))?;
            copy_all(&b).map_err(io_at(&tmp))?;
        }
        // A single file, whatever mode the store was in: no -wal to carry along.
        dst.query_row("PRAGMA journal_mode=DELETE", [], |_| Ok(())).map_err(io_at(&tmp))?;
        let version = version_of(&dst, &tmp)?;
        dst.close().map_err(|(_, e)| io_at(&tmp)(e))?;
        std::fs::File::open(&tmp)
            .and_then(|f| f.sync_all())
            .map_err(|e| StoreError::Io(format!("{}: {e}", tmp.display())))?;
        std::fs::rename(&tmp, out).map_err(|e| StoreError::Io(format!("{}: {e}", out.display())))?;
        Ok(version)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Every page in one step (`-1`): one read transaction, one version. A
/// busy or locked source (a checkpoint under way) is retried for up to 30 s.
fn copy_all(b: &rusqlite::backup::Backup<'_, '_>) -> rusqlite::Result<()> {
    use rusqlite::backup::StepResult;
    for _ in 0..300 {
        match b.step(-1)? {
            StepResult::Done => return Ok(()),
            StepResult::More | StepResult::Busy | StepResult::Locked => {
                std::thread::sleep(std::time::Duration::from_millis(100))
            }
            _ => std::thread::sleep(std::time::Duration::from_millis(100)),
        }
    }
    Err(rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
        Some("the store stayed busy for 30 s".into()),
    ))
}

fn version_of(conn: &Connection, path: &Path) -> Result<u64, StoreError> {
    conn.query_row("SELECT value FROM meta WHERE key = 'version'", [], |r| r.get(0))
        .map_err(|e| StoreError::Io(format!("{}: not a ringleader store ({e})", path.display())))
}

/// Replaces the store of data directory `dir` with the backup `file`, after
/// checking it (a SQLite database, a ringleader store of a schema this
/// build knows, `quick_check` clean). Refused while any process has the
/// store open. The store it replaces is moved aside, not deleted; its new
/// path is returned with the version restored.
pub fn restore(dir: &Path, file: &Path) -> Result<(u64, Option<PathBuf>), StoreError> {
    let files = Files::of(dir);
    std::fs::create_dir_all(dir).map_err(|e| StoreError::Io(format!("{}: {e}", dir.display())))?;
    let lock = safety::lock_file(&files.lock)?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(StoreError::Io(format!(
                "{}: the store is open (is `ringleader up` running on {}?); stop it first, then restore",
                files.db.display(),
                dir.display()
            )))
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(StoreError::Io(format!("{}: {e}", files.lock.display()))),
    }
    // The copy is what is checked and then renamed into place: the backup
    // itself is only read.
    let staged = dir.join(format!("{}.restoring", safety::DB_FILE));
    let result = (|| {
        let meta = std::fs::metadata(file).map_err(|e| StoreError::Io(format!("{}: {e}", file.display())))?;
        if meta.len() == 0 {
            return Err(StoreError::Io(format!("{}: is empty (0 bytes), not a backup", file.display())));
        }
        std::fs::copy(file, &staged).map_err(|e| StoreError::Io(format!("copying {}: {e}", file.display())))?;
        let mut head = [0u8; 16];
        use std::io::Read;
        std::fs::File::open(&staged)
            .and_then(|mut f| f.read_exact(&mut head))
            .map_err(|e| StoreError::Io(format!("{}: {e}", file.display())))?;
        if &head != b"SQLite format 3\0" {
            return Err(StoreError::Io(format!("{}: not a SQLite database, not a backup", file.display())));
        }
        let conn = Connection::open(&staged).map_err(io_at(file))?;
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(io_at(file))?;
        if version > safety::SCHEMA_VERSION {
            return Err(StoreError::Io(format!(
                "{}: made by a newer ringleader (schema version {version}; this one knows up to {})",
                file.display(),
                safety::SCHEMA_VERSION
            )));
        }
        let findings = safety::quick_check(&conn).map_err(io_at(file))?;
        if !findings.is_empty() {
            return Err(StoreError::Io(format!(
                "{}: fails its integrity check: {}",
                file.display(),
                findings.join("; ")
            )));
        }
        let restored = version_of(&conn, file)?;
        conn.close().map_err(|(_, e)| io_at(file)(e))?;
        let aside = safety::set_aside(dir, "before-restore")?;
        std::fs::rename(&staged, &files.db).map_err(|e| StoreError::Io(format!("{}: {e}", files.db.display())))?;
        Ok((restored, aside))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&staged);
    }
    result
}
