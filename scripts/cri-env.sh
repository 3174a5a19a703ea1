#!/usr/bin/env bash
# scripts/cri-env.sh: a real container runtime for the container tests
# (issue 23): Debian's containerd (its CRI plugin) and runc, and a local OCI
# registry (Debian's docker-registry), on loopback with their state under DIR,
# and the test images built from files on this machine (no image is
# downloaded).
#
#   scripts/cri-env.sh install     apt-get install what is missing (root)
#   scripts/cri-env.sh start DIR   registry + containerd under DIR, images built
#                                  and pushed; writes DIR/env (source it):
#                                    RINGLEADER_CRI_ENDPOINT=unix://DIR/containerd.sock
#                                    RINGLEADER_TEST_REGISTRY=127.0.0.1:PORT
#                                    RINGLEADER_TEST_PRIVATE_REGISTRY=127.0.0.1:PORT+1
#                                    RINGLEADER_TEST_PRIVATE_AUTH=user:password
#   scripts/cri-env.sh stop DIR    stops both, removes containers they ran
#
# Images (all one layer, built by scripts/oci-image.py):
#   $REG/ringleader/busybox:1   busybox-static with every applet linked, CMD ["sh"]
#   $REG/ringleader/pause:1     the same, ENTRYPOINT sleep: the pod sandboxes' image
#   $REG/ringleader/gc-victim:1 the busybox image again, for the image GC test alone
#   $PRIVATE/ringleader/private:1  the busybox image again, in a registry that
#                               wants user `ringleader` (RINGLEADER_TEST_PRIVATE_AUTH)
#
# The registry listens on 127.0.0.1:${RINGLEADER_REGISTRY_PORT:-5055};
# containerd pulls from it over plain HTTP (a mirror entry in its config).
# Pods share their node's network unless the agent runs with `--pod-network
# cni`: then each gets an address on a bridge of this containerd's own
# (rl$PORT, 10.(PORT%200+20).0.0/16, Debian's containernetworking-plugins).
set -euo pipefail

PORT=${RINGLEADER_REGISTRY_PORT:-5055}
REG=127.0.0.1:$PORT
# A second registry that wants a user and password (imagePullSecrets tests).
PRIVATE=127.0.0.1:$((PORT + 1))
PRIVATE_USER=ringleader
PRIVATE_PASSWORD=pull-secret-test
HERE=$(cd "$(dirname "$0")" && pwd)

die() {
  echo "cri-env: $*" >&2
  exit 1
}

install() {
  local missing=()
  command -v containerd >/dev/null 2>&1 || missing+=(containerd)
  command -v runc >/dev/null 2>&1 || missing+=(runc)
  command -v docker-registry >/dev/null 2>&1 || missing+=(docker-registry)
  [ -x /bin/busybox ] || missing+=(busybox-static)
  [ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
  command -v curl >/dev/null 2>&1 || missing+=(curl)
  if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || die "needs root to install ${missing[*]}"
    apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

wait_for() { # what, seconds, command...
  local what=$1 secs=$2
  shift 2
  for _ in $(seq 1 $((secs * 10))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  die "$what did not come up in ${secs}s"
}

start() {
  local dir=$1
  [ "$(id -u)" = 0 ] || die "containerd needs root"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  stop "$dir" 2>/dev/null || true
  mkdir -p "$dir/registry" "$dir/images"

  cat >"$dir/registry.yml" <<EOF
version: 0.1
log: {level: warn}
storage:
  filesystem: {rootdirectory: $dir/registry}
  delete: {enabled: true}
http:
  addr: $REG
EOF
  setsid docker-registry serve "$dir/registry.yml" >"$dir/registry.log" 2>&1 &
  echo $! >"$dir/registry.pid"
  wait_for "the registry at $REG" 20 curl -sf "http://$REG/v2/"

  mkdir -p "$dir/private"
  python3 -W ignore -c 'import crypt, sys; print(sys.argv[1] + ":" + crypt.crypt(sys.argv[2], crypt.mksalt(crypt.METHOD_BLOWFISH)))' \
    "$PRIVATE_USER" "$PRIVATE_PASSWORD" >"$dir/htpasswd"
  cat >"$dir/private.yml" <<EOF
version: 0.1
log: {level: warn}
storage:
  filesystem: {rootdirectory: $dir/private}
auth:
  htpasswd: {realm: ringleader-test, path: $dir/htpasswd}
http:
  addr: $PRIVATE
EOF
  setsid docker-registry serve "$dir/private.yml" >"$dir/private.log" 2>&1 &
  echo $! >"$dir/private.pid"
  wait_for "the private registry at $PRIVATE" 20 curl -sf -u "$PRIVATE_USER:$PRIVATE_PASSWORD" "http://$PRIVATE/v2/"

  cat >"$dir/containerd.toml" <<EOF
version = 2
root = "$dir/root"
state = "$dir/state"
[grpc]
  address = "$dir/containerd.sock"
[ttrpc]
  address = "$dir/containerd.sock.ttrpc"
[debug]
  level = "warn"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$REG/ringleader/pause:1"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      BinaryName = "$dir/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$dir/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."$REG"]
    endpoint = ["http://$REG"]
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."$PRIVATE"]
    endpoint = ["http://$PRIVATE"]
EOF
  # Pods of `--pod-network cni`: a bridge of their own per containerd
  # (named and numbered by the registry port, so two instances coexist).
  mkdir -p "$dir/net.d" "$dir/ipam"
  cat >"$dir/net.d/10-ringleader.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "ringleader-test", "plugins": [
  {"type": "bridge", "bridge": "rl$PORT", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.$((PORT % 200 + 20)).0.0/16"}]], "dataDir": "$dir/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}}
]}
EOF
  # Sandboxes ask for oom_score_adj -998, which a machine without
  # CAP_SYS_RESOURCE (a VM's container, as CI's) refuses; containerd 1.6's
  # restrict_oom_score_adj leaves sandboxes out. runc runs through this
  # wrapper, which raises a negative score to 0 there and changes nothing
  # where lowering it is allowed.
  cat >"$dir/runc" <<'EOF'
#!/bin/sh
prev=
for a in "$@"; do
  if [ "$prev" = --bundle ] && [ -f "$a/config.json" ] && ! echo -1 >/proc/self/oom_score_adj 2>/dev/null; then
    sed -i 's/"oomScoreAdj":-[0-9]*/"oomScoreAdj":0/' "$a/config.json"
  fi
  prev=$a
done
exec runc "$@"
EOF
  chmod +x "$dir/runc"
  setsid containerd --config "$dir/containerd.toml" >"$dir/containerd.log" 2>&1 &
  echo $! >"$dir/containerd.pid"
  wait_for "containerd" 30 ctr --address "$dir/containerd.sock" version

  images "$dir"
  cat >"$dir/env" <<EOF
export RINGLEADER_CRI_ENDPOINT=unix://$dir/containerd.sock
export RINGLEADER_TEST_REGISTRY=$REG
export RINGLEADER_TEST_PRIVATE_REGISTRY=$PRIVATE
export RINGLEADER_TEST_PRIVATE_AUTH=$PRIVATE_USER:$PRIVATE_PASSWORD
EOF
  echo "cri-env: containerd at unix://$dir/containerd.sock, registry at $REG (source $dir/env)"
}

images() {
  local dir=$1 links=()
  for applet in $(/bin/busybox --list); do
    [ "$applet" = busybox ] || links+=(--link "/bin/$applet=busybox")
  done
  python3 "$HERE/oci-image.py" "$dir/images/busybox.tar" "$REG/ringleader/busybox:1" \
    --file /bin/busybox:/bin/busybox "${links[@]}" --dir etc --cmd '["sh"]'
  python3 "$HERE/oci-image.py" "$dir/images/pause.tar" "$REG/ringleader/pause:1" \
    --file /bin/busybox:/bin/busybox --link /bin/sleep=busybox --entrypoint '["/bin/sleep", "2147483647"]'
  local ctr=(ctr --address "$dir/containerd.sock" -n k8s.io)
  for image in busybox pause; do
    "${ctr[@]}" images import "$dir/images/$image.tar" >/dev/null
    "${ctr[@]}" images push --plain-http "$REG/ringleader/$image:1" >/dev/null
  done
  # The image garbage collection test's own (no other test pulls it).
  "${ctr[@]}" images tag --force "$REG/ringleader/busybox:1" "$REG/ringleader/gc-victim:1" >/dev/null
  "${ctr[@]}" images push --plain-http "$REG/ringleader/gc-victim:1" >/dev/null
  "${ctr[@]}" images tag --force "$REG/ringleader/busybox:1" "$PRIVATE/ringleader/private:1" >/dev/null
  "${ctr[@]}" images push --plain-http --user "$PRIVATE_USER:$PRIVATE_PASSWORD" "$PRIVATE/ringleader/private:1" >/dev/null
  # Tests pull through the CRI: the images are in the registries, not here yet.
  "${ctr[@]}" images rm "$REG/ringleader/busybox:1" "$REG/ringleader/gc-victim:1" "$PRIVATE/ringleader/private:1" >/dev/null
}

stop() {
  local dir=$1
  if [ -S "$dir/containerd.sock" ]; then
    local ctr=(ctr --address "$dir/containerd.sock" -n k8s.io)
    for task in $("${ctr[@]}" tasks ls -q 2>/dev/null); do
      "${ctr[@]}" tasks kill -s SIGKILL "$task" >/dev/null 2>&1 || true
    done
  fi
  ip link delete "rl$PORT" 2>/dev/null || true
  for name in containerd registry private; do
    if [ -f "$dir/$name.pid" ]; then
      kill "$(cat "$dir/$name.pid")" 2>/dev/null || true
      rm -f "$dir/$name.pid"
    fi
  done
  # Containers' shims outlive containerd: they go too.
  pkill -f "containerd-shim-runc-v2 -namespace k8s.io .*-address $dir/containerd.sock" 2>/dev/null || true
  sleep 0.5
  # Mounts of containers' root filesystems under DIR go before the files.
  grep -o " $dir/[^ ]*" /proc/mounts 2>/dev/null | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
}

case "${1:-}" in
  install) install ;;
  start) [ $# -eq 2 ] || die "usage: $0 start DIR"; install; start "$2" ;;
  stop) [ $# -eq 2 ] || die "usage: $0 stop DIR"; stop "$2" ;;
  *) die "usage: $0 install | start DIR | stop DIR" ;;
esac
