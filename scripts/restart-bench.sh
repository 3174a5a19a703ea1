#!/usr/bin/env bash
# Cold start of `ringleader up` on a store that already holds a big cluster:
# fills a data dir with N simulated nodes and N one-node pods (vcjobs of
# 1,000 pods) all Running, stops `up` (SIGTERM, timed), then restarts it
# on the same data dir and times how long until /readyz answers ok (the
# API, the manager and the agent all caught up), twice.
#
#   scripts/restart-bench.sh [BINARY] [NODES] [RESTART_BINARY]
#     (default target/release/ringleader, 5000, BINARY)
#
# With RESTART_BINARY the restarts run that build on the store BINARY
# filled: the first start of an upgrade (a store-schema migration included).
#
# Issue 27's targets: restarted on 5,000 pods, /readyz ok in < 5 s.
set -euo pipefail
BIN=${1:-target/release/ringleader}
BIN=$(realpath "$BIN")
NODES=${2:-5000}
RESTART_BIN=$(realpath "${3:-$BIN}")
PORT=${RINGLEADER_BENCH_PORT:-17443}
WORK=$(mktemp -d)
trap 'pkill -TERM -f "$WORK/cluster.yaml" 2>/dev/null || true; rm -rf "$WORK"' EXIT
cd "$WORK"
python3 - "$NODES" <<'PY'
import sys
n = int(sys.argv[1])
s = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: default}\nspec: {weight: 1}\n"
for i in range(n):
    s += f"---\napiVersion: ringleader.io/v1alpha1\nkind: Node\nmetadata: {{name: bench-{i}}}\nspec: {{profile: atlas-800-910}}\n"
open("cluster.yaml", "w").write(s)
jobs, left, k = [], n, 0
while left > 0:
    size, k = min(1000, left), k + 1
    left -= size
    jobs.append(f"""apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: fill-{k}, namespace: default, labels: {{ring-controller.atlas: ascend-910}}}}
spec:
  minAvailable: {size}
  schedulerName: volcano
  queue: default
  tasks:
  - name: w
    replicas: {size}
    template:
      metadata: {{labels: {{ring-controller.atlas: ascend-910}}}}
      spec:
        restartPolicy: Never
        containers:
        - {{name: c, image: x, resources: {{requests: {{huawei.com/Ascend910: 8}}, limits: {{huawei.com/Ascend910: 8}}}}}}
""")
open("jobs.yaml", "w").write("---\n".join(jobs))
PY
up() {
  "$BIN" up --cluster "$WORK/cluster.yaml" --data-dir "$WORK/data" --listen "127.0.0.1:$PORT" \
    --runtime simulated --heartbeat-timeout 3600 --heartbeat-interval 600 >>"$WORK/up.log" 2>&1 &
  echo $!
}
ready() {
  for _ in $(seq 1 1200); do
    if curl -sk "https://127.0.0.1:$PORT/readyz" 2>/dev/null | grep -q '^ok'; then return 0; fi
    sleep 0.05
  done
  echo "not ready after 60 s" >&2; tail -20 "$WORK/up.log" >&2; return 1
}
running() {
  KUBECONFIG="$WORK/data/kubeconfig" "$BIN" get pods 2>/dev/null | awk 'NR>1 && $3=="Running"' | wc -l
}
stop() {
  local pid=$1 s e
  s=$(date +%s.%N); kill -TERM "$pid"
  for _ in $(seq 1 1500); do kill -0 "$pid" 2>/dev/null || break; sleep 0.02; done
  e=$(date +%s.%N)
  kill -0 "$pid" 2>/dev/null && { echo "up still running 30 s after SIGTERM" >&2; kill -KILL "$pid"; }
  printf 'stopped %.2f s after SIGTERM\n' "$(echo "$e - $s" | bc)"
}
pid=$(up); ready
KUBECONFIG="$WORK/data/kubeconfig" "$BIN" apply -f "$WORK/jobs.yaml" >/dev/null
for _ in $(seq 1 240); do [ "$(running)" -ge "$NODES" ] && break; sleep 0.5; done
echo "filled: $(running) pods Running on $NODES nodes; store $(du -sh "$WORK/data/store.sqlite" | cut -f1)"
stop "$pid"
BIN=$RESTART_BIN
for run in 1 2; do
  s=$(date +%s.%N); pid=$(up); ready; e=$(date +%s.%N)
  printf 'restart %d: /readyz ok %.2f s after the start\n' "$run" "$(echo "$e - $s" | bc)"
  sleep 3; echo "  $(running) pods Running; store $(du -sh "$WORK/data/store.sqlite" | cut -f1)"
  stop "$pid"
done
