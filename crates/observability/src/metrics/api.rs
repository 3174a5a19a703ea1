//! API request metrics: every request counted by verb, group, resource and
//! status code (kube-apiserver's `apiserver_request_total`), timed, and watch
//! streams counted while they are open (the API server's middleware records
//! them).
//!
//! Labels are drawn from fixed sets (the served resource types, the HTTP
//! methods): a client sending arbitrary paths cannot grow the series.

use axum::http::Method;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use ringleader_registry::resources;

/// Upper bounds (seconds) of API request latency (kube-apiserver's, shortened).
const REQUEST_BUCKETS: &[f64] = &[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

type Labels3 = [(&'static str, String); 3];
type Labels4 = [(&'static str, String); 4];

fn request_histogram() -> Histogram {
    Histogram::new(REQUEST_BUCKETS.iter().copied())
}

/// The API server's own families (registered under `up` only).
pub(super) struct ApiFamilies {
    requests: Family<Labels4, Counter>,
    request_duration: Family<Labels3, Histogram, fn() -> Histogram>,
    watches: Family<Labels3, Gauge>,
}

impl ApiFamilies {
    pub(super) fn register(registry: &mut Registry) -> ApiFamilies {
        let requests = Family::<Labels4, Counter>::default();
        registry.register(
            "apiserver_request",
            "API requests by verb, API group, resource and HTTP status code",
            requests.clone(),
        );
        let request_duration: Family<Labels3, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(request_histogram);
        registry.register(
            "apiserver_request_duration_seconds",
            "Seconds to answer an API request (to its headers; watches are left out), by verb, group and resource",
            request_duration.clone(),
        );
        let watches = Family::<Labels3, Gauge>::default();
        registry.register(
            "apiserver_longrunning_requests",
            "Watch streams open now, by group and resource",
            watches.clone(),
        );
        ApiFamilies { requests, request_duration, watches }
    }
}

/// What a request addresses, as the metrics label it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestLabels {
    /// kube-apiserver's verb: `GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`,
    /// `DELETE`, `DELETECOLLECTION` (other methods by name).
    pub verb: &'static str,
    /// API group (`""`: core or a non-resource URL).
    pub group: &'static str,
    /// Plural resource, `""` for a non-resource URL or an unknown one.
    pub resource: &'static str,
}

/// Labels of a request from its method, path and query.
pub fn classify(method: &Method, path: &str, query: Option<&str>) -> RequestLabels {
    let segs: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => ("", "", &[][..]),
    };
    let rest = match rest {
        ["namespaces", _, rest @ ..] if !rest.is_empty() => rest,
        other => other,
    };
    let rt = rest.first().and_then(|plural| resources::by_path(group, version, plural));
    let (group, resource) = rt.map_or(("", ""), |rt| (rt.group, rt.plural));
    let collection = rt.is_some() && rest.len() == 1;
    let watch = query.is_some_and(|q| q.split('&').any(|kv| kv == "watch=true" || kv == "watch=1"));
    let verb = match *method {
        Method::GET if watch => "WATCH",
        Method::GET if collection => "LIST",
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE if collection => "DELETECOLLECTION",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "OTHER",
    };
    RequestLabels { verb, group, resource }
}

impl ApiFamilies {
    /// Counts and times one answered request.
    pub(super) fn observe(&self, labels: &RequestLabels, code: u16, secs: f64) {
        let (verb, group, resource) = (labels.verb.to_string(), labels.group.to_string(), labels.resource.to_string());
        self.requests
            .get_or_create(&[
                ("verb", verb.clone()),
                ("group", group.clone()),
                ("resource", resource.clone()),
                ("code", code.to_string()),
            ])
            .inc();
        if labels.verb != "WATCH" && secs.is_finite() && secs >= 0.0 {
            self.request_duration
                .get_or_create(&[("verb", verb), ("group", group), ("resource", resource)])
                .observe(secs);
        }
    }
}

/// One open watch stream, counted until dropped.
pub struct WatchGuard {
    watches: Option<Family<Labels3, Gauge>>,
    key: Labels3,
}

impl WatchGuard {
    /// Counts a watch of `labels` open in `api`'s families (nothing when the
    /// process has none).
    pub(super) fn open(api: Option<&ApiFamilies>, labels: &RequestLabels) -> WatchGuard {
        let key = [
            ("verb", "WATCH".to_string()),
            ("group", labels.group.to_string()),
            ("resource", labels.resource.to_string()),
        ];
        let watches = api.map(|a| a.watches.clone());
        if let Some(w) = &watches {
            w.get_or_create(&key).inc();
        }
        WatchGuard { watches, key }
    }
}

impl Drop for WatchGuard {
    fn drop(&mut self) {
        if let Some(w) = &self.watches {
            w.get_or_create(&self.key).dec();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_labelled_from_fixed_sets() {
        let c = |m: Method, p: &str, q: Option<&str>| {
            let l = classify(&m, p, q);
            (l.verb, l.group, l.resource)
        };
        assert_eq!(c(Method::GET, "/api/v1/namespaces/ns/pods", None), ("LIST", "", "pods"));
        assert_eq!(c(Method::GET, "/api/v1/namespaces/ns/pods", Some("watch=true&x=1")), ("WATCH", "", "pods"));
        assert_eq!(c(Method::GET, "/api/v1/namespaces/ns/pods/p", None), ("GET", "", "pods"));
        assert_eq!(c(Method::GET, "/api/v1/namespaces/ns/pods/p/log", None), ("GET", "", "pods"));
        assert_eq!(
            c(Method::POST, "/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs", None),
            ("POST", "batch.volcano.sh", "jobs")
        );
        assert_eq!(c(Method::DELETE, "/api/v1/namespaces/ns/pods", None), ("DELETECOLLECTION", "", "pods"));
        assert_eq!(c(Method::GET, "/metrics", None), ("GET", "", ""));
        assert_eq!(c(Method::GET, "/apis/made.up/v1/things/x", None), ("GET", "", ""));
    }
}
