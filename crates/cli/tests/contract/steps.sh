# Steps of the stock-kubectl contract scripts (sourced by kubectl.sh and
# kubectl_auth.sh): each prints its command; the first failure ends the
# script with the command, what was expected and what kubectl printed.

K=(kubectl --request-timeout=30s)
OUT=""

run() { # run CMD...: must exit 0; its output in $OUT
  echo "+ $*"
  OUT=$("$@" 2>&1)
  local rc=$?
  if [ $rc -ne 0 ]; then
    printf 'FAIL: exit %s from: %s\n%s\n' "$rc" "$*" "$OUT" >&2
    exit 1
  fi
}

fails() { # fails CMD...: must exit non-zero; its output in $OUT
  echo "+ ! $*"
  OUT=$("$@" 2>&1)
  if [ $? -eq 0 ]; then
    printf 'FAIL: expected an error from: %s\n%s\n' "$*" "$OUT" >&2
    exit 1
  fi
}

has() { # has PATTERN (extended regex, per line) in $OUT
  if ! grep -Eq -- "$1" <<<"$OUT"; then
    printf 'FAIL: expected /%s/ in:\n%s\n' "$1" "$OUT" >&2
    exit 1
  fi
}

lacks() {
  if grep -Eq -- "$1" <<<"$OUT"; then
    printf 'FAIL: did not expect /%s/ in:\n%s\n' "$1" "$OUT" >&2
    exit 1
  fi
}

until_ok() { # until_ok SECONDS PATTERN CMD...: re-run CMD until its output matches (bounded)
  local secs=$1 pattern=$2
  shift 2
  local deadline=$((SECONDS + secs))
  while true; do
    OUT=$("$@" 2>&1)
    if grep -Eq -- "$pattern" <<<"$OUT"; then
      echo "+ $* (matched /$pattern/)"
      return 0
    fi
    if [ $SECONDS -ge $deadline ]; then
      printf 'FAIL: /%s/ not seen within %ss from: %s\nlast output:\n%s\n' "$pattern" "$secs" "$*" "$OUT" >&2
      exit 1
    fi
    sleep 0.5
  done
}

DATA=$(dirname "$KUBECONFIG")
token() { # token USER: a kubeconfig for USER in $TMPDIR/USER.kubeconfig
  run "$RINGLEADER" token create --user "$1" --data-dir "$DATA" --kubeconfig-out "$TMPDIR/$1.kubeconfig"
  has '^[0-9a-f]{64}$'
}

alice_views_kc_team() { # a RoleBinding: kc-alice may read namespace kc-team (`view`)
  cat > "$TMPDIR/alice-view.yaml" <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: kc-team}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: kc-alice-view, namespace: kc-team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: kc-alice}]
YAML
  run "${K[@]}" apply -f "$TMPDIR/alice-view.yaml"
  has '^namespace/kc-team created$'
  has 'rolebinding.rbac.authorization.k8s.io/kc-alice-view created'
}
