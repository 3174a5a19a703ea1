#!/usr/bin/env bash
# The kubectl battery: the commands a Kubernetes user runs against a cluster
# (without add-ons that need Services to route traffic), each once, against
# `ringleader up` with pods as containers. Every command must work: exit 0 and
# print what kubectl prints on Kubernetes (a pattern per command). The
# battery runs to its end and then lists what failed; the count of commands
# is printed and checked by the test (crates/cli/tests/containers.rs).
# Needs KUBECONFIG, IMAGE (a busybox image the runtime can pull), NODE_A and
# NODE_B (two nodes' names), EXAMPLES (the repo's examples/), TMPDIR.
set -uo pipefail

K=(kubectl --request-timeout=30s)
N=0
PASSED=0
FAILED=()

# b PATTERN CMD...: one command of the battery; must exit 0 and print PATTERN.
b() {
  local pattern=$1
  shift
  N=$((N + 1))
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ $rc -eq 0 ] && grep -Eq -- "$pattern" <<<"$out"; then
    PASSED=$((PASSED + 1))
    echo "ok    $*"
  else
    FAILED+=("$*")
    printf 'FAIL  %s (exit %s, expected /%s/)\n' "$*" "$rc" "$pattern"
    head -8 <<<"$out" | sed 's/^/        /'
  fi
}

# until_seen SECONDS PATTERN CMD...: waits (bounded) for CMD to print
# PATTERN; not a command of the battery, the state the next one needs.
until_seen() {
  local secs=$1 pattern=$2
  shift 2
  local deadline=$((SECONDS + secs))
  while [ $SECONDS -lt $deadline ]; do
    if "$@" 2>&1 | grep -Eq -- "$pattern"; then return 0; fi
    sleep 0.5
  done
  echo "      (waited ${secs}s for /$pattern/ from: $*)"
}

NS=battery
kn=("${K[@]}" -n "$NS")

# --- the cluster and its API --------------------------------------------------------
b 'Server Version: v1\.' "${K[@]}" version
b 'Kubernetes control plane is running at https://' "${K[@]}" cluster-info
b '^pods +po +v1 +true +Pod' "${K[@]}" api-resources
b '^deployments\.apps$' "${K[@]}" api-resources --namespaced=true -o name
b '^apps/v1$' "${K[@]}" api-versions
b 'FIELD: +containers' "${K[@]}" explain pods.spec.containers
b 'FIELD: +replicas' "${K[@]}" explain deployment.spec.replicas
b '"gitVersion"' "${K[@]}" get --raw /version
b '^ok$' "${K[@]}" get --raw /readyz
b 'current-context' "${K[@]}" config view
b '.' "${K[@]}" config current-context
b 'CURRENT' "${K[@]}" config get-contexts

# --- namespaces -------------------------------------------------------------------
b "^namespace/$NS created$" "${K[@]}" create namespace "$NS"
b "^$NS +Active" "${K[@]}" get namespaces
b 'phase: Active' "${K[@]}" get namespace "$NS" -o yaml
b 'Status: +Active' "${K[@]}" describe namespace "$NS"
b "namespace/$NS labeled" "${K[@]}" label namespace "$NS" team=battery
b "Context \".*\" modified" "${K[@]}" config set-context --current --namespace=default

# --- nodes ------------------------------------------------------------------------
b "^$NODE_A +Ready" "${K[@]}" get nodes
b 'INTERNAL-IP' "${K[@]}" get nodes -o wide
b 'LABELS' "${K[@]}" get nodes --show-labels
b '^Capacity:' "${K[@]}" describe node "$NODE_A"
b "node/$NODE_B labeled" "${K[@]}" label node "$NODE_B" battery=yes
b "^$NODE_B$" "${K[@]}" get nodes -l battery=yes -o custom-columns=NAME:.metadata.name --no-headers
b "node/$NODE_B unlabeled" "${K[@]}" label node "$NODE_B" battery-
b "node/$NODE_B annotated" "${K[@]}" annotate node "$NODE_B" battery/owner=me
b "node/$NODE_B cordoned" "${K[@]}" cordon "$NODE_B"
b "node/$NODE_B uncordoned" "${K[@]}" uncordon "$NODE_B"
b "node/$NODE_B tainted" "${K[@]}" taint node "$NODE_B" battery=x:NoSchedule
b "node/$NODE_B untainted" "${K[@]}" taint node "$NODE_B" battery:NoSchedule-
b 'CPU\(cores\)' "${K[@]}" top node

# --- pods ------------------------------------------------------------------------
b '^pod/bat-run created$' "${kn[@]}" run bat-run --image="$IMAGE" --labels=app=bat -- sh -c 'echo started; while true; do echo tick; sleep 1; done'
until_seen 90 '^Running$' "${kn[@]}" get pod bat-run -o jsonpath='{.status.phase}'
b 'condition met' "${kn[@]}" wait --for=condition=Ready pod/bat-run --timeout=60s
b '^bat-run +1/1 +Running' "${kn[@]}" get pods
b 'IP +NODE' "${kn[@]}" get pods -o wide
b 'kind: Pod' "${kn[@]}" get pod bat-run -o yaml
b '"kind": "Pod"' "${kn[@]}" get pod bat-run -o json
b '^Running$' "${kn[@]}" get pod bat-run -o jsonpath='{.status.phase}'
b '^bat-run +' "${kn[@]}" get pods -o custom-columns=NAME:.metadata.name,NODE:.spec.nodeName --no-headers
b '^bat-run ' "${kn[@]}" get pods --sort-by=.metadata.creationTimestamp
b '^bat-run ' "${kn[@]}" get pods -l app=bat
b '^bat-run ' "${kn[@]}" get pods --field-selector=status.phase=Running
b "^$NS +bat-run " "${K[@]}" get pods -A
b 'app=bat' "${kn[@]}" get pods --show-labels
b '^pod/bat-run$' "${kn[@]}" get pods -o name
b '^Status: +Running' "${kn[@]}" describe pod bat-run
b '^started$' "${kn[@]}" logs bat-run
b '^tick$' "${kn[@]}" logs bat-run --tail=1
b '^[0-9T:.-]+Z tick$' "${kn[@]}" logs bat-run --timestamps --tail=2
b 'tick' "${kn[@]}" logs bat-run --since=1h
b 'tick' "${kn[@]}" logs -l app=bat --tail=1
b 'tick' bash -c "timeout 3 ${kn[*]} logs -f bat-run; [ \$? -eq 124 ]"
b '^42$' "${kn[@]}" exec bat-run -- sh -c 'echo $((6*7))'
b '^piped$' bash -c "echo piped | ${kn[*]} exec -i bat-run -- cat"
echo "copied in" >"$TMPDIR/bat-cp.txt"
b '' "${kn[@]}" cp "$TMPDIR/bat-cp.txt" bat-run:/tmp/bat-cp.txt
b '' "${kn[@]}" cp bat-run:/tmp/bat-cp.txt "$TMPDIR/bat-cp-back.txt"
b '^copied in$' cat "$TMPDIR/bat-cp-back.txt"
b 'tick' bash -c "timeout 3 ${kn[*]} attach bat-run; [ \$? -eq 124 ]"
"${kn[@]}" exec bat-run -- sh -c 'echo served > /tmp/index.html; cd /tmp && httpd -p 18264' >/dev/null 2>&1
b 'served' bash -c "(${kn[*]} port-forward pod/bat-run 18265:18264 --address 127.0.0.1 >/dev/null 2>&1 &
  pf=\$!; for i in \$(seq 50); do out=\$(wget -qO- http://127.0.0.1:18265/index.html 2>/dev/null || curl -s http://127.0.0.1:18265/index.html); [ -n \"\$out\" ] && break; sleep 0.2; done
  kill \$pf; echo \"\$out\")"
b 'pod/bat-run labeled' "${kn[@]}" label pod bat-run tier=batch
b 'pod/bat-run annotated' "${kn[@]}" annotate pod bat-run note=battery
b 'pod/bat-run patched' "${kn[@]}" patch pod bat-run -p '{"metadata":{"labels":{"patched":"merge"}}}'
b 'pod/bat-run patched' "${kn[@]}" patch pod bat-run --type=json -p '[{"op":"add","path":"/metadata/labels/jp","value":"json"}]'
b 'pod/bat-run edited' env KUBE_EDITOR="sed -i s/note:\ battery/note:\ edited/" "${kn[@]}" edit pod bat-run
b '^edited$' "${kn[@]}" get pod bat-run -o jsonpath='{.metadata.annotations.note}'
b 'CPU\(cores\)' "${kn[@]}" top pod
b 'Scheduled' "${kn[@]}" get events
b 'Started' "${kn[@]}" get events --field-selector involvedObject.name=bat-run
b 'Scheduled' "${kn[@]}" events --for pod/bat-run
b 'bat-run' bash -c "timeout 3 ${kn[*]} get pods -w; [ \$? -eq 124 ]"
b '^yes$' "${kn[@]}" auth can-i create pods
b 'pod/bat-run' "${kn[@]}" get all

# --- deployments, replica sets, rollouts ----------------------------------------------------
b '^deployment.apps/bat-dep created$' "${kn[@]}" create deployment bat-dep --image="$IMAGE" -- sh -c 'sleep 600'
b 'successfully rolled out' "${kn[@]}" rollout status deployment/bat-dep --timeout=90s
b 'condition met' "${kn[@]}" wait --for=condition=Available deployment/bat-dep --timeout=60s
b '^bat-dep +1/1' "${kn[@]}" get deployments
b '^Replicas:' "${kn[@]}" describe deployment bat-dep
b '^bat-dep-' "${kn[@]}" get replicasets
b 'deployment.apps/bat-dep scaled' "${kn[@]}" scale deployment bat-dep --replicas=2
until_seen 90 '^2$' "${kn[@]}" get deployment bat-dep -o jsonpath='{.status.readyReplicas}'
b 'deployment.apps/bat-dep env updated' "${kn[@]}" set env deployment/bat-dep BATTERY=1
b 'successfully rolled out' "${kn[@]}" rollout status deployment/bat-dep --timeout=90s
b '^2 ' "${kn[@]}" rollout history deployment/bat-dep
b 'deployment.apps/bat-dep rolled back' "${kn[@]}" rollout undo deployment/bat-dep
b 'deployment.apps/bat-dep restarted' "${kn[@]}" rollout restart deployment/bat-dep
b 'deployment.apps/bat-dep paused' "${kn[@]}" rollout pause deployment/bat-dep
b 'deployment.apps/bat-dep resumed' "${kn[@]}" rollout resume deployment/bat-dep
b 'deployment.apps/bat-dep resource requirements updated' "${kn[@]}" set resources deployment/bat-dep --limits=cpu=200m
b 'deployment.apps/bat-dep labeled' "${kn[@]}" label deployment bat-dep tier=web
b 'service/bat-dep exposed' "${kn[@]}" expose deployment bat-dep --port=80 --target-port=8080

# --- jobs -------------------------------------------------------------------------
b '^job.batch/bat-job created$' "${kn[@]}" create job bat-job --image="$IMAGE" -- sh -c 'echo job done'
b 'condition met' "${kn[@]}" wait --for=condition=Complete job/bat-job --timeout=90s
b '^bat-job +' "${kn[@]}" get jobs
b 'Pods Statuses:' "${kn[@]}" describe job bat-job
b '^job done$' "${kn[@]}" logs job/bat-job
b 'job.batch "bat-job" deleted' "${kn[@]}" delete job bat-job

# --- the job kinds people bring ---------------------------------------------------------
b 'pytorchjob.kubeflow.org/demo-pytorch created' "${K[@]}" create -f "$EXAMPLES/demo/pytorchjob-h100.yaml"
b '^demo-pytorch ' "${K[@]}" get pytorchjobs
b 'Kind: +PyTorchJob' "${K[@]}" describe pytorchjob demo-pytorch
b '^demo-pytorch' "${K[@]}" get podgroups
b '^default ' "${K[@]}" get queues
b 'vcjob|jobs\.batch\.volcano\.sh' "${K[@]}" api-resources --api-group=batch.volcano.sh
b 'deleted' "${K[@]}" delete -f "$EXAMPLES/demo/pytorchjob-h100.yaml"

# --- configuration ----------------------------------------------------------------------
b '^configmap/bat-cm created$' "${kn[@]}" create configmap bat-cm --from-literal=a=1
b '^configmap/bat-cm-file created$' "${kn[@]}" create configmap bat-cm-file --from-file="$TMPDIR/bat-cp.txt"
b '^bat-cm ' "${kn[@]}" get configmaps
b '^a:' "${kn[@]}" describe configmap bat-cm
b '^secret/bat-secret created$' "${kn[@]}" create secret generic bat-secret --from-literal=password=s3cret
b '^secret/bat-pull created$' "${kn[@]}" create secret docker-registry bat-pull --docker-server=registry.local --docker-username=u --docker-password=p
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TMPDIR/bat.key" -out "$TMPDIR/bat.crt" -subj /CN=bat -days 1 >/dev/null 2>&1
b '^secret/bat-tls created$' "${kn[@]}" create secret tls bat-tls --cert="$TMPDIR/bat.crt" --key="$TMPDIR/bat.key"
b 'bat-secret +Opaque' "${kn[@]}" get secrets
b 'password: +6 bytes' "${kn[@]}" describe secret bat-secret
b '^s3cret$' bash -c "${kn[*]} get secret bat-secret -o jsonpath='{.data.password}' | base64 -d"

# --- services ----------------------------------------------------------------------------
b '^service/bat-svc created$' "${kn[@]}" create service clusterip bat-svc --tcp=80:8080
b 'bat-svc +ClusterIP +10\.' "${kn[@]}" get services
b '^bat-dep ' "${kn[@]}" get endpoints
b 'bat-dep-' "${kn[@]}" get endpointslices
b '^Type: +ClusterIP' "${kn[@]}" describe service bat-svc
b 'service/bat-run exposed' "${kn[@]}" expose pod bat-run --port=18264
b 'service "bat-svc" deleted' "${kn[@]}" delete service bat-svc

# --- identities and access -----------------------------------------------------------------
b '^serviceaccount/bat-sa created$' "${kn[@]}" create serviceaccount bat-sa
b '^default ' "${kn[@]}" get serviceaccounts
b '^eyJ' "${kn[@]}" create token bat-sa
b '^role.rbac.authorization.k8s.io/bat-role created$' "${kn[@]}" create role bat-role --verb=get,list --resource=pods
b '^rolebinding.rbac.authorization.k8s.io/bat-rb created$' "${kn[@]}" create rolebinding bat-rb --role=bat-role --serviceaccount="$NS:bat-sa"
b '^clusterrole.rbac.authorization.k8s.io/bat-cr created$' "${K[@]}" create clusterrole bat-cr --verb=get --resource=nodes
b '^clusterrolebinding.rbac.authorization.k8s.io/bat-crb created$' "${K[@]}" create clusterrolebinding bat-crb --clusterrole=bat-cr --user=bat-user
b '^yes$' "${kn[@]}" auth can-i list pods --as="system:serviceaccount:$NS:bat-sa"
b '^no$' bash -c "${kn[*]} auth can-i delete pods --as=system:serviceaccount:$NS:bat-sa; true"
b '^pods +\[\] +\[\] +\[get list\]' "${kn[@]}" auth can-i --list --as="system:serviceaccount:$NS:bat-sa"
b '^Username' "${K[@]}" auth whoami
b '^bat-role ' "${kn[@]}" get roles
b 'ServiceAccount +bat-sa' "${kn[@]}" describe rolebinding bat-rb

# --- scheduling policy ------------------------------------------------------------------------
b '^priorityclass.scheduling.k8s.io/bat-pc created$' "${K[@]}" create priorityclass bat-pc --value=100
b '^bat-pc +100 ' "${K[@]}" get priorityclasses
b '^poddisruptionbudget.policy/bat-pdb created$' "${kn[@]}" create poddisruptionbudget bat-pdb --selector=app=none --min-available=1
b '^bat-pdb ' "${kn[@]}" get poddisruptionbudgets
b "node/$NODE_B drained" "${K[@]}" drain "$NODE_B" --ignore-daemonsets --delete-emptydir-data --timeout=60s
b "node/$NODE_B uncordoned" "${K[@]}" uncordon "$NODE_B"

# --- manifests: apply, diff, server-side apply, replace, prune ------------------------------------
cat >"$TMPDIR/bat-apply.yaml" <<YAML
apiVersion: v1
kind: ConfigMap
metadata: {name: bat-applied, namespace: $NS, labels: {battery: applied}}
data: {a: "1"}
YAML
b '^configmap/bat-applied created$' "${K[@]}" apply -f "$TMPDIR/bat-apply.yaml"
b '^configmap/bat-applied unchanged$' "${K[@]}" apply -f "$TMPDIR/bat-apply.yaml"
sed -i 's/a: "1"/a: "2"/' "$TMPDIR/bat-apply.yaml"
b '^\+  a: "2"' bash -c "${K[*]} diff -f $TMPDIR/bat-apply.yaml; [ \$? -eq 1 ]"
b '^configmap/bat-applied serverside-applied$' "${K[@]}" apply --server-side --force-conflicts -f "$TMPDIR/bat-apply.yaml"
b 'conflict' bash -c "sed 's/a: \"2\"/a: \"3\"/' $TMPDIR/bat-apply.yaml | ${K[*]} apply --server-side --field-manager=other -f - 2>&1; true"
b '^configmap/bat-applied replaced$' "${K[@]}" replace -f "$TMPDIR/bat-apply.yaml"
b 'created \(server dry run\)' "${kn[@]}" create configmap bat-dry --from-literal=a=1 --dry-run=server
# kubectl's default prune list names kinds not served here (PersistentVolumeClaim, …): the allowlist.
b 'configmap/bat-applied (configured|unchanged)' "${K[@]}" apply --prune -l battery=applied --prune-allowlist=core/v1/ConfigMap -f "$TMPDIR/bat-apply.yaml"
mkdir -p "$TMPDIR/bat-kustomize"
cp "$TMPDIR/bat-apply.yaml" "$TMPDIR/bat-kustomize/cm.yaml"
printf 'resources: [cm.yaml]\ncommonLabels: {kustomized: "yes"}\n' >"$TMPDIR/bat-kustomize/kustomization.yaml"
b 'configmap/bat-applied configured' "${K[@]}" apply -k "$TMPDIR/bat-kustomize"
b 'configmap "bat-applied" deleted' "${K[@]}" delete -f "$TMPDIR/bat-apply.yaml"

# --- refusals worded as Kubernetes words them ---------------------------------------------------------
b 'ephemeral containers' bash -c "${kn[*]} debug bat-run --image=$IMAGE -- true 2>&1; true"
b 'namespaces "default" is forbidden: this namespace may not be deleted' bash -c "${K[*]} delete namespace default 2>&1; true"

# --- cleaning up ------------------------------------------------------------------------------
b 'pod "bat-run" deleted' "${kn[@]}" delete pod bat-run --wait=false
b 'deployment.apps "bat-dep" deleted' "${kn[@]}" delete deployment bat-dep
b 'configmap "bat-cm-file" deleted' "${kn[@]}" delete configmap bat-cm bat-cm-file
b 'secret "bat-tls" deleted' "${kn[@]}" delete secret bat-secret bat-pull bat-tls
b "namespace \"$NS\" deleted" "${K[@]}" delete namespace "$NS" --timeout=120s
b "^Error from server \(NotFound\)|not found" bash -c "${K[*]} get namespace $NS 2>&1; true"

echo
echo "battery: $PASSED/$N commands work"
if [ ${#FAILED[@]} -gt 0 ]; then
  echo "failed:"
  printf '  %s\n' "${FAILED[@]}"
  exit 1
fi
