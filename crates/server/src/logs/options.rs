//! kubelet's log options (`container`, `follow`, `previous`, `timestamps`,
//! `tailLines`, `limitBytes`, `sinceSeconds`, `sinceTime`), parsed and
//! checked as kube-apiserver checks them.

use ringleader_api::time::parse_rfc3339;
use ringleader_registry::status::ApiError;
use std::collections::HashMap;

/// The query parameters of a log request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogOptions {
    /// `container`.
    pub container: Option<String>,
    /// `previous`: the log of the container's previous run.
    pub previous: bool,
    /// `sinceSeconds` or `sinceTime`, as a Unix time relative to `now` at parse.
    pub since: Option<f64>,
    /// `timestamps`: prefix each line with its RFC 3339 stamp.
    pub timestamps: bool,
    /// `tailLines`.
    pub tail_lines: Option<u64>,
    /// `limitBytes`.
    pub limit_bytes: Option<u64>,
    /// `follow`.
    pub follow: bool,
}

impl LogOptions {
    /// Reads the options of a query at time `now` (Unix seconds).
    pub fn parse(query: &HashMap<String, String>, now: f64) -> Result<LogOptions, ApiError> {
        let get = |k: &str| query.get(k).map(String::as_str).filter(|v| !v.is_empty());
        let flag = |k: &str| -> Result<bool, ApiError> {
            // A bare `?follow` counts as true, as it always has here.
            match query.get(k).map(String::as_str) {
                None | Some("false" | "0") => Ok(false),
                Some("true" | "1" | "") => Ok(true),
                Some(v) => Err(ApiError::bad_field(k, format!("{v:?} is not a boolean (true or false)"))),
            }
        };
        let number = |k: &str, min: u64| -> Result<Option<u64>, ApiError> {
            let Some(v) = get(k) else { return Ok(None) };
            match v.parse::<u64>() {
                Ok(n) if n >= min => Ok(Some(n)),
                _ if min == 0 => Err(ApiError::bad_field(k, format!("{v:?}: must be greater than or equal to 0"))),
                _ => Err(ApiError::bad_field(k, format!("{v:?}: must be greater than 0"))),
            }
        };
        let since_seconds = number("sinceSeconds", 1)?;
        let since_time = match get("sinceTime") {
            None => None,
            Some(t) => Some(parse_rfc3339(t).ok_or_else(|| {
                ApiError::bad_field("sinceTime", format!("{t:?} is not an RFC 3339 time (2006-01-02T15:04:05Z)"))
            })?),
        };
        let since = match (since_seconds, since_time) {
            (Some(_), Some(_)) => {
                return Err(ApiError::bad_field(
                    "sinceSeconds",
                    "at most one of `sinceTime` or `sinceSeconds` may be specified",
                ))
            }
            (Some(s), None) => Some(now - s as f64),
            (None, t) => t,
        };
        Ok(LogOptions {
            container: get("container").map(str::to_string),
            previous: flag("previous")?,
            since,
            timestamps: flag("timestamps")?,
            tail_lines: number("tailLines", 0)?,
            limit_bytes: number("limitBytes", 1)?,
            follow: flag("follow")?,
        })
    }

    /// The options as a query string (a proxied request's), `since` as
    /// `sinceTime` so that the agent's clock does not shift it.
    pub fn to_query(&self) -> String {
        let mut q: Vec<String> = Vec::new();
        if let Some(c) = &self.container {
            q.push(format!("container={}", ringleader_client::encode(c)));
        }
        for (k, on) in [("previous", self.previous), ("timestamps", self.timestamps), ("follow", self.follow)] {
            if on {
                q.push(format!("{k}=true"));
            }
        }
        if let Some(t) = self.since {
            q.push(format!("sinceTime={}", ringleader_client::encode(&ringleader_api::time::rfc3339(t))));
        }
        if let Some(n) = self.tail_lines {
            q.push(format!("tailLines={n}"));
        }
        if let Some(n) = self.limit_bytes {
            q.push(format!("limitBytes={n}"));
        }
        q.join("&")
    }
}
