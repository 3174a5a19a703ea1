//! `ringleader up` whose store can no longer be written — a full disk,
//! made real with a file-size limit on the process (RLIMIT_FSIZE, SIGXFSZ
//! ignored, so writes fail with EFBIG as they would with ENOSPC) — does not
//! serve on as a dead plane: `/readyz` first says every component is fine,
//! then the manager's next write fails, and `up` stops the rest and exits
//! non-zero naming the component and why.

mod common;

use common::cluster_yaml;
use ringleader_client::Client;
use ringleader_registry::resources;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Bytes any file of the `up` process may grow to: room for start-up and a
/// minute of heartbeats, not for the ConfigMaps the test writes.
const FILE_LIMIT: u64 = 8 << 20;

#[test]
fn up_exits_non_zero_naming_the_component_when_the_manager_dies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cluster = dir.path().join("cluster.yaml");
    std::fs::write(&cluster, cluster_yaml(51, &[("h1", "hgx-h100-8")])).expect("cluster file");
    let data = dir.path().join("data");
    let mut command = Command::new(env!("CARGO_BIN_EXE_ringleader"));
    command
        .args(["up", "--cluster"])
        .arg(&cluster)
        .arg("--data-dir")
        .arg(&data)
        .args(["--listen", "127.0.0.1:0", "--insecure-plain-http", "--runtime", "simulated"])
        .args(["--heartbeat-interval", "0.2", "--heartbeat-timeout", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: between fork and exec only async-signal-safe calls (setrlimit, signal).
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: FILE_LIMIT as libc::rlim_t, rlim_max: FILE_LIMIT as libc::rlim_t };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut child = command.spawn().expect("ringleader up");
    // Drained all along: a full pipe would block the process on a log line.
    let mut stderr = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let http = reqwest::Client::new();

    // Up, and ready: the manager beats and the node's agent heartbeats.
    let deadline = Instant::now() + Duration::from_secs(60);
    let (client, url) = loop {
        assert!(Instant::now() < deadline, "ringleader up did not come up");
        assert!(child.try_wait().expect("wait").is_none(), "up exited early: {}", reader.join().unwrap_or_default());
        if let Ok(url) = std::fs::read_to_string(data.join("server")) {
            let url = url.trim().to_string();
            if let Ok(c) = Client::from_data_dir(&url, &data) {
                let ready = rt.block_on(async {
                    // The details are the admin's (issue 29).
                    let token = std::fs::read_to_string(data.join("token")).ok()?;
                    let r = http.get(format!("{url}/readyz?verbose")).bearer_auth(token.trim()).send().await.ok()?;
                    (r.status() == 200).then_some(r.text().await.ok()?)
                });
                if let Some(body) = ready {
                    assert!(body.contains("[+]manager ok\n"), "{body}");
                    assert!(body.contains("[+]agents ok: 1 of 1 nodes heartbeating\n"), "{body}");
                    break (c, url);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    };

    // Fill the store's files up to the limit: the API answers the failed
    // write with an error and serves on.
    let configmaps = resources::find("configmaps").expect("configmaps");
    let filler = "x".repeat(256 << 10);
    let mut refused = false;
    for i in 0..64 {
        let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("filler-{i}"), "namespace": "default"}, "data": {"x": filler}});
        if rt.block_on(client.create(configmaps, "default", &cm)).is_err() {
            refused = true;
            break;
        }
    }
    assert!(refused, "the store never filled up");

    // No heartbeat can be stored now: the node goes stale, the manager's
    // NotReady write fails, and `up` ends.
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("up kept serving a dead plane: {}", reader.join().unwrap_or_default());
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stderr = reader.join().unwrap_or_default();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("ringleader up: the manager stopped (manager: store: "), "{stderr}");
    assert!(stderr.contains("; stopping the plane"), "{stderr}");
    // The API is gone with it.
    assert!(rt.block_on(http.get(format!("{url}/livez")).send()).is_err());
}
