#!/usr/bin/env bash
# scripts/k8s-compare.sh: issue 27's side-by-side benchmark. ringleader's
# manager and Volcano's scheduler + controller-manager (built from their Go
# module), each on a fresh kube-apiserver + etcd (scripts/k8s-env.sh) with
# the same N fake core v1 Nodes (Ready, `huawei.com/Ascend910: 8`, no
# kubelet) and the same `batch.volcano.sh/v1alpha1` Job YAML, timed from the
# create to every pod bound (`spec.nodeName` set). Prints one table: seconds
# to all bound, API writes by verb (the apiserver's apiserver_request_total,
# before and after), peak resident memory of each system's processes, and
# how long each stops after SIGTERM with the gang bound. For ringleader,
# also its cold start: the manager started again on the apiserver now
# holding N Nodes and N bound pods, timed from its start to a new one-pod
# job's pod bound (its first list of everything to its first decision).
#
#   scripts/k8s-compare.sh [--compare volcano] [--gang N] [--jobs M]
#
#   --gang N   one gang of N pods × 8 chips on N nodes (default 1000). In
#              Kubernetes mode ringleader takes the Job as kube-apiserver
#              stored it; `ringleader up` refuses a Volcano Job of over
#              1,000 pods, MindCluster's published vcjob limit.
#   --jobs M   M one-chip jobs created at once on N nodes (default 100; 0: skip)
#   --compare volcano   also run Volcano (default: ringleader only)
#
# Environment: RINGLEADER_BIN (default target/release/ringleader),
# RINGLEADER_VOLCANO_VERSION (default v1.10.0: the release whose module the
# proxy here serves today; v1.13.0 if yours serves it),
# RINGLEADER_VOLCANO_DIR (built binaries, reused; default
# ~/.cache/ringleader/volcano-<version>), RINGLEADER_COMPARE_TIMEOUT (seconds
# to all bound, default 900), RINGLEADER_COMPARE_SETTLE (seconds waited after
# all are bound before the writes are read, so that the writes a bind sets off
# (releases, status, Events) are counted whole; default 0),
# RINGLEADER_COMPARE_DIR (logs; default a new temporary directory). Only the Go module proxy configured here is used.
set -euo pipefail

die() { echo "k8s-compare: $*" >&2; exit 1; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${RINGLEADER_BIN:-$ROOT/target/release/ringleader}
GANG=1000
JOBS=100
SYSTEMS=(ringleader)
while [ $# -gt 0 ]; do
  case $1 in
    --compare) [ "${2:-}" = volcano ] || die "--compare takes 'volcano'"; SYSTEMS+=(volcano); shift 2 ;;
    --gang) [[ ${2:-} =~ ^[0-9]+$ ]] && [ "$2" -ge 1 ] && [ "$2" -le 20000 ] \
              || die "--gang '${2:-}': a whole number of pods from 1 to 20000"
            GANG=$2; shift 2 ;;
    --jobs) [[ ${2:-} =~ ^[0-9]+$ ]] || die "--jobs '${2:-}': a whole number of jobs"; JOBS=$2; shift 2 ;;
    -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[ -x "$BIN" ] || die "$BIN is not built: cargo build --release -p ringleader"
VERSION=${RINGLEADER_VOLCANO_VERSION:-v1.10.0}
VDIR=${RINGLEADER_VOLCANO_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ringleader/volcano-$VERSION}
TIMEOUT=${RINGLEADER_COMPARE_TIMEOUT:-900}
OUT=${RINGLEADER_COMPARE_DIR:-$(mktemp -d -t k8s-compare.XXXXXX)}
mkdir -p "$OUT"

# Volcano from its module: the module's own go.mod (with its replace
# directives) builds it, so the source is copied out of the read-only cache.
build_volcano() {
  [ -x "$VDIR/bin/vc-scheduler" ] && [ -x "$VDIR/bin/vc-controller-manager" ] && return 0
  echo "k8s-compare: building Volcano $VERSION into $VDIR (minutes on 2 cores)" >&2
  local src
  src=$(go mod download -json "volcano.sh/volcano@$VERSION" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("Dir") or sys.exit(d.get("Error")))') \
    || die "the Go module proxy does not serve volcano.sh/volcano@$VERSION (set RINGLEADER_VOLCANO_VERSION)"
  mkdir -p "$VDIR"
  rm -rf "$VDIR/src" && cp -r "$src" "$VDIR/src" && chmod -R u+w "$VDIR/src"
  (cd "$VDIR/src" && go build -o "$VDIR/bin/vc-scheduler" ./cmd/scheduler \
    && go build -o "$VDIR/bin/vc-controller-manager" ./cmd/controller-manager) || die "building Volcano failed"
}

PIDS=()
ENVDIR=
stop_all() {
  local p
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  done
  PIDS=()
  [ -n "$ENVDIR" ] && "$ROOT/scripts/k8s-env.sh" stop "$ENVDIR" >/dev/null 2>&1 || true
  ENVDIR=
}
trap stop_all EXIT

# REST calls as the apiserver's admin, for many small writes in parallel.
rest() { # METHOD PATH [BODY] [CONTENT-TYPE]
  curl -sS --fail-with-body --cacert "$ENVDIR/ca.crt" -H "Authorization: Bearer $(cat "$ENVDIR/admin.token")" \
    -X "$1" "$APISERVER$2" ${3:+-H "Content-Type: ${4:-application/json}" --data-binary "$3"} >/dev/null
}
export -f rest

make_nodes() { # N [FIRST]
  local now
  now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  seq "${2:-1}" "$(( ${2:-1} + $1 - 1 ))" | xargs -P 16 -I{} bash -c '
    n=$(printf "k%05d" {})
    rest POST /api/v1/nodes "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$n\",\"labels\":{\"kubernetes.io/hostname\":\"$n\"}}}"
    r="{\"cpu\":\"192\",\"memory\":\"1536Gi\",\"pods\":\"110\",\"huawei.com/Ascend910\":\"8\"}"
    rest PATCH /api/v1/nodes/$n/status "{\"status\":{\"capacity\":$r,\"allocatable\":$r,\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\",\"message\":\"fake\",\"lastHeartbeatTime\":\"'"$now"'\",\"lastTransitionTime\":\"'"$now"'\"}]}}" application/merge-patch+json
    # The apiserver taints a new Node not-ready; with no node lifecycle
    # controller here to lift it once Ready, it is lifted here.
    rest PATCH /api/v1/nodes/$n "{\"spec\":{\"taints\":null}}" application/merge-patch+json
  '
}

# Sum of apiserver_request_total per write verb.
writes() {
  curl -sS --cacert "$ENVDIR/ca.crt" -H "Authorization: Bearer $(cat "$ENVDIR/admin.token")" "$APISERVER/metrics" | python3 -c '
import re, sys, json
out = {}
for line in sys.stdin:
    if not line.startswith("apiserver_request_total{"):
        continue
    labels, value = line.rsplit(" ", 1)
    verb = re.search(r"verb=\"([A-Z]+)\"", labels)
    if verb and verb.group(1) in ("POST", "PUT", "PATCH", "DELETE", "APPLY"):
        out[verb.group(1)] = out.get(verb.group(1), 0) + float(value)
print(json.dumps(out))'
}

vcjob() { # NAME PODS CHIPS
  cat <<EOF
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: $1, namespace: default, labels: {ring-controller.atlas: ascend-910}}
spec:
  schedulerName: volcano
  minAvailable: $2
  queue: default
  tasks:
  - name: t
    replicas: $2
    template:
      metadata: {labels: {ring-controller.atlas: ascend-910}}
      spec:
        restartPolicy: OnFailure
        containers:
        - {name: c, image: train:1, resources: {requests: {huawei.com/Ascend910: $3}, limits: {huawei.com/Ascend910: $3}}}
---
EOF
}

# Waits until WANT pods (of those the label selector, if any, selects) are
# bound, for SECS at most; prints how many were seen bound. One watch
# (opened again if the server ends it) instead of a list every half second:
# listing 5,000 pods that often took most of a core of a 2-core machine
# from the systems measured. A watch
# from no version starts with every matching pod (kube-apiserver's
# synthetic ADDED events), one JSON event a line. An event's first "name"
# is its object's metadata.name.
wait_bound() { # WANT SECS [LABEL-SELECTOR]
  local want=$1 secs=$2 fifo pid n query='watch=1&fieldSelector=spec.nodeName%21%3D'
  [ -n "${3:-}" ] && query+="&labelSelector=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$3")"
  fifo=$(mktemp -u) && mkfifo "$fifo"
  # A watch the server ends is opened again (seen in a 5,000-pod Volcano
  # run after some 5 minutes): its first events repeat the pods already
  # seen, which are counted once.
  (
    local until=$(( $(date +%s) + secs ))
    while [ "$(date +%s)" -lt "$until" ]; do
      timeout $(( until - $(date +%s) )) kubectl --kubeconfig "$ENVDIR/kubeconfig" get --raw "/api/v1/pods?$query" 2>/dev/null
      sleep 0.2
    done
  ) >"$fifo" &
  pid=$!
  # Python reads each line as it comes (mawk waits for a full block).
  n=$(python3 -c '
import re, sys
want, seen = int(sys.argv[1]), set()
for line in iter(sys.stdin.buffer.readline, b""):
    name = re.search(rb"\"name\":\"([^\"]*)\"", line)
    if name:
        seen.add(name.group(1))
    if len(seen) >= want:
        break
print(len(seen))' "$want" <"$fifo")
  pkill -P "$pid" 2>/dev/null || true
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -f "$fifo"
  echo "$n"
}

peak() { # PID...
  local p
  for p in "$@"; do awk '/VmHWM/ { printf "%d", $2 / 1024 }' "/proc/$p/status" 2>/dev/null || printf '?'; printf ' '; done
}

start_system() { # SYSTEM LOGDIR
  case $1 in
    ringleader)
      "$BIN" manager --kubeconfig "$ENVDIR/kubeconfig" >"$2/manager.log" 2>&1 &
      PIDS+=($!)
      for _ in $(seq 1 300); do grep -q leading "$2/manager.log" && return 0; sleep 0.2; done
      die "the ringleader manager did not lead (see $2/manager.log)" ;;
    volcano)
      # The chart's CRDs, its JobFlow sub-chart's included (the controller
      # manager waits for every informer it starts).
      local crds
      for crds in installer/helm/chart/volcano/crd/bases installer/helm/chart/volcano/charts/jobflow/crd/bases; do
        kubectl --kubeconfig "$ENVDIR/kubeconfig" apply --server-side -f "$VDIR/src/$crds/" >/dev/null
      done
      kubectl --kubeconfig "$ENVDIR/kubeconfig" wait --for condition=established --timeout=60s crd --all >/dev/null
      printf 'apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: default}\nspec: {weight: 1, reclaimable: true}\n' \
        | kubectl --kubeconfig "$ENVDIR/kubeconfig" apply -f - >/dev/null
      "$VDIR/bin/vc-controller-manager" --kubeconfig "$ENVDIR/kubeconfig" --leader-elect=false --logtostderr \
        --enable-healthz=false >"$2/vc-controller-manager.log" 2>&1 &
      PIDS+=($!)
      "$VDIR/bin/vc-scheduler" --kubeconfig "$ENVDIR/kubeconfig" --leader-elect=false --logtostderr \
        --scheduler-conf "$VDIR/src/installer/helm/chart/volcano/config/volcano-scheduler.conf" \
        --enable-metrics=true --enable-healthz=false --listen-address 127.0.0.1:0 >"$2/vc-scheduler.log" 2>&1 &
      PIDS+=($!)
      sleep 5 ;;
  esac
}

# One measurement: a fresh apiserver, NODES nodes, SYSTEM, the YAML; prints a table row.
measure() { # SYSTEM WORKLOAD NODES PODS YAML
  local system=$1 workload=$2 nodes=$3 pods=$4 yaml=$5 log="$OUT/$1-$2"
  mkdir -p "$log"
  ENVDIR="$log/k8s"
  "$ROOT/scripts/k8s-env.sh" start "$ENVDIR" >/dev/null
  APISERVER=$(grep '^APISERVER=' "$ENVDIR/env" | cut -d= -f2-)
  export APISERVER ENVDIR
  make_nodes "$nodes"
  start_system "$system" "$log"
  sleep 2
  local before after t0 t1 n=0
  before=$(writes)
  t0=$(date +%s.%N)
  kubectl --kubeconfig "$ENVDIR/kubeconfig" create -f "$yaml" >/dev/null
  n=$(wait_bound "$pods" "$TIMEOUT")
  t1=$(date +%s.%N)
  sleep "${RINGLEADER_COMPARE_SETTLE:-0}"
  after=$(writes)
  local rss
  rss=$(peak "${PIDS[@]}")
  local secs
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  [ "$n" -ge "$pods" ] || secs=">$TIMEOUT ($n of $pods bound)"
  local stopped
  stopped=$(stop_timed "${PIDS[@]}")
  PIDS=()
  python3 - "$system" "$workload" "$secs" "$before" "$after" "$rss" "$pods" "$stopped" <<'PY'
import json, sys
system, workload, secs, before, after, rss, pods, stopped = sys.argv[1:]
b, a = json.loads(before), json.loads(after)
d = {k: int(a.get(k, 0) - b.get(k, 0)) for k in sorted(set(a) | set(b)) if a.get(k, 0) != b.get(k, 0)}
total = sum(d.values())
verbs = ", ".join(f"{k} {v}" for k, v in d.items())
print(f"| {system} | {workload} | {secs} | {total} ({total / int(pods):.1f}/pod: {verbs}) | {rss.strip()} MB | {stopped} |")
PY
  [ "$system" = ringleader ] && [ "$n" -ge "$pods" ] && [ "$pods" -gt 1 ] && cold_start "$log" "$nodes" "$pods"
  stop_all
}

# SIGTERM to each PID at once; prints the seconds until the last exited.
stop_timed() { # PID...
  local t0 p
  t0=$(date +%s.%N)
  for p in "$@"; do kill -TERM "$p" 2>/dev/null || true; done
  for _ in $(seq 1 200); do
    local alive=0
    for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.02
  done
  awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f s", b - a }'
}

# The manager started again on an apiserver holding NODES Nodes and PODS
# bound pods: from its start to a new one-pod job's pod bound.
cold_start() { # LOGDIR NODES PODS
  local t0 t1 n
  # The gang filled every Node: one more, free, for the new job.
  make_nodes 1 $(( $2 + 1 ))
  vcjob after-restart 1 1 >"$1/after-restart.yaml"
  kubectl --kubeconfig "$ENVDIR/kubeconfig" create -f "$1/after-restart.yaml" >/dev/null
  t0=$(date +%s.%N)
  "$BIN" manager --kubeconfig "$ENVDIR/kubeconfig" >"$1/manager-restart.log" 2>&1 &
  PIDS+=($!)
  # The Lease the stopped manager held may still run: leading is when its clock starts.
  (for _ in $(seq 1 1200); do
    grep -q leading "$1/manager-restart.log" && { date +%s.%N >"$1/led"; break; }
    sleep 0.1
  done) &
  local watcher=$! led=
  n=$(wait_bound 1 120 volcano.sh/job-name=after-restart)
  t1=$(date +%s.%N)
  kill "$watcher" 2>/dev/null || true
  wait "$watcher" 2>/dev/null || true
  led=$(cat "$1/led" 2>/dev/null || true)
  if [ "$n" -ge 1 ]; then
    awk -v a="$t0" -v l="${led:-$t0}" -v b="$t1" -v nodes="$2" -v pods="$3" \
      'BEGIN { printf "ringleader cold start on %d Nodes and %d bound pods: manager start → a new job'"'"'s pod bound in %.1f s (leading after %.1f s, then %.1f s)\n", nodes + 1, pods, b - a, l - a, b - l }' >&2
  else
    echo "ringleader cold start: the new job's pod was not bound in 120 s (see $1/manager-restart.log)" >&2
  fi
}

[[ " ${SYSTEMS[*]} " == *" volcano "* ]] && build_volcano
"$ROOT/scripts/k8s-env.sh" build >/dev/null
echo "k8s-compare: logs in $OUT; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| system | workload | create → all bound (s) | API writes | peak RSS (scheduler/manager, controller) | stopped after SIGTERM |"
echo "|---|---|---|---|---|---|"
vcjob gang "$GANG" 8 >"$OUT/gang.yaml"
: >"$OUT/jobs.yaml"
for i in $(seq 1 "$JOBS"); do vcjob "one-$i" 1 1 >>"$OUT/jobs.yaml"; done
for system in "${SYSTEMS[@]}"; do
  measure "$system" "1 gang × $GANG pods" "$GANG" "$GANG" "$OUT/gang.yaml"
  if [ "$JOBS" -gt 0 ]; then
    measure "$system" "$JOBS one-chip jobs" "$GANG" "$JOBS" "$OUT/jobs.yaml"
  fi
done
