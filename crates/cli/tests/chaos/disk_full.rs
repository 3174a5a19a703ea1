//! A data directory on a 64 MiB tmpfs filled through the API until writes
//! fail: readiness then fails naming the store, a DELETE still succeeds
//! (the store's reserve file gives deletions room), SIGTERM on the full
//! disk stops `up` within 10 s, a restart on the still-full disk fails
//! saying what to do, and once space is freed it comes up with every
//! acknowledged object.
//!
//! Needs root (mount). Without it the test says so and passes as skipped,
//! unless `RINGLEADER_REQUIRE_TMPFS=1` (CI sets it).

use crate::common::{cluster_yaml, find, Plane};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Unmounts the tmpfs when the test ends, however it ends.
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let ok = Command::new("umount").arg(&self.0).status().is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
        let _ = std::fs::remove_dir(&self.0);
        // The test directory around it, left by its TempDir while mounted.
        if let Some(parent) = self.0.parent() {
            let _ = std::fs::remove_dir(parent);
        }
    }
}

fn mount_tmpfs(at: &Path) -> Result<Mount, String> {
    std::fs::create_dir_all(at).map_err(|e| e.to_string())?;
    let out = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64m,mode=0700", "tmpfs"])
        .arg(at)
        .output()
        .map_err(|e| format!("mount: {e}"))?;
    if !out.status.success() {
        return Err(format!("mount -t tmpfs failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(Mount(at.to_path_buf()))
}

fn big_config_map(i: usize) -> String {
    let blob = "x".repeat(200 * 1024);
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: fill-{i}, namespace: default}}\ndata: {{blob: {blob}}}\n"
    )
}

fn readyz(plane: &Plane) -> (u16, String) {
    let url = format!("{}/readyz?verbose", plane.client.base());
    // The details are the admin's; anyone else reads only whether it is ready.
    let token = std::fs::read_to_string(plane.data_dir().join("token")).unwrap_or_default();
    plane.rt.block_on(async {
        match plane.client.http().get(&url).bearer_auth(token.trim()).send().await {
            Ok(r) => {
                let code = r.status().as_u16();
                (code, r.text().await.unwrap_or_default())
            }
            Err(e) => (0, e.to_string()),
        }
    })
}

#[test]
fn a_full_disk_fails_readiness_keeps_deletes_and_stops_and_restarts() {
    if unsafe { libc::geteuid() } != 0 {
        if std::env::var("RINGLEADER_REQUIRE_TMPFS").is_ok_and(|v| v == "1") {
            panic!("RINGLEADER_REQUIRE_TMPFS=1 but not running as root (mounting a tmpfs needs it)");
        }
        eprintln!(
            "SKIPPED: a_full_disk_fails_readiness_keeps_deletes_and_stops_and_restarts: needs root to mount a tmpfs"
        );
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mount = match mount_tmpfs(&dir.path().join("data")) {
        Ok(m) => m,
        Err(why) if std::env::var("RINGLEADER_REQUIRE_TMPFS").is_ok_and(|v| v == "1") => {
            panic!("RINGLEADER_REQUIRE_TMPFS=1 but {why}")
        }
        Err(why) => {
            eprintln!("SKIPPED: a_full_disk_fails_readiness_keeps_deletes_and_stops_and_restarts: {why}");
            return;
        }
    };
    // Several nodes: their agent's heartbeats are held and retried while
    // the disk is full, which is what used to keep `up` from stopping.
    let nodes =
        [("disk-n1", "hgx-h100-8"), ("disk-n2", "hgx-h100-8"), ("disk-n3", "hgx-h100-8"), ("disk-n4", "hgx-h100-8")];
    let cluster = cluster_yaml(232, &nodes);
    // Someone else's file on the same disk: what the operator frees below.
    // As large as the store's own reserve: the restart's first commit
    // checkpoints the WAL the unclean stop left (about 5 MB here) into the
    // database file, which can grow by as much before the kubeconfig is
    // written.
    let ballast = dir.path().join("data").join("ballast");
    std::fs::write(&ballast, vec![1u8; 8 << 20]).expect("ballast");
    let extra = ["--runtime", "simulated", "--insecure-plain-http", "--backup-interval", "0"];
    let mut plane = Plane::start_in(dir, &cluster, &extra);

    // 64 MiB at 200 KiB an object: full well before 400.
    let mut stored = 0;
    let mut failure = None;
    for i in 0..400 {
        match plane.apply(&big_config_map(i)) {
            Ok(()) => stored += 1,
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    let failure = failure.expect("400 objects of 200 KiB fitted on a 64 MiB disk");
    assert!(stored > 10, "writes failed after {stored} objects: {failure}");
    assert!(failure.contains("disk is full") || failure.contains("507"), "not a disk-full answer: {failure}");

    let deadline = Instant::now() + Duration::from_secs(10);
    let (code, body) = loop {
        let (code, body) = readyz(&plane);
        if code == 500 || Instant::now() > deadline {
            break (code, body);
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(code, 500, "/readyz with a full disk: {body}");
    assert!(body.contains("[-]store") && body.contains("cannot write"), "{body}");

    let cm = find("configmaps");
    let deleted = plane.rt.block_on(plane.client.delete(cm, "default", "fill-0", None));
    assert!(deleted.is_ok(), "DELETE on a full disk: {:?}", deleted.err());
    assert!(plane.get("configmaps", "fill-0").is_none(), "fill-0 still there after its DELETE");

    // Full again (the deletion's room taken), so the stop below meets the
    // agent's heartbeats held and retried.
    let refilled = (400..500).take_while(|i| plane.apply(&big_config_map(*i)).is_ok()).count();
    assert!(refilled < 100, "the disk did not fill again");
    // And the last pages too, so that even the agent's heartbeats find no
    // room: it holds them and retries, which is what kept `up` from stopping.
    let small = |i: usize| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: small-{i}, namespace: default}}\ndata: {{v: {}}}\n",
            "y".repeat(2000)
        )
    };
    let smalls = (0..3000).take_while(|i| plane.apply(&small(*i)).is_ok()).count();
    assert!(smalls < 3000, "3,000 small objects still fitted");
    std::thread::sleep(Duration::from_secs(1));

    let child = plane.child.take().expect("up runs");
    let pid = child.id() as i32;
    let started = Instant::now();
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let mut child = child;
    let stopped = loop {
        if let Ok(Some(_)) = child.try_wait() {
            break true;
        }
        if started.elapsed() > Duration::from_secs(10) {
            break false;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    if !stopped {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert!(stopped, "SIGTERM did not stop `up` within 10 s on a full disk");
    eprintln!(
        "full after {stored} objects ({failure}); /readyz: {code}; stopped {:.1} s after SIGTERM",
        started.elapsed().as_secs_f64()
    );

    // Still full: the restart cannot write its new kubeconfig (a new port)
    // and says so, rather than hang or start half-way.
    let refused = plane.spawn_refused();
    assert!(refused.contains("kubeconfig") && refused.contains("free space"), "{refused}");
    std::fs::remove_file(&ballast).expect("free the ballast");
    plane.spawn();
    assert!(plane.get("configmaps", &format!("fill-{}", stored - 1)).is_some(), "an acknowledged object was lost");
    if refilled > 0 {
        assert!(
            plane.get("configmaps", &format!("fill-{}", 400 + refilled - 1)).is_some(),
            "an acknowledged object was lost"
        );
    }
    assert!(plane.get("configmaps", "fill-0").is_none(), "the deleted object came back");
    // The refused write left nothing behind, not even part of it.
    assert!(plane.get("configmaps", &format!("fill-{stored}")).is_none(), "a write answered 507 was stored");
    drop(plane);
    drop(mount);
}
