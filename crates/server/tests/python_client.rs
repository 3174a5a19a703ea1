//! Contract test with a client nobody here wrote: the Python `kubernetes`
//! package (PyPI), unchanged, runs tests/python/contract.py against a
//! server over HTTPS (the kubeconfig names its CA, as `up`'s does): typed list/read/create of pods, set-based selectors, dry run,
//! strategic merge and JSON patches, paging, a watch, custom objects, and
//! 404/409/415/422 as `ApiException`s with Kubernetes' reasons.
//!
//! The client lives in a venv under the target directory, made on first run
//! (`python3 -m venv`, `pip install kubernetes`) and reused after. Without
//! python3, venv or pip the test says so and passes as skipped, unless
//! `RINGLEADER_REQUIRE_PYTHON=1` (CI sets it), where that is a failure.

mod plain;
mod pyenv;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use pyenv::TestResult;

/// The venv's python with `kubernetes` importable, made if needed.
fn venv() -> Result<PathBuf, String> {
    let importable = |bin: &Path| {
        Command::new(bin.join("python")).args(["-c", "import kubernetes"]).output().is_ok_and(|o| o.status.success())
    };
    pyenv::venv("python-kubernetes-venv", "kubernetes", importable).map(|bin| bin.join("python"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_kubernetes_client_contract() -> TestResult {
    let python = match tokio::task::spawn_blocking(venv).await? {
        Ok(p) => p,
        Err(why) => return pyenv::skip("the Python kubernetes-client contract test", &why),
    };
    let server = plain::PlainServer::start_tls().await?;
    let kubeconfig = server.write_kubeconfig()?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/contract.py");
    let mut child = tokio::process::Command::new(&python)
        .arg(&script)
        .arg(&kubeconfig)
        .arg("contract")
        .env("PYTHONUNBUFFERED", "1")
        .kill_on_drop(true)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let read = |pipe: Option<tokio::process::ChildStdout>| async move {
        let mut text = String::new();
        if let Some(mut p) = pipe {
            tokio::io::AsyncReadExt::read_to_string(&mut p, &mut text).await.map(|_| text)
        } else {
            Ok(text)
        }
    };
    let err_text = async move {
        let mut text = String::new();
        if let Some(mut p) = stderr {
            tokio::io::AsyncReadExt::read_to_string(&mut p, &mut text).await?;
        }
        Ok::<_, std::io::Error>(text)
    };
    let outcome = tokio::time::timeout(Duration::from_secs(120), async {
        let (out, err, status) = tokio::join!(read(stdout), err_text, child.wait());
        Ok::<_, std::io::Error>((out?, err?, status?))
    })
    .await;
    let (out, err, status) = match outcome {
        Ok(r) => r?,
        Err(_) => return Err("the Python contract script ran longer than 120 s".into()),
    };
    println!("{out}");
    assert!(status.success() && out.contains("CONTRACT OK"), "contract.py failed ({status}):\n{out}\n{err}");
    Ok(())
}
