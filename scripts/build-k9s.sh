#!/usr/bin/env bash
# Builds k9s from its Go module (through the Go module proxy) into DIR/bin/k9s,
# for the ignored k9s test (crates/cli/tests/k9s.rs). Takes minutes: k9s pulls
# in client-go and most of Kubernetes' libraries.
#   scripts/build-k9s.sh DIR [VERSION]
set -euo pipefail
dir=${1:?usage: scripts/build-k9s.sh DIR [VERSION]}
version=${2:-v0.50.16}
mkdir -p "$dir/bin"
GOBIN=$(cd "$dir/bin" && pwd) go install "github.com/derailed/k9s@${version}"
echo "$dir/bin/k9s"
