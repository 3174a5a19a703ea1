#!/bin/sh
# Re-copies Kubernetes' published .proto files into this directory, keeping
# their import paths (k8s.io/api/..., k8s.io/apimachinery/...), with comment
# lines stripped: the doc comments are ~85% of the bytes and protox doesn't
# need them. The sources are the Go modules k8s.io/api and
# k8s.io/apimachinery (Apache-2.0), fetched with
#   go mod download k8s.io/api@$VERSION k8s.io/apimachinery@$VERSION
# Usage: proto/refresh.sh [VERSION]   (default v0.32.4)
set -eu
VERSION=${1:-v0.32.4}
MOD=$(go env GOMODCACHE)/k8s.io
HERE=$(cd "$(dirname "$0")" && pwd)
API="core/v1 apps/v1 batch/v1 rbac/v1 scheduling/v1 policy/v1 authentication/v1
authorization/v1 coordination/v1 discovery/v1 autoscaling/v1 networking/v1"
MACHINERY="pkg/apis/meta/v1 pkg/runtime pkg/runtime/schema pkg/api/resource pkg/util/intstr"
copy() { # $1 source file, $2 destination file
    mkdir -p "$(dirname "$2")"
    # Drop whole-line comments, then squeeze the blank runs they leave.
    sed -E '/^[[:space:]]*\/\//d' "$1" | cat -s > "$2"
}
for g in $API; do
    copy "$MOD/api@$VERSION/$g/generated.proto" "$HERE/k8s.io/api/$g/generated.proto"
done
for p in $MACHINERY; do
    copy "$MOD/apimachinery@$VERSION/$p/generated.proto" "$HERE/k8s.io/apimachinery/$p/generated.proto"
done
echo "copied k8s.io/api and k8s.io/apimachinery $VERSION protos into $HERE"
