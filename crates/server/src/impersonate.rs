//! `Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid` and
//! `Impersonate-Extra-<key>` headers (`kubectl --as`, `--as-group`), as
//! kube-apiserver's impersonation filter treats them: the caller must be
//! allowed the `impersonate` verb on each thing it claims (`users` or
//! `serviceaccounts`, `groups`, `uids` and `userextras/<key>`), and the
//! request then goes on as the impersonated identity. Never ignored: a
//! caller who may not impersonate gets 403, not their own answer.

use crate::authz::{self, Attributes};
use crate::ServerState;
use axum::http::HeaderMap;
use ringleader_auth::identity::Identity;
use ringleader_registry::status::ApiError;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// What the headers ask to act as.
#[derive(Debug, Default, PartialEq, Eq)]
struct Claim {
    user: String,
    groups: Vec<String>,
    uid: Option<String>,
    extra: Vec<(String, String)>,
}

fn claim(headers: &HeaderMap) -> Result<Option<Claim>, ApiError> {
    let text = |name: &str, v: &axum::http::HeaderValue| {
        v.to_str().map(str::to_string).map_err(|_| ApiError::bad_request(format!("header {name}: not visible ASCII")))
    };
    let mut c = Claim::default();
    let mut any = false;
    for (name, value) in headers {
        let name = name.as_str();
        match name {
            USER => c.user = text(name, value)?,
            GROUP => c.groups.push(text(name, value)?),
            UID => c.uid = Some(text(name, value)?),
            _ => match name.strip_prefix(EXTRA_PREFIX) {
                Some(key) => {
                    let key = percent_encoding::percent_decode_str(key).decode_utf8_lossy().to_string();
                    c.extra.push((key, text(name, value)?));
                }
                None => continue,
            },
        }
        any = true;
    }
    if !any {
        return Ok(None);
    }
    if c.user.is_empty() {
        return Err(ApiError::bad_request(format!(
            "requested impersonation of groups {:?}, uid {:?} or extra fields without impersonating a user \
             (send Impersonate-User too)",
            c.groups, c.uid
        )));
    }
    Ok(Some(c))
}

fn attributes(api_group: &str, resource: &str, namespace: &str, name: &str) -> Attributes {
    Attributes {
        verb: "impersonate".into(),
        api_group: api_group.into(),
        resource: resource.into(),
        namespace: namespace.into(),
        name: name.into(),
        resource_request: true,
        ..Attributes::default()
    }
}

/// Everything the caller must be allowed to impersonate for `c`.
fn needed(c: &Claim) -> Vec<Attributes> {
    let mut out = Vec::new();
    match c.user.strip_prefix(SERVICE_ACCOUNT_PREFIX).and_then(|rest| rest.split_once(':')) {
        Some((ns, name)) => out.push(attributes("", "serviceaccounts", ns, name)),
        None => out.push(attributes("", "users", "", &c.user)),
    }
    for g in &c.groups {
        out.push(attributes("", "groups", "", g));
    }
    if let Some(uid) = &c.uid {
        out.push(attributes("authentication.k8s.io", "uids", "", uid));
    }
    for (key, value) in &c.extra {
        let mut a = attributes("authentication.k8s.io", "userextras", "", value);
        a.subresource = key.clone();
        out.push(a);
    }
    out
}

/// The identity a request acts as: `caller` itself without impersonation
/// headers, else the impersonated one once every part of it is allowed.
pub async fn resolve(state: &ServerState, caller: Identity, headers: &HeaderMap) -> Result<Identity, ApiError> {
    let Some(c) = claim(headers)? else { return Ok(caller) };
    for a in needed(&c) {
        if !authz::decide(state, &caller, &a).await?.allowed {
            return Err(authz::forbidden(&caller, &a, ""));
        }
    }
    // As kube-apiserver: a ServiceAccount impersonated without groups is
    // in its accounts' groups, as its own token would put it.
    let mut groups = c.groups;
    if let Some((ns, _)) = c.user.strip_prefix(SERVICE_ACCOUNT_PREFIX).and_then(|rest| rest.split_once(':')) {
        if groups.is_empty() {
            use ringleader_auth::sa_token::ALL_GROUP;
            groups = vec![ALL_GROUP.to_string(), format!("{ALL_GROUP}:{ns}")];
        }
    }
    Ok(Identity::new(c.user, groups))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn headers_name_what_is_claimed_and_what_must_be_allowed() {
        let mut h = HeaderMap::new();
        assert_eq!(claim(&h).ok(), Some(None));
        h.append("Impersonate-Group", HeaderValue::from_static("team"));
        assert!(claim(&h).is_err(), "groups without a user are refused");
        h.append("Impersonate-User", HeaderValue::from_static("system:serviceaccount:ns1:robot"));
        h.append("Impersonate-Group", HeaderValue::from_static("ops"));
        h.append("Impersonate-Extra-Scopes%2Fa", HeaderValue::from_static("x"));
        let c = claim(&h).ok().flatten().unwrap_or_default();
        assert_eq!(c.groups, ["team", "ops"]);
        assert_eq!(c.extra, [("scopes/a".to_string(), "x".to_string())]);
        let needed = needed(&c);
        assert_eq!((needed[0].resource.as_str(), needed[0].namespace.as_str()), ("serviceaccounts", "ns1"));
        assert_eq!(needed[1].resource, "groups");
        assert_eq!((needed[3].resource.as_str(), needed[3].subresource.as_str()), ("userextras", "scopes/a"));
    }

    #[test]
    fn refusal_is_worded_as_kube_apiserver() {
        let bob = Identity::new("bob", Vec::<String>::new());
        let e = authz::forbidden(&bob, &attributes("", "users", "", "alice"), "");
        assert_eq!(
            e.message,
            r#"users "alice" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope"#
        );
    }
}
