//! The SQLite side: schema, the single writer connection (every write and
//! every watch registration goes through it, under the store's lock) and a
//! small pool of reader connections that WAL lets run beside the writer.

use crate::seal::{self, Sealer};
use crate::watch::{Watch, Watcher, Watchers};
use crate::{clock, Event, EventType, Keep, ListHead, ObjectKey, Op, Page, Selector, StoreError, Stored};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT OR IGNORE INTO meta (key, value) VALUES ('version', 0), ('pruned', 0);
CREATE TABLE IF NOT EXISTS objects (
    api_version TEXT NOT NULL,
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    object TEXT NOT NULL
);
-- A rowid table with the key in its own index, not a WITHOUT ROWID table:
-- that kept each whole row in its key b-tree, where a row over 1,002 bytes
-- (most pods) spills into an overflow page of its own and every key
-- compare on the way down reads the spilled payload. Here an object of up
-- to 4 KB stays on its leaf page, and the index holds the keys alone (it
-- also counts the rest of a list, remainingItemCount, without the rows).
CREATE UNIQUE INDEX IF NOT EXISTS object_key ON objects (api_version, kind, namespace, name);
CREATE TABLE IF NOT EXISTS events (
    version INTEGER PRIMARY KEY,
    type TEXT NOT NULL,
    api_version TEXT NOT NULL,
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    object TEXT NOT NULL
);
";

/// Schema 1 kept the objects in a `WITHOUT ROWID` table; schema 2 moves
/// them, as they are, into the rowid table [`SCHEMA`] makes: the old table
/// is renamed before it runs and emptied into the new one after (its
/// index goes with it).
const MIGRATE_1_TO_2: (&str, &str) = (
    "ALTER TABLE objects RENAME TO objects_schema_1;",
    "INSERT INTO objects (api_version, kind, namespace, name, version, object)
         SELECT api_version, kind, namespace, name, version, object FROM objects_schema_1;
     DROP TABLE objects_schema_1;",
);

/// Whether the store's `objects` table is schema 1's `WITHOUT ROWID` one.
fn objects_without_rowid(conn: &Connection) -> Result<bool, StoreError> {
    let sql: Option<String> = conn
        .query_row("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'objects'", [], |r| r.get(0))
        .optional()
        .map_err(io)?;
    Ok(sql.is_some_and(|sql| sql.to_ascii_uppercase().contains("WITHOUT ROWID")))
}

const KEY_WHERE: &str = "api_version = ?1 AND kind = ?2 AND namespace = ?3 AND name = ?4";

pub(crate) fn io(e: rusqlite::Error) -> StoreError {
    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull) {
        return StoreError::Io(format!("{}: {e}", crate::types::DISK_FULL));
    }
    StoreError::Io(e.to_string())
}

fn corrupt(e: serde_json::Error) -> StoreError {
    StoreError::Io(format!("stored object is not valid JSON: {e}"))
}

fn open_connection(path: &Path) -> Result<Connection, StoreError> {
    let conn = Connection::open(path).map_err(io)?;
    // Another connection (a reader, or the CLI on the same data dir) may hold
    // the write lock for a moment; wait rather than fail.
    conn.busy_timeout(Duration::from_secs(30)).map_err(io)?;
    conn.set_prepared_statement_cache_capacity(64);
    // Lists read every row of a kind: through mmap the pages come from the
    // page cache without a read() and a copy per page, and a 64 MiB cache
    // keeps a hot collection of tens of thousands of objects in memory.
    conn.execute_batch("PRAGMA mmap_size=1073741824; PRAGMA cache_size=-65536;").map_err(io)?;
    Ok(conn)
}

fn read_meta(conn: &Connection, key: &str) -> Result<u64, StoreError> {
    conn.prepare_cached("SELECT value FROM meta WHERE key = ?1")
        .and_then(|mut s| s.query_row([key], |r| r.get::<_, u64>(0)))
        .map_err(io)
}

fn write_meta(conn: &Connection, key: &str, value: u64) -> Result<(), StoreError> {
    conn.prepare_cached("UPDATE meta SET value = ?2 WHERE key = ?1")
        .and_then(|mut s| s.execute(params![key, value]))
        .map(drop)
        .map_err(io)
}

fn event_type(s: &str) -> Result<EventType, StoreError> {
    match s {
        "ADDED" => Ok(EventType::Added),
        "MODIFIED" => Ok(EventType::Modified),
        "DELETED" => Ok(EventType::Deleted),
        other => Err(StoreError::Io(format!("unknown event type {other:?} in history"))),
    }
}

/// Checks an object handed in by a caller and returns its key and the
/// resourceVersion it claims (absent or `""`: none).
pub(crate) fn validate(object: &Value) -> Result<(ObjectKey, Option<u64>), StoreError> {
    let invalid = |m: &str| Err(StoreError::Invalid(m.to_string()));
    let Some(map) = object.as_object() else {
        return invalid("object: must be a JSON object");
    };
    for field in ["apiVersion", "kind"] {
        if map.get(field).is_some_and(|v| !v.is_string()) {
            return Err(StoreError::Invalid(format!("{field}: must be a string")));
        }
    }
    let meta = match map.get("metadata") {
        None => return invalid("metadata.name: required"),
        Some(Value::Object(meta)) => meta,
        Some(_) => return invalid("metadata: must be an object"),
    };
    for field in ["name", "namespace", "uid", "creationTimestamp"] {
        if meta.get(field).is_some_and(|v| !v.is_string() && !v.is_null()) {
            return Err(StoreError::Invalid(format!("metadata.{field}: must be a string")));
        }
    }
    let claimed = match meta.get("resourceVersion") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(s.parse::<u64>().map_err(|_| {
            StoreError::Invalid(format!("metadata.resourceVersion: {s:?} is not a non-negative integer"))
        })?),
        Some(Value::Number(n)) => Some(n.as_u64().ok_or_else(|| {
            StoreError::Invalid(format!("metadata.resourceVersion: {n} is not a non-negative integer"))
        })?),
        Some(_) => return invalid("metadata.resourceVersion: must be a decimal string"),
    };
    Ok((ObjectKey::of(object)?, claimed))
}

/// `metadata` of an object as a map, created if absent; `None` when the
/// object or its metadata is not a JSON object.
fn metadata_mut(object: &mut Value) -> Option<&mut Map<String, Value>> {
    object.as_object_mut()?.entry("metadata").or_insert_with(|| Value::Object(Map::new())).as_object_mut()
}

fn no_metadata() -> StoreError {
    StoreError::Invalid("metadata: must be an object".to_string())
}

fn set_version(object: &mut Value, version: u64) -> Result<(), StoreError> {
    metadata_mut(object).ok_or_else(no_metadata)?.insert("resourceVersion".into(), Value::String(version.to_string()));
    Ok(())
}

/// Makes `object`'s field at `path` what it is in `from` (absent included).
fn restore(object: &mut Value, from: &Value, path: &[&str]) {
    let Some((last, parents)) = path.split_last() else { return };
    let mut src = Some(from);
    let mut dst = object;
    for p in parents {
        src = src.and_then(|s| s.get(p));
        let Some(next) = dst.get_mut(*p) else { return };
        dst = next;
    }
    let Some(dst) = dst.as_object_mut() else { return };
    match src.and_then(|s| s.get(last)) {
        Some(v) => {
            dst.insert((*last).to_string(), v.clone());
        }
        None => {
            dst.remove(*last);
        }
    }
}

fn check_expected(key: &ObjectKey, expected: Option<u64>, actual: u64) -> Result<(), StoreError> {
    match expected {
        Some(expected) if expected != actual => Err(StoreError::Conflict { key: key.clone(), expected, actual }),
        _ => Ok(()),
    }
}

/// The objects the writer last wrote, as it wrote them: a write to an
/// object written shortly before (a pod created, bound, released, then
/// reported Running) starts from this copy instead of reading and parsing
/// its row again. A copy is used only while its row still carries its
/// version (versions are never reused, so another process writing the file
/// cannot make it stale); most are shared with the callers and watches
/// that received them, so holding them costs little.
#[derive(Default)]
struct Latest {
    objects: std::collections::HashMap<ObjectKey, Arc<Stored>>,
}

impl Latest {
    /// Beyond this many the copies are dropped and the set starts again.
    const MAX: usize = 16_384;

    fn get(&self, key: &ObjectKey, version: u64) -> Option<Arc<Stored>> {
        self.objects.get(key).filter(|s| s.resource_version == version).cloned()
    }

    /// After a commit: what it wrote (`None`: deleted).
    fn keep(&mut self, written: Vec<(ObjectKey, Option<Arc<Stored>>)>) {
        for (key, stored) in written {
            match stored {
                Some(s) => {
                    if self.objects.len() >= Self::MAX && !self.objects.contains_key(&key) {
                        self.objects.clear();
                    }
                    self.objects.insert(key, s);
                }
                None => {
                    self.objects.remove(&key);
                }
            }
        }
    }
}

/// The writes of one transaction.
struct Tx<'c> {
    conn: &'c Connection,
    sealer: &'c Sealer,
    latest: &'c Latest,
    version: u64,
    /// Collected only when some watch is open.
    events: Option<Vec<Event>>,
    /// What the transaction wrote, for [`Latest`] once it commits.
    written: Vec<(ObjectKey, Option<Arc<Stored>>)>,
}

impl Tx<'_> {
    fn load(&self, key: &ObjectKey) -> Result<Option<Arc<Stored>>, StoreError> {
        let mut st =
            self.conn.prepare_cached(&format!("SELECT version, object FROM objects WHERE {KEY_WHERE}")).map_err(io)?;
        let row = st
            .query_row(params![key.api_version, key.kind, key.namespace, key.name], |r| {
                let version = r.get::<_, u64>(0)?;
                // The object's text is read only when no copy holds it.
                match self.latest.get(key, version) {
                    Some(kept) => Ok(Ok(kept)),
                    None => Ok(Err((version, r.get::<_, String>(1)?))),
                }
            })
            .optional()
            .map_err(io)?;
        row.map(|row| match row {
            Ok(kept) => Ok(kept),
            Err((version, text)) => Ok(Arc::new(Stored {
                key: key.clone(),
                resource_version: version,
                object: serde_json::from_str(&self.sealer.open_text(key, &text)?).map_err(corrupt)?,
            })),
        })
        .transpose()
    }

    fn op(&mut self, op: Op) -> Result<Arc<Stored>, StoreError> {
        match op {
            Op::Create(object) => {
                let (key, _) = validate(&object)?;
                if self.load(&key)?.is_some() {
                    return Err(StoreError::AlreadyExists(key));
                }
                self.create(key, object)
            }
            Op::Update(object) => {
                let (key, claimed) = validate(&object)?;
                let current = self.load(&key)?.ok_or_else(|| StoreError::NotFound(key.clone()))?;
                check_expected(&key, claimed, current.resource_version)?;
                self.replace(key, object, current)
            }
            Op::Apply(object) => {
                let (key, _) = validate(&object)?;
                match self.load(&key)? {
                    Some(current) => self.replace(key, object, current),
                    None => self.create(key, object),
                }
            }
            Op::Patch { key, patch, expected } => self.patch(key, &patch, expected),
            Op::Delete { key, expected } => self.delete(key, expected),
        }
    }

    /// [`Tx::op`] on a borrowed op: only what is stored whole is copied.
    fn op_ref(&mut self, op: &Op) -> Result<Arc<Stored>, StoreError> {
        match op {
            Op::Patch { key, patch, expected } => self.patch(key.clone(), patch, *expected),
            Op::Delete { key, expected } => self.delete(key.clone(), *expected),
            Op::Create(_) | Op::Update(_) | Op::Apply(_) => self.op(op.clone()),
        }
    }

    fn create(&mut self, key: ObjectKey, mut object: Value) -> Result<Arc<Stored>, StoreError> {
        let meta = metadata_mut(&mut object).ok_or_else(no_metadata)?;
        meta.insert("uid".into(), Value::String(clock::new_uid()));
        meta.insert("creationTimestamp".into(), Value::String(clock::now_rfc3339()));
        self.put(key, object, EventType::Added)
    }

    /// Writes `object` over `current`, keeping the store-owned metadata. A
    /// replacement that changes nothing is no write (as in Kubernetes), so
    /// controllers that re-assert their state do not wake their own watches.
    fn replace(&mut self, key: ObjectKey, mut object: Value, current: Arc<Stored>) -> Result<Arc<Stored>, StoreError> {
        for field in ["uid", "creationTimestamp"] {
            restore(&mut object, &current.object, &["metadata", field]);
        }
        let meta = metadata_mut(&mut object).ok_or_else(no_metadata)?;
        if !meta.contains_key("uid") {
            meta.insert("uid".into(), Value::String(clock::new_uid()));
        }
        if !meta.contains_key("creationTimestamp") {
            meta.insert("creationTimestamp".into(), Value::String(clock::now_rfc3339()));
        }
        set_version(&mut object, current.resource_version)?;
        if object == current.object {
            return Ok(current);
        }
        self.put(key, object, EventType::Modified)
    }

    fn patch(&mut self, key: ObjectKey, patch: &Value, expected: Option<u64>) -> Result<Arc<Stored>, StoreError> {
        if !patch.is_object() {
            return Err(StoreError::Invalid("patch: must be a JSON object".to_string()));
        }
        let current = self.load(&key)?.ok_or_else(|| StoreError::NotFound(key.clone()))?;
        check_expected(&key, expected, current.resource_version)?;
        let mut object = current.object.clone();
        json_patch::merge(&mut object, patch);
        // The identity and store-owned fields are not the patch's to change:
        // they are silently put back, so a patch built from a whole object works.
        restore(&mut object, &current.object, &["apiVersion"]);
        restore(&mut object, &current.object, &["kind"]);
        if object.get("metadata").is_some_and(|m| !m.is_object()) {
            return Err(no_metadata());
        }
        metadata_mut(&mut object).ok_or_else(no_metadata)?;
        for field in ["namespace", "name", "uid", "creationTimestamp", "resourceVersion"] {
            restore(&mut object, &current.object, &["metadata", field]);
        }
        self.replace(key, object, current)
    }

    fn delete(&mut self, key: ObjectKey, expected: Option<u64>) -> Result<Arc<Stored>, StoreError> {
        let current = self.load(&key)?.ok_or_else(|| StoreError::NotFound(key.clone()))?;
        check_expected(&key, expected, current.resource_version)?;
        self.version += 1;
        let mut object = Arc::unwrap_or_clone(current).object;
        set_version(&mut object, self.version)?;
        self.conn
            .prepare_cached(&format!("DELETE FROM objects WHERE {KEY_WHERE}"))
            .and_then(|mut s| s.execute(params![key.api_version, key.kind, key.namespace, key.name]))
            .map_err(io)?;
        let text = serde_json::to_string(&object).map_err(corrupt)?;
        let text = self.sealer.seal(&key, &text)?;
        self.record(&key, EventType::Deleted, &text)?;
        self.written.push((key.clone(), None));
        self.finish(key, object, EventType::Deleted)
    }

    fn put(&mut self, key: ObjectKey, mut object: Value, kind: EventType) -> Result<Arc<Stored>, StoreError> {
        self.version += 1;
        set_version(&mut object, self.version)?;
        let text = serde_json::to_string(&object).map_err(corrupt)?;
        let text = self.sealer.seal(&key, &text)?;
        self.conn
            .prepare_cached(
                "INSERT INTO objects (api_version, kind, namespace, name, version, object) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
                 ON CONFLICT (api_version, kind, namespace, name) \
                 DO UPDATE SET version = excluded.version, object = excluded.object",
            )
            .and_then(|mut s| {
                s.execute(params![key.api_version, key.kind, key.namespace, key.name, self.version, text.as_ref()])
            })
            .map_err(io)?;
        self.record(&key, kind, &text)?;
        let stored = self.finish(key, object, kind)?;
        self.written.push((stored.key.clone(), Some(stored.clone())));
        Ok(stored)
    }

    fn record(&self, key: &ObjectKey, kind: EventType, text: &str) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT INTO events (version, type, api_version, kind, namespace, name, object) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    self.version,
                    kind.as_str(),
                    key.api_version,
                    key.kind,
                    key.namespace,
                    key.name,
                    text
                ])
            })
            .map(drop)
            .map_err(io)
    }

    fn finish(&mut self, key: ObjectKey, object: Value, kind: EventType) -> Result<Arc<Stored>, StoreError> {
        // One allocation shared by the caller and every watch.
        let stored = Arc::new(Stored { key, resource_version: self.version, object });
        if let Some(events) = &mut self.events {
            events.push(Event { kind, object: stored.clone() });
        }
        Ok(stored)
    }
}

/// One caller's batch of writes in a group commit ([`Writer::write_group`]).
#[derive(Default)]
pub(crate) struct Queued {
    /// The writes; kept (given back) when `keep`, else consumed.
    pub ops: Vec<Op>,
    /// Run from a borrow, so the caller has its ops back (to try them again
    /// one by one, or the deletions once more on a full disk).
    pub keep: bool,
    /// Its results, or why it failed; `None` until a group ran it.
    pub outcome: Option<Result<Vec<Arc<Stored>>, StoreError>>,
}

/// The one connection that writes, with the live watches it feeds.
pub(crate) struct Writer {
    conn: Connection,
    sealer: Arc<Sealer>,
    watchers: Watchers,
    history: u64,
    latest: Latest,
}

impl Writer {
    pub fn open(path: &Path, history: u64, sealer: Arc<Sealer>) -> Result<Writer, StoreError> {
        let unusable = |e: rusqlite::Error| match io(e) {
            full if full.is_disk_full() => full,
            StoreError::Io(m) => crate::safety::refusal(path, &format!("cannot be opened ({m})")),
            other => other,
        };
        let conn = Connection::open(path).map_err(unusable)?;
        // Before anything writes: a damaged file or a newer schema is left as it is.
        crate::safety::check_database(&conn, path)?;
        drop(conn);
        let conn = open_connection(path)?;
        let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0)).map_err(unusable)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Io(format!("{}: cannot use WAL (journal_mode is {mode})", path.display())));
        }
        // FULL: the WAL is synced at every commit, so an acknowledged write
        // survives a power cut, not just a process crash.
        conn.execute_batch("PRAGMA synchronous=FULL;").map_err(io)?;
        // One transaction: a store is migrated whole or not at all.
        let (before, after) = if objects_without_rowid(&conn)? { MIGRATE_1_TO_2 } else { ("", "") };
        // On an error the connection, its transaction still open, is
        // dropped: nothing was written.
        conn.execute_batch(&format!("BEGIN IMMEDIATE; {before} {SCHEMA} {after} COMMIT;")).map_err(io)?;
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(io)?;
        // Only when it changes: a restart on a full disk writes nothing.
        if version != crate::safety::SCHEMA_VERSION {
            conn.execute_batch(&format!("PRAGMA user_version = {}", crate::safety::SCHEMA_VERSION)).map_err(io)?;
        }
        seal_plain_secrets(&conn, &sealer)?;
        Ok(Writer { conn, sealer, watchers: Watchers::default(), history, latest: Latest::default() })
    }

    pub fn version(&self) -> Result<u64, StoreError> {
        read_meta(&self.conn, "version")
    }

    /// Runs the callers' batches of `group` in one transaction (one fsync),
    /// each all or nothing on its own: a batch that fails is rolled back to
    /// its savepoint, its outcome is its error, and the others go on.
    /// Publishes the events once the transaction committed, and returns the
    /// store version after it; `None` when there was nothing to commit (a
    /// lone batch that failed). `Err` when the transaction as a whole
    /// failed: then nothing of it was written, whatever the outcomes say.
    pub fn write_group(&mut self, group: &mut [Queued]) -> Result<Option<u64>, StoreError> {
        let n = group.iter().map(|q| q.ops.len()).sum();
        let events = (!self.watchers.is_empty()).then(|| Vec::with_capacity(n));
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(io)?;
        // Read inside the write lock rather than cached, so that a second
        // process writing the same file cannot make versions collide.
        let start = read_meta(&tx, "version")?;
        let mut w = Tx {
            conn: &tx,
            sealer: &self.sealer,
            latest: &self.latest,
            version: start,
            events,
            written: Vec::with_capacity(n),
        };
        // A lone batch needs no savepoint: its failure drops the transaction.
        let alone = group.len() == 1;
        for q in group.iter_mut() {
            let mark = (w.version, w.events.as_ref().map_or(0, Vec::len), w.written.len());
            if !alone {
                tx.execute_batch("SAVEPOINT batch").map_err(io)?;
            }
            let result = if q.keep {
                q.ops.iter().map(|op| w.op_ref(op)).collect::<Result<Vec<_>, _>>()
            } else {
                std::mem::take(&mut q.ops).into_iter().map(|op| w.op(op)).collect::<Result<Vec<_>, _>>()
            };
            match result {
                Ok(out) => {
                    if !alone {
                        tx.execute_batch("RELEASE batch").map_err(io)?;
                    }
                    q.outcome = Some(Ok(out));
                }
                Err(e) if alone => {
                    // Dropped unfinished, the transaction rolls back.
                    drop(w);
                    drop(tx);
                    q.outcome = Some(Err(e));
                    return Ok(None);
                }
                Err(e) => {
                    // An error SQLite ends the transaction for (a full disk,
                    // an I/O error) takes the whole group with it.
                    let undone = tx.execute_batch("ROLLBACK TO batch; RELEASE batch");
                    if let Err(undo) = undone {
                        return Err(io(undo));
                    }
                    if tx.is_autocommit() {
                        return Err(e);
                    }
                    w.version = mark.0;
                    if let Some(events) = &mut w.events {
                        events.truncate(mark.1);
                    }
                    w.written.truncate(mark.2);
                    q.outcome = Some(Err(e));
                }
            }
        }
        let Tx { version, events, written, .. } = w;
        if version != start {
            write_meta(&tx, "version", version)?;
            prune(&tx, version, self.history)?;
        }
        tx.commit().map_err(io)?;
        self.latest.keep(written);
        if let Some(events) = events {
            self.watchers.publish(&events);
        }
        Ok(Some(version))
    }

    /// Runs `ops` with every check a write makes, then rolls the transaction
    /// back: the results are what would have been stored.
    pub fn dry_run(&mut self, ops: Vec<Op>) -> Result<Vec<Stored>, StoreError> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(io)?;
        let start = read_meta(&tx, "version")?;
        let mut w = Tx {
            conn: &tx,
            sealer: &self.sealer,
            latest: &self.latest,
            version: start,
            events: None,
            written: Vec::new(),
        };
        let mut out = Vec::with_capacity(ops.len());
        for op in ops {
            out.push(Arc::unwrap_or_clone(w.op(op)?));
        }
        tx.rollback().map_err(io)?;
        Ok(out)
    }

    /// Replays history after `from` into a new stream and registers it for
    /// live events; both under the writer's lock, so no write falls between.
    pub fn watch(&mut self, selector: &Selector, from: u64) -> Result<Watch, StoreError> {
        let tx = self.conn.transaction().map_err(io)?;
        let pruned = read_meta(&tx, "pruned")?;
        if from < pruned {
            return Err(StoreError::Expired { requested: from, oldest: pruned });
        }
        let current = read_meta(&tx, "version")?;
        let (sender, events) = tokio::sync::mpsc::unbounded_channel();
        {
            let mut st = tx
                .prepare_cached(
                    "SELECT version, type, api_version, kind, namespace, name, object FROM events \
                     WHERE version > ?1 AND (?2 IS NULL OR api_version = ?2) AND (?3 IS NULL OR kind = ?3) \
                     AND (?4 IS NULL OR namespace = ?4) ORDER BY version",
                )
                .map_err(io)?;
            let mut rows =
                st.query(params![from, selector.api_version, selector.kind, selector.namespace]).map_err(io)?;
            while let Some(row) = rows.next().map_err(io)? {
                let text: String = row.get(6).map_err(io)?;
                let kind: String = row.get(1).map_err(io)?;
                let key = ObjectKey {
                    api_version: row.get(2).map_err(io)?,
                    kind: row.get(3).map_err(io)?,
                    namespace: row.get(4).map_err(io)?,
                    name: row.get(5).map_err(io)?,
                };
                let object = serde_json::from_str(&self.sealer.open_text(&key, &text)?).map_err(corrupt)?;
                let event = Event {
                    kind: event_type(&kind)?,
                    object: Arc::new(Stored { key, resource_version: row.get(0).map_err(io)?, object }),
                };
                // The receiver is still in hand, so this cannot fail.
                let _ = sender.send(event);
            }
        }
        tx.commit().map_err(io)?;
        self.watchers.add(Watcher { selector: selector.clone(), after: from.max(current), sender });
        Ok(Watch { events })
    }

    pub fn close_watches(&mut self) {
        self.watchers.clear();
    }
}

/// Keeps the newest `history` events. Deleting in steps of a tenth of that
/// keeps the cost of pruning off most commits.
fn prune(conn: &Connection, version: u64, history: u64) -> Result<(), StoreError> {
    let pruned = read_meta(conn, "pruned")?;
    let slack = (history / 10).max(1);
    if version.saturating_sub(pruned) > history.saturating_add(slack) {
        let upto = version - history;
        conn.prepare_cached("DELETE FROM events WHERE version <= ?1")
            .and_then(|mut s| s.execute([upto]))
            .map_err(io)?;
        write_meta(conn, "pruned", upto)?;
    }
    Ok(())
}

/// The WHERE terms (and their arguments) of a list: only the fields the
/// selector sets appear, so that a kind selector uses the key index's prefix,
/// and the resume point compares only the key columns after that prefix, so
/// that SQLite seeks straight to it (a row value over the fixed columns too
/// would make it scan the prefix from its start on every page).
fn key_conditions<'a>(selector: &'a Selector, after: Option<&'a ObjectKey>) -> (Vec<String>, Vec<&'a str>) {
    let mut conds = Vec::new();
    let mut args: Vec<&str> = Vec::new();
    let fixed = [("api_version", &selector.api_version), ("kind", &selector.kind), ("namespace", &selector.namespace)];
    for (column, value) in fixed {
        if let Some(value) = value {
            args.push(value);
            conds.push(format!("{column} = ?{}", args.len()));
        }
    }
    if let Some(k) = after {
        let prefix = fixed.iter().take_while(|(_, v)| v.is_some()).count();
        let columns = ["api_version", "kind", "namespace", "name"];
        let values = [k.api_version.as_str(), k.kind.as_str(), k.namespace.as_str(), k.name.as_str()];
        let first = args.len() + 1;
        args.extend(&values[prefix..]);
        let params: Vec<String> = (first..=args.len()).map(|i| format!("?{i}")).collect();
        conds.push(format!("({}) > ({})", columns[prefix..].join(", "), params.join(", ")));
    }
    (conds, args)
}

/// Reader connections, opened on demand and reused.
pub(crate) struct Readers {
    path: PathBuf,
    sealer: Arc<Sealer>,
    pool: Mutex<Vec<Connection>>,
}

const MAX_IDLE_READERS: usize = 8;

impl Readers {
    pub fn new(path: PathBuf, sealer: Arc<Sealer>) -> Readers {
        Readers { path, sealer, pool: Mutex::new(Vec::new()) }
    }

    fn with<R, E: From<StoreError>>(&self, f: impl FnOnce(&mut Connection) -> Result<R, E>) -> Result<R, E> {
        let idle = self.pool.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let mut conn = match idle {
            Some(conn) => conn,
            None => {
                let conn = open_connection(&self.path)?;
                conn.execute_batch("PRAGMA query_only=ON;").map_err(io)?;
                conn
            }
        };
        let result = f(&mut conn);
        let mut pool = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
        if pool.len() < MAX_IDLE_READERS && conn.is_autocommit() {
            pool.push(conn);
        }
        result
    }

    pub fn get(&self, key: &ObjectKey) -> Result<Option<Stored>, StoreError> {
        let latest = Latest::default();
        self.with(|conn| {
            let tx = Tx { conn, sealer: &self.sealer, latest: &latest, version: 0, events: None, written: Vec::new() };
            Ok(tx.load(key)?.map(Arc::unwrap_or_clone))
        })
    }

    pub fn page(
        &self,
        selector: &Selector,
        after: Option<&ObjectKey>,
        limit: Option<usize>,
        mut keep: impl FnMut(&Value) -> bool,
    ) -> Result<Page, StoreError> {
        self.with(|conn| {
            // One read transaction: the version and the rows are the same snapshot.
            let tx = conn.transaction().map_err(io)?;
            let version = read_meta(&tx, "version")?;
            let (conds, args) = key_conditions(selector, after);
            let filter = if conds.is_empty() { String::new() } else { format!("WHERE {}", conds.join(" AND ")) };
            let mut items = Vec::new();
            let mut next = None;
            let mut skipped = false;
            {
                let mut st = tx
                    .prepare_cached(&format!(
                        "SELECT api_version, kind, namespace, name, version, object FROM objects {filter} \
                         ORDER BY api_version, kind, namespace, name"
                    ))
                    .map_err(io)?;
                let mut rows = st.query(rusqlite::params_from_iter(args.iter())).map_err(io)?;
                while let Some(row) = rows.next().map_err(io)? {
                    if limit.is_some_and(|l| items.len() >= l) {
                        next = items.last().map(|s: &Stored| s.key.clone());
                        break;
                    }
                    let key = ObjectKey {
                        api_version: row.get(0).map_err(io)?,
                        kind: row.get(1).map_err(io)?,
                        namespace: row.get(2).map_err(io)?,
                        name: row.get(3).map_err(io)?,
                    };
                    let text = row.get_ref(5).map_err(io)?.as_str().map_err(|e| StoreError::Io(e.to_string()))?;
                    let object: Value = serde_json::from_str(&self.sealer.open_text(&key, text)?).map_err(corrupt)?;
                    if !keep(&object) {
                        skipped = true;
                        continue;
                    }
                    items.push(Stored { key, resource_version: row.get(4).map_err(io)?, object });
                }
            }
            let remaining = remaining(&tx, selector, next.as_ref().filter(|_| !skipped))?;
            tx.commit().map_err(io)?;
            Ok(Page { items, version, next, remaining })
        })
    }

    /// See [`crate::Store::namespaces_in_use`].
    pub fn namespaces(&self) -> Result<Vec<String>, StoreError> {
        self.with(|conn| {
            let mut st =
                conn.prepare_cached("SELECT DISTINCT namespace FROM objects WHERE namespace != ''").map_err(io)?;
            let rows = st.query_map([], |row| row.get::<_, String>(0)).map_err(io)?;
            rows.map(|r| r.map_err(io)).collect()
        })
    }

    /// See [`crate::Store::list_stream`]. Two passes in one read transaction:
    /// the first finds the page's extent by key (reading objects only to
    /// test `keep`), the second hands over the stored text of its rows.
    pub fn stream<E: From<StoreError>>(
        &self,
        selector: &Selector,
        after: Option<&ObjectKey>,
        limit: Option<usize>,
        mut keep: Option<Keep<'_>>,
        head: impl FnOnce(&ListHead) -> Result<(), E>,
        mut row: impl FnMut(&str) -> Result<(), E>,
    ) -> Result<(), E> {
        self.with(|conn| {
            let tx = conn.transaction().map_err(io)?;
            let version = read_meta(&tx, "version")?;
            let (conds, args) = key_conditions(selector, after);
            let filter = if conds.is_empty() { String::new() } else { format!("WHERE {}", conds.join(" AND ")) };
            let order = "ORDER BY api_version, kind, namespace, name";
            let key_of = |r: &rusqlite::Row<'_>| -> Result<ObjectKey, StoreError> {
                Ok(ObjectKey {
                    api_version: r.get(0).map_err(io)?,
                    kind: r.get(1).map_err(io)?,
                    namespace: r.get(2).map_err(io)?,
                    name: r.get(3).map_err(io)?,
                })
            };
            // The keys `keep` accepted, when there is a `keep`.
            let mut wanted: Option<Vec<ObjectKey>> = None;
            let mut next = None;
            let mut skipped = false;
            if let Some((may, keep)) = keep.as_mut() {
                let mut keys = Vec::new();
                let mut st = tx
                    .prepare_cached(&format!(
                        "SELECT api_version, kind, namespace, name, object FROM objects {filter} {order}"
                    ))
                    .map_err(io)?;
                let mut rows = st.query(rusqlite::params_from_iter(args.iter())).map_err(io)?;
                while let Some(r) = rows.next().map_err(io)? {
                    if limit.is_some_and(|l| keys.len() >= l) {
                        next = keys.last().cloned();
                        break;
                    }
                    let text = self.open_row(r)?;
                    if may.is_some_and(|may| !may(&text)) {
                        skipped = true;
                        continue;
                    }
                    let kept = match keep {
                        Some(keep) => keep(&serde_json::from_str(&text).map_err(corrupt)?),
                        None => true,
                    };
                    if kept {
                        keys.push(key_of(r)?);
                    } else {
                        skipped = true;
                    }
                }
                wanted = Some(keys);
            } else if let Some(l) = limit {
                // Keys only: the key index answers without touching the objects.
                let mut st = tx
                    .prepare_cached(&format!(
                        "SELECT api_version, kind, namespace, name FROM objects {filter} {order} LIMIT {}",
                        l.saturating_add(1)
                    ))
                    .map_err(io)?;
                let mut rows = st.query(rusqlite::params_from_iter(args.iter())).map_err(io)?;
                let mut seen = 0;
                let mut last = None;
                while let Some(r) = rows.next().map_err(io)? {
                    if seen == l {
                        next = last.take();
                        break;
                    }
                    seen += 1;
                    last = Some(key_of(r)?);
                }
            }
            let remaining = remaining(&tx, selector, next.as_ref().filter(|_| !skipped))?;
            head(&ListHead { version, next, remaining })?;
            let count = match &wanted {
                Some(keys) => keys.len(),
                None => limit.unwrap_or(usize::MAX),
            };
            let mut sent = 0;
            if count > 0 {
                let mut st = tx
                    .prepare_cached(&format!(
                        "SELECT api_version, kind, namespace, name, object FROM objects {filter} {order}"
                    ))
                    .map_err(io)?;
                let mut rows = st.query(rusqlite::params_from_iter(args.iter())).map_err(io)?;
                while let Some(r) = rows.next().map_err(io)? {
                    if let Some(keys) = &wanted {
                        // Rows come in key order, as the wanted keys do:
                        // anything before the next wanted key was filtered out.
                        if !same_key(r, &keys[sent])? {
                            continue;
                        }
                    }
                    let text = self.open_row(r)?;
                    // Served as stored: check it is JSON without building it.
                    serde_json::from_str::<serde::de::IgnoredAny>(&text).map_err(corrupt)?;
                    row(&text)?;
                    sent += 1;
                    if sent == count {
                        break;
                    }
                }
            }
            tx.commit().map_err(io)?;
            Ok(())
        })
    }
}

impl Readers {
    /// The object text of a `(api_version, kind, namespace, name, object)`
    /// row, decrypted where it is sealed.
    fn open_row<'r>(&self, r: &'r rusqlite::Row<'_>) -> Result<Cow<'r, str>, StoreError> {
        let text = text_of(r, 4)?;
        if !seal::is_sealed(text) {
            return Ok(Cow::Borrowed(text));
        }
        let key = ObjectKey {
            api_version: r.get(0).map_err(io)?,
            kind: r.get(1).map_err(io)?,
            namespace: r.get(2).map_err(io)?,
            name: r.get(3).map_err(io)?,
        };
        Ok(Cow::Owned(self.sealer.open_text(&key, text)?.into_owned()))
    }
}

/// Seals the Secrets a store written before sealing holds in plain text
/// (rows and history), once, when it opens: kube-apiserver leaves that to a
/// storage migration; here it costs one pass over the Secrets.
fn seal_plain_secrets(conn: &Connection, sealer: &Sealer) -> Result<(), StoreError> {
    // Once sealed, every Secret is written sealed: the scan (of the whole
    // history, at every start) is needed only once per store.
    let sealed: Option<u64> =
        conn.query_row("SELECT value FROM meta WHERE key = 'sealed'", [], |r| r.get(0)).optional().map_err(io)?;
    if sealed == Some(1) {
        return Ok(());
    }
    // (events' version or 0 for objects, key, text) of every plain Secret row.
    let plain = |table: &str, version: &str| -> Result<Vec<(i64, ObjectKey, String)>, StoreError> {
        let sql = format!(
            "SELECT {version}, api_version, kind, namespace, name, object FROM {table} \
             WHERE kind = 'Secret' AND api_version = 'v1' AND object NOT LIKE 'k8s:enc:%'"
        );
        let mut st = conn.prepare(&sql).map_err(io)?;
        let rows = st
            .query_map([], |r| {
                let key = ObjectKey { api_version: r.get(1)?, kind: r.get(2)?, namespace: r.get(3)?, name: r.get(4)? };
                Ok((r.get(0)?, key, r.get(5)?))
            })
            .map_err(io)?;
        rows.map(|r| r.map_err(io)).collect()
    };
    let objects = plain("objects", "0")?;
    let events = plain("events", "version")?;
    let tx = conn.unchecked_transaction().map_err(io)?;
    for (_, key, text) in &objects {
        let sealed = sealer.seal(key, text)?;
        let sql = format!("UPDATE objects SET object = ?5 WHERE {KEY_WHERE}");
        tx.execute(&sql, params![key.api_version, key.kind, key.namespace, key.name, sealed.as_ref()]).map_err(io)?;
    }
    for (version, key, text) in &events {
        let sealed = sealer.seal(key, text)?;
        tx.execute("UPDATE events SET object = ?2 WHERE version = ?1", params![version, sealed.as_ref()])
            .map_err(io)?;
    }
    // Best effort: on a full disk the store still opens (the scan runs
    // again at the next start, finding nothing).
    let _ = tx.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('sealed', 1)", []);
    tx.commit().map_err(io)
}

/// Column `i` of a row as text, borrowed.
fn text_of<'r>(r: &'r rusqlite::Row<'_>, i: usize) -> Result<&'r str, StoreError> {
    r.get_ref(i).map_err(io)?.as_str().map_err(|e| StoreError::Io(e.to_string()))
}

/// Whether a row's key columns are `key`.
fn same_key(r: &rusqlite::Row<'_>, key: &ObjectKey) -> Result<bool, StoreError> {
    Ok(text_of(r, 3)? == key.name
        && text_of(r, 2)? == key.namespace
        && text_of(r, 1)? == key.kind
        && text_of(r, 0)? == key.api_version)
}

/// How many rows the selector covers after `last` (`None` without one).
fn remaining(tx: &Connection, selector: &Selector, last: Option<&ObjectKey>) -> Result<Option<u64>, StoreError> {
    let Some(last) = last else { return Ok(None) };
    let (conds, args) = key_conditions(selector, Some(last));
    let sql = format!("SELECT count(*) FROM objects WHERE {}", conds.join(" AND "));
    let count: u64 = tx
        .prepare_cached(&sql)
        .and_then(|mut st| st.query_row(rusqlite::params_from_iter(args.iter()), |r| r.get(0)))
        .map_err(io)?;
    Ok(Some(count))
}
