//! What keeps the store from losing data quietly. Before SQLite opens
//! `store.sqlite`, a file that is empty, unreadable or not a SQLite database
//! is refused (SQLite would take an empty file for a new database and serve
//! an empty cluster); so is a store that was not closed cleanly whose
//! write-ahead log is gone: the `store.open` marker is written once the
//! store is open and removed only after the last connection closed and
//! SQLite checkpointed and removed the `-wal` file, so marker-without-WAL
//! means acknowledged writes were lost. After opening, a schema newer than
//! this build's (`PRAGMA user_version`) and a failed `PRAGMA quick_check`
//! are refused. Every refusal names the file and the two ways on: restore a
//! backup, or start empty with `--reinit` (which keeps the old files aside).
//!
//! The data directory also holds `store.reserve`, a few MiB of zeros written
//! while the disk has room and released when a deletion finds the disk full,
//! so that space can be freed through the API, and `store.lock`, held shared
//! by every open store and exclusively by `ringleader restore`.

use crate::StoreError;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The schema this build writes (`PRAGMA user_version`); a store with a
/// higher one was written by a newer ringleader and is refused, a lower one
/// is migrated when the writer opens it (1 → 2: the objects in a rowid
/// table).
pub const SCHEMA_VERSION: i64 = 2;
/// The database file in a data directory.
pub const DB_FILE: &str = "store.sqlite";
const MARKER: &str = "store.open";
const RESERVE: &str = "store.reserve";
const LOCK: &str = "store.lock";
/// Enough for the write-ahead log of many deletions and a checkpoint.
pub(crate) const RESERVE_BYTES: usize = 8 << 20;
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// The paths of one data directory's store.
#[derive(Debug, Clone)]
pub(crate) struct Files {
    pub db: PathBuf,
    pub wal: PathBuf,
    pub shm: PathBuf,
    pub marker: PathBuf,
    pub reserve: PathBuf,
    pub lock: PathBuf,
}

impl Files {
    pub fn of(dir: &Path) -> Files {
        let db = dir.join(DB_FILE);
        Files {
            wal: dir.join(format!("{DB_FILE}-wal")),
            shm: dir.join(format!("{DB_FILE}-shm")),
            marker: dir.join(MARKER),
            reserve: dir.join(RESERVE),
            lock: dir.join(LOCK),
            db,
        }
    }
}

/// What to do about a store that cannot be used as it is.
pub(crate) fn refusal(db: &Path, what: &str) -> StoreError {
    let dir = db.parent().unwrap_or(Path::new("."));
    StoreError::Io(format!(
        "{}: {what}; refusing to start rather than serve a cluster with objects missing. Restore a backup \
         (`ringleader restore --data-dir {} FILE`) or start empty with `ringleader up --reinit` (the old \
         files are moved aside, not deleted)",
        db.display(),
        dir.display()
    ))
}

/// The checks that need no SQLite: `Ok(())` for a new data directory too.
pub(crate) fn check_files(files: &Files) -> Result<(), StoreError> {
    let meta = match std::fs::metadata(&files.db) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if files.marker.exists() {
                return Err(refusal(&files.db, "is missing, but the store was open when it last stopped"));
            }
            return Ok(());
        }
        Err(e) => return Err(refusal(&files.db, &format!("cannot be read ({e})"))),
        Ok(m) => m,
    };
    if meta.len() == 0 {
        return Err(refusal(&files.db, "is empty (0 bytes): every object it held is gone"));
    }
    let mut head = [0u8; 16];
    let read = File::open(&files.db).and_then(|mut f| f.read_exact(&mut head));
    if let Err(e) = read {
        return Err(refusal(&files.db, &format!("cannot be read ({e})")));
    }
    if &head != SQLITE_MAGIC {
        return Err(refusal(&files.db, "is not a SQLite database (its header is damaged or it is another file)"));
    }
    if files.marker.exists() && !files.wal.exists() {
        return Err(refusal(
            &files.db,
            &format!(
                "was not closed cleanly ({} is there) and its write-ahead log {} is missing: the writes it held are lost",
                files.marker.display(),
                files.wal.display()
            ),
        ));
    }
    Ok(())
}

/// The checks of an open connection: schema version and `quick_check`.
pub(crate) fn check_database(conn: &rusqlite::Connection, db: &Path) -> Result<(), StoreError> {
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| refusal(db, &format!("cannot be read ({e})")))?;
    if version > SCHEMA_VERSION {
        return Err(StoreError::Io(format!(
            "{}: written by a newer ringleader (schema version {version}; this one knows up to {SCHEMA_VERSION}); \
             run that version, or restore a backup made by this one (`ringleader restore`)",
            db.display()
        )));
    }
    let findings = quick_check(conn).map_err(|e| refusal(db, &format!("cannot be checked ({e})")))?;
    if !findings.is_empty() {
        return Err(refusal(db, &format!("fails its integrity check: {}", findings.join("; "))));
    }
    Ok(())
}

/// `PRAGMA quick_check`'s findings (none: the file is sound), at most five.
pub(crate) fn quick_check(conn: &rusqlite::Connection) -> rusqlite::Result<Vec<String>> {
    let mut st = conn.prepare("PRAGMA quick_check(5)")?;
    let rows: Vec<String> = st.query_map([], |r| r.get::<_, String>(0))?.collect::<Result<_, _>>()?;
    Ok(rows.into_iter().filter(|r| r != "ok").collect())
}

/// Held while a store is open: the shared lock and the open marker. Dropped
/// after the store's connections (it is [`crate::Inner`]'s last field), so
/// the marker goes only once SQLite has checkpointed and removed the WAL.
pub(crate) struct OpenGuard {
    _lock: File,
    files: Files,
}

impl OpenGuard {
    pub fn acquire(files: &Files) -> Result<OpenGuard, StoreError> {
        let lock = lock_file(&files.lock)?;
        match lock.try_lock_shared() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(StoreError::Io(format!(
                    "{}: a restore is replacing this store; try again once it finished",
                    files.db.display()
                )))
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(StoreError::Io(format!("{}: {e}", files.lock.display())))
            }
        }
        Ok(OpenGuard { _lock: lock, files: files.clone() })
    }

    /// Marks the store open (call once SQLite has its WAL).
    pub fn mark_open(&self) -> Result<(), StoreError> {
        private_file(&self.files.marker)
            .map(drop)
            .map_err(|e| StoreError::Io(format!("{}: {e}", self.files.marker.display())))
    }
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        // Another process may still have the store open (its WAL is then
        // there): the marker stays, which is the safe side.
        if !self.files.wal.exists() {
            let _ = std::fs::remove_file(&self.files.marker);
        }
    }
}

/// Created (or truncated) with the database's mode: the directory's files are the store's.
fn private_file(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().create(true).truncate(true).write(true).mode(0o600).open(path)
}

pub(crate) fn lock_file(path: &Path) -> Result<File, StoreError> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| StoreError::Io(format!("{}: {e}", path.display())))
}

/// Writes the reserve file if it is not there; `false` when the disk had
/// no room for it (what it got is removed again).
pub(crate) fn make_reserve(path: &Path) -> bool {
    if std::fs::metadata(path).is_ok_and(|m| m.len() >= RESERVE_BYTES as u64) {
        return true;
    }
    // Real zeros, not a sparse file: the blocks must be taken now. No
    // fsync: file systems account the space at write() (delayed allocation
    // included), which is all a reserve needs.
    let written = (|| -> std::io::Result<()> {
        let mut f = private_file(path)?;
        let chunk = vec![0u8; 1 << 20];
        for _ in 0..RESERVE_BYTES / chunk.len() {
            f.write_all(&chunk)?;
        }
        Ok(())
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(path);
    }
    written.is_ok()
}

/// Moves a data directory's store files aside (never deletes them) under
/// `<name>.reinit-<unix seconds>`; returns the new path of the database
/// file, `None` when there was nothing to move.
pub fn set_aside(dir: &Path, why: &str) -> Result<Option<PathBuf>, StoreError> {
    let files = Files::of(dir);
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let mut moved_db = None;
    // The WAL and shm files keep SQLite's naming next to the moved database,
    // so the set-aside copy opens with its log.
    for (path, suffix) in [(&files.db, ""), (&files.wal, "-wal"), (&files.shm, "-shm")] {
        if !path.exists() {
            continue;
        }
        let to = dir.join(format!("{DB_FILE}.{why}-{stamp}{suffix}"));
        std::fs::rename(path, &to).map_err(|e| StoreError::Io(format!("moving {} aside: {e}", path.display())))?;
        if suffix.is_empty() {
            moved_db = Some(to);
        }
    }
    match std::fs::remove_file(&files.marker) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(StoreError::Io(format!("{}: {e}", files.marker.display())))
        }
        _ => {}
    }
    Ok(moved_db)
}

#[cfg(test)]
mod tests {
    use crate::{backup, restore, set_aside, Selector, Store};
    use serde_json::json;
    use std::path::Path;

    fn cm(name: &str) -> serde_json::Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}})
    }

    fn refusal(dir: &Path) -> String {
        match Store::open(dir) {
            Ok(_) => panic!("{} was opened", dir.display()),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_clean_close_leaves_no_marker_and_no_wal_and_a_reserve() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store.create(cm("a")).unwrap();
        assert!(dir.path().join("store.open").exists() && dir.path().join("store.sqlite-wal").exists());
        assert_eq!(std::fs::metadata(dir.path().join("store.reserve")).unwrap().len(), super::RESERVE_BYTES as u64);
        drop(store);
        assert!(!dir.path().join("store.open").exists(), "marker left after a clean close");
        assert!(!dir.path().join("store.sqlite-wal").exists(), "WAL left after a clean close");
        assert_eq!(Store::open(dir.path()).unwrap().list(&Selector::all()).unwrap().0.len(), 1);
    }

    #[test]
    fn an_empty_or_foreign_file_is_refused_naming_it_and_reinit_keeps_it_aside() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("store.sqlite");
        std::fs::write(&db, b"").unwrap();
        let e = refusal(dir.path());
        assert!(e.contains(&db.display().to_string()) && e.contains("0 bytes") && e.contains("--reinit"), "{e}");
        std::fs::write(&db, b"{\"kind\": \"not sqlite\"} and some more bytes").unwrap();
        let e = refusal(dir.path());
        assert!(e.contains("not a SQLite database"), "{e}");
        let aside = set_aside(dir.path(), "reinit").unwrap().unwrap();
        assert!(std::fs::read(&aside).unwrap().starts_with(b"{\"kind\""), "the old file was not kept");
        assert!(Store::open(dir.path()).unwrap().list(&Selector::all()).unwrap().0.is_empty());
    }

    #[test]
    fn a_lost_wal_after_a_crash_and_a_newer_schema_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        drop(Store::open(dir.path()).unwrap());
        // What a crash leaves: the marker; the WAL then went missing.
        std::fs::write(dir.path().join("store.open"), b"").unwrap();
        let e = refusal(dir.path());
        assert!(e.contains("store.sqlite-wal") && e.contains("lost"), "{e}");
        std::fs::remove_file(dir.path().join("store.open")).unwrap();
        let conn = rusqlite::Connection::open(dir.path().join("store.sqlite")).unwrap();
        conn.execute_batch("PRAGMA user_version = 7").unwrap();
        drop(conn);
        let e = refusal(dir.path());
        assert!(e.contains("newer ringleader") && e.contains("schema version 7"), "{e}");
    }

    #[test]
    fn a_backup_taken_while_open_restores_and_restore_waits_for_the_store_to_close() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let store = Store::open(a.path()).unwrap();
        for i in 0..5 {
            store.create(cm(&format!("cm-{i}"))).unwrap();
        }
        let file = a.path().join("copy.sqlite");
        assert_eq!(backup(a.path(), &file).unwrap(), store.version());
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600, "a backup is private");
        // The backup's read-only connection left the open store's WAL alone.
        assert!(a.path().join("store.sqlite-wal").exists());
        let e = restore(a.path(), &file).unwrap_err().to_string();
        assert!(e.contains("the store is open"), "{e}");
        let (version, aside) = restore(b.path(), &file).unwrap();
        assert_eq!((version, aside), (store.version(), None));
        let restored = Store::open(b.path()).unwrap();
        assert_eq!(restored.list(&Selector::all()).unwrap().0.len(), 5);
        drop(restored);
        std::fs::write(a.path().join("junk"), b"junk junk junk junk junk").unwrap();
        let e = restore(b.path(), &a.path().join("junk")).unwrap_err().to_string();
        assert!(e.contains("not a SQLite database"), "{e}");
        assert_eq!(Store::open(b.path()).unwrap().list(&Selector::all()).unwrap().0.len(), 5);
    }
}
