#!/usr/bin/env bash
# scripts/k8s-gang-bench.sh: issue 14's benchmark, one gang AscendJob of N
# pods × 8 chips on N Atlas 800T A2 nodes through a real kube-apiserver,
# from the create to every pod Running (Volcano + MindCluster: 400 s for
# 5,000). Starts a fresh apiserver + etcd (scripts/k8s-env.sh), the manager,
# one agent serving N virtual nodes with the simulated runtime, waits for the
# Nodes, runs `ringleader bench kube`, then the apiserver's own pod write
# rate in the same environment (the floor), and stops everything.
#
#   scripts/k8s-gang-bench.sh N [DIR]
#
# DIR (default: a new temporary directory) keeps the logs: manager.log,
# agent.log, bench.json, floor.txt, kube-apiserver.log, etcd.log.
# Heartbeats are slowed (agent every 60 s, manager timeout 600 s) so they do
# not load the apiserver during the measurement.
# Environment: RINGLEADER_BIN (default target/release/ringleader),
# RINGLEADER_BENCH_TIMEOUT (seconds from the create, default 900),
# RINGLEADER_BENCH_NODES_TIMEOUT (seconds for the Nodes, default 900),
# RINGLEADER_BENCH_FLOOR=0 to skip the floor, RINGLEADER_BENCH_KEEP=1 to
# leave everything running for a look (no floor then), RINGLEADER_BENCH_RSS_MB
# (default 8000) to stop a manager or agent that grows past it.
set -euo pipefail

die() {
  echo "k8s-gang-bench: $*" >&2
  exit 1
}

[ $# -ge 1 ] && [ $# -le 2 ] || { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
N=$1
[[ $N =~ ^[0-9]+$ ]] && [ "$N" -ge 1 ] || die "N='$N': a whole number of pods, at least 1, is allowed"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${RINGLEADER_BIN:-$ROOT/target/release/ringleader}
[ -x "$BIN" ] || die "$BIN is not built: cargo build --release -p ringleader"
TIMEOUT=${RINGLEADER_BENCH_TIMEOUT:-900}
NODES_TIMEOUT=${RINGLEADER_BENCH_NODES_TIMEOUT:-900}
DIR=${2:-$(mktemp -d -t k8s-gang-bench.XXXXXX)}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)

MANAGER_PID=
AGENT_PID=
stop_one() {
  local pid=$1 i
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}
cleanup() {
  if [ "${RINGLEADER_BENCH_KEEP:-0}" = 1 ]; then
    echo "k8s-gang-bench: left running (RINGLEADER_BENCH_KEEP=1): manager $MANAGER_PID, agent $AGENT_PID;" \
      "stop them, then scripts/k8s-env.sh stop $DIR/k8s" >&2
    return 0
  fi
  stop_one "$AGENT_PID"
  stop_one "$MANAGER_PID"
  "$ROOT/scripts/k8s-env.sh" stop "$DIR/k8s" >/dev/null 2>&1 || true
}
trap cleanup EXIT

"$ROOT/scripts/k8s-env.sh" start "$DIR/k8s" >/dev/null
KC=$DIR/k8s/kubeconfig
echo "k8s-gang-bench: apiserver up ($(grep APISERVER "$DIR/k8s/env")); logs in $DIR"

"$BIN" manager --kubeconfig "$KC" --heartbeat-timeout 600 >"$DIR/manager.log" 2>&1 &
MANAGER_PID=$!

node_flags=()
for i in $(seq 1 "$N"); do node_flags+=(--node "$(printf 'a2-%05d' "$i")"); done
t_agent=$(date +%s.%N)
"$BIN" agent --kubeconfig "$KC" --api kubernetes "${node_flags[@]}" --profile atlas-800t-a2 \
  --runtime simulated --heartbeat-interval 60 --listen 127.0.0.1:0 --client-ca "$DIR/k8s/ca.crt" \
  --data-dir "$DIR/agent-data" >"$DIR/agent.log" 2>&1 &
AGENT_PID=$!

"$BIN" bench kube --kubeconfig "$KC" --pods "$N" --nodes "$N" --nodes-timeout "$NODES_TIMEOUT" \
  --timeout "$TIMEOUT" -o json >"$DIR/bench.json" 2>"$DIR/bench.log" &
BENCH_PID=$!

# A guard for the shared machine: the bench ends when the manager or the
# agent grows past RINGLEADER_BENCH_RSS_MB (default 8000) of resident memory.
RSS_MB=${RINGLEADER_BENCH_RSS_MB:-8000}
guard() {
  local p rss
  while kill -0 "$BENCH_PID" 2>/dev/null; do
    for p in "$MANAGER_PID" "$AGENT_PID"; do
      rss=$(awk '/VmRSS/ { print int($2 / 1024) }' "/proc/$p/status" 2>/dev/null || true)
      if [ "${rss:-0}" -gt "$RSS_MB" ]; then
        echo "k8s-gang-bench: pid $p grew to $rss MB (over $RSS_MB MB): stopping it and the bench" >&2
        kill -KILL "$p" 2>/dev/null
        # The bench reports what it measured so far.
        kill -TERM "$BENCH_PID" 2>/dev/null
        return 0
      fi
    done
    sleep 1
  done
}
guard &
GUARD_PID=$!
set +e
wait "$BENCH_PID"
rc=$?
set -e
kill "$GUARD_PID" 2>/dev/null || true
t_end=$(date +%s.%N)
cat "$DIR/bench.log" >&2
kill -0 "$MANAGER_PID" 2>/dev/null || echo "k8s-gang-bench: the manager exited (see $DIR/manager.log)" >&2
kill -0 "$AGENT_PID" 2>/dev/null || echo "k8s-gang-bench: the agent exited (see $DIR/agent.log)" >&2
cat "$DIR/bench.json"
echo "k8s-gang-bench: agent start to bench end $(awk -v a="$t_agent" -v b="$t_end" 'BEGIN { printf "%.1f", b - a }') s" \
  "(node registration is bench.json's nodes_wait_seconds)"
echo "k8s-gang-bench: peak resident memory: $(for p in "$MANAGER_PID" "$AGENT_PID" \
  "$(cat "$DIR/k8s/kube-apiserver.pid")" "$(cat "$DIR/k8s/etcd.pid")"; do
  awk '/VmHWM/ { printf "%d MB ", $2 / 1024 }' "/proc/$p/status" 2>/dev/null; done)(manager agent apiserver etcd)"
if command -v kubectl >/dev/null; then
  # A table over 512 KiB is packed: data holds a placeholder naming its
  # size, binaryData["hccl.json.gz"] the gzip (its length here is base64's).
  echo "k8s-gang-bench: rank-table ConfigMaps (name, bytes of data.hccl.json [, base64 bytes of binaryData.hccl.json.gz, data.hccl.json]):"
  kubectl --kubeconfig "$KC" get configmaps -n default -o \
    go-template='{{range $cm := .items}}{{if index $cm.data "hccl.json"}}  {{$cm.metadata.name}} {{len (index $cm.data "hccl.json")}}{{with $cm.binaryData}}{{with index . "hccl.json.gz"}} {{len .}} {{index $cm.data "hccl.json"}}{{end}}{{end}}{{"\n"}}{{end}}{{end}}' || true
fi

# The floor: the apiserver's own pod create rate, same environment, after
# the job (its pods stay; the manager and the agent are stopped first).
if [ "${RINGLEADER_BENCH_FLOOR:-1}" != 0 ] && [ "${RINGLEADER_BENCH_KEEP:-0}" != 1 ]; then
  stop_one "$AGENT_PID"
  AGENT_PID=
  stop_one "$MANAGER_PID"
  MANAGER_PID=
  "$ROOT/scripts/k8s-env.sh" bench "$DIR/k8s" "$N" 32 pods | tee "$DIR/floor.txt"
fi
exit $rc
