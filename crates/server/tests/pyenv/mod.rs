//! Python tools the contract tests run (the `kubernetes` client,
//! schemathesis): a venv per tool under the target directory, made on first
//! use and reused after. Without python3, venv or pip a test says so and
//! passes as skipped, unless `RINGLEADER_REQUIRE_PYTHON=1` (CI sets it),
//! where that is a failure.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

fn required() -> bool {
    std::env::var("RINGLEADER_REQUIRE_PYTHON").is_ok_and(|v| v == "1")
}

/// Skips (or fails, when required) saying which test did not run and why.
pub fn skip(what: &str, why: &str) -> TestResult {
    if required() {
        return Err(format!("RINGLEADER_REQUIRE_PYTHON=1 but {why}").into());
    }
    eprintln!("SKIPPED: {what} did not run: {why}");
    Ok(())
}

fn run(cmd: &mut Command) -> Result<std::process::Output, String> {
    cmd.output().map_err(|e| format!("cannot run {cmd:?}: {e}"))
}

/// The venv `<target tmp>/<name>` with `package` installed: returns its
/// `bin/` directory once `ready(bin)` holds, making the venv when it does not.
pub fn venv(name: &str, package: &str, ready: impl Fn(&Path) -> bool) -> Result<PathBuf, String> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let bin = dir.join("bin");
    if ready(&bin) {
        return Ok(bin);
    }
    let out = run(Command::new("python3").arg("--version"))?;
    if !out.status.success() {
        return Err("python3 is not on PATH".to_string());
    }
    let out = run(Command::new("python3").args(["-m", "venv", "--clear"]).arg(&dir))?;
    if !out.status.success() {
        return Err(format!("python3 -m venv failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let out =
        run(Command::new(bin.join("python")).args(["-m", "pip", "install", "--quiet", "--no-cache-dir", package]))?;
    if !out.status.success() {
        return Err(format!("pip install {package} failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    if !ready(&bin) {
        return Err(format!("{package} is not usable in {} after pip install", dir.display()));
    }
    Ok(bin)
}
