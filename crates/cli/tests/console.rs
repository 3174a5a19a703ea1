//! The web console in a real browser: Debian's headless Chromium, driven
//! through chromedriver (WebDriver), against `ringleader up` over TLS. A user
//! signs in with a token, submits a job from YAML, watches it go Running,
//! reads its live log, sees a broken YAML's error at its field, stops a
//! training run and opens a node's device map. Skipped when chromium or
//! chromedriver is missing, unless `RINGLEADER_REQUIRE_CHROMIUM=1` (CI).
//!
//! With `RINGLEADER_CONSOLE_SCREENSHOTS=DIR` (absolute: tests run in the
//! crate's folder) the main pages are also saved as PNGs there
//! (docs/console/ is made this way).

mod common;

use common::{cluster_yaml, Plane};
use fantoccini::{elements::Element, Client, ClientBuilder, Locator};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// chromedriver on a free loopback port, killed on drop.
struct Driver {
    child: Child,
    port: u16,
    _profile: tempfile::TempDir,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn available() -> bool {
    let present = Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists();
    if !present && std::env::var("RINGLEADER_REQUIRE_CHROMIUM").is_ok_and(|v| v == "1") {
        panic!("RINGLEADER_REQUIRE_CHROMIUM=1 but {CHROMIUM} or {CHROMEDRIVER} is missing");
    }
    if !present {
        eprintln!("skipped: {CHROMIUM} or {CHROMEDRIVER} not installed");
    }
    present
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("free port")
}

/// Starts chromedriver on a port that was free a moment ago; if another
/// process took it meanwhile chromedriver exits, and another port is tried.
fn start_driver() -> Driver {
    for _attempt in 0..3 {
        let port = free_port();
        let mut child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver");
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut exited = false;
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not listen on {port}");
            if child.try_wait().is_ok_and(|s| s.is_some()) {
                exited = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if !exited {
            return Driver { child, port, _profile: tempfile::tempdir().expect("profile dir") };
        }
        let _ = child.wait();
    }
    panic!("chromedriver exited at start three times (ports taken?)");
}

async fn browser(driver: &Driver) -> Client {
    let args = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-dev-shm-usage",
        // The server's certificate is signed by the cluster's own CA, which
        // this throwaway profile does not trust.
        "--ignore-certificate-errors",
        "--window-size=1366,900",
        "--lang=en-US",
    ];
    let mut args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    args.push(format!("--user-data-dir={}", driver._profile.path().display()));
    let mut caps = serde_json::Map::new();
    caps.insert("goog:chromeOptions".into(), json!({"binary": CHROMIUM, "args": args}));
    caps.insert("acceptInsecureCerts".into(), json!(true));
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    ClientBuilder::new(connector)
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("a Chromium session")
}

/// Waits (bounded) until `css` matches an element whose text satisfies `ok`.
async fn wait_text(c: &Client, css: &str, what: &str, ok: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = String::new();
    loop {
        if let Ok(e) = c.find(Locator::Css(css)).await {
            if let Ok(text) = e.text().await {
                if ok(&text) {
                    return text;
                }
                last = text;
            }
        }
        if Instant::now() > deadline {
            let shot = c.screenshot().await.unwrap_or_default();
            let path = std::env::temp_dir().join("ringleader-console-failure.png");
            let _ = std::fs::write(&path, shot);
            panic!("timed out waiting for {what} ({css}); last text: {last:?}; screenshot at {}", path.display());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn find(c: &Client, css: &str) -> Element {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(e) = c.find(Locator::Css(css)).await {
            return e;
        }
        assert!(Instant::now() < deadline, "no element {css}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Clicks `css`, finding it again when a live re-render replaced the element
/// between the find and the click (a stale reference).
async fn click(c: &Client, css: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match c.find(Locator::Css(css)).await {
            Ok(e) => match e.click().await {
                Ok(()) => return,
                Err(err) => assert!(Instant::now() < deadline, "clicking {css}: {err}"),
            },
            Err(err) => assert!(Instant::now() < deadline, "no element {css}: {err}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Replaces a textarea's text (typing thousands of characters key by key is slow).
async fn set_value(c: &Client, css: &str, text: &str) {
    // The page may still be rendering (the first one waits for discovery).
    find(c, css).await;
    c.execute("document.querySelector(arguments[0]).value = arguments[1]; document.querySelector(arguments[0]).dispatchEvent(new Event('input'));", vec![json!(css), json!(text)])
        .await
        .expect("set value");
}

async fn shoot(c: &Client, name: &str) {
    let Ok(dir) = std::env::var("RINGLEADER_CONSOLE_SCREENSHOTS") else { return };
    tokio::time::sleep(Duration::from_millis(400)).await;
    let png = c.screenshot().await.expect("screenshot");
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    std::fs::write(PathBuf::from(dir).join(format!("{name}.png")), png).expect("write screenshot");
}

const JOB: &str = "apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: console-ddp
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch:2.3
            command: [sh, -c, 'echo \"<b id=pwned>markup</b>\"; i=0; while [ $i -lt 600 ]; do echo step $i rank $RANK; i=$((i+1)); sleep 0.2; done']
            resources: {limits: {nvidia.com/gpu: 2}}
    Worker:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch:2.3
            command: [sh, -c, 'sleep 120']
            resources: {limits: {nvidia.com/gpu: 2}}
";

/// Line 15 (`Worker` `replicas: -1`) is the broken field.
const BROKEN: &str = "apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: broken
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch:2.3
    Worker:
      replicas: -1
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch:2.3
";

#[test]
fn a_user_works_through_the_console_in_chromium() {
    if !available() {
        return;
    }
    let cluster = cluster_yaml(71, &[("gpu-1", "hgx-h100-8"), ("gpu-2", "hgx-h100-8")]);
    let plane = Plane::start(&cluster, &["--history-interval", "1"]);
    let url = std::fs::read_to_string(plane.data_dir().join("server")).expect("server url").trim().to_string();
    let token = std::fs::read_to_string(plane.data_dir().join("token")).expect("token").trim().to_string();
    let driver = start_driver();
    // Its own runtime: the plane's helpers block on the plane's.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let c = browser(&driver).await;
        let outcome = journey(&c, &plane, &url, &token).await;
        let _ = c.close().await;
        outcome
    });
}

async fn journey(c: &Client, plane: &Plane, url: &str, token: &str) {
    // Sign in: a wrong token is refused on the form, the right one opens the console.
    c.goto(url).await.expect("open console");
    shoot(c, "login").await;
    find(c, "#token").await.send_keys("not-the-token").await.expect("type");
    click(c, "#login").await;
    wait_text(c, "#login-error", "the refusal", |t| !t.is_empty()).await;
    let field = find(c, "#token").await;
    field.clear().await.expect("clear");
    // Keyboard: Enter in the field signs in.
    field.send_keys(&format!("{token}\u{E007}")).await.expect("type token and Enter");
    wait_text(c, "#nav", "the navigation", |t| t.contains("Jobs")).await;
    let href = c.current_url().await.expect("url");
    assert!(!href.as_str().contains(token), "the token must not travel in a URL: {href}");

    // A broken YAML: the error names the field and marks its line.
    c.goto(&format!("{url}/#/submit")).await.expect("submit page");
    set_value(c, "#yaml-input", BROKEN).await;
    click(c, "#submit").await;
    let errors = wait_text(c, "#submit-errors", "the validation error", |t| t.contains("replicas")).await;
    assert!(errors.contains("Worker"), "{errors}");
    let item = find(c, "#submit-errors li[data-field*='replicas']").await;
    assert_eq!(
        item.attr("data-line").await.expect("attr").as_deref(),
        Some("15"),
        "the error points at `replicas: -1`"
    );
    assert!(get(plane, "PyTorchJob", "broken").await.is_none(), "nothing was applied");
    shoot(c, "submit-error").await;

    // Submit the job, follow it to Running and read its live log.
    set_value(c, "#yaml-input", JOB).await;
    click(c, "#submit").await;
    wait_text(c, "#applied", "the applied list", |t| t.contains("console-ddp")).await;
    click(c, "#applied a").await;
    // The timeline, open from the first moment, follows the job's watch to Running.
    click(c, "[role=tab]:nth-child(6)").await;
    wait_text(c, "[role=tabpanel] .timeline", "Running on the timeline", |t| t.contains("Running")).await;
    wait_text(c, "#job-phase", "Running", |t| t.contains("Running")).await;
    shoot(c, "job").await;
    click(c, "[role=tab]:nth-child(2)").await;
    let first = wait_text(c, "#log", "log lines", |t| t.contains("step 3 rank")).await;
    // Live: later lines arrive without reloading.
    let n: usize = first.lines().count();
    wait_text(c, "#log", "more log lines", |t| t.lines().count() > n + 3).await;
    shoot(c, "log").await;
    // What a tenant's process prints is text, never markup.
    assert!(first.contains("<b id=pwned>markup</b>"), "{first}");
    assert!(c.find(Locator::Css("#pwned")).await.is_err(), "a log line became an element");

    // The node holding the job's devices shows them on its device map.
    let master = get(plane, "Pod", "console-ddp-master-0").await.expect("master pod");
    let node = master["spec"]["nodeName"].as_str().expect("bound").to_string();
    let held: Vec<String> = master["metadata"]["annotations"]["ringleader.io/devices"]
        .as_str()
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_string())
        .collect();
    assert_eq!(held.len(), 2, "{held:?}");
    c.goto(&format!("{url}/#/nodes/{node}")).await.expect("node page");
    for d in &held {
        let cell = wait_text(c, &format!("#device-{d}"), "a held device", |t| t.contains("console-ddp-master-0")).await;
        assert!(!cell.is_empty());
    }
    shoot(c, "node").await;
    // The node list's devices-used figure (from the sampled history) counts
    // what the job's pods hold on that node.
    let mut on_node = 0;
    for pod in ["console-ddp-master-0", "console-ddp-worker-0"] {
        let p = get(plane, "Pod", pod).await.expect("pod");
        if p["spec"]["nodeName"] == node.as_str() {
            on_node +=
                p["metadata"]["annotations"]["ringleader.io/devices"].as_str().unwrap_or_default().split(',').count();
        }
    }
    c.goto(&format!("{url}/#/nodes")).await.expect("nodes");
    let want = format!("{on_node} / 8");
    wait_text(c, &format!(".node-used[data-node={node}]"), "the devices used", |t| t.starts_with(&want)).await;

    // A training run stopped from the console: its record stays, its devices go.
    platform_objects(plane).await;
    c.goto(&format!("{url}/#/jobs/7/default/bert")).await.expect("training job");
    wait_text(c, "[data-run='bert-r1']", "the run", |_| true).await;
    // The run's detail, open while it runs, follows its watch: its pods' states change in place.
    click(c, "[data-open-run='bert-r1']").await;
    wait_text(c, "#run-pods", "the run's pods running", |t| t.contains("Running")).await;
    // The runs table re-renders on every change of the run: find the button afresh each time.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let stop = find(c, "[data-run='bert-r1']").await;
        if stop.attr("disabled").await.is_ok_and(|d| d.is_none()) && stop.click().await.is_ok() {
            break;
        }
        assert!(Instant::now() < deadline, "stop never clicked");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let run = get(plane, "Run", "bert-r1").await.unwrap_or_default();
        if matches!(run["status"]["state"].as_str(), Some("stopped" | "stopping")) {
            break;
        }
        assert!(Instant::now() < deadline, "run not stopped: {run}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    wait_text(c, "#tab-0", "runs tab", |t| !t.is_empty()).await;
    wait_text(c, "#run-pods", "the run's pods no longer running", |t| !t.contains("Running")).await;
    // Run again: a second run, numbered after the first, appears live.
    click(c, "#rerun").await;
    wait_text(c, "[data-run='bert-r2']", "the second run", |_| true).await;
    assert!(get(plane, "Run", "bert-r2").await.is_some_and(|r| r["spec"]["trainingJob"] == "bert"));
    shoot(c, "training-job").await;
    // Clone under a new name (the console asks for it in a prompt).
    click(c, "#clone").await;
    c.send_alert_text("bert-copy").await.expect("name the copy");
    c.accept_alert().await.expect("accept");
    wait_text(c, "h1", "the copy's page", |t| t.contains("bert-copy")).await;
    let copy = get(plane, "TrainingJob", "bert-copy").await.expect("the copy");
    let original = get(plane, "TrainingJob", "bert").await.expect("bert");
    assert_eq!(copy["spec"], original["spec"]);

    // Charts of the embedded history: the node's allocated GPUs.
    c.goto(&format!("{url}/#/charts?prefix=node/{node}/devices-allocated")).await.expect("charts");
    wait_text(c, "#charts figcaption", "a chart", |t| t.contains(&format!("node/{node}/devices-allocated"))).await;
    shoot(c, "charts").await;

    // A collective check made through the API, its report read in the console.
    let check = json!({
        "apiVersion": "ringleader.io/v1alpha1", "kind": "CheckRun", "metadata": {"name": "coll-console"},
        "spec": {"type": "collective", "nodes": ["gpu-1", "gpu-2"], "operations": ["all_reduce"],
                 "minBytes": 4096, "maxBytes": 8192, "iterations": 2, "warmup": 1}
    });
    plane.client.create(common::find("CheckRun"), "", &check).await.expect("check run");
    c.goto(&format!("{url}/#/checks/coll-console")).await.expect("check page");
    let report =
        wait_text(c, "#check-report", "the check's table", |t| t.contains("Succeeded") && t.contains("8192")).await;
    assert!(report.contains("data_size(Bytes)") && report.contains("bus_bandwidth(GB/s)"), "{report}");
    shoot(c, "check").await;

    // A queue locked from the console: the API's queue is Closed.
    c.goto(&format!("{url}/#/queues")).await.expect("queues");
    click(c, "#queue-lock-default").await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while get(plane, "Queue", "default").await.unwrap_or_default()["status"]["state"] != "Closed" {
        assert!(Instant::now() < deadline, "queue not locked");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    wait_text(c, "[data-queue-state=default]", "the closed badge", |t| t.contains("Closed")).await;
    shoot(c, "queues").await;
    click(c, "#queue-lock-default").await;

    c.goto(&format!("{url}/#/overview")).await.expect("overview");
    wait_text(c, "#ov-families", "capacity", |t| t.contains("nvidia.com/gpu")).await;
    shoot(c, "overview").await;

    // Chinese: the same console, switched by its button.
    click(c, "#lang").await;
    wait_text(c, "#nav", "Chinese navigation", |t| t.contains("作业")).await;
    shoot(c, "overview-zh").await;
    click(c, "#lang").await;

    // Another identity sees what its RBAC allows: bob may read namespace team-b only.
    let bob = plane.ctl(&["token", "create", "--user", "bob"]).trim().to_string();
    let binding =
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: bob-view, namespace: team-b}\n\
        roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}\n\
        subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}]\n";
    plane.client.apply_documents(binding).await.expect("bob's binding");
    click(c, "#logout").await;
    find(c, "#token").await.send_keys(&format!("{bob}\u{E007}")).await.expect("bob signs in");
    wait_text(c, "#nav", "the navigation", |t| t.contains("Jobs")).await;
    c.goto(&format!("{url}/#/jobs?kind=1&ns=default")).await.expect("default's jobs");
    let refused = wait_text(c, "main [role=alert]", "the refusal", |t| t.contains("bob")).await;
    assert!(refused.contains("forbidden"), "{refused}");
    c.goto(&format!("{url}/#/jobs?kind=1&ns=team-b")).await.expect("team-b's jobs");
    wait_text(c, "main table caption", "team-b's list", |t| t.contains("PyTorchJob")).await;
    assert!(c.find(Locator::Css("main [role=alert]")).await.is_err(), "bob reads team-b");
    // The namespace chosen is remembered for the next visit.
    c.goto(&format!("{url}/#/jobs")).await.expect("jobs again");
    let ns = find(c, "#ns").await.prop("value").await.expect("value").unwrap_or_default();
    assert_eq!(ns, "team-b");
}

/// A TrainingJob with one run, made through the API as the platform test does.
async fn platform_objects(plane: &Plane) {
    let job = "apiVersion: platform.ringleader.io/v1alpha1
kind: TrainingJob
metadata: {name: bert, namespace: default}
spec:
  queue: default
  image: pytorch:2.3
  framework: PyTorchDDP
  command: sh -c 'sleep 300'
  roles:
  - {name: Master, count: 1, resources: {gpu: 1}}
  - {name: Worker, count: 1, resources: {gpu: 1}}
";
    plane.client.apply_documents(job).await.expect("training job");
    let job_obj: Value = get(plane, "TrainingJob", "bert").await.expect("bert");
    let run = json!({
        "apiVersion": "platform.ringleader.io/v1alpha1", "kind": "Run",
        "metadata": {"name": "bert-r1", "namespace": "default",
                     "labels": {"platform.ringleader.io/training-job": "bert"},
                     "ownerReferences": [{"apiVersion": "platform.ringleader.io/v1alpha1", "kind": "TrainingJob",
                                          "name": "bert", "uid": job_obj["metadata"]["uid"]}]},
        "spec": {"trainingJob": "bert"}
    });
    plane.client.create(common::find("Run"), "default", &run).await.expect("run");
}

/// An object of the `default` namespace (or cluster-scoped), read on this
/// test's runtime (the plane's blocking helpers would nest runtimes).
async fn get(plane: &Plane, kind: &str, name: &str) -> Option<Value> {
    let t = common::find(kind);
    plane.client.get(t, if t.namespaced { "default" } else { "" }, name).await.ok()
}

/// Sets a form control's value as typing would: the form hears it (the
/// event bubbles) and rewrites its YAML.
async fn type_in(c: &Client, css: &str, text: &str) {
    find(c, css).await;
    c.execute(
        "const e = document.querySelector(arguments[0]); e.value = arguments[1]; e.dispatchEvent(new Event('input', {bubbles: true}));",
        vec![json!(css), json!(text)],
    )
    .await
    .expect("type");
}

/// Waits until an input holds `want` (a form filled from a saved object).
async fn wait_until_value(c: &Client, css: &str, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(e) = c.find(Locator::Css(css)).await {
            if e.prop("value").await.ok().flatten().as_deref() == Some(want) {
                return;
            }
        }
        assert!(Instant::now() < deadline, "{css} never held {want:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Chooses these options of a (multiple) select.
async fn choose(c: &Client, css: &str, values: &[&str]) {
    find(c, css).await;
    c.execute(
        "const s = document.querySelector(arguments[0]); for (const o of s.options) o.selected = arguments[1].includes(o.value); s.dispatchEvent(new Event('change', {bubbles: true}));",
        vec![json!(css), json!(values)],
    )
    .await
    .expect("choose");
}

/// Fills and submits a Create form; the result lists the object made.
async fn create_by_form(c: &Client, url: &str, kind_and_ns: &str, fill: &[(&str, &str)], pick: &[(&str, &[&str])]) {
    c.goto(&format!("{url}/#/create/{kind_and_ns}")).await.expect("form");
    // The previous form's inputs stay until the route changes: wait for this kind's page.
    let kind = kind_and_ns.split('?').next().unwrap_or_default();
    find(c, &format!("#create-kinds [aria-current=page][data-kind={kind}]")).await;
    find(c, "#cr-name").await;
    for (css, values) in pick {
        choose(c, css, values).await;
    }
    for (css, text) in fill {
        type_in(c, css, text).await;
    }
    click(c, "#create").await;
    wait_text(c, "#create-result", "the result", |t| !t.is_empty()).await;
    let out = find(c, "#create-result").await.text().await.unwrap_or_default();
    assert!(c.find(Locator::Css("#created li")).await.is_ok(), "{kind_and_ns}: {out}");
}

/// The language a walk runs in: English, or Chinese through the header's button.
#[derive(Clone, Copy)]
struct Walk {
    zh: bool,
}

impl Walk {
    /// A step done: in Chinese, no English UI string is left on the page
    /// (a text, label or placeholder equal to an `en` value whose `zh`
    /// differs, or holding a long one), and its screenshot is `zh-<name>`.
    async fn step(self, c: &Client, name: &str) {
        if !self.zh {
            return;
        }
        let english = c
            .execute_async(
                "const done = arguments[0];
                 import('/console/i18n.js').then(({ tables }) => {
                   const { en, zh } = tables();
                   const words = new Set(Object.keys(en).filter((k) => zh[k] !== undefined && zh[k] !== en[k] && /[A-Za-z]{2}/.test(en[k])).map((k) => en[k]));
                   const long = [...words].filter((w) => w.length >= 12 && w.includes(' '));
                   const seen = [];
                   const walker = document.createTreeWalker(document.getElementById('main'), NodeFilter.SHOW_TEXT);
                   for (let n = walker.nextNode(); n; n = walker.nextNode()) {
                     const el = n.parentElement;
                     if (!el || el.closest('[hidden], textarea, pre, code') || (el.tagName !== 'OPTION' && !el.getClientRects().length)) continue;
                     seen.push(n.textContent.trim());
                   }
                   for (const el of document.querySelectorAll('#nav, #user, #main, #nav *, #user *, #main *')) {
                     for (const a of ['aria-label', 'placeholder', 'title']) if (el.getAttribute(a)) seen.push(el.getAttribute(a).trim());
                   }
                   for (const n of document.querySelectorAll('#nav a, #user button')) seen.push(n.textContent.trim());
                   done(seen.filter((s) => s && (words.has(s) || long.some((w) => s.includes(w)))));
                 }).catch((e) => done(['check failed: ' + e]));",
                vec![],
            )
            .await
            .expect("the language check");
        assert_eq!(english, json!([]), "English left on the Chinese page at step {name}");
        shoot(c, &format!("zh-{name}")).await;
    }

    fn word(self, en: &'static str, zh: &'static str) -> &'static str {
        if self.zh {
            zh
        } else {
            en
        }
    }
}

/// Run `run` of namespace `ns` once its state is one of `states`.
async fn run_reaches(plane: &Plane, ns: &str, run: &str, states: &[&str]) -> Value {
    let mut last = Value::Null;
    for _ in 0..240 {
        last = plane.client.get(common::find("Run"), ns, run).await.unwrap_or(Value::Null);
        if states.contains(&last["status"]["state"].as_str().unwrap_or_default()) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let pods = plane.ctl(&["get", "pods", "-n", ns, "-o", "json"]);
    panic!("run {ns}/{run} never reached {states:?}: {last:#}\n{pods}");
}

/// Brings `css` into the window (for the screenshot of that step).
async fn scroll_to(c: &Client, css: &str) {
    c.execute("document.querySelector(arguments[0]).scrollIntoView({block: 'center'})", vec![json!(css)])
        .await
        .expect("scroll");
}

fn ctl_json(plane: &Plane, args: &[&str]) -> Value {
    let out = plane.ctl(args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

/// Issue 26: seed 004's chapters through the forms only, never pasting
/// YAML. The admin makes a resource group, a queue with a quota and a
/// workspace with a member (and, in English, edits the queue and the
/// workspace from their lists); the member makes a dataset and a training
/// job by form (the queue offered, not typed), runs it, follows its log,
/// sees what a VIP job on its machines would stop, stops it, clones it
/// with a changed instance count and runs the clone.
#[test]
fn the_platform_is_built_through_forms_only() {
    forms_walk(Walk { zh: false });
}

/// The same walk in Chinese: no page shows an English UI string.
#[test]
fn the_platform_is_built_through_forms_only_in_chinese() {
    forms_walk(Walk { zh: true });
}

fn forms_walk(walk: Walk) {
    if !available() {
        return;
    }
    // f3 stays outside the walk's resource group: a VIP picker must not offer it.
    let plane =
        Plane::start(&cluster_yaml(72, &[("f1", "hgx-h100-8"), ("f2", "hgx-h100-8"), ("f3", "hgx-h100-8")]), &[]);
    let url = std::fs::read_to_string(plane.data_dir().join("server")).expect("server url").trim().to_string();
    let token = std::fs::read_to_string(plane.data_dir().join("token")).expect("token").trim().to_string();
    let carol = plane.ctl(&["token", "create", "--user", "carol"]).trim().to_string();
    let driver = start_driver();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let c = browser(&driver).await;
        admin_walk(&c, &plane, &url, &token, walk).await;
        member_walk(&c, &plane, &url, &carol, walk).await;
        let _ = c.close().await;
    });
}

async fn admin_walk(c: &Client, plane: &Plane, url: &str, token: &str, walk: Walk) {
    c.goto(url).await.expect("open console");
    find(c, "#token").await.send_keys(&format!("{token}\u{E007}")).await.expect("sign in");
    wait_text(c, "#nav", "the navigation", |t| t.contains("Create")).await;
    if walk.zh {
        click(c, "#lang").await;
        wait_text(c, "#nav", "the Chinese navigation", |t| t.contains("创建")).await;
    }
    create_by_form(c, url, "ResourceGroup", &[("#cr-name", "rg-form")], &[("#cr-nodes", &["f1", "f2"])]).await;
    walk.step(c, "resource-group").await;
    if !walk.zh {
        shoot(c, "form-resource-group").await;
    }
    create_by_form(
        c,
        url,
        "Queue",
        &[("#cr-name", "q-form"), ("#cr-count", "1"), ("#cr-gpu", "8")],
        &[("#cr-group", &["rg-form"])],
    )
    .await;
    walk.step(c, "queue").await;
    create_by_form(
        c,
        url,
        "Workspace",
        &[("#cr-name", "ws-form"), ("#cr-members", "carol member")],
        &[("#cr-group", &["rg-form"]), ("#cr-queues", &["q-form"])],
    )
    .await;
    let yaml = find(c, "#cr-yaml").await.prop("value").await.expect("yaml").unwrap_or_default();
    assert!(yaml.contains("members:") && yaml.contains("user: carol"), "the form's YAML: {yaml}");
    walk.step(c, "workspace").await;
    // The resource group edited from its list: the form filled from it, a new description saved, the machines kept.
    c.goto(&format!("{url}/#/queues")).await.expect("queues");
    click(c, "#tab-1").await;
    click(c, "#edit-ResourceGroup-rg-form").await;
    wait_until_value(c, "#cr-name", "rg-form").await;
    let about = walk.word("H100 pool, edited by form", "H100 资源池（表单编辑）");
    type_in(c, "#cr-description", about).await;
    click(c, "#create").await;
    wait_text(c, "#created", "the saved resource group", |t| t.contains("rg-form")).await;
    scroll_to(c, "#create-result").await;
    walk.step(c, "resource-group-edit").await;
    if !walk.zh {
        shoot(c, "form-resource-group-edit").await;
    }
    let rg = ctl_json(plane, &["get", "resourcegroup", "rg-form", "-o", "json"]);
    assert_eq!(rg["spec"]["description"], about, "{rg}");
    assert_eq!(rg["spec"]["nodes"]["names"], json!(["f1", "f2"]), "the machines kept: {rg}");
    if walk.zh {
        c.goto(&format!("{url}/#/queues")).await.expect("queues");
        find(c, "#edit-Queue-q-form").await;
        walk.step(c, "queues").await;
        return;
    }
    // The rest of what an admin makes: a preset image, a script run on machines, a check.
    create_by_form(c, url, "Image", &[("#cr-name", "torch-form"), ("#cr-image", "pytorch:2.3")], &[]).await;
    create_by_form(
        c,
        url,
        "Script",
        &[("#cr-name", "hello-form"), ("#cr-content", "echo hello from $(hostname)")],
        &[],
    )
    .await;
    create_by_form(
        c,
        url,
        "ScriptRun",
        &[("#cr-name", "hello-run")],
        &[("#cr-script", &["hello-form"]), ("#cr-nodes", &["f1"])],
    )
    .await;
    create_by_form(
        c,
        url,
        "CheckRun",
        &[("#cr-name", "server-form")],
        &[("#cr-type", &["server"]), ("#cr-nodes", &["f1", "f2"]), ("#cr-baseline", &["f1"])],
    )
    .await;
    let check = ctl_json(plane, &["get", "checkrun", "server-form", "-o", "json"]);
    assert_eq!(check["spec"]["baselineNode"], "f1", "{check}");
    let run = ctl_json(plane, &["get", "scriptrun", "hello-run", "-o", "json"]);
    assert_eq!(run["spec"]["nodes"], json!(["f1"]), "{run}");

    // Edit from the lists: the form filled from the saved object, its name fixed.
    c.goto(&format!("{url}/#/queues")).await.expect("queues");
    click(c, "#edit-Queue-q-form").await;
    wait_until_value(c, "#cr-count", "1").await;
    let fixed = c.execute("return document.querySelector('#cr-name').readOnly", vec![]).await.expect("readOnly");
    assert_eq!(fixed, json!(true), "an edit keeps the name");
    type_in(c, "#cr-weight", "3").await;
    click(c, "#create").await;
    wait_text(c, "#created", "the saved queue", |t| t.contains("q-form")).await;
    let q = ctl_json(plane, &["get", "queue", "q-form", "-o", "json"]);
    assert_eq!(q["spec"]["weight"], 3, "{q}");
    assert_eq!(q["spec"]["quota"]["instanceCount"], 1, "the rest kept: {q}");
    c.goto(&format!("{url}/#/workspaces")).await.expect("workspaces");
    click(c, "#edit-Workspace-ws-form").await;
    wait_until_value(c, "#cr-members", "carol member").await;
    // Carol becomes the workspace's admin: she edits it herself in the member's walk.
    type_in(c, "#cr-members", "carol admin\ndave member").await;
    click(c, "#create").await;
    wait_text(c, "#created", "the saved workspace", |t| t.contains("ws-form")).await;
    let ws = ctl_json(plane, &["get", "workspace", "ws-form", "-o", "json"]);
    assert_eq!(ws["spec"]["members"][0], json!({"user": "carol", "role": "admin"}), "{ws}");
    assert_eq!(ws["spec"]["members"][1], json!({"user": "dave", "role": "member"}), "{ws}");
    assert_eq!(ws["spec"]["queues"], json!(["q-form"]), "{ws}");
}

async fn member_walk(c: &Client, plane: &Plane, url: &str, carol: &str, walk: Walk) {
    click(c, "#logout").await;
    find(c, "#token").await.send_keys(&format!("{carol}\u{E007}")).await.expect("carol signs in");
    let create = walk.word("Create", "创建");
    wait_text(c, "#nav", "the navigation", |t| t.contains(create)).await;
    let files = tempfile::tempdir().expect("dataset dir");
    let path = files.path().to_string_lossy().into_owned();
    create_by_form(c, url, "Dataset?ns=ws-form", &[("#cr-name", "ds-form"), ("#cr-path", &path)], &[]).await;
    walk.step(c, "dataset").await;
    // Edited from the data page's list: the form filled from it, a description saved, its source kept.
    c.goto(&format!("{url}/#/data?ns=ws-form")).await.expect("data");
    click(c, "[data-edit=ds-form]").await;
    wait_until_value(c, "#cr-path", &path).await;
    let about = walk.word("Corpus for the form walk", "表单演练用语料");
    type_in(c, "#cr-description", about).await;
    click(c, "#create").await;
    wait_text(c, "#created", "the saved dataset", |t| t.contains("ds-form")).await;
    scroll_to(c, "#create-result").await;
    walk.step(c, "dataset-edit").await;
    if !walk.zh {
        shoot(c, "form-dataset-edit").await;
    }
    let ds = ctl_json(plane, &["get", "dataset", "ds-form", "-n", "ws-form", "-o", "json"]);
    assert_eq!(ds["spec"]["description"], about, "{ds}");
    assert_eq!(ds["spec"]["source"]["path"], path.as_str(), "the source kept: {ds}");
    c.goto(&format!("{url}/#/create/TrainingJob?ns=ws-form")).await.expect("form");
    find(c, "#cr-name").await;
    // The member may read the workspace's own queues: a picker, not a typed name.
    let queue = c
        .execute("const q = document.querySelector('#cr-queue'); return [q.tagName, q.value, [...q.options].map((o) => o.value)]", vec![])
        .await
        .expect("the queue field");
    assert_eq!(queue, json!(["SELECT", "q-form", ["q-form"]]), "the member's queue picker");
    // What the workspace grants is its own objects, by name, and nothing to list.
    let answers = c
        .execute_async(
            "const [paths, done] = arguments;
             import('/console/app.js').then((m) => Promise.all(paths.map((p) => m.api(p).then(() => 200, (e) => e.status)))).then(done);",
            vec![json!([
                "/apis/platform.ringleader.io/v1alpha1/workspaces/ws-form",
                "/apis/scheduling.volcano.sh/v1beta1/queues/q-form",
                "/apis/platform.ringleader.io/v1alpha1/resourcegroups/rg-form",
                "/apis/scheduling.volcano.sh/v1beta1/queues",
                "/apis/scheduling.volcano.sh/v1beta1/queues/default",
                "/apis/platform.ringleader.io/v1alpha1/workspaces",
            ])],
        )
        .await
        .expect("the member's reads");
    assert_eq!(answers, json!([200, 200, 200, 403, 403, 403]), "carol's reads");
    type_in(c, "#cr-name", "tj-form").await;
    type_in(c, "#cr-image", "pytorch:2.3").await;
    type_in(c, "#cr-command", "echo trained").await;
    type_in(c, "#cr-roles input[name=role-name]", "Worker").await;
    type_in(c, "#cr-roles input[name=role-gpu]", "4").await;
    choose(c, "#cr-datasets", &["ds-form"]).await;
    // A command without a launcher is refused by the API: the input is marked.
    click(c, "#create").await;
    let refused = wait_text(c, "#create-errors", "the refusal", |t| t.contains("spec.command")).await;
    assert!(refused.contains("launcher"), "{refused}");
    let invalid = c
        .execute("return document.querySelector('#cr-command').getAttribute('aria-invalid')", vec![])
        .await
        .expect("aria-invalid");
    assert_eq!(invalid, json!("true"), "the command input is marked");
    if !walk.zh {
        shoot(c, "form-training-job-refused").await;
    }
    type_in(c, "#cr-command", "/bin/sh -c 'echo trained on $DATA_PATH; sleep 300'").await;
    click(c, "#create").await;
    wait_text(c, "#create-result", "created", |t| t.contains("TrainingJob ws-form/tj-form")).await;
    walk.step(c, "training-job").await;
    let tj = ctl_json(plane, &["get", "trainingjob", "tj-form", "-n", "ws-form", "-o", "json"]);
    assert_eq!(tj["spec"]["roles"][0], json!({"name": "Worker", "count": 1, "resources": {"gpu": 4}}));
    assert_eq!(tj["spec"]["mounts"], json!([{"dataset": "ds-form"}]));
    assert_eq!(tj["spec"]["queue"], "q-form");

    // Its page runs it; the run's pod log is followed.
    let job_page = find(c, "#created a").await.attr("href").await.expect("href").unwrap_or_default();
    click(c, "#created a").await;
    click(c, "#rerun").await;
    let run = run_reaches(plane, "ws-form", "tj-form-r1", &["running"]).await;
    let node = run["status"]["pods"][0]["node"].as_str().unwrap_or_default().to_string();
    c.execute(
        "[...document.querySelectorAll('button.link')].find((b) => b.textContent === 'tj-form-r1').click()",
        vec![],
    )
    .await
    .expect("open the run");
    click(c, "#run-detail table button").await;
    wait_text(c, "#log", "the run's log", |t| t.contains("trained on ")).await;
    // Her pods' figures, not a refusal: the devices' history (a machine's, which she may not read) is left out, and said so.
    find(c, "#run-metrics:not([aria-busy])").await;
    assert!(c.find(Locator::Css("#run-metrics .error")).await.is_err(), "a refusal in the run's metrics");
    let note = wait_text(c, "#run-metrics-note", "the devices note", |t| !t.is_empty()).await;
    assert!(note.contains(walk.word("Device figures", "加速卡指标")), "{note}");
    scroll_to(c, "#log").await;
    walk.step(c, "run-log").await;

    // A VIP job on the machines it runs on shows it, before Create, as what would be stopped.
    c.goto(&format!("{url}/#/create/TrainingJob?ns=ws-form")).await.expect("form");
    choose(c, "#cr-vip", &["f1", "f2"]).await;
    choose(c, "#cr-onBusy", &["kill"]).await;
    let shown = wait_text(c, "#cr-vip-nodes", "the VIP preview", |t| t.contains("ws-form/tj-form-r1")).await;
    let busy = c
        .execute(
            "return [...document.querySelectorAll('#cr-vip-nodes > li')].map((l) => [l.dataset.node, l.dataset.busy])",
            vec![],
        )
        .await
        .expect("busy machines");
    let busy: Vec<(String, String)> = serde_json::from_value(busy).expect("pairs");
    assert_eq!(busy.len(), 2, "{shown}");
    assert_eq!(busy[0].1, "true", "the busy machine first: {busy:?}");
    assert_eq!(busy[0].0, node, "the machine the run is on: {busy:?}");
    let job = find(c, "#cr-vip-nodes li.vip-pod a:last-of-type").await.text().await.unwrap_or_default();
    assert_eq!(job, "ws-form/tj-form", "the pod's job: {shown}");
    scroll_to(c, "#cr-vip-preview").await;
    walk.step(c, "vip").await;

    // Stopped from its page; then cloned with one more instance, and the clone run.
    c.goto(&format!("{url}/{job_page}")).await.expect("job page");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let stop = find(c, "[data-run='tj-form-r1']").await;
        if stop.attr("disabled").await.is_ok_and(|d| d.is_none()) && stop.click().await.is_ok() {
            break;
        }
        assert!(Instant::now() < deadline, "stop never clicked");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    run_reaches(plane, "ws-form", "tj-form-r1", &["stopped"]).await;
    walk.step(c, "stopped").await;
    click(c, "#clone-form").await;
    wait_until_value(c, "#cr-name", "tj-form-copy").await;
    type_in(c, "#cr-roles input[name=role-count]", "2").await;
    click(c, "#create").await;
    wait_text(c, "#create-result", "the clone", |t| t.contains("TrainingJob ws-form/tj-form-copy")).await;
    walk.step(c, "clone").await;
    let copy = ctl_json(plane, &["get", "trainingjob", "tj-form-copy", "-n", "ws-form", "-o", "json"]);
    assert_eq!(copy["spec"]["roles"], json!([{"name": "Worker", "count": 2, "resources": {"gpu": 4}}]), "{copy}");
    assert_eq!(copy["spec"]["mounts"], tj["spec"]["mounts"]);
    assert_eq!(copy["spec"]["command"], tj["spec"]["command"]);
    click(c, "#created a").await;
    click(c, "#rerun").await;
    let run = run_reaches(plane, "ws-form", "tj-form-copy-r1", &["running"]).await;
    assert_eq!(run["status"]["pods"].as_array().map(Vec::len), Some(2), "both instances run: {run:#}");
    walk.step(c, "clone-running").await;
    if walk.zh {
        return;
    }
    // Edit: the same job, its name fixed, a new description saved.
    c.goto(&format!("{url}/#/create/TrainingJob?ns=ws-form&edit=tj-form")).await.expect("edit");
    wait_until_value(c, "#cr-name", "tj-form").await;
    type_in(c, "#cr-description", "edited by form").await;
    click(c, "#create").await;
    wait_text(c, "#create-result", "the edit", |t| t.contains("TrainingJob ws-form/tj-form")).await;
    let edited = ctl_json(plane, &["get", "trainingjob", "tj-form", "-n", "ws-form", "-o", "json"]);
    assert_eq!(edited["spec"]["description"], "edited by form");
    assert_eq!(edited["spec"]["roles"], tj["spec"]["roles"], "the rest kept");

    // Carol, the workspace's admin, edits it from its page: its description is hers to set ...
    c.goto(&format!("{url}/#/workspaces/ws-form")).await.expect("workspace");
    // She may not list workspaces or queues: the page reads hers by name, and shows no refusal.
    wait_text(c, "#workspace-queues", "her queue, read by name", |t| {
        t.contains("q-form") && !t.contains("Not readable")
    })
    .await;
    assert!(c.find(Locator::Css("#main .error")).await.is_err(), "a refusal on her workspace's page");
    click(c, "#edit-Workspace-ws-form").await;
    wait_until_value(c, "#cr-name", "ws-form").await;
    type_in(c, "#cr-description", "carol's team").await;
    click(c, "#create").await;
    wait_text(c, "#created", "the workspace saved by its admin", |t| t.contains("ws-form")).await;
    scroll_to(c, "#create-result").await;
    shoot(c, "form-workspace-edit-by-its-admin").await;
    let ws = ctl_json(plane, &["get", "workspace", "ws-form", "-o", "json"]);
    assert_eq!(ws["spec"]["description"], "carol's team", "{ws}");
    // ... its resource group is not: the API refuses it, naming the field.
    let yaml = find(c, "#cr-yaml").await.prop("value").await.expect("yaml").unwrap_or_default();
    assert!(yaml.contains("resourceGroup: rg-form"), "{yaml}");
    type_in(c, "#cr-yaml", &yaml.replace("resourceGroup: rg-form", "resourceGroup: rg-other")).await;
    click(c, "#create").await;
    let refused = wait_text(c, "#create-errors", "the refusal", |t| t.contains("platform admin")).await;
    assert!(c.find(Locator::Css("#create-errors [data-field='spec.resourceGroup']")).await.is_ok(), "{refused}");
    let ws = ctl_json(plane, &["get", "workspace", "ws-form", "-o", "json"]);
    assert_eq!(ws["spec"]["resourceGroup"], "rg-form", "{ws}");

    // The admin, who may read every namespace's pods, is shown the clone's two on their machines, with no note.
    click(c, "#logout").await;
    find(c, "#token").await.send_keys(&format!("{}\u{E007}", admin_token(plane))).await.expect("admin signs in");
    wait_text(c, "#nav", "the navigation", |t| t.contains("Create")).await;
    c.goto(&format!("{url}/#/create/TrainingJob?ns=ws-form")).await.expect("form");
    // Not the edit form the admin signed in on: that one's inputs would be gone by the time they are set.
    wait_text(c, "#create-title", "a new job's form", |t| t == "Create: Training job").await;
    // The admin lists every machine, but is offered only those of the queue's group (f3 would be refused).
    assert_eq!(vip_offered(c).await, ["f1", "f2"], "the admin's VIP machines on q-form");
    let hint = find(c, "#cr-vip-hint").await.text().await.unwrap_or_default();
    assert!(hint.contains("rg-form"), "{hint}");
    choose(c, "#cr-vip", &["f1", "f2"]).await;
    choose(c, "#cr-onBusy", &["kill"]).await;
    let shown = wait_text(c, "#cr-vip-preview", "the admin's VIP preview", |t| {
        t.matches("ws-form/tj-form-copy-r1").count() >= 2
    })
    .await;
    assert!(!shown.contains("Only your workspace"), "{shown}");
    // Where the queue is chosen, the machines follow it: a queue of no group offers all, q-form its group's.
    c.goto(&format!("{url}/#/create/TrainingJob?ns=default")).await.expect("form");
    wait_text(c, "#cr-vip-hint", "the hint of a queue of no group", |t| t.contains("no resource group")).await;
    assert_eq!(vip_offered(c).await, ["f1", "f2", "f3"], "queue default: every machine");
    choose(c, "#cr-queue", &["q-form"]).await;
    wait_text(c, "#cr-vip-hint", "the hint of q-form", |t| t.contains("rg-form")).await;
    assert_eq!(vip_offered(c).await, ["f1", "f2"], "queue q-form: its group's machines");
}

/// The machines the training-job form offers for a VIP job.
async fn vip_offered(c: &Client) -> Vec<String> {
    find(c, "#cr-vip-hint").await;
    let got = c
        .execute("return [...document.querySelectorAll('#cr-vip option')].map((o) => o.value)", vec![])
        .await
        .expect("the VIP options");
    serde_json::from_value(got).unwrap_or_default()
}

fn admin_token(plane: &Plane) -> String {
    std::fs::read_to_string(plane.data_dir().join("token")).expect("token").trim().to_string()
}

/// How long the console's pages take to show with 5,000 pods in the
/// cluster (five 1,000-pod gangs that do not fit, so every pod waits):
/// from the route change to the page's table in Chromium, first as the
/// admin, then as a second identity who may edit namespace `default` only
/// (what a member of a workspace sees). A measurement for BENCHMARKS.md, not
/// a pass/fail bar: `cargo test --release -p ringleader --test console
/// page_times -- --ignored --nocapture`.
#[test]
#[ignore]
fn page_times_with_5000_pods() {
    if !available() {
        return;
    }
    let cluster = cluster_yaml(72, &[("gpu-1", "hgx-h100-8"), ("gpu-2", "hgx-h100-8")]);
    let plane = Plane::start(&cluster, &[]);
    // Five gangs of 1,000 (a vcjob's limit), none of which fits.
    for i in 0..5 {
        plane
            .apply(&format!(
                "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: big-{i}}}\nspec:\n  minAvailable: 1000\n  \
                 schedulerName: volcano\n  tasks:\n  - name: w\n    replicas: 1000\n    template:\n      spec:\n        containers:\n        \
                 - {{name: c, image: x, command: [sleep, '1'], resources: {{limits: {{nvidia.com/gpu: 8}}}}}}\n"
            ))
            .expect("big job");
    }
    plane.wait_for(300, "5,000 pods", |p| p.list("Pod").len() >= 5000);
    // The job's Metrics tab charts its sampled history: a round (every 10 s)
    // has to have seen the jobs, or the tab rightly says it has no samples.
    plane.wait_for(60, "the jobs' first history samples", |p| {
        p.rt.block_on(p.client.history(&[("prefix", "job/default/")]))
            .is_ok_and(|h| h.to_string().contains("big-0/pods-Pending"))
    });
    // A TrainingJob and its run, for the run's page, shown to the workspace
    // (only-me, the default, keeps it from the second identity).
    plane.rt.block_on(platform_objects(&plane));
    plane.patch("TrainingJob", "bert", &json!({"spec": {"visibility": "workspace"}}));
    // The second identity: erin may edit namespace `default` and nothing else.
    let erin = plane.ctl(&["token", "create", "--user", "erin"]).trim().to_string();
    let binding = "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: erin-edit, namespace: default}\n\
        roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}\n\
        subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: erin}]\n";
    plane.apply(binding).expect("erin's binding");
    let url = std::fs::read_to_string(plane.data_dir().join("server")).expect("server url").trim().to_string();
    let token = admin_token(&plane);
    let driver = start_driver();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let c = browser(&driver).await;
        // Each page counts as shown when its data is: a row, a card, a device cell, a chart
        // (the job's pods by phase). The job's Metrics tab is timed from the route change,
        // its tab clicked once the page has it.
        let metrics: TimedPage = ("job Metrics tab", "#/jobs/4/default/big-0", Some("#tab-3"), "#job-metrics-pods");
        let pod: TimedPage = ("pod page", "#/pods/default/big-0-w-0", None, "#pod-containers table tbody tr td");
        let run: TimedPage = ("TrainingJob and its runs", "#/jobs/7/default/bert", None, "[data-run='bert-r1']");
        let admin_pages: [TimedPage; 10] = [
            ("overview", "#/overview", None, "#ov-families .card"),
            ("jobs (Volcano Jobs)", "#/jobs?kind=4", None, "main table tbody tr td a"),
            ("jobs (every kind)", "#/jobs", None, "#all-jobs table tbody tr td a"),
            ("overview pending summary", "#/overview", None, "#ov-pending-total"),
            (
                "job pods (1,000), page 1",
                "#/jobs/4/default/big-0",
                None,
                "[role=tabpanel] table tbody tr:nth-child(50) td",
            ),
            metrics,
            pod,
            run,
            ("nodes", "#/nodes", None, ".node-used[data-node=gpu-2] [role=meter]"),
            ("node device map", "#/nodes/gpu-1", None, "#device-map #device-7"),
        ];
        sign_in(&c, &url, &token).await;
        println!("as the admin:");
        time_pages(&c, &url, &admin_pages).await;
        // What was timed is the right summary: every pending pod, in its five jobs.
        c.goto(&format!("{url}/#/overview")).await.expect("overview");
        let total = wait_text(&c, "#ov-pending-total", "the pending total", |_| true).await;
        assert!(total.starts_with("5000 ") && total.contains(" 5 jobs"), "{total}");

        // erin: no cluster-wide list, so the overview sums up her namespace
        // (jobs by phase, then its pending pods), and the node pages are not hers.
        let erin_pages: [TimedPage; 9] = [
            ("overview (namespace default)", "#/overview", None, "#ov-jobs [data-kind]"),
            ("overview pending summary", "#/overview", None, "#ov-pending-total"),
            ("jobs (Volcano Jobs)", "#/jobs?kind=4&ns=default", None, "main table tbody tr td a"),
            ("jobs (every kind)", "#/jobs?ns=default", None, "#all-jobs table tbody tr td a"),
            (
                "job pods (1,000), page 1",
                "#/jobs/4/default/big-0",
                None,
                "[role=tabpanel] table tbody tr:nth-child(50) td",
            ),
            metrics,
            pod,
            run,
            ("submit", "#/submit", None, "#yaml-input"),
        ];
        click(&c, "#logout").await;
        find(&c, "#token").await.send_keys(&format!("{erin}\u{E007}")).await.expect("erin signs in");
        wait_text(&c, "#nav", "the navigation", |t| t.contains("Jobs")).await;
        println!("as erin (edit in namespace default only):");
        time_pages(&c, &url, &erin_pages).await;
        let _ = c.close().await;
    });
}

/// A timed page: its name, its route, what to click once it is there (a
/// tab), and the element that shows its data.
type TimedPage = (&'static str, &'static str, Option<&'static str>, &'static str);

/// Enters each page five times from the Submit page (its text box needs
/// no data; Submit itself is entered from the overview) and prints the
/// median and the slowest time to its data, with the last requests that
/// took over 50 ms.
async fn time_pages(c: &Client, url: &str, pages: &[TimedPage]) {
    for (name, hash, tab, css) in pages {
        let mut times = Vec::new();
        for _ in 0..5 {
            if *hash == "#/submit" {
                c.goto(&format!("{url}/#/overview")).await.expect("away");
                find(c, "main h1").await;
            } else {
                c.goto(&format!("{url}/#/submit")).await.expect("away");
                find(c, "#yaml-input").await;
            }
            let t0 = Instant::now();
            let script = "const [hash, tab, css, done] = arguments; const t0 = performance.now(); location.hash = hash;\n\
                 let clicked = !tab;\n\
                 const tick = () => {\n\
                   if (!clicked && document.querySelector(tab)) { document.querySelector(tab).click(); clicked = true; }\n\
                   if (clicked && document.querySelector(css)) done(performance.now() - t0);\n\
                   else if (performance.now() - t0 > 10000) done(-1); else requestAnimationFrame(tick); }; tick();";
            let args = vec![json!(hash), json!(tab), json!(css)];
            let ms = c.execute_async(script, args).await.expect("timed page");
            let ms = ms.as_f64().unwrap_or(-1.0);
            if ms < 0.0 {
                let shown = c.execute("return document.getElementById('main').innerText", vec![]).await;
                panic!("{name} never showed ({:?}); the page says: {shown:?}", t0.elapsed());
            }
            times.push(ms);
        }
        times.sort_by(f64::total_cmp);
        println!("{name:28} median {:6.0} ms  max {:6.0} ms", times[2], times[4]);
        let slow = c.execute("return performance.getEntriesByType('resource').filter(e => e.duration > 50).slice(-6).map(e => `${Math.round(e.duration)} ${e.name}`)", vec![]).await.expect("timings");
        println!("   slow requests: {slow}");
        c.execute("performance.clearResourceTimings()", vec![]).await.expect("clear");
    }
}

/// Signs `token` in on a fresh page of the console at `url`.
async fn sign_in(c: &Client, url: &str, token: &str) {
    c.goto(url).await.expect("open console");
    find(c, "#token").await.send_keys(&format!("{token}\u{E007}")).await.expect("type token and Enter");
    wait_text(c, "#nav", "the navigation", |t| t.contains("Jobs")).await;
}

/// A PyTorchJob whose only container fails with exit 3 after printing
/// `boom`, restarted on failure: the kubelet's CrashLoopBackOff.
const CRASHING: &str = "apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: crashy
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch:2.3
            terminationMessagePolicy: FallbackToLogsOnError
            command: [sh, -c, 'echo boom; exit 3']
            resources: {limits: {nvidia.com/gpu: 1}}
";

#[test]
fn a_crash_looping_job_is_diagnosed_on_its_pod_page() {
    if !available() {
        return;
    }
    let cluster = cluster_yaml(73, &[("gpu-1", "hgx-h100-8")]);
    let plane = Plane::start(&cluster, &[]);
    let url = std::fs::read_to_string(plane.data_dir().join("server")).expect("server url").trim().to_string();
    let token = std::fs::read_to_string(plane.data_dir().join("token")).expect("token").trim().to_string();
    plane.apply(CRASHING).expect("crashing job");
    let t0 = Instant::now();
    // The API first: the failed pod waits in back-off with its failure kept.
    plane.wait_for(60, "the pod in CrashLoopBackOff", |p| {
        p.list("Pod").iter().any(|pod| {
            let c = &pod["status"]["containerStatuses"][0];
            c["state"]["waiting"]["reason"] == "CrashLoopBackOff"
                && c["lastState"]["terminated"]["exitCode"] == 3
                && c["lastState"]["terminated"]["message"] == "boom"
                && c["restartCount"].as_u64().is_some_and(|n| n >= 1)
        })
    });
    println!("crash-looping pod shown after {:.1} s", t0.elapsed().as_secs_f64());
    let driver = start_driver();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let c = browser(&driver).await;
        sign_in(&c, &url, &token).await;
        // The list says why the job does not run, not `Pending`.
        c.goto(&format!("{url}/#/jobs?kind=1&ns=default")).await.expect("jobs");
        let state =
            wait_text(&c, ".job-state[data-job=crashy]", "the job's state", |t| t.contains("CrashLoopBackOff")).await;
        assert!(state.contains("boom"), "the first cause is shown: {state}");
        // The detail too, and its pods link to the pod page.
        c.goto(&format!("{url}/#/jobs/1/default/crashy")).await.expect("job");
        let phase = wait_text(&c, "#job-phase", "the job's state", |t| t.contains("CrashLoopBackOff")).await;
        assert!(phase.contains("boom"), "{phase}");
        click(&c, "[role=tabpanel] a[href='#/pods/default/crashy-master-0']").await;
        let containers =
            wait_text(&c, "#pod-containers", "the container's state", |t| t.contains("CrashLoopBackOff")).await;
        // Exit code, termination message and restarts of the failure kept as last state.
        assert!(containers.contains("Exit code 3 (Error): boom"), "{containers}");
        // Read through wait_text: the live table may re-render between a find and a read.
        wait_text(&c, "#pod-containers tbody td:nth-child(6)", "restarts ≥ 1", |t| {
            t.trim().parse::<u32>().is_ok_and(|n| n >= 1)
        })
        .await;

        let summary = wait_text(&c, "#pod-summary", "node and devices", |t| t.contains("gpu-1")).await;
        assert!(summary.contains("crashy"), "the job is linked: {summary}");
        wait_text(&c, "#pod-events", "the back-off event", |t| t.contains("BackOff")).await;
        wait_text(&c, "#log", "the log", |t| t.contains("boom")).await;
        assert!(find(&c, "#log-download").await.is_displayed().await.expect("shown"));
        assert!(find(&c, "#log-download-previous").await.is_displayed().await.expect("shown"));
        shoot(&c, "pod").await;
        // After the back-off the replacement fails too: the earlier run's log is the previous one.
        let restarted = Instant::now();
        wait_text(&c, "#pod-containers tbody td:nth-child(6)", "a second restart", |t| t.trim() == "2").await;
        println!("restarted and failed again after {:.1} s", restarted.elapsed().as_secs_f64());
        click(&c, "#log-previous").await;
        wait_text(&c, "#log", "the previous run's log", |t| t.contains("boom")).await;
        let _ = c.close().await;
    });
}

/// Waits (bounded) until `css` is shown (or hidden) as `shown` says.
async fn wait_until_shown(c: &Client, css: &str, shown: bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(e) = c.find(Locator::Css(css)).await {
            if e.is_displayed().await.is_ok_and(|d| d == shown) {
                return;
            }
        }
        assert!(Instant::now() < deadline, "{css} never became {}", if shown { "shown" } else { "hidden" });
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn every_job_kind_is_listed_together_at_the_version_the_api_serves() {
    if !available() {
        return;
    }
    let cluster = cluster_yaml(74, &[("gpu-1", "hgx-h100-8")]);
    let plane = Plane::start(&cluster, &[]);
    let url = std::fs::read_to_string(plane.data_dir().join("server")).expect("server url").trim().to_string();
    let token = std::fs::read_to_string(plane.data_dir().join("token")).expect("token").trim().to_string();
    // The demo's MPIJob is served at kubeflow.org/v2beta1 only (it waits here: no rtx4090 node).
    plane.apply(include_str!("../../../examples/demo/mpijob.yaml")).expect("the demo MPIJob");
    plane.apply(JOB).expect("a PyTorchJob");
    plane
        .apply("apiVersion: batch/v1\nkind: Job\nmetadata: {name: plain}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - {name: c, image: x, command: [sleep, '30']}\n")
        .expect("a batch Job");
    let viewer = plane.ctl(&["token", "create", "--user", "viewer"]).trim().to_string();
    plane
        .apply(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: viewer, namespace: default}\n\
             roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}\n\
             subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: viewer}]\n",
        )
        .expect("the viewer's binding");
    let driver = start_driver();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let c = browser(&driver).await;
        sign_in(&c, &url, &token).await;
        // No kind chosen: the kinds together, each named.
        c.goto(&format!("{url}/#/jobs?ns=default")).await.expect("jobs");
        let list = wait_text(&c, "#all-jobs table", "every kind", |t| {
            t.contains("demo-mpi") && t.contains("console-ddp") && t.contains("plain")
        })
        .await;
        for kind in ["MPIJob", "PyTorchJob", "batch Job"] {
            assert!(list.contains(kind), "{kind} is named: {list}");
        }
        assert!(c.find(Locator::Css("main [role=alert]")).await.is_err(), "no kind failed");
        let options = find(&c, "#kind").await.text().await.expect("kinds");
        assert!(options.contains("All job kinds") && options.contains("MPIJob"), "{options}");
        shoot(&c, "jobs-all-kinds").await;
        // The MPIJob's detail opens: asked at v2beta1, no 404.
        click(&c, "#all-jobs a[href$='/default/demo-mpi']").await;
        wait_text(&c, "h1", "the MPIJob's page", |t| t.contains("MPIJob default/demo-mpi")).await;
        wait_text(&c, "#job-phase", "its phase", |t| !t.trim().is_empty()).await;
        assert!(c.find(Locator::Css("main [role=alert]")).await.is_err(), "the detail opened");
        let asked = c
            .execute(
                "return performance.getEntriesByType('resource').map(e => e.name).filter(n => n.includes('/mpijobs'))",
                vec![],
            )
            .await
            .expect("requests");
        let asked: Vec<String> = serde_json::from_value(asked).expect("names");
        assert!(!asked.is_empty() && asked.iter().all(|u| u.contains("/kubeflow.org/v2beta1/")), "{asked:?}");
        // A kind chosen: that kind alone.
        c.goto(&format!("{url}/#/jobs?kind=2&ns=default")).await.expect("MPIJobs");
        let only = wait_text(&c, "main table", "the MPIJobs", |t| t.contains("demo-mpi")).await;
        assert!(!only.contains("console-ddp"), "{only}");
        // The admin is offered what it may do.
        c.goto(&format!("{url}/#/jobs/1/default/console-ddp")).await.expect("job");
        wait_text(&c, "#job-phase", "the job", |t| !t.trim().is_empty()).await;
        wait_until_shown(&c, "#delete-job", true).await;
        assert!(find(&c, "#nav a[data-page=submit]").await.is_displayed().await.expect("shown"));

        // A viewer of namespace default: the overview sums up that namespace
        // (its jobs and pending pods, no cluster-wide section), no refusals,
        // and neither Delete nor Submit offered.
        click(&c, "#logout").await;
        find(&c, "#token").await.send_keys(&format!("{viewer}\u{E007}")).await.expect("viewer signs in");
        wait_text(&c, "#nav", "the navigation", |t| t.contains("Jobs")).await;
        c.goto(&format!("{url}/#/overview")).await.expect("overview");
        let scope = wait_text(&c, "#ov-scope", "the namespace summed up", |t| !t.is_empty()).await;
        assert!(scope.contains("default"), "{scope}");
        wait_text(&c, "#ov-jobs", "the namespace's jobs", |t| t.contains("PyTorchJob")).await;
        wait_text(&c, "#ov-pending-total", "the namespace's pending pods", |t| !t.is_empty()).await;
        for cluster_wide in ["#ov-families", "#ov-queues", "#ov-unhealthy"] {
            assert!(c.find(Locator::Css(cluster_wide)).await.is_err(), "{cluster_wide} shown to a viewer");
        }
        assert!(c.find(Locator::Css("main [role=alert]")).await.is_err(), "no refusal boxes");
        assert!(!find(&c, "#nav a[data-page=submit]").await.is_displayed().await.expect("nav"), "Submit not offered");
        shoot(&c, "overview-viewer").await;
        c.goto(&format!("{url}/#/jobs/1/default/console-ddp")).await.expect("job");
        wait_text(&c, "#job-phase", "the job", |t| !t.trim().is_empty()).await;
        // The review is answered after the page shows: give it a moment to stay hidden for good.
        tokio::time::sleep(Duration::from_millis(500)).await;
        wait_until_shown(&c, "#delete-job", false).await;
        let _ = c.close().await;
    });
}

#[test]
fn the_overview_sums_up_jobs_pending_pods_and_queues() {
    if !available() {
        return;
    }
    let cluster = cluster_yaml(75, &[("gpu-1", "hgx-h100-8")]);
    let plane = Plane::start(&cluster, &["--history-interval", "1"]);
    let url = std::fs::read_to_string(plane.data_dir().join("server")).expect("server url").trim().to_string();
    let token = std::fs::read_to_string(plane.data_dir().join("token")).expect("token").trim().to_string();
    // Four 500-pod gangs that cannot fit (8 GPUs each, one 8-GPU node):
    // 2,000 pods wait, as the issue's overview had them.
    const GANGS: usize = 4;
    const EACH: usize = 500;
    for i in 0..GANGS {
        plane
            .apply(&format!(
                "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: wait-{i}}}\nspec:\n  minAvailable: {EACH}\n  \
                 schedulerName: volcano\n  tasks:\n  - name: w\n    replicas: {EACH}\n    template:\n      spec:\n        containers:\n        \
                 - {{name: c, image: x, command: [sleep, '1'], resources: {{limits: {{nvidia.com/gpu: 8}}}}}}\n"
            ))
            .expect("waiting gang");
    }
    // A job on queue train-a2 that runs: its 4 GPUs count under train-a2.
    plane
        .apply("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: train-a2}\nspec: {weight: 1, capability: {nvidia.com/gpu: 8}, deserved: {nvidia.com/gpu: 4}}\n")
        .expect("queue");
    let on_queue = JOB.replace(
        "  pytorchReplicaSpecs:",
        "  runPolicy: {schedulingPolicy: {queue: train-a2}}\n  pytorchReplicaSpecs:",
    );
    plane.apply(&on_queue).expect("job on train-a2");
    // And a pod no job owns, too big for any node: counted, on a row of its own.
    plane
        .apply("apiVersion: v1\nkind: Pod\nmetadata: {name: loner}\nspec:\n  containers:\n  - {name: c, image: x, command: [sleep, '1'], resources: {limits: {nvidia.com/gpu: 16}}}\n")
        .expect("bare pod");
    plane.wait_for(180, "2,001 waiting pods and the job running", |p| {
        let pods = p.list("Pod");
        pods.len() >= GANGS * EACH + 3 && pods.iter().filter(|x| x["status"]["phase"] == "Running").count() == 2
    });
    let pending = plane.list("Pod").iter().filter(|p| p["status"]["phase"] == "Pending").count();
    assert_eq!(
        pending,
        GANGS * EACH + 1,
        "{:#}",
        plane.list("Pod").iter().find(|p| p["metadata"]["name"] == "loner").cloned().unwrap_or_default()
    );
    let driver = start_driver();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let c = browser(&driver).await;
        sign_in(&c, &url, &token).await;
        c.goto(&format!("{url}/#/overview")).await.expect("overview");
        let t0 = Instant::now();
        // Totals equal the API's: 2,001 pods, 2,000 of them in 4 jobs, 500
        // each (counted by the jobs' own status, not by listing their pods).
        let total = wait_text(&c, "#ov-pending-total", "the pending total", |t| {
            t.starts_with(&format!("{} ", GANGS * EACH + 1))
        })
        .await;
        println!("pending summary shown after {:.2} s", t0.elapsed().as_secs_f64());
        assert!(total.contains(&format!(" {GANGS} jobs")), "{total}");
        for i in 0..GANGS {
            let n =
                wait_text(&c, &format!(".pending-count[data-job=wait-{i}]"), "a job's count", |t| !t.is_empty()).await;
            assert_eq!(n, EACH.to_string());
        }
        // One row a job, not one a pod, and the bare pod's own; each with the scheduler's reason.
        let rows = wait_text(&c, "#ov-pending tbody", "a row a job", |t| t.lines().count() == GANGS + 1).await;
        assert!(rows.lines().filter(|l| l.contains("Unschedulable: 500")).count() == GANGS, "{rows}");
        assert!(rows.lines().any(|l| l.starts_with("(no job)") && l.contains("Unschedulable: 1")), "{rows}");
        // Jobs by kind and phase.
        let volcano = wait_text(&c, "#ov-jobs [data-kind='Volcano Job'][data-phase='']", "the Volcano total", |t| {
            t == GANGS.to_string()
        })
        .await;
        assert_eq!(volcano, GANGS.to_string());
        wait_text(&c, "#ov-jobs [data-kind=PyTorchJob][data-phase=Running]", "the running PyTorchJob", |t| t == "1")
            .await;
        // The queue's devices under its own name, with deserved and capability.
        wait_text(&c, "[data-queue-allocated=train-a2]", "train-a2's devices", |t| t == "nvidia.com/gpu: 4").await;
        // The table re-renders as figures arrive: read through wait_text, which survives a stale element.
        let default_alloc = wait_text(&c, "[data-queue-allocated=default]", "default's devices", |_| true).await;
        assert!(!default_alloc.contains("nvidia.com/gpu: 4"), "train-a2's devices are not default's: {default_alloc}");
        wait_text(&c, "#ov-queues tbody", "train-a2's capability", |t| {
            t.lines().any(|l| l.starts_with("train-a2") && l.contains("nvidia.com/gpu: 8"))
        })
        .await;
        shoot(&c, "overview-summary").await;
        // The queues page counts them there too.
        c.goto(&format!("{url}/#/queues")).await.expect("queues");
        wait_text(&c, "#main [data-queue-allocated=train-a2]", "train-a2 on the queues page", |t| {
            t == "nvidia.com/gpu: 4"
        })
        .await;
        let _ = c.close().await;
    });
}

/// What overflows on the shown page: the page (or `<main>`, which scrolls
/// on its own) wider than the window, and each table header whose text
/// runs to more lines than it has words (a squeezed column: Chinese broke
/// a character a line). Lines are told by the distinct tops of the text's
/// line boxes, so a row made tall by another cell does not count.
const OVERFLOW: &str = r#"
const out = [];
const de = document.documentElement;
if (de.scrollWidth > de.clientWidth + 1) out.push(`page ${de.scrollWidth}px wide in ${de.clientWidth}px`);
const main = document.getElementById('main');
if (main.scrollWidth > main.clientWidth + 1) out.push(`main ${main.scrollWidth}px wide in ${main.clientWidth}px`);
for (const th of document.querySelectorAll('main th')) {
  if (!th.getClientRects().length) continue;
  const tops = new Set();
  const walk = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const r = document.createRange();
    r.selectNodeContents(n);
    for (const rect of r.getClientRects()) if (rect.width > 0) tops.add(Math.round(rect.top / 4));
  }
  const words = th.textContent.trim().split(/\s+/).filter(Boolean).length;
  if (words && tops.size > words) out.push(`th "${th.textContent.trim()}": ${tops.size} lines for ${words} words`);
}
return out;
"#;

/// The x and y tick labels of the first chart under `css`.
async fn ticks(c: &Client, css: &str) -> (Vec<String>, Vec<String>) {
    let got = c
        .execute(
            "const f = document.querySelector(arguments[0]); if (!f) return [[], []];\n\
             const t = (k) => [...f.querySelectorAll(k)].map((e) => e.textContent);\n\
             return [t('.x-tick'), t('.y-tick')];",
            vec![json!(css)],
        )
        .await
        .expect("ticks");
    serde_json::from_value(got).unwrap_or_default()
}

/// A job whose one pod holds the GPU the agent on `real-1` discovered.
const ON_THE_GPU: &str = "apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: on-gpu
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          nodeSelector: {kubernetes.io/hostname: real-1}
          containers:
          - name: pytorch
            image: pytorch:2.3
            command: [sh, -c, 'sleep 600']
            resources: {limits: {nvidia.com/gpu: 1}}
";

/// Waits until the chart `css` shows the line of `real-1`'s device 0 with
/// `latest` as its legend's latest value, then checks its axes: clock times
/// across, three ticks in the figure's unit (`y_unit`) up.
async fn device_chart(c: &Client, css: &str, latest: &str, y_unit: &str) {
    let want = format!("real-1 device 0 {latest}");
    wait_text(c, &format!("{css} .legend li"), &want, |t| t == want).await;
    let (x, y) = ticks(c, css).await;
    assert!(x.len() >= 3 && x.iter().all(|t| t.len() == 5 && t.as_bytes()[2] == b':'), "{css}: clock times {x:?}");
    assert!(y.len() == 3 && y.iter().all(|t| t.ends_with(y_unit)), "{css}: {y_unit} on the y axis: {y:?}");
}

#[test]
fn charts_have_time_axes_layouts_hold_in_chinese_and_a_lost_api_is_said() {
    if !available() {
        return;
    }
    let cluster = cluster_yaml(77, &[("gpu-1", "hgx-h100-8")]);
    let mut plane = Plane::start(&cluster, &["--history-interval", "1"]);
    // A restart listens where the browser looks.
    plane.pin_port();
    let url = std::fs::read_to_string(plane.data_dir().join("server")).expect("server url").trim().to_string();
    let token = std::fs::read_to_string(plane.data_dir().join("token")).expect("token").trim().to_string();
    plane.apply(JOB).expect("the job");
    // A GPU machine beside the virtual node: the agent finds its GPU through
    // a scripted nvidia-smi (37 %, 1 GiB, 34 °C, no power figure at first).
    let tools = tempfile::tempdir().expect("tempdir");
    common::fake_nvidia_smi(tools.path());
    let _agent = common::detecting_agent(&plane, "real-1", "127.0.77.9", tools.path());
    plane.apply(ON_THE_GPU).expect("the GPU job");
    plane.wait_for(60, "the jobs' pods running", |p| {
        p.list("Pod").iter().filter(|x| x["status"]["phase"] == "Running").count() == 3
    });
    let driver = start_driver();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let c = browser(&driver).await;
        c.set_window_size(1400, 900).await.expect("1400 px");
        sign_in(&c, &url, &token).await;

        // The pod page charts its figures on clock-time and unit axes.
        c.goto(&format!("{url}/#/pods/default/console-ddp-master-0")).await.expect("pod");
        wait_text(&c, "#pod-metrics-cpu figcaption", "the CPU chart", |t| t == "CPU").await;
        wait_text(&c, "#pod-metrics-memory figcaption", "the memory chart", |t| t == "Memory").await;
        let (x, y) = ticks(&c, "#pod-metrics-memory").await;
        assert!(x.len() >= 3 && x.iter().all(|t| t.len() == 5 && t.as_bytes()[2] == b':'), "clock times: {x:?}");
        assert!(y.len() == 3 && y.iter().all(|t| t.ends_with('B')), "bytes on the y axis: {y:?}");
        let (_, y) = ticks(&c, "#pod-metrics-cpu").await;
        assert!(y.iter().all(|t| t.ends_with("cores")), "cores on the y axis: {y:?}");
        // The range picker redraws over the range chosen.
        let label = |c: &Client| {
            let c = c.clone();
            async move {
                let f = c.find(Locator::Css("#pod-metrics-cpu svg")).await.ok()?;
                f.attr("aria-label").await.ok().flatten()
            }
        };
        assert!(label(&c).await.unwrap_or_default().contains("last hour"), "an hour by default");
        choose(&c, "#pod-metrics-range", &["600"]).await;
        let deadline = Instant::now() + Duration::from_secs(20);
        while !label(&c).await.unwrap_or_default().contains("last 10 minutes") {
            assert!(Instant::now() < deadline, "the 10-minute range was not drawn");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        c.execute("document.getElementById('pod-metrics-title').scrollIntoView()", vec![]).await.expect("scroll");
        shoot(&c, "pod-charts").await;
        // The pod on the agent's GPU: its device's figures as the agent reported them,
        // on its page, its job's Metrics tab and its node's page.
        let charts = [
            ("utilization", "92 %", "%"),
            ("deviceMemory", "40 GiB", "B"),
            ("temperature", "61 \u{b0}C", "\u{b0}C"),
            ("power", "612 W", "W"),
        ];
        c.goto(&format!("{url}/#/pods/default/on-gpu-master-0")).await.expect("the GPU pod");
        device_chart(&c, "#pod-metrics-utilization", "37 %", "%").await;
        assert!(c.find(Locator::Css("#pod-metrics-power")).await.is_err(), "no power figure, no power chart");
        // The GPU gets busy: the open page follows.
        std::fs::write(tools.path().join("figures"), common::gpu_figures(92, 40960, 61, "612.40")).expect("figures");
        for (figure, latest, unit) in charts {
            device_chart(&c, &format!("#pod-metrics-{figure}"), latest, unit).await;
        }
        c.execute("document.getElementById('pod-metrics-utilization').scrollIntoView()", vec![]).await.expect("scroll");
        shoot(&c, "device-charts").await;
        c.goto(&format!("{url}/#/jobs/1/default/on-gpu")).await.expect("the GPU job");
        click(&c, "[role=tab]:nth-child(4)").await;
        for (figure, latest, unit) in charts {
            device_chart(&c, &format!("#job-metrics-{figure}"), latest, unit).await;
        }
        c.goto(&format!("{url}/#/nodes/real-1")).await.expect("the GPU node");
        for (figure, latest, unit) in charts {
            device_chart(&c, &format!("#node-metrics-{figure}"), latest, unit).await;
        }
        // The job's charts: its pods by phase.
        c.goto(&format!("{url}/#/jobs/1/default/console-ddp")).await.expect("job");
        wait_text(&c, "#job-phase", "the job", |t| t.contains("Running")).await;
        click(&c, "[role=tab]:nth-child(4)").await;
        wait_text(&c, "#job-metrics-pods", "pods by phase", |t| t.contains("Pods by phase") && t.contains("Running"))
            .await;
        // The node's.
        c.goto(&format!("{url}/#/nodes/gpu-1")).await.expect("node");
        wait_text(&c, "#node-metrics-allocated figcaption", "devices allocated", |t| t == "Devices allocated").await;

        // Chinese at 1024 and 1400 px: no page scrolls sideways, no header breaks in a word.
        c.execute("localStorage.setItem('ringleader-lang', 'zh')", vec![]).await.expect("Chinese");
        let pages = [
            ("overview", "#ov-families .card"),
            ("jobs", "#all-jobs table tbody tr td a"),
            ("queues", "#main [data-queue-allocated=default]"),
            ("nodes", ".node-used[data-node=gpu-1] [role=meter]"),
            ("create/TrainingJob", "#cr-yaml"),
            ("pods/default/console-ddp-master-0", "#pod-metrics-cpu"),
        ];
        for (width, height) in [(1024, 768), (1400, 900)] {
            c.set_window_size(width, height).await.expect("window size");
            for (hash, css) in pages {
                c.goto(&format!("{url}/#/{hash}")).await.expect("page");
                find(&c, css).await;
                wait_text(&c, "#nav", "Chinese", |t| t.contains("作业")).await;
                // Sections fill in as their data arrives: let them settle.
                tokio::time::sleep(Duration::from_millis(500)).await;
                let problems = c.execute(OVERFLOW, vec![]).await.expect("layout");
                assert_eq!(problems, json!([]), "{hash} at {width} px in Chinese");
                if width == 1024 && hash == "queues" {
                    shoot(&c, "queues-zh-1024").await;
                }
            }
        }
        assert!(c.find(Locator::Css("#conn-lost")).await.is_err(), "no banner while the API answers");

        // The API goes away: a banner says so (in Chinese), and goes when it is back.
        c.goto(&format!("{url}/#/jobs")).await.expect("jobs");
        find(&c, "#all-jobs table tbody tr td a").await;
        plane.kill();
        let banner = wait_text(&c, "#conn-lost[role=alert]", "the banner", |t| !t.is_empty()).await;
        assert!(banner.contains("无法连接"), "{banner}");
        shoot(&c, "connection-lost-zh").await;
        // A page opened meanwhile waits on its first read: its loading note
        // (translated, a status, the page busy) stays until the API is back.
        c.goto(&format!("{url}/#/pods/default/console-ddp-master-0")).await.expect("pod");
        let note = wait_text(&c, "#main[aria-busy=true] > p.loading[role=status]", "the loading note", |t| !t.is_empty()).await;
        assert_eq!(note, "正在加载…");
        // `spawn` blocks on the plane's own runtime: not from inside this one.
        std::thread::scope(|s| s.spawn(|| plane.spawn()).join().expect("restarted"));
        find(&c, "#pod-summary").await;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let busy = c
                .execute(
                    "return [document.getElementById('main').getAttribute('aria-busy'), document.querySelectorAll('#main > p.loading').length]",
                    vec![],
                )
                .await
                .expect("busy");
            if busy == json!([null, 0]) {
                break;
            }
            assert!(Instant::now() < deadline, "the note never gave way to the pod's page: {busy}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while c.find(Locator::Css("#conn-lost")).await.is_ok() {
            assert!(Instant::now() < deadline, "the banner stayed after the API came back");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let _ = c.close().await;
    });
}
