//! Peak resident memory of the server per request, for BENCHMARKS.md: the
//! largest accepted request of each verb on ~1.4 MB ConfigMaps, and a LIST
//! of 200 of them. `VmHWM` is reset before each request through
//! `/proc/<pid>/clear_refs`. Ignored (slow, prints figures):
//! `cargo test -p ringleader --test abuse peak_memory -- --ignored --nocapture`.

use crate::common::{cluster_yaml, Plane};
use crate::requests::{peak_rss, send};
use serde_json::{json, Value};

const CM: &str = "/api/v1/namespaces/default/configmaps";

fn big_data() -> Value {
    let data: serde_json::Map<String, Value> =
        (0..14).map(|i| (format!("k{i}"), Value::String("z".repeat(100_000)))).collect();
    Value::Object(data)
}

fn rss_now(p: &Plane) -> u64 {
    status_bytes(p, "VmRSS:")
}

/// One `kB` figure of `/proc/<pid>/status`, in bytes.
fn status_bytes(p: &Plane, field: &str) -> u64 {
    let pid = p.child.as_ref().expect("up").id();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let line = status.lines().find(|l| l.starts_with(field)).expect("field");
    line.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()).expect("kB") * 1024
}

/// Resident memory split into the heap (`RssAnon`) and mapped file pages
/// (`RssFile`: SQLite reads the store through mmap; the kernel drops those
/// clean pages under pressure), in MB.
fn rss_split(p: &Plane) -> String {
    format!("(anon {} MB, file {} MB)", status_bytes(p, "RssAnon:") >> 20, status_bytes(p, "RssFile:") >> 20)
}

/// Peak RSS (MB) over one request, and the RSS (MB) just after it.
fn measure(p: &Plane, what: &str, f: impl FnOnce(&Plane) -> u16) {
    let pid = p.child.as_ref().expect("up").id();
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").expect("reset VmHWM");
    let before = rss_now(p);
    let split_before = rss_split(p);
    let code = f(p);
    println!(
        "{what:<40} HTTP {code}  RSS before {:>5} MB {split_before}  peak {:>5} MB  after {:>5} MB {}",
        before >> 20,
        peak_rss(p) >> 20,
        rss_now(p) >> 20,
        rss_split(p)
    );
}

#[test]
#[ignore = "prints figures for BENCHMARKS.md"]
fn peak_memory_per_request() {
    let p = Plane::start(&cluster_yaml(45, &[("gpu-1", "hgx-h100-8")]), &["--runtime", "simulated"]);
    let object =
        |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": big_data()});
    let size = object("x").to_string().len();
    println!("object: {size} bytes of JSON");
    let small = |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
    measure(&p, "create (POST)", |p| send(p, "POST", CM, "application/json", object("c").to_string().into()).0);
    measure(&p, "update (PUT)", |p| {
        send(p, "PUT", &format!("{CM}/c"), "application/json", object("c").to_string().into()).0
    });
    for (name, kind) in [
        ("json", "application/json-patch+json"),
        ("merge", "application/merge-patch+json"),
        ("strategic", "application/strategic-merge-patch+json"),
    ] {
        send(&p, "POST", CM, "application/json", small(name).to_string().into());
        let body = match name {
            "json" => json!([{"op": "add", "path": "/data", "value": big_data()}]),
            _ => json!({"data": big_data()}),
        };
        measure(&p, &format!("{name} patch"), |p| {
            send(p, "PATCH", &format!("{CM}/{name}"), kind, body.to_string().into()).0
        });
    }
    let bomb: Vec<Value> =
        (0..30).map(|i| json!({"op": "copy", "from": "/data", "path": format!("/data/c{i}")})).collect();
    measure(&p, "json patch bomb (30 copies, refused)", |p| {
        send(p, "PATCH", &format!("{CM}/json"), "application/json-patch+json", serde_json::to_vec(&bomb).expect("json"))
            .0
    });
    measure(&p, "server-side apply", |p| {
        send(
            p,
            "PATCH",
            &format!("{CM}/applied?fieldManager=t"),
            "application/apply-patch+yaml",
            object("applied").to_string().into(),
        )
        .0
    });
    for i in 0..200 {
        let (code, out) = send(&p, "POST", CM, "application/json", object(&format!("l{i}")).to_string().into());
        assert_eq!(code, 201, "{out}");
    }
    measure(&p, "LIST of 200 (+6) objects of 1.4 MB", |p| {
        let url = format!("{}{CM}", p.client.base());
        let request = p.client.http().get(&url).bearer_auth(crate::requests::token(p));
        // The largest heap and mapped-file shares seen while the list runs.
        let pid = p.child.as_ref().expect("up").id();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let sampler = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let (mut anon, mut file) = (0u64, 0u64);
                for _ in 0..60_000 {
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
                    let kb = |field: &str| {
                        let line = status.lines().find(|l| l.starts_with(field)).unwrap_or_default();
                        line.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) << 10
                    };
                    anon = anon.max(kb("RssAnon:"));
                    file = file.max(kb("RssFile:"));
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                (anon, file)
            })
        };
        let _stop = scopeguard(stop);
        let code = p.rt.block_on(async {
            let response = request.send().await.expect("list");
            let code = response.status().as_u16();
            let bytes = response.bytes().await.expect("body");
            println!("LIST body: {} MB", bytes.len() >> 20);
            code
        });
        drop(_stop);
        let (anon, file) = sampler.join().expect("sampler");
        println!("during the LIST: anon up to {} MB, file up to {} MB", anon >> 20, file >> 20);
        code
    });
    // `kubectl get`'s Table still builds the page's objects, then the table:
    // whether that memory goes back after the request.
    measure(&p, "Table LIST of the same (kubectl get)", |p| {
        let url = format!("{}{CM}", p.client.base());
        let request = p
            .client
            .http()
            .get(&url)
            .bearer_auth(crate::requests::token(p))
            .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io");
        p.rt.block_on(async {
            let response = request.send().await.expect("table");
            let code = response.status().as_u16();
            let bytes = response.bytes().await.expect("body");
            println!("Table body: {} KB", bytes.len() >> 10);
            code
        })
    });
    std::thread::sleep(std::time::Duration::from_secs(5));
    println!("RSS 5 s after the last request: {} MB {}", rss_now(&p) >> 20, rss_split(&p));
}

/// Sets the flag when dropped (also when the request panics).
struct StopOnDrop(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

fn scopeguard(flag: std::sync::Arc<std::sync::atomic::AtomicBool>) -> StopOnDrop {
    StopOnDrop(flag)
}
