//! resourceVersions no store holds (past 2^63-1, or not numbers) are bad
//! requests, as kube-apiserver answers them; never a 500.

use crate::common::{cluster_yaml, Plane};
use crate::requests::send;

#[test]
fn out_of_range_resource_versions_are_bad_requests() {
    let p = Plane::start(&cluster_yaml(43, &[("gpu-1", "hgx-h100-8")]), &["--runtime", "simulated"]);
    for rv in ["9223372036854775808", "18446744073709551616", "-1", "abc", "1e3"] {
        for query in [format!("resourceVersion={rv}"), format!("watch=true&timeoutSeconds=1&resourceVersion={rv}")] {
            let (code, out) = send(&p, "GET", &format!("/api/v1/namespaces/default/pods?{query}"), "", Vec::new());
            assert_eq!(code, 400, "{query}: {out}");
            assert_eq!(out["reason"], "BadRequest", "{query}: {out}");
            assert!(out["message"].as_str().unwrap_or_default().contains("resourceVersion"), "{query}: {out}");
        }
    }
    // 2^63-1 is a version the store could hold, just not yet: a list
    // answers as kube-apiserver does (504 Too large resource version), a
    // watch waits for it until its timeout; neither is a 500.
    let max = i64::MAX;
    let (code, out) =
        send(&p, "GET", &format!("/api/v1/namespaces/default/pods?resourceVersion={max}"), "", Vec::new());
    assert!(code == 504 && out["reason"] == "Timeout", "{code} {out}");
    let watch = format!("/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=1&resourceVersion={max}");
    let (code, out) = send(&p, "GET", &watch, "", Vec::new());
    assert!(code == 200 || code == 410, "{code} {out}");
}
