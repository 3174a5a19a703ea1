//! The pod init alone, for programs that embed the agent without calling
//! `ringleader_agent::runtime::pod_init::run_if_invoked` in their own
//! `main` (the agent's tests): set `AgentConfig::init_program` to it.

fn main() {
    ringleader_agent::runtime::pod_init::run_if_invoked();
    eprintln!(
        "ringleader-pod-init: run by the node agent as `ringleader-pod-init {}` with a pod spec on stdin",
        ringleader_agent::runtime::isolate::INIT_ARG
    );
    std::process::exit(2);
}
