#!/usr/bin/env bash
# Stock kubectl against `ringleader up`: impersonation (`--as`, `--as-group`)
# authorized by the `impersonate` verb and refused without it; `auth can-i
# --list` (SelfSubjectRulesReview) and `auth whoami` (SelfSubjectReview) as a
# namespace member; `GET /version/`; `kubectl debug` and `exec` refused with
# a message saying the runtime does not support them yet. Run by
# crates/cli/tests/kubectl_auth.rs with KUBECONFIG and RINGLEADER set.
set -uo pipefail

. "$(dirname "$0")/steps.sh"

token kc-alice
token kc-bob
A=(kubectl --request-timeout=30s --kubeconfig "$TMPDIR/kc-alice.kubeconfig")
B=(kubectl --request-timeout=30s --kubeconfig "$TMPDIR/kc-bob.kubeconfig")
alice_views_kc_team

# --- impersonation -------------------------------------------------------------
run "${K[@]}" auth can-i delete nodes
has '^yes$'
fails "${K[@]}" auth can-i delete nodes --as=kc-alice
has '^no$'
run "${K[@]}" auth can-i list pods -n kc-team --as=kc-alice
has '^yes$'
fails "${K[@]}" auth can-i create pods -n kc-team --as=kc-alice
has '^no$'
fails "${K[@]}" get pods -n kc-other --as=kc-alice
has 'pods is forbidden: User "kc-alice" cannot list resource "pods" in API group "" in the namespace "kc-other"'
# A group claimed is a group held: system:masters may do anything.
run "${K[@]}" auth can-i delete nodes --as=kc-alice --as-group=system:masters
has '^yes$'
# Someone without the impersonate verb is refused, never answered as themself.
fails "${B[@]}" get pods -n kc-team --as=kc-alice
has 'users "kc-alice" is forbidden: User "kc-bob" cannot impersonate resource "users" in API group "" at the cluster scope'
fails "${A[@]}" auth can-i list pods -n kc-team --as=kc-bob
has 'cannot impersonate resource "users"'
# Granting it (a ClusterRole with impersonate on users) lets bob act as alice, and only as alice.
cat > "$TMPDIR/bob-impersonates.yaml" <<YAML
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: kc-impersonate-alice}
rules: [{apiGroups: [""], resources: [users], verbs: [impersonate], resourceNames: [kc-alice]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: kc-bob-impersonates}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kc-impersonate-alice}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: kc-bob}]
YAML
run "${K[@]}" apply -f "$TMPDIR/bob-impersonates.yaml"
run "${B[@]}" get pods -n kc-team --as=kc-alice
fails "${B[@]}" get pods -n kc-team --as=kc-alice --as-group=system:masters
has 'groups "system:masters" is forbidden: User "kc-bob" cannot impersonate resource "groups"'
fails "${B[@]}" get pods -n kc-team
has 'User "kc-bob" cannot list resource "pods"'

# --- what may I do, who am I -----------------------------------------------------
run "${A[@]}" auth can-i --list -n kc-team
has '^Resources +Non-Resource URLs +Resource Names +Verbs'
has '^pods +\[\] +\[\] +\[get list watch\]'
has '^pods/log +\[\] +\[\] +\[get list watch\]'
has '^selfsubjectrulesreviews\.authorization\.k8s\.io +\[\] +\[\] +\[create\]'
has '\[/version\] +\[\] +\[get\]'
lacks '^\*\.\*'
run "${A[@]}" auth can-i --list -n kc-other
lacks '^pods '
run "${K[@]}" auth can-i --list
has '^\*\.\* +\[\] +\[\] +\[\*\]'
run "${A[@]}" auth whoami
has '^Username +kc-alice$'
has '^Groups +\[system:authenticated\]$'
run "${K[@]}" auth whoami --as=kc-alice --as-group=kc-ops -o json
has '"username": "kc-alice"'
has '"kc-ops"'
run "${K[@]}" api-resources --api-group=authentication.k8s.io
has '^selfsubjectreviews +authentication\.k8s\.io/v1 +false +SelfSubjectReview'

# --- /version/ -------------------------------------------------------------------
run "${K[@]}" get --raw /version/
has '"gitVersion":"v1\.'

# --- what the container runtime cannot do yet -----------------------------------------
cat > "$TMPDIR/dbg.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata: {name: kc-dbg, namespace: kc-team}
spec: {containers: [{name: main, image: busybox, command: [sleep, "600"]}]}
YAML
run "${K[@]}" apply -f "$TMPDIR/dbg.yaml"
fails "${K[@]}" debug kc-dbg -n kc-team --image=busybox
has 'ephemeral containers are not supported by this cluster.s runtime yet'
lacks 'panic|goroutine'
fails "${K[@]}" exec kc-dbg -n kc-team -- true
has 'does not support exec, attach or port-forward yet'
fails "${K[@]}" attach kc-dbg -n kc-team
has 'does not support exec, attach or port-forward yet'
run "${K[@]}" delete -f "$TMPDIR/dbg.yaml" --wait=false

echo "kubectl auth contract: all steps passed"
