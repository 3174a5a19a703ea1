//! Property-based requests from a tool nobody here wrote: schemathesis
//! (PyPI) reads the server's own OpenAPI v2 document (every path of every
//! group-version in one Swagger 2.0 document) and sends each operation
//! boundary and random parameters and bodies for a bounded time, checking
//! only `not_a_server_error`: no request, however malformed, may get a 5xx
//! or break the connection.
//!
//! schemathesis lives in its own venv under the target directory (not the
//! Python client test's, so the two never race), made on first run and
//! reused after. Without python3, venv or pip the test says so and passes as
//! skipped, unless `RINGLEADER_REQUIRE_PYTHON=1` (CI sets it), where that is
//! a failure. `RINGLEADER_SCHEMATHESIS_SECONDS` lengthens the run (default
//! 40 s of requests; the whole test stays under 90 s once the venv exists),
//! `RINGLEADER_SCHEMATHESIS_PHASES` picks schemathesis' phases and
//! `RINGLEADER_SCHEMATHESIS_SEED` repeats a run.

mod plain;
mod pyenv;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use pyenv::TestResult;

/// The version this test was verified with; a newer one may change the CLI
/// or the report's shape.
const SCHEMATHESIS: &str = "4.32.5";

/// How long schemathesis sends requests unless told otherwise.
const DEFAULT_SECONDS: u64 = 40;

/// Random generation reaches every operation within the default time; the
/// coverage phase (boundary and wrong-type values for each parameter in
/// turn) sends more requests a second but reaches only about half the
/// operations in that time, so it is for longer runs
/// (`RINGLEADER_SCHEMATHESIS_PHASES=coverage,fuzzing`).
const DEFAULT_PHASES: &str = "fuzzing";

/// The venv's `st` at the pinned version, made if needed.
fn venv() -> Result<PathBuf, String> {
    let pinned = |bin: &Path| {
        Command::new(bin.join("st"))
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains(SCHEMATHESIS))
    };
    pyenv::venv("schemathesis-venv", &format!("schemathesis=={SCHEMATHESIS}"), pinned).map(|bin| bin.join("st"))
}

/// Parameters pinned for every operation: a watch or a log follow never
/// ends on its own, and a request that hangs tells nothing about 5xx.
const CONFIG: &str = r#"
[parameters]
"query.timeoutSeconds" = "1"
"query.follow" = "false"

"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_no_server_errors() -> TestResult {
    let st = match tokio::task::spawn_blocking(venv).await? {
        Ok(p) => p,
        Err(why) => return pyenv::skip("the schemathesis run against the OpenAPI document", &why),
    };
    let seconds: u64 = match std::env::var("RINGLEADER_SCHEMATHESIS_SECONDS") {
        Ok(v) => v.parse().map_err(|_| format!("RINGLEADER_SCHEMATHESIS_SECONDS={v:?}: not a whole number"))?,
        Err(_) => DEFAULT_SECONDS,
    };
    let phases = std::env::var("RINGLEADER_SCHEMATHESIS_PHASES").unwrap_or_else(|_| DEFAULT_PHASES.to_string());
    // A seed of our own (schemathesis' are 128-bit), printed, so that a
    // failing run can be repeated with RINGLEADER_SCHEMATHESIS_SEED.
    let seed: u64 = match std::env::var("RINGLEADER_SCHEMATHESIS_SEED") {
        Ok(v) => v.parse().map_err(|_| format!("RINGLEADER_SCHEMATHESIS_SEED={v:?}: not a whole number"))?,
        Err(_) => rand::random(),
    };
    let server = plain::PlainServer::start().await?;
    let config = server.dir.path().join("schemathesis.toml");
    std::fs::write(&config, CONFIG)?;
    let reports = server.dir.path().join("schemathesis-report");
    let started = Instant::now();
    let child = tokio::process::Command::new(&st)
        .arg("--config-file")
        .arg(&config)
        .arg("run")
        .arg(format!("{}/openapi/v2", server.url))
        .args(["--header", &format!("Authorization: Bearer {}", server.token)])
        .args(["--checks", "not_a_server_error"])
        .args(["--max-examples", "10", "--max-time", &seconds.to_string(), "--seed", &seed.to_string()])
        // One worker: generation is Python under the GIL, so a second one
        // adds no throughput, only races inside hypothesis.
        .args(["--workers", "1", "--request-timeout", "10", "--suppress-health-check", "all"])
        .args(["--generation-database", "none", "--no-color", "--phases", &phases, "--report", "json", "--report-dir"])
        .arg(&reports)
        .env("PYTHONUNBUFFERED", "1")
        // Anything it keeps on disk goes to the temporary directory, not the checkout.
        .current_dir(server.dir.path())
        .kill_on_drop(true)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    // schemathesis stops itself at --max-time; this bound is for a hang.
    let limit = Duration::from_secs(seconds + 45);
    let output = match tokio::time::timeout(limit, child.wait_with_output()).await {
        Ok(out) => out?,
        Err(_) => return Err(format!("schemathesis ran longer than {} s", limit.as_secs()).into()),
    };
    let elapsed = started.elapsed();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail = |s: &str| s.chars().rev().take(6000).collect::<Vec<_>>().into_iter().rev().collect::<String>();

    let report_file = std::fs::read_dir(&reports)
        .map_err(|e| format!("no report from schemathesis ({e}):\n{}\n{}", tail(&stdout), tail(&stderr)))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .ok_or_else(|| format!("no JSON report from schemathesis:\n{}\n{}", tail(&stdout), tail(&stderr)))?;
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report_file)?)?;
    let number = |pointer: &str| report.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    let (tested, generated) = (number("/operations/tested"), number("/test_cases/generated"));
    println!(
        "schemathesis {SCHEMATHESIS}: {tested} of {} operations, {generated} test cases, seed {seed}, {:.1} s",
        number("/operations/total"),
        elapsed.as_secs_f64()
    );

    if let Some(at) = stdout.find("SUMMARY") {
        println!("{}", &stdout[at..]);
    }

    let mut problems = Vec::new();
    for failure in report["failures"].as_array().into_iter().flatten() {
        let operations: Vec<&str> =
            failure["operations"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        problems.push(format!("{} ({} cases): {}", failure["title"], failure["count"], operations.join(", ")));
    }
    for error in report["errors"].as_array().into_iter().flatten() {
        let title = error["title"].as_str().unwrap_or_default();
        // A dropped connection is what a panicking handler looks like from
        // outside; errors inside schemathesis itself say nothing of the server.
        if title.contains("Network") || title.contains("Connection") {
            problems.push(format!("{title} ({} requests)", error["count"]));
        } else {
            let at: Vec<&str> = stdout.lines().filter(|l| l.starts_with("___")).collect();
            eprintln!("schemathesis reported an error of its own, not the server's: {title} at {}", at.join(" "));
        }
    }
    assert!(
        problems.is_empty(),
        "schemathesis found server errors:\n  {}\n\n{}\n{}",
        problems.join("\n  "),
        tail(&stdout),
        tail(&stderr)
    );
    // A run that reached no operation proves nothing. How many cases fit in
    // the time depends on the machine: a debug server on two shared cores
    // gets 480-600 in 40 s, so the floor is half that, not a speed bar.
    assert!(
        tested > 50 && generated > 250,
        "too little was tested ({tested} operations, {generated} cases):\n{stdout}"
    );
    Ok(())
}
