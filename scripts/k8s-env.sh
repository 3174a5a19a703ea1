#!/usr/bin/env bash
# scripts/k8s-env.sh: a real kube-apiserver + etcd on loopback for the
# Kubernetes-mode tests (issue 14), built from Go modules, no downloads of
# prebuilt binaries.
#
#   scripts/k8s-env.sh build        build both binaries once (idempotent)
#   scripts/k8s-env.sh bindir       print the directory the binaries live in
#   scripts/k8s-env.sh check        exit 0 when both are built at these versions
#   scripts/k8s-env.sh start DIR    certificates, token file, etcd, apiserver,
#                                   DIR/kubeconfig (admin), DIR/agent.kubeconfig
#                                   (group ringleader:agents); waits for /readyz
#   scripts/k8s-env.sh stop DIR     stop what `start DIR` started
#   scripts/k8s-env.sh bench DIR [N] [WORKERS] [configmaps|pods]
#                                   the apiserver's write rate (k8s-write-rate/)
#
# What it leaves under ~/.cache (${XDG_CACHE_HOME:-$HOME/.cache}):
#   ringleader/k8s/<k8s-version>/bin/{kube-apiserver,etcd}   the binaries (120 MB)
#   ringleader/k8s/<k8s-version>/work/{apiserver,etcd}/      generated go.mod/go.sum
#   go-build/                                                Go's build cache (GOCACHE,
#                                                            shared with other Go work,
#                                                            +2.4 GB)
# and Go's module cache (GOMODCACHE, default ~/go/pkg/mod) holds the sources
# (+0.7 GB). A cold build takes about 7 minutes on 2 cores; with the Go caches
# warm, 11 s; with the binaries there, nothing.
# Both Go caches may be deleted after `build`; the binaries alone suffice.
#
# Versions: kube-apiserver v1.33 matches the workspace's k8s-openapi `v1_33`
# and is within one minor of the machine's kubectl (v1.32 client, v1.33.1 shown
# against a server); etcd
# v3.5.21 is what k8s.io/kubernetes v1.33.13 pins in its go.mod. Override with
# RINGLEADER_K8S_VERSION / RINGLEADER_ETCD_VERSION.
#
# `start` binds 127.0.0.1 only: etcd (plain HTTP, loopback), the apiserver
# (TLS with a fresh CA, bearer token of user `admin` in group system:masters).
# The ServiceAccount admission plugin is disabled (no controller-manager runs
# to create `default` service accounts), and nothing finalizes namespaces, so
# a deleted namespace stays Terminating. RINGLEADER_K8S_START_TIMEOUT (seconds,
# default 90) bounds the wait for readiness.
#
# Logs (`kubectl logs`): the apiserver reaches a Node's InternalIP at its
# daemonEndpoints.kubeletEndpoint port with DIR/kubelet-client.{crt,key}
# (CN kube-apiserver-kubelet-client, O system:masters, signed by DIR/ca.crt),
# so an agent given DIR/ca.crt as its client CA lets it read logs. It does
# not verify the agent's serving certificate (no
# --kubelet-certificate-authority: each agent makes its own CA).
set -euo pipefail

K8S_VERSION=${RINGLEADER_K8S_VERSION:-v1.33.13}
ETCD_VERSION=${RINGLEADER_ETCD_VERSION:-v3.5.21}
CACHE_ROOT=${XDG_CACHE_HOME:-$HOME/.cache}/ringleader/k8s
VDIR=$CACHE_ROOT/$K8S_VERSION
BIN=$VDIR/bin
STAMP="k8s=$K8S_VERSION etcd=$ETCD_VERSION"

die() {
  echo "k8s-env: $*" >&2
  exit 1
}

usage() {
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

built() {
  [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/etcd" ] && [ "$(cat "$BIN/stamp" 2>/dev/null)" = "$STAMP" ]
}

# --- build -------------------------------------------------------------------

build_apiserver() {
  local work=$VDIR/work/apiserver kmod staging minor ldflags pkg
  mkdir -p "$work"
  # k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them
  # with ./staging paths, which a dependent module cannot see: point each one
  # at the published v0.<minor>.<patch> of the same release instead.
  kmod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  [ -f "$kmod" ] || die "could not download k8s.io/kubernetes@$K8S_VERSION's go.mod"
  staging=$(sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/src/.*#\1#p' "$kmod")
  [ -n "$staging" ] || die "no staging replace lines in $kmod"
  {
    echo "module ringleader.invalid/k8s-env/apiserver"
    echo
    echo "go $(sed -n 's/^go \(.*\)/\1/p' "$kmod")"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    for m in $staging; do echo "	$m => $m v0${K8S_VERSION#v1}"; done
    echo ")"
  } >"$work/go.mod"
  rm -f "$work/go.sum"
  (cd "$work" && go get "k8s.io/kubernetes/cmd/kube-apiserver@$K8S_VERSION")
  minor=${K8S_VERSION#v1.}
  minor=${minor%%.*}
  ldflags="-s -w"
  # What hack/lib/version.sh stamps, so `kubectl version` reports the release.
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags="$ldflags -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags="$ldflags -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  (cd "$work" && CGO_ENABLED=0 go build -mod=mod -trimpath -ldflags "$ldflags" \
    -o "$BIN/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver)
  mv "$BIN/kube-apiserver.tmp" "$BIN/kube-apiserver"
}

build_etcd() {
  local work=$VDIR/work/etcd
  mkdir -p "$work"
  # etcd's own main.go is this one call; building it from the server module
  # keeps etcd's dependency versions apart from the apiserver's.
  cat >"$work/go.mod" <<EOF
module ringleader.invalid/k8s-env/etcd

go 1.22
EOF
  cat >"$work/main.go" <<'EOF'
// Command etcd is etcd's server entry point, built from its Go module.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
EOF
  rm -f "$work/go.sum"
  (cd "$work" && go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" && go mod tidy)
  (cd "$work" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$BIN/etcd.tmp" .)
  mv "$BIN/etcd.tmp" "$BIN/etcd"
}

cmd_build() {
  if built; then
    echo "k8s-env: cached: $BIN ($STAMP)"
    return 0
  fi
  command -v go >/dev/null || die "go is not on PATH (needed once, to build)"
  mkdir -p "$BIN"
  rm -f "$BIN/stamp"
  # The machine's Go is new enough; never fetch another toolchain.
  export GOTOOLCHAIN=local GOFLAGS="${GOFLAGS:-} -buildvcs=false"
  local t0=$SECONDS
  # A half-finished earlier build keeps the binary it completed.
  if [ "$(cat "$BIN/etcd.stamp" 2>/dev/null)" != "$ETCD_VERSION" ] || [ ! -x "$BIN/etcd" ]; then
    build_etcd
    echo "$ETCD_VERSION" >"$BIN/etcd.stamp"
  fi
  echo "k8s-env: etcd $ETCD_VERSION built in $((SECONDS - t0)) s"
  local t1=$SECONDS
  build_apiserver
  echo "k8s-env: kube-apiserver $K8S_VERSION built in $((SECONDS - t1)) s"
  echo "$STAMP" >"$BIN/stamp"
  echo "k8s-env: built $BIN in $((SECONDS - t0)) s"
}

# --- start / stop ------------------------------------------------------------

# N TCP ports nothing listens on now, from /proc/net/tcp{,6}, below the
# kernel's ephemeral range (where the outgoing connections of tests running
# beside us take theirs). Another process can still take it before etcd or
# the apiserver binds it: `start` then tries again on other ports.
free_ports() {
  local n=$1 used port i low taken=""
  low=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  [[ $low =~ ^[0-9]+$ ]] && [ "$low" -gt 12000 ] || low=32768
  used=$(awk 'NR > 1 { split($2, a, ":"); print strtonum("0x" a[2]) }' /proc/net/tcp /proc/net/tcp6 2>/dev/null | sort -u)
  for i in $(seq 1 200); do
    port=$((10000 + (RANDOM * 32768 + RANDOM) % (low - 10000)))
    if ! grep -qx "$port" <<<"$used" && ! grep -qwF "$port" <<<"$taken"; then
      taken="$taken $port"
      n=$((n - 1))
      if [ "$n" -eq 0 ]; then
        echo "$taken"
        return 0
      fi
    fi
  done
  echo "k8s-env: no $1 free ports found in 200 tries" >&2
  return 1
}

make_certs() {
  local d=$1
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
    -subj "/CN=ringleader-test-ca" -keyout "$d/ca.key" -out "$d/ca.crt" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj "/CN=kube-apiserver" -keyout "$d/apiserver.key" -out "$d/apiserver.csr" 2>/dev/null
  cat >"$d/apiserver.ext" <<'EOF'
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
EOF
  openssl x509 -req -in "$d/apiserver.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
    -days 3650 -extfile "$d/apiserver.ext" -out "$d/apiserver.crt" 2>/dev/null
  # What the apiserver presents to kubelets (a ringleader agent's log
  # endpoint trusts it when given DIR/ca.crt as its client CA).
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj "/O=system:masters/CN=kube-apiserver-kubelet-client" \
    -keyout "$d/kubelet-client.key" -out "$d/kubelet-client.csr" 2>/dev/null
  cat >"$d/kubelet-client.ext" <<'EOF'
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth
EOF
  openssl x509 -req -in "$d/kubelet-client.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
    -days 3650 -extfile "$d/kubelet-client.ext" -out "$d/kubelet-client.crt" 2>/dev/null
  # Service-account tokens are signed with this pair (ES256).
  openssl ecparam -name prime256v1 -genkey -noout -out "$d/sa.key" 2>/dev/null
  openssl ec -in "$d/sa.key" -pubout -out "$d/sa.pub" 2>/dev/null
  chmod 600 "$d/ca.key" "$d/apiserver.key" "$d/kubelet-client.key" "$d/sa.key"
}

# True while PID runs a process whose command line names DIR, so a pid file
# left from an old run never makes us signal an unrelated process.
ours() {
  local pid=$1 dir=$2
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$dir"
}

stop_pid() {
  local name=$1 dir=$2 pid i
  pid=$(cat "$dir/$name.pid" 2>/dev/null || true)
  if ours "$pid" "$dir"; then
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 100); do
      ours "$pid" "$dir" || break
      sleep 0.1
    done
    if ours "$pid" "$dir"; then
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$dir/$name.pid"
}

cmd_stop() {
  local dir
  [ $# -eq 1 ] || usage
  [ -d "$1" ] || die "stop: DIR '$1' is not a directory"
  dir=$(cd "$1" && pwd)
  stop_pid kube-apiserver "$dir"
  stop_pid etcd "$dir"
  echo "k8s-env: stopped $dir"
}

fail_start() {
  local dir=$1 msg=$2 f
  # Stop first: a reader that goes away mid-message must not leave them running.
  cmd_stop "$dir" >/dev/null
  echo "k8s-env: $msg" >&2
  for f in etcd kube-apiserver; do
    if [ -f "$dir/$f.log" ]; then
      echo "--- last lines of $dir/$f.log" >&2
      tail -n 20 "$dir/$f.log" >&2
    fi
  done
  exit 1
}

cmd_start() {
  local dir timeout etcd_port peer_port api_port token deadline t0 code attempt ports lost
  [ $# -eq 1 ] || usage
  built || die "binaries for $STAMP are not in $BIN: run '$0 build' first"
  mkdir -p "$1"
  dir=$(cd "$1" && pwd)
  [ ! -f "$dir/kube-apiserver.pid" ] || ! ours "$(cat "$dir/kube-apiserver.pid")" "$dir" ||
    die "start: an apiserver from $dir already runs (stop it first)"
  timeout=${RINGLEADER_K8S_START_TIMEOUT:-90}
  [[ $timeout =~ ^[0-9]+$ ]] && [ "$timeout" -gt 0 ] ||
    die "RINGLEADER_K8S_START_TIMEOUT='$timeout': a positive whole number of seconds is allowed"
  t0=$(date +%s.%N)

  make_certs "$dir"
  token=$(openssl rand -hex 24)
  echo "$token" >"$dir/admin.token"
  # A second identity for node agents: group ringleader:agents, which
  # `ringleader manager` binds to the narrow ClusterRole ringleader:agent.
  agent_token=$(openssl rand -hex 24)
  {
    echo "$token,admin,admin-uid,\"system:masters\""
    echo "$agent_token,system:ringleader:agent,agent-uid,\"ringleader:agents\""
  } >"$dir/tokens.csv"
  chmod 600 "$dir/admin.token" "$dir/tokens.csv"

  attempt=1
  while :; do
    ports=$(free_ports 3) || fail_start "$dir" "no free ports"
    read -r etcd_port peer_port api_port <<<"$ports"
    rm -rf "$dir/etcd-data"
    mkdir -p -m 700 "$dir/etcd-data"
    "$BIN/etcd" --name default --data-dir "$dir/etcd-data" \
      --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
      --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
      --initial-cluster "default=http://127.0.0.1:$peer_port" --log-level warn \
      >"$dir/etcd.log" 2>&1 </dev/null &
    echo $! >"$dir/etcd.pid"

    "$BIN/kube-apiserver" \
      --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$api_port" \
      --tls-cert-file="$dir/apiserver.crt" --tls-private-key-file="$dir/apiserver.key" \
      --client-ca-file="$dir/ca.crt" --token-auth-file="$dir/tokens.csv" \
      --kubelet-client-certificate="$dir/kubelet-client.crt" --kubelet-client-key="$dir/kubelet-client.key" \
      --kubelet-preferred-address-types=InternalIP \
      --authorization-mode=Node,RBAC --anonymous-auth=true \
      --etcd-servers="http://127.0.0.1:$etcd_port" \
      --service-account-issuer=https://kubernetes.default.svc.cluster.local \
      --service-account-key-file="$dir/sa.pub" --service-account-signing-key-file="$dir/sa.key" \
      --service-cluster-ip-range=10.0.0.0/24 --endpoint-reconciler-type=none \
      --disable-admission-plugins=ServiceAccount --allow-privileged=true \
      --cert-dir="$dir/apiserver-certs" --profiling=false --v=1 \
      >"$dir/kube-apiserver.log" 2>&1 </dev/null &
    echo $! >"$dir/kube-apiserver.pid"

    cat >"$dir/env" <<EOF
ETCD_ENDPOINT=http://127.0.0.1:$etcd_port
APISERVER=https://127.0.0.1:$api_port
K8S_VERSION=$K8S_VERSION
ETCD_VERSION=$ETCD_VERSION
EOF

    # kubeconfig USER TOKEN: a kubeconfig of this apiserver for one identity.
    kubeconfig() {
      cat <<EOF
apiVersion: v1
kind: Config
clusters:
- name: ringleader-k8s
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority-data: $(base64 -w0 <"$dir/ca.crt")
users:
- name: $1
  user:
    token: $2
contexts:
- name: ringleader-k8s
  context:
    cluster: ringleader-k8s
    user: $1
current-context: ringleader-k8s
EOF
    }
    (umask 077 && kubeconfig admin "$token" >"$dir/kubeconfig" && kubeconfig agent "$agent_token" >"$dir/agent.kubeconfig")
    chmod 600 "$dir/kubeconfig" "$dir/agent.kubeconfig"

    lost=""
    deadline=$((SECONDS + timeout))
    while :; do
      ours "$(cat "$dir/etcd.pid")" "$dir" || { lost=etcd; break; }
      ours "$(cat "$dir/kube-apiserver.pid")" "$dir" || { lost=kube-apiserver; break; }
      code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --cacert "$dir/ca.crt" \
        -H "Authorization: Bearer $token" "https://127.0.0.1:$api_port/readyz" || true)
      [ "$code" = 200 ] && break
      [ $SECONDS -lt $deadline ] || fail_start "$dir" "apiserver not ready after ${timeout} s (last /readyz: $code)"
      sleep 0.2
    done
    [ -n "$lost" ] || break
    # The ports were free when chosen; a process beside us may have bound one
    # since. That race is no fault of the environment: choose again. An exit
    # with nothing in its log (seen once of etcd on a loaded CI machine, and
    # not again in a rerun) gets one more try too; its log is kept aside.
    if [ "$attempt" -lt 3 ] && grep -q "address already in use" "$dir/$lost.log"; then
      echo "k8s-env: a port of $lost was taken meanwhile (attempt $attempt); choosing other ports" >&2
      cmd_stop "$dir" >/dev/null
      attempt=$((attempt + 1))
      continue
    fi
    if [ "$attempt" -lt 2 ] && ! grep -qiE '"level":"(error|fatal|panic)"|^[EF][0-9]{4} ' "$dir/$lost.log"; then
      echo "k8s-env: $lost exited during start without saying why (attempt $attempt); starting again" >&2
      cp "$dir/$lost.log" "$dir/$lost.log.attempt-$attempt"
      cmd_stop "$dir" >/dev/null
      attempt=$((attempt + 1))
      continue
    fi
    fail_start "$dir" "$lost exited during start"
  done
  echo "k8s-env: ready in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s:" \
    "apiserver https://127.0.0.1:$api_port, etcd 127.0.0.1:$etcd_port" >&2
  echo "$dir/kubeconfig"
}

cmd_bench() {
  local dir
  [ $# -ge 1 ] && [ $# -le 4 ] || usage
  [ -f "$1/env" ] || die "bench: '$1' holds no env file: start it first"
  dir=$(cd "$1" && pwd)
  cd "$(dirname "$0")/k8s-write-rate"
  GOTOOLCHAIN=local go run . -dir "$dir" -n "${2:-2000}" -workers "${3:-32}" -kind "${4:-configmaps}"
}

[ $# -ge 1 ] || usage
sub=$1
shift
case $sub in
  build) [ $# -eq 0 ] || usage; cmd_build ;;
  bindir) [ $# -eq 0 ] || usage; echo "$BIN" ;;
  check)
    [ $# -eq 0 ] || usage
    if built; then echo "built: $BIN ($STAMP)"; else echo "not built: $BIN ($STAMP)"; exit 1; fi
    ;;
  start) cmd_start "$@" ;;
  stop) cmd_stop "$@" ;;
  bench) cmd_bench "$@" ;;
  *) echo "k8s-env: unknown subcommand '$sub' (allowed: build, bindir, check, start, stop, bench)" >&2; usage ;;
esac
