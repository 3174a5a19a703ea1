//! A store that is empty, damaged, of a newer version or missing its WAL
//! after a crash is refused naming the file and `--reinit`; `--reinit`
//! starts empty keeping the old file aside; a backup of a running cluster
//! restores into a new data directory with the same objects.

use crate::common::{cluster_yaml, Plane};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn cluster() -> String {
    cluster_yaml(231, &[("store-n1", "hgx-h100-8")])
}

const EXTRA: &[&str] = &["--runtime", "simulated", "--insecure-plain-http"];

fn config_map(name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: default}}\ndata: {{k: {name}}}\n")
}

/// `ringleader up` on `data` that must fail to start: its exit status and stderr.
fn up_refused(dir: &Path, data: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let file = dir.join("cluster.yaml");
    std::fs::write(&file, cluster()).expect("cluster file");
    // Left by the last run: `up` writes it again only once it serves.
    let _ = std::fs::remove_file(data.join("server"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .args(["up", "--cluster"])
        .arg(&file)
        .arg("--data-dir")
        .arg(data)
        .args(["--listen", "127.0.0.1:0"])
        .args(EXTRA)
        .args(extra)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("ringleader up");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        if Instant::now() > deadline || data.join("server").exists() {
            let _ = child.kill();
            let out = child.wait_with_output().expect("wait");
            panic!("ringleader up started on a store it should refuse: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("wait");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn assert_refused(dir: &Path, data: &Path, what: &str) -> String {
    let (code, err) = up_refused(dir, data, &[]);
    assert_ne!(code, Some(0), "{what}: up exited 0: {err}");
    let db = data.join("store.sqlite");
    assert!(err.contains(&db.display().to_string()), "{what}: the message does not name {}: {err}", db.display());
    err
}

/// A data directory with a cluster's worth of objects, stopped cleanly.
fn stopped_plane() -> (Plane, PathBuf) {
    let mut plane = Plane::start(&cluster(), EXTRA);
    plane.apply(&config_map("kept")).expect("apply");
    stop(&mut plane);
    let data = plane.data_dir();
    (plane, data)
}

fn stop(plane: &mut Plane) {
    let Some(mut c) = plane.child.take() else { return };
    unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = c.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = c.kill();
    panic!("ringleader up did not stop within 15 s of SIGTERM");
}

fn ctl(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ringleader")).args(args).output().expect("ringleader")
}

#[test]
fn an_empty_store_is_refused_and_reinit_starts_empty_keeping_it_aside() {
    let (mut plane, data) = stopped_plane();
    std::fs::write(data.join("store.sqlite"), b"").expect("truncate");
    let err = assert_refused(plane.dir.path(), &data, "0-byte store");
    assert!(err.contains("0 bytes") && err.contains("--reinit"), "{err}");
    plane.args_push("--reinit");
    plane.spawn();
    assert!(plane.get("configmaps", "kept").is_none(), "--reinit kept the objects of an empty store?");
    let aside: Vec<_> = std::fs::read_dir(&data)
        .expect("data dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("store.sqlite.reinit-"))
        .collect();
    assert_eq!(aside.len(), 1, "the old store was not kept aside");
}

#[test]
fn a_corrupted_store_is_refused_with_the_finding() {
    let (plane, data) = stopped_plane();
    let db = data.join("store.sqlite");
    let mut bytes = std::fs::read(&db).expect("store");
    assert!(bytes.len() > 3 * 4096, "store too small to damage: {} bytes", bytes.len());
    // Page 2 and after: the header stays intact, the b-trees do not.
    for b in &mut bytes[4096..4096 * 3] {
        *b = 0x5a;
    }
    std::fs::write(&db, &bytes).expect("damage");
    let err = assert_refused(plane.dir.path(), &data, "damaged store");
    assert!(err.contains("--reinit") && (err.contains("integrity") || err.contains("malformed")), "{err}");
}

#[test]
fn a_store_of_a_newer_schema_is_refused() {
    let (plane, data) = stopped_plane();
    let db = data.join("store.sqlite");
    let mut bytes = std::fs::read(&db).expect("store");
    // user_version: a big-endian u32 at offset 60 of the header.
    bytes[60..64].copy_from_slice(&99u32.to_be_bytes());
    std::fs::write(&db, &bytes).expect("write");
    let err = assert_refused(plane.dir.path(), &data, "newer schema");
    assert!(err.contains("newer") && err.contains("99"), "{err}");
}

#[test]
fn a_crash_that_lost_the_wal_is_refused() {
    let mut plane = Plane::start(&cluster(), EXTRA);
    plane.apply(&config_map("in-wal")).expect("apply");
    plane.kill();
    let data = plane.data_dir();
    assert!(data.join("store.open").exists(), "no open marker after a crash");
    let wal = data.join("store.sqlite-wal");
    assert!(wal.exists(), "no WAL after a crash");
    std::fs::remove_file(&wal).expect("remove the WAL");
    let err = assert_refused(plane.dir.path(), &data, "lost WAL");
    assert!(err.contains("store.sqlite-wal") && err.contains("--reinit"), "{err}");
}

#[test]
fn a_backup_of_a_running_cluster_restores_into_a_new_dir() {
    let mut plane = Plane::start(&cluster(), EXTRA);
    for i in 0..20 {
        plane.apply(&config_map(&format!("cm-{i}"))).expect("apply");
    }
    let out = plane.dir.path().join("backup.sqlite");
    let data = plane.data_dir().display().to_string();
    let b = ctl(&["backup", "--data-dir", &data, &out.display().to_string()]);
    assert!(b.status.success(), "backup failed: {}", String::from_utf8_lossy(&b.stderr));
    // Restoring over the running plane's store is refused.
    let r = ctl(&["restore", "--data-dir", &data, &out.display().to_string()]);
    assert!(!r.status.success(), "restore over a running store was accepted");
    assert!(String::from_utf8_lossy(&r.stderr).contains("ringleader up"), "{}", String::from_utf8_lossy(&r.stderr));
    let before: Vec<String> = names(&plane);
    stop(&mut plane);

    let mut other = Plane::start(&cluster(), EXTRA);
    stop(&mut other);
    let new_data = other.data_dir().display().to_string();
    let r = ctl(&["restore", "--data-dir", &new_data, &out.display().to_string()]);
    assert!(r.status.success(), "restore failed: {}", String::from_utf8_lossy(&r.stderr));
    other.spawn();
    assert_eq!(names(&other), before, "the restored cluster's ConfigMaps differ");
    assert!(before.len() >= 20, "{before:?}");
    // A file that is not a backup is refused before anything is replaced.
    let junk = other.dir.path().join("junk.sqlite");
    std::fs::write(&junk, b"not a database at all, just text......").expect("junk");
    stop(&mut other);
    let r = ctl(&["restore", "--data-dir", &new_data, &junk.display().to_string()]);
    assert!(!r.status.success() && String::from_utf8_lossy(&r.stderr).contains("junk.sqlite"));
    other.spawn();
    assert_eq!(names(&other), before, "a refused restore changed the store");
}

fn names(plane: &Plane) -> Vec<String> {
    let mut names: Vec<String> = plane
        .list("configmaps")
        .iter()
        .filter_map(|o| o.pointer("/metadata/name").and_then(|n| n.as_str()).map(str::to_string))
        .collect();
    names.sort();
    names
}
