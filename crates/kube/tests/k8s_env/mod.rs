//! The Kubernetes test environment (`scripts/k8s-env.sh`): a real
//! kube-apiserver and etcd on loopback, from the binaries `k8s-env.sh build`
//! cached. Shared by the Kubernetes-mode tests of several crates (included
//! with `#[path]`). Without the binaries (or kubectl) a test is SKIPPED,
//! unless `RINGLEADER_REQUIRE_K8S=1`, where that is a failure.

#![allow(dead_code)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `scripts/k8s-env.sh`.
pub fn script() -> PathBuf {
    repo().join("scripts/k8s-env.sh")
}

/// Runs `program args` with its output in files (no pipe a leftover child
/// could hold open), killing it after `limit`; returns (success, stdout+stderr).
pub fn run_bounded(program: &str, args: &[&str], limit: Duration, scratch: &Path) -> (bool, String) {
    let out_path = scratch.join("cmd.out");
    let err_path = scratch.join("cmd.err");
    let (Ok(out), Ok(err)) = (File::create(&out_path), File::create(&err_path)) else {
        return (false, format!("cannot create output files in {}", scratch.display()));
    };
    let mut child = match Command::new(program).args(args).stdin(Stdio::null()).stdout(out).stderr(err).spawn() {
        Ok(c) => c,
        Err(e) => return (false, format!("cannot run {program}: {e}")),
    };
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let text = format!(
        "{}{}",
        std::fs::read_to_string(&out_path).unwrap_or_default(),
        std::fs::read_to_string(&err_path).unwrap_or_default()
    );
    match status {
        Some(s) => (s.success(), text),
        None => (false, format!("{program} {args:?} still running after {limit:?}, killed\n{text}")),
    }
}

/// What `k8s-env.sh check` says of the cached binaries (`None`: not built).
pub fn cached_binaries() -> Option<String> {
    let out = Command::new("bash").arg(script()).arg("check").stdin(Stdio::null()).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn skip_or_fail(test: &str, why: &str) {
    let required = std::env::var("RINGLEADER_REQUIRE_K8S").is_ok_and(|v| v == "1");
    assert!(!required, "RINGLEADER_REQUIRE_K8S=1 but {why}");
    eprintln!("SKIPPED: {test}: {why} (run scripts/k8s-env.sh build)");
}

/// A running environment, stopped however the test ends (panics included).
pub struct Env {
    /// Its directory (certificates, logs, `kubeconfig`).
    pub dir: PathBuf,
    /// Scratch files of the test.
    pub scratch: tempfile::TempDir,
    _root: tempfile::TempDir,
}

impl Drop for Env {
    fn drop(&mut self) {
        let dir = self.dir.to_string_lossy().into_owned();
        let script = script().to_string_lossy().into_owned();
        let (ok, out) = run_bounded("bash", &[&script, "stop", &dir], Duration::from_secs(60), self.scratch.path());
        if !ok {
            eprintln!("k8s-env stop failed: {out}");
        }
    }
}

impl Env {
    /// Starts an environment for `test`; `None` (after saying SKIPPED) when
    /// this machine has no built binaries or no kubectl.
    pub fn start(test: &str) -> Option<Env> {
        let Some(bin) = cached_binaries() else {
            skip_or_fail(test, "kube-apiserver and etcd are not built");
            return None;
        };
        if !Command::new("kubectl").args(["version", "--client"]).output().is_ok_and(|o| o.status.success()) {
            skip_or_fail(test, "kubectl is not on PATH");
            return None;
        }
        eprintln!("{bin}");
        let root = tempfile::tempdir().expect("tempdir");
        let env = Env { dir: root.path().join("k8s"), scratch: tempfile::tempdir().expect("tempdir"), _root: root };
        let dir = env.dir.to_string_lossy().into_owned();
        let script = script().to_string_lossy().into_owned();
        // The script bounds its own wait for /readyz (90 s); this bounds the script.
        let (ok, out) = run_bounded("bash", &[&script, "start", &dir], Duration::from_secs(150), env.scratch.path());
        assert!(ok, "k8s-env start failed:\n{out}");
        let kubeconfig = format!("{dir}/kubeconfig");
        assert!(out.lines().any(|l| l.trim() == kubeconfig), "start prints {kubeconfig}, got:\n{out}");
        Some(env)
    }

    /// Its kubeconfig.
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.join("kubeconfig")
    }

    /// `kubectl ARGS` against it: (success, output).
    pub fn try_kubectl(&self, args: &[&str]) -> (bool, String) {
        let kubeconfig = self.kubeconfig().to_string_lossy().into_owned();
        let mut all = vec!["--kubeconfig", &kubeconfig, "--request-timeout=20s"];
        all.extend_from_slice(args);
        run_bounded("kubectl", &all, Duration::from_secs(60), self.scratch.path())
    }

    /// `kubectl ARGS` against it, which must succeed.
    pub fn kubectl(&self, args: &[&str]) -> String {
        let (ok, out) = self.try_kubectl(args);
        assert!(ok, "kubectl {args:?} failed:\n{out}");
        out
    }

    /// A kube-rs client of it.
    pub async fn client(&self) -> Result<kube::Client, Box<dyn std::error::Error + Send + Sync>> {
        let kubeconfig = kube::config::Kubeconfig::read_from(self.kubeconfig())?;
        let options = kube::config::KubeConfigOptions::default();
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options).await?;
        Ok(kube::Client::try_from(config)?)
    }
}
