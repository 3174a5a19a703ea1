//! Shared helpers of the request-abuse modules: raw HTTP to the plane with
//! its admin token, and the server's peak resident memory.

use crate::common::Plane;
use serde_json::Value;

/// The plane's admin token.
pub fn token(p: &Plane) -> String {
    let path = ringleader_client::Token::path(&p.data_dir());
    match ringleader_client::Token::read(&path) {
        Ok(Some(t)) => t.as_str().to_string(),
        other => panic!("no token at {}: {:?}", path.display(), other.map(|t| t.is_some())),
    }
}

/// Sends `method path` with a body of `content_type`; the status and JSON body.
pub fn send(p: &Plane, method: &str, path: &str, content_type: &str, body: Vec<u8>) -> (u16, Value) {
    let url = format!("{}{path}", p.client.base());
    let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
    let request =
        p.client.http().request(method, &url).bearer_auth(token(p)).header("Content-Type", content_type).body(body);
    p.rt.block_on(async {
        let response = request.send().await.unwrap_or_else(|e| panic!("{url}: {e}"));
        let code = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        (code, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    })
}

/// `VmHWM` of the `up` process, in bytes (its peak resident set).
pub fn peak_rss(p: &Plane) -> u64 {
    let pid = p.child.as_ref().expect("up is running").id();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM line");
    let kib: u64 = line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("VmHWM in kB");
    kib * 1024
}
