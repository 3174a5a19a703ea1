//! k9s, the terminal UI many Kubernetes users live in, against `ringleader
//! up`: its pods, namespaces and job views and a pod's logs, read off its
//! screen under a pseudo-terminal (tmux). Ignored: k9s is built from its Go
//! module first, which takes minutes (`scripts/build-k9s.sh DIR`), then
//!
//!     RINGLEADER_K9S=DIR/bin/k9s cargo test -p ringleader --test k9s -- --ignored
//!
//! With `RINGLEADER_K9S_SCREENS=DIR` the screens are written there as text
//! (docs/k9s/ holds the ones the docs show).

mod common;

use common::Plane;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

fn tmux(socket: &str, args: &[&str]) -> String {
    let out = Command::new("tmux").args(["-L", socket]).args(args).output().expect("tmux");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The screen once it shows `want` (bounded), else a failure with the screen.
fn screen_with(socket: &str, want: &[&str], secs: u64) -> String {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let screen = tmux(socket, &["capture-pane", "-t", "k9s", "-p"]);
        if want.iter().all(|w| screen.contains(w)) {
            return screen;
        }
        assert!(Instant::now() < deadline, "k9s did not show {want:?} within {secs} s:\n{screen}");
        std::thread::sleep(Duration::from_millis(300));
    }
}

struct Session(String);

impl Drop for Session {
    fn drop(&mut self) {
        tmux(&self.0, &["kill-server"]);
    }
}

#[test]
#[ignore = "needs k9s built from its Go module (scripts/build-k9s.sh) and tmux"]
fn k9s_lists_pods_namespaces_and_jobs_and_shows_logs() {
    let k9s = PathBuf::from(std::env::var("RINGLEADER_K9S").expect("RINGLEADER_K9S: the k9s binary to run"));
    assert!(k9s.is_file(), "{}: no k9s there (scripts/build-k9s.sh DIR)", k9s.display());
    let p = Plane::start(&common::example("examples/demo/cluster.yaml"), &[]);
    p.apply(&common::example("examples/demo/deployment-inference.yaml")).expect("apply the inference Deployment");
    p.apply(&common::example("examples/demo/pytorchjob-h100.yaml")).expect("apply the PyTorchJob");
    p.wait_for(60, "the demo's pods running", |p| p.list("pods").iter().any(|pod| pod["status"]["phase"] == "Running"));
    let home = tempfile::tempdir().expect("home");
    let socket = format!("ringleader-k9s-{}", std::process::id());
    let _session = Session(socket.clone());
    let command = format!(
        "env HOME={home} XDG_CONFIG_HOME={home}/config XDG_STATE_HOME={home}/state KUBECONFIG={kc} {k9s} --readonly -n all -c pods",
        home = home.path().display(),
        kc = p.data_dir().join("kubeconfig").display(),
        k9s = k9s.display(),
    );
    tmux(&socket, &["new-session", "-d", "-s", "k9s", "-x", "160", "-y", "40", &command]);
    let mut screens = vec![];
    let pods = screen_with(&socket, &["pods(all)", "demo-infer-0", "demo-pytorch-master-0", "K8s Rev: v1."], 60);
    screens.push(("pods", pods));
    tmux(&socket, &["send-keys", "-t", "k9s", ":ns", "Enter"]);
    let ns = screen_with(&socket, &["namespaces(all)", "default", "kube-system", "platform-system", "Active"], 30);
    screens.push(("namespaces", ns));
    tmux(&socket, &["send-keys", "-t", "k9s", ":pytorchjobs", "Enter"]);
    screens.push(("pytorchjobs", screen_with(&socket, &["pytorchjobs(all)", "demo-pytorch"], 30)));
    tmux(&socket, &["send-keys", "-t", "k9s", ":pods", "Enter"]);
    screen_with(&socket, &["pods(all)"], 30);
    tmux(&socket, &["send-keys", "-t", "k9s", "/demo-infer", "Enter"]);
    screen_with(&socket, &["demo-infer-0"], 30);
    tmux(&socket, &["send-keys", "-t", "k9s", "l"]);
    screens.push(("logs", screen_with(&socket, &["Logs(default/demo-infer-0", "allreduce"], 30)));
    for (_, s) in &screens {
        assert!(!s.contains("Failed to obtain") && !s.contains("forbidden"), "{s}");
    }
    if let Ok(dir) = std::env::var("RINGLEADER_K9S_SCREENS") {
        std::fs::create_dir_all(&dir).expect("screens dir");
        for (name, s) in &screens {
            std::fs::write(PathBuf::from(&dir).join(format!("{name}.txt")), s).expect("write screen");
        }
    }
}
