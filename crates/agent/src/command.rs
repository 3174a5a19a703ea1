//! Turning a container into a program, its arguments and its environment,
//! the way the kubelet does: `$(VAR)` references expanded, a single string
//! run by `/bin/sh -c`, the agent's own variables added.

use std::collections::HashMap;

/// Kubernetes `$(VAR)` expansion: a defined variable is replaced, an
/// undefined one is left as written, `$$` is one literal `$`.
pub fn expand(input: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let bytes = input.as_bytes();
    let mut out = String::with_capacity(input.len());
    let mut checkpoint = 0;
    let mut cursor = 0;
    while cursor < bytes.len() {
        if bytes[cursor] == b'$' && cursor + 1 < bytes.len() {
            out.push_str(&input[checkpoint..cursor]);
            let rest = &input[cursor + 1..];
            match bytes[cursor + 1] {
                b'$' => {
                    out.push('$');
                    cursor += 2;
                }
                b'(' => match rest.find(')') {
                    Some(end) => {
                        let name = &rest[1..end];
                        match lookup(name) {
                            Some(v) => out.push_str(&v),
                            None => {
                                out.push_str("$(");
                                out.push_str(name);
                                out.push(')');
                            }
                        }
                        cursor += end + 2;
                    }
                    None => {
                        out.push_str("$(");
                        cursor += 2;
                    }
                },
                _ => {
                    out.push('$');
                    cursor += 1;
                }
            }
            checkpoint = cursor;
        } else {
            cursor += 1;
        }
    }
    out.push_str(&input[checkpoint..]);
    out
}

/// Container env with each value expanded against the variables defined
/// before it (Kubernetes order semantics); a later duplicate wins.
pub fn expand_env(env: &[(String, String)]) -> Vec<(String, String)> {
    let mut defined: HashMap<String, String> = HashMap::new();
    let mut out: Vec<(String, String)> = Vec::with_capacity(env.len());
    for (name, value) in env {
        let v = expand(value, &|n| defined.get(n).cloned());
        defined.insert(name.clone(), v.clone());
        match out.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = v,
            None => out.push((name.clone(), v)),
        }
    }
    out
}

/// The argv to exec: command + args with `$(VAR)` expanded; a lone string
/// runs through `/bin/sh -c` (`["/bin/sh","-c",…]` is already that and is
/// exec'd as written). Empty: an error naming the fields.
pub fn argv(command: &[String], args: &[String], env: &[(String, String)]) -> Result<Vec<String>, String> {
    let lookup = |n: &str| env.iter().rev().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let full: Vec<String> = command.iter().chain(args).map(|s| expand(s, &lookup)).collect();
    match full.as_slice() {
        [] => Err("spec.containers[0].command: required (the agent runs no image entrypoint)".to_string()),
        [one] if one.trim().is_empty() => Err("spec.containers[0].command: empty".to_string()),
        [one] => Ok(vec!["/bin/sh".to_string(), "-c".to_string(), one.clone()]),
        _ => Ok(full),
    }
}

/// What the agent tells every pod about itself.
pub struct AgentEnv<'a> {
    /// Node name.
    pub node: &'a str,
    /// Pod name.
    pub pod: &'a str,
    /// Namespace.
    pub namespace: &'a str,
    /// Node address.
    pub pod_ip: &'a str,
    /// Hosts file path.
    pub hosts: &'a str,
    /// `HOME` (the sandbox).
    pub home: &'a str,
    /// `PATH`.
    pub path: &'a str,
    /// `HOSTNAME`.
    pub hostname: &'a str,
}

/// The process environment: `PATH`, `HOME`, `HOSTNAME` (the container may
/// override them), the container's env, then the `RINGLEADER_*` variables
/// (the agent's, never overridden).
pub fn process_env(container_env: &[(String, String)], agent: &AgentEnv<'_>) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = vec![
        ("PATH".into(), agent.path.into()),
        ("HOME".into(), agent.home.into()),
        ("HOSTNAME".into(), agent.hostname.into()),
    ];
    let set = |env: &mut Vec<(String, String)>, k: &str, v: &str| match env.iter_mut().find(|(n, _)| n == k) {
        Some(slot) => slot.1 = v.to_string(),
        None => env.push((k.to_string(), v.to_string())),
    };
    for (k, v) in container_env {
        set(&mut env, k, v);
    }
    for (k, v) in [
        ("RINGLEADER_NODE", agent.node),
        ("RINGLEADER_POD", agent.pod),
        ("RINGLEADER_NAMESPACE", agent.namespace),
        ("RINGLEADER_POD_IP", agent.pod_ip),
        ("RINGLEADER_HOSTS", agent.hosts),
    ] {
        set(&mut env, k, v);
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn expansion_follows_kubernetes() {
        let l = |n: &str| (n == "A").then(|| "x".to_string());
        assert_eq!(expand("$(A)-$(B)", &l), "x-$(B)");
        assert_eq!(expand("$$(A) $$ $", &l), "$(A) $ $");
        assert_eq!(expand("echo $HOME $(A", &l), "echo $HOME $(A");
        assert_eq!(expand("héllo $(A)ü", &l), "héllo xü");
    }

    #[test]
    fn env_sees_earlier_variables_only() {
        let env = vec![
            ("B".to_string(), "$(A)".to_string()),
            ("A".to_string(), "1".to_string()),
            ("C".to_string(), "$(A)/x".to_string()),
            ("A".to_string(), "2".to_string()),
        ];
        let out = expand_env(&env);
        assert_eq!(out, vec![("B".into(), "$(A)".into()), ("A".into(), "2".into()), ("C".into(), "1/x".into())]);
    }

    #[test]
    fn single_strings_go_through_the_shell() {
        let env = vec![("PORT".to_string(), "29500".to_string())];
        assert_eq!(argv(&s(&["echo hi; exit 3"]), &[], &env).unwrap(), s(&["/bin/sh", "-c", "echo hi; exit 3"]));
        assert_eq!(argv(&[], &s(&["echo hi"]), &env).unwrap(), s(&["/bin/sh", "-c", "echo hi"]));
        assert_eq!(argv(&s(&["/bin/sh", "-c"]), &s(&["x"]), &env).unwrap(), s(&["/bin/sh", "-c", "x"]));
        assert_eq!(
            argv(&s(&["python", "train.py"]), &s(&["--port=$(PORT)"]), &env).unwrap(),
            s(&["python", "train.py", "--port=29500"])
        );
        assert!(argv(&[], &[], &env).is_err());
        assert!(argv(&s(&["  "]), &[], &env).is_err());
    }

    #[test]
    fn agent_variables_win_and_container_may_set_path() {
        let agent = AgentEnv {
            node: "n",
            pod: "p",
            namespace: "ns",
            pod_ip: "127.0.1.1",
            hosts: "/s/hosts",
            home: "/s",
            path: "/bin",
            hostname: "p",
        };
        let env = process_env(&[("PATH".into(), "/opt/bin".into()), ("RINGLEADER_POD".into(), "evil".into())], &agent);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("PATH"), Some("/opt/bin"));
        assert_eq!(get("RINGLEADER_POD"), Some("p"));
        assert_eq!(get("HOME"), Some("/s"));
        assert_eq!(get("RINGLEADER_HOSTS"), Some("/s/hosts"));
    }
}
