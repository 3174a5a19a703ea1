//! The web console: static assets built into the binary (no CDN, no npm
//! step), served at `/` and `/console/…` without a token. The pages hold no
//! data; everything they show comes from the API with the token the user
//! signs in with, so a page sees exactly what that identity may see.

use axum::extract::Path;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// Every asset: its path under `/console/` and its bytes.
const ASSETS: &[(&str, &[u8])] = &[
    ("index.html", include_bytes!("../console/index.html")),
    ("app.css", include_bytes!("../console/app.css")),
    ("app.js", include_bytes!("../console/app.js")),
    ("i18n.js", include_bytes!("../console/i18n.js")),
    ("main.js", include_bytes!("../console/main.js")),
    ("shared.js", include_bytes!("../console/shared.js")),
    ("metrics.js", include_bytes!("../console/metrics.js")),
    ("pages/overview.js", include_bytes!("../console/pages/overview.js")),
    ("pages/jobs.js", include_bytes!("../console/pages/jobs.js")),
    ("pages/pod.js", include_bytes!("../console/pages/pod.js")),
    ("pages/submit.js", include_bytes!("../console/pages/submit.js")),
    ("pages/nodes.js", include_bytes!("../console/pages/nodes.js")),
    ("pages/queues.js", include_bytes!("../console/pages/queues.js")),
    ("pages/workspaces.js", include_bytes!("../console/pages/workspaces.js")),
    ("pages/data.js", include_bytes!("../console/pages/data.js")),
    ("pages/checks.js", include_bytes!("../console/pages/checks.js")),
    ("pages/charts.js", include_bytes!("../console/pages/charts.js")),
    ("pages/create.js", include_bytes!("../console/pages/create.js")),
    ("pages/create/yaml.js", include_bytes!("../console/pages/create/yaml.js")),
    ("pages/create/inputs.js", include_bytes!("../console/pages/create/inputs.js")),
    ("pages/create/platform.js", include_bytes!("../console/pages/create/platform.js")),
    ("pages/create/training.js", include_bytes!("../console/pages/create/training.js")),
    ("pages/create/operations.js", include_bytes!("../console/pages/create/operations.js")),
    ("pages/vip.js", include_bytes!("../console/pages/vip.js")),
];

/// Paths the auth layer lets through: the console's static files.
pub fn is_console_path(path: &str) -> bool {
    path == "/" || path.starts_with("/console/")
}

/// Scripts and styles only from this origin, no inline script, no framing:
/// an object's text can never run as code in a signed-in tab.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
    connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'";

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        _ => "application/octet-stream",
    }
}

fn serve(path: &str) -> Response {
    let Some((_, bytes)) = ASSETS.iter().find(|(p, _)| *p == path) else {
        return (StatusCode::NOT_FOUND, "no such console file").into_response();
    };
    let headers = [
        (CONTENT_TYPE, HeaderValue::from_static(content_type(path))),
        // Assets change with the binary; revalidating keeps an upgrade visible at once.
        (CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (HeaderName::from_static("content-security-policy"), HeaderValue::from_static(CSP)),
        (HeaderName::from_static("x-content-type-options"), HeaderValue::from_static("nosniff")),
        (HeaderName::from_static("referrer-policy"), HeaderValue::from_static("no-referrer")),
    ];
    (headers, *bytes).into_response()
}

/// `GET /`.
pub async fn index() -> Response {
    serve("index.html")
}

/// `GET /console/{*path}`.
pub async fn asset(Path(path): Path<String>) -> Response {
    serve(&path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file in `console/` is served, so a page added there without a
    /// line here fails this test rather than a browser.
    #[test]
    fn every_console_file_is_an_asset() -> std::io::Result<()> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("console");
        let mut found = Vec::new();
        let mut dirs = vec![root.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir)? {
                let p = entry?.path();
                if p.is_dir() {
                    dirs.push(p);
                } else if let Ok(rel) = p.strip_prefix(&root) {
                    found.push(rel.to_string_lossy().replace('\\', "/"));
                }
            }
        }
        found.sort();
        let mut listed: Vec<String> = ASSETS.iter().map(|(p, _)| p.to_string()).collect();
        listed.sort();
        assert_eq!(found, listed);
        Ok(())
    }

    #[test]
    fn unknown_files_are_404_and_known_ones_carry_the_policy() {
        assert_eq!(serve("../Cargo.toml").status(), StatusCode::NOT_FOUND);
        let r = serve("app.js");
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()[CONTENT_TYPE], "text/javascript; charset=utf-8");
        assert!(r.headers()["content-security-policy"].to_str().is_ok_and(|v| v.contains("script-src 'self'")));
    }
}
