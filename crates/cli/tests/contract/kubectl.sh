#!/usr/bin/env bash
# Stock kubectl against `ringleader up`, with nothing but the kubeconfig that
# `up` wrote: discovery, OpenAPI (explain, validation), Tables, get/describe/
# logs/apply/patch/delete/watch/jsonpath/dry-run on pods, nodes, events and
# every job kind; RBAC, `auth can-i` and Forbidden for a user of `ringleader
# token create`. Run by crates/cli/tests/kubectl.rs with KUBECONFIG, EXAMPLES
# (the repo's examples/), NODE_GPU (a GPU node's name) and RINGLEADER (the
# binary) set.
# Each step prints its command; the first failure ends the script with the
# command, what was expected and what kubectl printed.
set -uo pipefail

. "$(dirname "$0")/steps.sh"

# --- version and discovery --------------------------------------------------
run "${K[@]}" version -o json
has '"serverVersion"'
has '"gitVersion": "v1\.'
run "${K[@]}" api-resources
has '^pods +po +v1 +true +Pod'
has '^nodes +no +v1 +false +Node'
has '^events +ev +v1 +true +Event'
has '^configmaps +cm +v1 +true +ConfigMap'
has '^pytorchjobs +.*pj.* +kubeflow\.org/v1 +true +PyTorchJob'
has '^tfjobs +.*kubeflow\.org/v1 +true +TFJob'
has '^mpijobs +.*kubeflow\.org/v2beta1 +true +MPIJob'
has '^ascendjobs +.*mindxdl\.gitee\.com/v1 +true +AscendJob'
has '^jobs +.*vcjob.* +batch\.volcano\.sh/v1alpha1 +true +Job'
has '^jobs +batch/v1 +true +Job'
has '^deployments +deploy +apps/v1 +true +Deployment'
has '^queues +.*scheduling\.volcano\.sh/v1beta1 +false +Queue'
has '^podgroups +.*scheduling\.volcano\.sh/v1beta1 +true +PodGroup'
has '^services +svc +v1 +true +Service'
has '^endpoints +ep +v1 +true +Endpoints'
has '^endpointslices +discovery\.k8s\.io/v1 +true +EndpointSlice'
run "${K[@]}" api-versions
has '^kubeflow\.org/v1$'
has '^v1$'

# --- nodes --------------------------------------------------------------------
run "${K[@]}" get nodes
has '^NAME +STATUS +ROLES +AGE +VERSION'
has "^${NODE_GPU} +Ready "
run "${K[@]}" get nodes -o wide
has 'INTERNAL-IP'
run "${K[@]}" get node "$NODE_GPU" -o jsonpath='{.status.capacity.nvidia\.com/gpu}'
has '^8$'
run "${K[@]}" get nodes -o jsonpath='{range .items[*]}{.metadata.name}{"="}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}'
has "^${NODE_GPU}=True$"
run "${K[@]}" describe node "$NODE_GPU"
has '^Capacity:'
has 'nvidia\.com/gpu: +8'
fails "${K[@]}" delete node "$NODE_GPU"
has 'MethodNotAllowed|not allowed|not supported'
# Labels and annotations through the core view land on the ringleader.io Node
# (seed 002's activation step, MindCluster's node labels).
run "${K[@]}" label node "$NODE_GPU" ack.node.gpu.schedule=topology
has "node/${NODE_GPU} labeled"
run "${K[@]}" get nodes -l ack.node.gpu.schedule=topology -o name
has "^node/${NODE_GPU}$"
run "${K[@]}" get nodes.ringleader.io "$NODE_GPU" -o jsonpath='{.metadata.labels.ack\.node\.gpu\.schedule}'
has '^topology$'
run "${K[@]}" annotate node "$NODE_GPU" example.com/team=vision
has "node/${NODE_GPU} annotated"
run "${K[@]}" get nodes.ringleader.io "$NODE_GPU" -o jsonpath='{.metadata.annotations.example\.com/team}'
has '^vision$'
run "${K[@]}" label node "$NODE_GPU" ack.node.gpu.schedule-
has "node/${NODE_GPU} unlabeled"
run "${K[@]}" get nodes -l ack.node.gpu.schedule=topology -o name
lacks "$NODE_GPU"
# Labels the view only shows are not written back.
run "${K[@]}" get nodes.ringleader.io "$NODE_GPU" -o jsonpath='{.metadata.labels}'
lacks 'kubernetes\.io/(os|arch)'
fails "${K[@]}" label node "$NODE_GPU" node.kubernetes.io/instance-type=other --overwrite
has "Node \"${NODE_GPU}\" is invalid: metadata\\.labels\\[node\\.kubernetes\\.io/instance-type\\]: Invalid value: \"other\": the node.s profile is \"hgx-h100-8\""

# --- explain and validation (OpenAPI) ------------------------------------------
run "${K[@]}" explain pytorchjob.spec
has 'KIND: +PyTorchJob'
has 'pytorchReplicaSpecs'
run "${K[@]}" explain pods.spec.containers
has 'image'
has 'resources'
cat >"$TMPDIR/unknown-field.yaml" <<'YAML'
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: kc-typo}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      replica: 3
      template:
        spec:
          containers: [{name: pytorch, image: busybox, command: ["true"]}]
YAML
fails "${K[@]}" apply -f "$TMPDIR/unknown-field.yaml"
has 'unknown field'
has 'replica'
fails "${K[@]}" get pytorchjob kc-typo
has 'NotFound'

# --- dry run: validated, answered, not stored -----------------------------------
run "${K[@]}" apply -f "$EXAMPLES/tfjob.yaml" --dry-run=server
has 'created \(server dry run\)'
fails "${K[@]}" get tfjob dist-mnist
has 'NotFound'

# --- every job kind through kubectl apply (validated by the server) ------------
# The seed's Volcano job goes into namespace vcjob: a manifest holding the
# Namespace makes it (in the file's order, before what goes into it).
printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: vcjob\n' >"$TMPDIR/ns.yaml"
fails "${K[@]}" apply -f "$EXAMPLES/vcjob-elastic.yaml" --dry-run=server
has 'namespaces "vcjob" not found'
run "${K[@]}" apply -f "$TMPDIR/ns.yaml"
has '^namespace/vcjob created$'
for f in ascendjob-pytorch.yaml vcjob-elastic.yaml mpijob.yaml tfjob.yaml batch-job.yaml; do
  run "${K[@]}" apply -f "$EXAMPLES/$f" --dry-run=server
  has '\(server dry run\)'
done
run "${K[@]}" apply -f "$EXAMPLES/queue.yaml"
has 'created|configured|unchanged'
run "${K[@]}" get queues
has '^NAME'

# --- a long-running Deployment: pods, Tables, logs, events, describe -------------
cat >"$TMPDIR/web.yaml" <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: kc-web, labels: {app: kc-web}}
spec:
  replicas: 1
  selector: {matchLabels: {app: kc-web}}
  template:
    metadata: {labels: {app: kc-web, tier: front}}
    spec:
      containers:
      - name: web
        image: busybox
        command: ["/bin/sh", "-c", "echo hello-from-ringleader; echo second-line; sleep 600"]
        resources: {limits: {nvidia.com/gpu: 1}}
YAML
# Watch pods from before the job exists: the watch sees the pod come.
WATCH_OUT="$TMPDIR/watch.out"
timeout 60 "${K[@]}" get pods -w --output-watch-events --no-headers >"$WATCH_OUT" 2>&1 &
WATCH_PID=$!
sleep 1
run "${K[@]}" apply -f "$TMPDIR/web.yaml"
has 'deployment\.apps/kc-web created'
until_ok 60 '^kc-web-[^ ]+ +1/1 +Running +0 ' "${K[@]}" get pods
has '^NAME +READY +STATUS +RESTARTS +AGE'
POD=$(grep -Eo '^kc-web-[^ ]+' <<<"$OUT" | head -1)
run "${K[@]}" get deployments
has '^kc-web '
run "${K[@]}" get pods -o wide
has 'IP +NODE'
has "^${POD} .* ${NODE_GPU}|^${POD} .*gpu"
run "${K[@]}" get pods -o name
has "^pod/${POD}$"
run "${K[@]}" get pods -l 'app in (kc-web,other),tier!=back' -o jsonpath='{.items[*].metadata.name}'
has "^${POD}$"
run "${K[@]}" get pods -l '!app'
lacks "$POD"
run "${K[@]}" get pods --field-selector "status.phase=Running" -o custom-columns=NAME:.metadata.name,PHASE:.status.phase,NODE:.spec.nodeName
has "^${POD} +Running +"
run "${K[@]}" get pod "$POD" -o json
has '"containerStatuses"'
has '"imageID"'
has '"restartCount": 0'
run "${K[@]}" get pod "$POD" -o yaml
has 'kind: Pod'
run "${K[@]}" wait --for=condition=Ready "pod/$POD" --timeout=30s
has 'condition met'
until_ok 30 'hello-from-ringleader' "${K[@]}" logs "$POD"
has 'second-line'
run "${K[@]}" logs "$POD" --tail=1
has '^second-line$'
lacks 'hello-from-ringleader'
# --- services: expose, endpoints following the pod, cluster-info -----------------
run "${K[@]}" expose deployment kc-web --port=80 --target-port=8080
has '^service/kc-web exposed$'
run "${K[@]}" get svc
has '^NAME +TYPE +CLUSTER-IP +EXTERNAL-IP +PORT\(S\) +AGE$'
has '^kubernetes +ClusterIP +10\.96\.0\.1 +<none> +443/TCP '
has '^kc-web +ClusterIP +10\.(9[6-9]|10[0-9]|11[01])\.[0-9]+\.[0-9]+ +<none> +80/TCP '
run "${K[@]}" get svc kc-web -o wide
has '^NAME +TYPE +CLUSTER-IP +EXTERNAL-IP +PORT\(S\) +AGE +SELECTOR$'
has ' app=kc-web$'
until_ok 30 '^kc-web +[0-9.]+:8080 ' "${K[@]}" get endpoints kc-web
run "${K[@]}" get endpoints kc-web -o jsonpath='{.subsets[0].addresses[0].targetRef.name}'
has "^${POD}$"
run "${K[@]}" get endpointslices -l kubernetes.io/service-name=kc-web
has '^NAME +ADDRESSTYPE +PORTS +ENDPOINTS +AGE$'
has '^kc-web-[a-z0-9]+ +IPv4 +8080 +[0-9.]+ '
run "${K[@]}" describe svc kc-web
has '^Endpoints: +[0-9.]+:8080$'
run "${K[@]}" explain service.spec.clusterIP
has 'FIELD: +clusterIP'
run "${K[@]}" cluster-info
has 'Kubernetes control plane is running at https://'
run "${K[@]}" logs "$POD" -c web --timestamps
has '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z hello-from-ringleader'
run "${K[@]}" logs "$POD" --since=1h
has 'hello-from-ringleader'
fails "${K[@]}" logs "$POD" -c nope
has 'container "?nope"? is not valid'
# -f keeps streaming while the container runs: timeout ends it (124), and the
# last line arrived before that.
echo "+ timeout 5 ${K[*]} logs -f $POD --tail=1"
OUT=$(timeout 5 "${K[@]}" logs -f "$POD" --tail=1 2>&1)
RC=$?
if [ $RC -ne 124 ]; then
  printf 'FAIL: logs -f should stream until killed (exit 124), got exit %s:\n%s\n' "$RC" "$OUT" >&2
  exit 1
fi
has '^second-line$'
run "${K[@]}" describe pod "$POD"
has '^Name: +'
has '^Events:'
has 'Scheduled'
run "${K[@]}" get events
has '^LAST SEEN +TYPE +REASON +OBJECT +MESSAGE'
has "pod/${POD}"
run "${K[@]}" get events --field-selector "involvedObject.name=${POD}" -o jsonpath='{.items[*].reason}'
has 'Scheduled'
kill "$WATCH_PID" 2>/dev/null
wait "$WATCH_PID" 2>/dev/null
OUT=$(cat "$WATCH_OUT")
echo "+ (watch output)"
has "^ADDED +${POD} "

# --- cordon: a cordoned node takes no new pod, its own run on; uncordon lets them in ---
run "${K[@]}" cordon "$NODE_GPU"
has "node/${NODE_GPU} cordoned"
run "${K[@]}" get nodes
has "^${NODE_GPU} +Ready,SchedulingDisabled "
cat >"$TMPDIR/kc-cordoned.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata: {name: kc-cordoned}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox, command: [sleep, "1"], resources: {limits: {nvidia.com/gpu: 1}}}]
YAML
run "${K[@]}" apply -f "$TMPDIR/kc-cordoned.yaml"
until_ok 30 'kc-cordoned' "${K[@]}" get events --field-selector reason=FailedScheduling -o jsonpath='{.items[*].involvedObject.name}'
run "${K[@]}" get pods -o jsonpath='{range .items[*]}{.metadata.name}={.spec.nodeName}{"\n"}{end}'
lacks "^kc-cordoned[^=]*=${NODE_GPU}"
run "${K[@]}" get pod "$POD" -o jsonpath='{.status.phase}'
has '^Running$'
run "${K[@]}" uncordon "$NODE_GPU"
has "node/${NODE_GPU} uncordoned"
until_ok 60 "^kc-cordoned[^=]*=${NODE_GPU}" "${K[@]}" get pods -o jsonpath='{range .items[*]}{.metadata.name}={.spec.nodeName}{"\n"}{end}'
run "${K[@]}" delete job kc-cordoned
has 'deleted'

# --- status subresources: read as the object; a write through one changes the status only ---
run "${K[@]}" get pod "$POD" --subresource=status -o jsonpath='{.status.phase}'
has '^Running$'
run "${K[@]}" get nodes.ringleader.io "$NODE_GPU" --subresource=status -o jsonpath='{.status.ready}'
has '^true$'
run "${K[@]}" patch nodes.ringleader.io "$NODE_GPU" --subresource=status --type=merge \
  -p '{"spec":{"stopped":true},"status":{"allocatedDevices":[7]}}'
run "${K[@]}" get nodes.ringleader.io "$NODE_GPU" -o jsonpath='stopped={.spec.stopped} allocated={.status.allocatedDevices}'
has '^stopped= allocated=\[7\]$'
run "${K[@]}" patch nodes.ringleader.io "$NODE_GPU" --subresource=status --type=json \
  -p '[{"op":"replace","path":"/status/allocatedDevices","value":[]}]'
run "${K[@]}" get nodes.ringleader.io "$NODE_GPU" -o jsonpath='allocated={.status.allocatedDevices}'
has '^allocated=\[\]$'
run "${K[@]}" get --raw /api/v1
has '"pods/status"'
# Kinds only the API server writes have no status subresource to write through.
run "${K[@]}" get auditrecords.platform.ringleader.io -o name
has '^auditrecord'
AUDIT=$(head -1 <<<"$OUT")
fails "${K[@]}" patch "$AUDIT" --subresource=status --type=merge -p '{"status":{}}'
has 'NotFound.*could not find the requested resource'
fails "${K[@]}" get --raw "/api/v1/namespaces/default/configmaps/none/status"
has 'NotFound|could not find'

# --- patches on core kinds (strategic merge, JSON patch, merge) ------------------
# kubectl's generators (`create configmap`, `run`) send protobuf, which this
# server answers with 415; objects from files go as JSON.
cat >"$TMPDIR/kc-cm.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: kc-cm}
data: {a: "1"}
YAML
# kubectl's generators send protobuf (the built-in kinds' encoding).
run "${K[@]}" create configmap kc-proto --from-literal=a=1
has '^configmap/kc-proto created$'
run "${K[@]}" get configmap kc-proto -o jsonpath='{.data.a}'
has '^1$'
run "${K[@]}" delete configmap kc-proto
# Every generator of `kubectl create`, and `kubectl run`: what is served is
# created as kubectl expects; a kind not served is a Kubernetes-worded 404,
# never a 415.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=kc -keyout "$TMPDIR/tls.key" -out "$TMPDIR/tls.crt" 2>/dev/null
run "${K[@]}" create secret generic kc-gen-secret --from-literal=password=s3cret
has '^secret/kc-gen-secret created$'
run "${K[@]}" create secret docker-registry kc-gen-pull --docker-server=registry.local --docker-username=u --docker-password=p
has '^secret/kc-gen-pull created$'
run "${K[@]}" get secret kc-gen-pull -o jsonpath='{.type}'
has '^kubernetes.io/dockerconfigjson$'
run "${K[@]}" create secret tls kc-gen-tls --cert="$TMPDIR/tls.crt" --key="$TMPDIR/tls.key"
has '^secret/kc-gen-tls created$'
run "${K[@]}" create deployment kc-gen-deploy --image=busybox --replicas=0 -- sleep 30
has '^deployment.apps/kc-gen-deploy created$'
run "${K[@]}" create job kc-gen-job --image=busybox -- true
has '^job.batch/kc-gen-job created$'
run "${K[@]}" create role kc-gen-role --verb=get --resource=pods
has '^role.rbac.authorization.k8s.io/kc-gen-role created$'
run "${K[@]}" create rolebinding kc-gen-rb --role=kc-gen-role --user=kc-someone
has '^rolebinding.rbac.authorization.k8s.io/kc-gen-rb created$'
run "${K[@]}" create clusterrole kc-gen-cr --verb=list --resource=nodes
has '^clusterrole.rbac.authorization.k8s.io/kc-gen-cr created$'
run "${K[@]}" create clusterrolebinding kc-gen-crb --clusterrole=kc-gen-cr --user=kc-someone
has '^clusterrolebinding.rbac.authorization.k8s.io/kc-gen-crb created$'
run "${K[@]}" create priorityclass kc-gen-pc --value=1000 --description=generated
has '^priorityclass.scheduling.k8s.io/kc-gen-pc created$'
run "${K[@]}" create namespace kc-gen-ns
has '^namespace/kc-gen-ns created$'
run "${K[@]}" run kc-gen-run --image=busybox --restart=Never -- sleep 1
has '^pod/kc-gen-run created$'
until_ok 60 '^Succeeded$' "${K[@]}" get pod kc-gen-run -o jsonpath='{.status.phase}'
run "${K[@]}" create poddisruptionbudget kc-gen-pdb --selector=app=kc-gen --min-available=1
has '^poddisruptionbudget.policy/kc-gen-pdb created$'
run "${K[@]}" delete pdb kc-gen-pdb
run "${K[@]}" create service clusterip kc-gen-svc --tcp=80:8080
has '^service/kc-gen-svc created$'
run "${K[@]}" get svc kc-gen-svc -o jsonpath='{.spec.ports[0].targetPort} {.spec.clusterIP}'
has '^8080 10\.'
run "${K[@]}" create service clusterip kc-gen-headless --clusterip=None
has '^service/kc-gen-headless created$'
fails "${K[@]}" create service nodeport kc-gen-np --tcp=80:8080
has 'spec\.type: Invalid value: "NodePort": supported values: "ClusterIP"'
run "${K[@]}" delete svc kc-gen-svc kc-gen-headless
not_served() { # not_served ARGS...: `kubectl create ARGS` is a 404, not a 415
  fails "${K[@]}" create "$@"
  has 'the server could not find the requested resource|NotFound'
  lacks 'UnsupportedMediaType|415'
}
not_served cronjob kc-gen-cron --image=busybox --schedule='*/1 * * * *'
not_served quota kc-gen-quota --hard=pods=1
not_served ingress kc-gen-ing --rule=a.local/=svc:80
run "${K[@]}" delete secret kc-gen-secret kc-gen-pull kc-gen-tls
run "${K[@]}" delete deployment kc-gen-deploy
run "${K[@]}" delete job.batch kc-gen-job
run "${K[@]}" delete pod kc-gen-run --grace-period=0 --force
run "${K[@]}" delete role kc-gen-role
run "${K[@]}" delete rolebinding kc-gen-rb
run "${K[@]}" delete clusterrole kc-gen-cr
run "${K[@]}" delete clusterrolebinding kc-gen-crb
run "${K[@]}" delete priorityclass kc-gen-pc
run "${K[@]}" delete namespace kc-gen-ns
run "${K[@]}" create -f "$TMPDIR/kc-cm.yaml"
has 'configmap/kc-cm created'
run "${K[@]}" patch configmap kc-cm -p '{"data":{"b":"2"}}'
has 'patched'
run "${K[@]}" patch configmap kc-cm --type=json -p '[{"op":"remove","path":"/data/a"}]'
run "${K[@]}" patch configmap kc-cm --type=merge -p '{"data":{"c":"3"}}'
run "${K[@]}" get configmap kc-cm -o jsonpath='{.data}'
has '"b":"2"'
has '"c":"3"'
lacks '"a"'
run "${K[@]}" label pod "$POD" checked=yes
has 'labeled'
run "${K[@]}" get pods -l checked=yes -o name
has "^pod/${POD}$"
run "${K[@]}" annotate configmap kc-cm note=hello
run "${K[@]}" get configmap kc-cm -o jsonpath='{.metadata.annotations.note}'
has '^hello$'
# Re-apply a changed core object: kubectl computes a strategic merge patch.
cat >"$TMPDIR/cm.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: kc-applied}
data: {x: "1"}
YAML
run "${K[@]}" apply -f "$TMPDIR/cm.yaml"
has 'created'
sed -i 's/x: "1"/x: "2", z: "3"/' "$TMPDIR/cm.yaml"
run "${K[@]}" apply -f "$TMPDIR/cm.yaml"
has 'configured'
run "${K[@]}" get configmap kc-applied -o jsonpath='{.data.x}{","}{.data.z}'
has '^2,3$'

# --- Deployments as kube-controller-manager keeps them: ReplicaSets per ----------
# --- revision, /scale, conditions, kubectl rollout status|history|undo|restart ---
RS_LIST=("${K[@]}" get rs -l app=kc-roll --no-headers)
run "${K[@]}" create deployment kc-roll --image=busybox -- sleep 600
has '^deployment.apps/kc-roll created$'
run "${K[@]}" rollout status deployment/kc-roll --timeout=60s
has 'deployment "kc-roll" successfully rolled out'
run "${K[@]}" wait --for=condition=Available deployment/kc-roll --timeout=60s
has 'condition met'
run "${K[@]}" get rs -l app=kc-roll
has '^NAME +DESIRED +CURRENT +READY +AGE$'
has '^kc-roll-[a-z0-9]+ +1 +1 +1 '
FIRST_RS=$(grep -Eo '^kc-roll-[a-z0-9]+' <<<"$OUT" | head -1)
run "${K[@]}" get rs "$FIRST_RS" -o wide
has 'CONTAINERS +IMAGES +SELECTOR'
has "app=kc-roll,pod-template-hash=${FIRST_RS#kc-roll-}"
run "${K[@]}" get pods -l "pod-template-hash=${FIRST_RS#kc-roll-}" -o jsonpath='{.items[0].metadata.ownerReferences[0].kind}/{.items[0].metadata.ownerReferences[0].name}'
has "^ReplicaSet/${FIRST_RS}$"
# --current-replicas is checked against the Scale; the write carries its resourceVersion.
fails "${K[@]}" scale deployment kc-roll --current-replicas=5 --replicas=2
has 'Expected replicas to be 5, was 1'
run "${K[@]}" scale deployment kc-roll --current-replicas=1 --replicas=2
has '^deployment.apps/kc-roll scaled$'
run "${K[@]}" rollout status deployment/kc-roll --timeout=60s
until_ok 60 '^kc-roll +2/2 +2 +2 ' "${K[@]}" get deploy kc-roll --no-headers
run "${K[@]}" set image deployment/kc-roll busybox=busybox:1.36
has 'image updated'
run "${K[@]}" rollout status deployment/kc-roll --timeout=90s
has 'successfully rolled out'
run "${K[@]}" rollout history deployment/kc-roll
has '^1 +<none>'
has '^2 +<none>'
run "${K[@]}" rollout history deployment/kc-roll --revision=1
has 'Image:[[:space:]]+busybox$'
until_ok 30 "^${FIRST_RS} +0 +0 +0 " "${RS_LIST[@]}"
has '^kc-roll-[a-z0-9]+ +2 +2 +2 '
run "${K[@]}" rollout undo deployment/kc-roll
has 'rolled back'
run "${K[@]}" rollout status deployment/kc-roll --timeout=90s
run "${K[@]}" get deploy kc-roll -o jsonpath='{.spec.template.spec.containers[0].image} {.metadata.annotations.deployment\.kubernetes\.io/revision}'
has '^busybox 3$'
until_ok 60 "^${FIRST_RS} +2 +2 +2 " "${RS_LIST[@]}"
until_ok 60 '^2$' bash -c "${K[*]} get pods -l pod-template-hash=${FIRST_RS#kc-roll-} --field-selector=status.phase=Running --no-headers | wc -l | tr -d ' '"
run "${K[@]}" rollout restart deployment/kc-roll
has 'restarted'
run "${K[@]}" rollout status deployment/kc-roll --timeout=90s
run "${K[@]}" rollout history deployment/kc-roll
has '^4 +<none>'
lacks '^1 +<none>'
# Paused, a changed template does not roll out; resumed, it does.
run "${K[@]}" rollout pause deployment/kc-roll
has 'paused'
run "${K[@]}" set image deployment/kc-roll busybox=busybox:1.35
sleep 2
run "${K[@]}" get deploy kc-roll -o jsonpath='{.metadata.annotations.deployment\.kubernetes\.io/revision}'
has '^4$'
run "${K[@]}" rollout resume deployment/kc-roll
has 'resumed'
run "${K[@]}" rollout status deployment/kc-roll --timeout=90s
run "${K[@]}" get deploy kc-roll -o jsonpath='{.metadata.annotations.deployment\.kubernetes\.io/revision} {.status.conditions[?(@.type=="Progressing")].reason}'
has '^5 NewReplicaSetAvailable$'
run "${K[@]}" describe deployment kc-roll
has '^NewReplicaSet: +kc-roll-[a-z0-9]+ \(2/2 replicas created\)'
fails "${K[@]}" create -f - <<<'{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"kc-bare"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}'
has 'create a Deployment'
run "${K[@]}" delete deployment kc-roll
until_ok 60 'No resources found' "${K[@]}" get rs -l app=kc-roll

# --- server-side apply: managers, conflicts, forcing, managedFields ---------------
# kubectl's server-side apply takes over from its client-side apply above.
sed -i 's/x: "2"/x: "4"/' "$TMPDIR/cm.yaml"
run "${K[@]}" apply --server-side -f "$TMPDIR/cm.yaml"
has '^configmap/kc-applied serverside-applied$'
run "${K[@]}" get configmap kc-applied -o jsonpath='{.data.x}{","}{.data.z}'
has '^4,3$'
run "${K[@]}" get configmap kc-applied -o yaml --show-managed-fields
has '^    manager: kubectl$'
lacks 'manager: kubectl-client-side-apply'
cat >"$TMPDIR/ssa.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: kc-ssa}
data: {a: "1", b: "2"}
YAML
run "${K[@]}" apply --server-side -f "$TMPDIR/ssa.yaml"
has '^configmap/kc-ssa serverside-applied$'
cat >"$TMPDIR/ssa-other.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: kc-ssa}
data: {a: "9"}
YAML
fails "${K[@]}" apply --server-side --field-manager=other -f "$TMPDIR/ssa-other.yaml"
has 'Apply failed with 1 conflict: conflict with "kubectl": \.data\.a'
run "${K[@]}" apply --server-side --field-manager=other --force-conflicts -f "$TMPDIR/ssa-other.yaml"
has '^configmap/kc-ssa serverside-applied$'
run "${K[@]}" get configmap kc-ssa -o yaml --show-managed-fields
has '^    manager: kubectl$'
has '^    manager: other$'
has '^    operation: Apply$'
has 'f:a: \{\}'
run "${K[@]}" get configmap kc-ssa -o yaml
lacks 'managedFields'
# What kubectl applied and no longer does goes; what `other` took stays.
sed -i 's/data: {a: "1", b: "2"}/data: {c: "3"}/' "$TMPDIR/ssa.yaml"
run "${K[@]}" apply --server-side -f "$TMPDIR/ssa.yaml"
run "${K[@]}" get configmap kc-ssa -o jsonpath='{.data}'
has '"a":"9"'
has '"c":"3"'
lacks '"b"'
# An edit is an Update by kubectl-edit, which then owns what it changed.
printf '#!/bin/sh\nsed -i "s/c: \\"3\\"/c: \\"5\\"/" "$1"\n' >"$TMPDIR/editor.sh"
chmod +x "$TMPDIR/editor.sh"
run env EDITOR="$TMPDIR/editor.sh" "${K[@]}" edit configmap kc-ssa
run "${K[@]}" get configmap kc-ssa -o yaml --show-managed-fields
has '^    manager: kubectl-edit$'
has '^    operation: Update$'
fails "${K[@]}" apply --server-side -f "$TMPDIR/ssa.yaml"
has 'conflict with "kubectl-edit" using v1: \.data\.c'
run "${K[@]}" delete configmap kc-ssa

# --- Kubernetes' error wording ---------------------------------------------------
fails "${K[@]}" get pod no-such-pod
has 'Error from server \(NotFound\): pods "no-such-pod" not found'
fails "${K[@]}" create -f "$TMPDIR/kc-cm.yaml"
has 'AlreadyExists'
has 'configmaps "kc-cm" already exists'

# --- delete (dry run first, then for real) ----------------------------------------
run "${K[@]}" delete configmap kc-cm --dry-run=server
has 'deleted \(server dry run\)'
run "${K[@]}" get configmap kc-cm -o name
has '^configmap/kc-cm$'
run "${K[@]}" delete configmap kc-cm kc-applied
has 'configmap "kc-cm" deleted'
run "${K[@]}" delete -f "$TMPDIR/web.yaml"
has 'deployment\.apps "kc-web" deleted'
until_ok 60 'No resources found' "${K[@]}" get pods
# The pod gone, its address leaves the Service's endpoints.
until_ok 30 '^kc-web +<none> ' "${K[@]}" get endpoints kc-web
run "${K[@]}" delete svc kc-web
until_ok 30 'No resources found' "${K[@]}" get endpointslices -l kubernetes.io/service-name=kc-web
# apply --prune: Endpoints and Services map (kubectl's default prune list
# also names kinds not served yet, PersistentVolumeClaim first, so the
# list is given).
PRUNE=(--prune -l kc=prune --prune-allowlist=core/v1/ConfigMap --prune-allowlist=core/v1/Endpoints --prune-allowlist=core/v1/Service)
cat > "$TMPDIR/prune-a.yaml" <<YAML
apiVersion: v1
kind: ConfigMap
metadata: {name: kc-prune-a, labels: {kc: prune}}
data: {a: "1"}
---
apiVersion: v1
kind: Service
metadata: {name: kc-prune-svc, labels: {kc: prune}}
spec: {selector: {app: kc-prune}, ports: [{port: 80}]}
YAML
cat > "$TMPDIR/prune-b.yaml" <<YAML
apiVersion: v1
kind: ConfigMap
metadata: {name: kc-prune-a, labels: {kc: prune}}
data: {a: "1"}
YAML
run "${K[@]}" apply "${PRUNE[@]}" -f "$TMPDIR/prune-a.yaml"
has 'service/kc-prune-svc created'
sed -i 's/ports: \[{port: 80}\]/ports: [{name: a, port: 80}, {name: b, port: 81, targetPort: 8081}]/' "$TMPDIR/prune-a.yaml"
run "${K[@]}" apply "${PRUNE[@]}" -f "$TMPDIR/prune-a.yaml"
has 'service/kc-prune-svc configured'
run "${K[@]}" get svc kc-prune-svc -o jsonpath='{.spec.ports[*].targetPort}'
has '^80 8081$'
run "${K[@]}" apply "${PRUNE[@]}" -f "$TMPDIR/prune-b.yaml"
has 'service/kc-prune-svc pruned'
run "${K[@]}" delete configmap kc-prune-a

# --- each job kind for real: apply, get (Table), jsonpath, describe, delete ------
for f in pytorchjob.yaml ascendjob-pytorch.yaml vcjob-elastic.yaml mpijob.yaml tfjob.yaml batch-job.yaml; do
  run "${K[@]}" apply -f "$EXAMPLES/$f"
  has ' created$'
  run "${K[@]}" get -f "$EXAMPLES/$f"
  has '^NAME +'
  run "${K[@]}" get -f "$EXAMPLES/$f" -o name
  has '^[a-z.]+/[a-z0-9-]+$'
  run "${K[@]}" get -f "$EXAMPLES/$f" -o jsonpath='{.metadata.uid}{.items[*].metadata.uid}'
  has '[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-'
  run "${K[@]}" describe -f "$EXAMPLES/$f"
  has '^Name: +'
  run "${K[@]}" delete -f "$EXAMPLES/$f"
  has ' deleted'
done
run "${K[@]}" get pytorchjobs,tfjobs,mpijobs,ascendjobs,vcjob
has 'No resources found'
# --- identities and RBAC: a user's token from `ringleader token create`, can-i, Forbidden, the bypass pod ---
token kc-alice
A=(kubectl --request-timeout=30s --kubeconfig "$TMPDIR/kc-alice.kubeconfig")
alice_views_kc_team
run "${K[@]}" get clusterroles
has '^cluster-admin +'
has '^view +'
run "${A[@]}" auth can-i list pods -n kc-team
has '^yes$'
fails "${A[@]}" auth can-i create pods -n kc-team
has '^no$'
run "${A[@]}" auth can-i get pods --subresource=status -n kc-team
has '^yes$'
fails "${A[@]}" auth can-i patch pods --subresource=status -n kc-team
has '^no$'
run "${K[@]}" auth can-i '*' '*'
has '^yes$'
run "${A[@]}" get pods -n kc-team
fails "${A[@]}" get pods -n kc-other
has 'pods is forbidden: User "kc-alice" cannot list resource "pods" in API group "" in the namespace "kc-other"'
# The scheduler bypass of issue 12: a pod sent already bound is refused, to the admin too.
cat > "$TMPDIR/bypass.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata: {name: kc-bypass, annotations: {ringleader.io/devices: "0"}}
spec: {nodeName: $NODE_GPU, containers: [{name: main, image: busybox, command: [sleep, "1"]}]}
YAML
fails "${K[@]}" apply -f "$TMPDIR/bypass.yaml"
has 'forbidden: .*spec\.nodeName, metadata\.annotations\["ringleader\.io/devices"\]: only the scheduler'
fails "${K[@]}" get pod kc-bypass
# The Namespace goes first, and with it the RoleBinding inside it.
run "${K[@]}" delete -f "$TMPDIR/alice-view.yaml" --ignore-not-found
has 'namespace "kc-team" deleted'
run "${K[@]}" get rolebindings -n kc-team
lacks 'kc-alice-view'

# --- ServiceAccounts: the default one per namespace, create serviceaccount/token, a token bound to view ---
run "${K[@]}" create namespace kc-sa
has '^namespace/kc-sa created$'
until_ok 30 '^default +0 +' "${K[@]}" get sa -n kc-sa
run "${K[@]}" get serviceaccount default -n kube-system
run "${K[@]}" create serviceaccount kc-robot -n kc-sa
has '^serviceaccount/kc-robot created$'
run "${K[@]}" get sa -n kc-sa
has '^NAME +SECRETS +AGE$'
has '^kc-robot +0 +'
run "${K[@]}" create rolebinding kc-robot-view --clusterrole=view --serviceaccount=kc-sa:kc-robot -n kc-sa
has '^rolebinding.rbac.authorization.k8s.io/kc-robot-view created$'
run "${K[@]}" auth can-i list pods -n kc-sa --as=system:serviceaccount:kc-sa:kc-robot
has '^yes$'
fails "${K[@]}" auth can-i list pods -n default --as=system:serviceaccount:kc-sa:kc-robot
has '^no$'
fails "${K[@]}" create token kc-robot -n kc-sa --duration=1m
has 'spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes'
fails "${K[@]}" create token kc-ghost -n kc-sa
has 'serviceaccounts "kc-ghost" not found'
run "${K[@]}" create token kc-robot -n kc-sa --duration=20m
has '^ey[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$'
SA=(kubectl --request-timeout=30s --kubeconfig "$TMPDIR/kc-alice.kubeconfig" --token "$OUT")
run "${SA[@]}" auth whoami
has 'system:serviceaccount:kc-sa:kc-robot'
has 'system:serviceaccounts:kc-sa'
run "${SA[@]}" get pods -n kc-sa
fails "${SA[@]}" get pods -n default
has 'User "system:serviceaccount:kc-sa:kc-robot" cannot list resource "pods" in API group "" in the namespace "default"'
run "${K[@]}" create token kc-robot -n kc-sa --audience=vault
AUD=(kubectl --request-timeout=30s --kubeconfig "$TMPDIR/kc-alice.kubeconfig" --token "$OUT")
fails "${AUD[@]}" get pods -n kc-sa
has 'Unauthorized|must be logged in'
run "${K[@]}" run kc-sa-pod -n kc-sa --image=busybox --restart=Never --overrides='{"apiVersion":"v1","spec":{"serviceAccountName":"kc-robot"}}' -- sleep 1
has '^pod/kc-sa-pod created$'
run "${K[@]}" get pod kc-sa-pod -n kc-sa -o jsonpath='{.spec.serviceAccountName}'
has '^kc-robot$'
fails "${K[@]}" run kc-sa-ghost -n kc-sa --image=busybox --restart=Never --overrides='{"apiVersion":"v1","spec":{"serviceAccountName":"kc-ghost"}}' -- sleep 1
has 'error looking up service account kc-sa/kc-ghost: serviceaccount "kc-ghost" not found'
run "${K[@]}" create token kc-robot -n kc-sa --bound-object-kind Pod --bound-object-name kc-sa-pod
BOUND=(kubectl --request-timeout=30s --kubeconfig "$TMPDIR/kc-alice.kubeconfig" --token "$OUT")
run "${BOUND[@]}" get pods -n kc-sa
has '^kc-sa-pod '
run "${K[@]}" delete pod kc-sa-pod -n kc-sa --grace-period=0 --force
fails "${BOUND[@]}" get pods -n kc-sa
has 'Unauthorized|must be logged in'
run "${K[@]}" delete serviceaccount kc-robot -n kc-sa
fails "${SA[@]}" get pods -n kc-sa
has 'Unauthorized|must be logged in'
run "${K[@]}" delete namespace kc-sa

# A pod created on its own is placed and run like any other (a gang of one);
# one that cannot fit is told why it waits.
cat >"$TMPDIR/kc-bare.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: kc-bare}
spec: {restartPolicy: Never, containers: [{name: main, image: busybox, command: [sh, -c, "echo bare pod ran"]}]}
YAML
run "${K[@]}" create -f "$TMPDIR/kc-bare.yaml"
until_ok 60 '^Succeeded$' "${K[@]}" get pod kc-bare -o jsonpath='{.status.phase}'
run "${K[@]}" get pod kc-bare -o jsonpath='{.spec.nodeName}={.status.conditions[?(@.type=="PodScheduled")].status}'
has '^[a-z0-9-]+=True$'
run "${K[@]}" logs kc-bare
has '^bare pod ran$'
run "${K[@]}" get events --field-selector involvedObject.name=kc-bare -o jsonpath='{.items[*].reason}'
has 'Scheduled'
run "${K[@]}" delete pod kc-bare
has 'deleted'
cat >"$TMPDIR/kc-huge.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: kc-huge}
spec:
  containers:
  - {name: main, image: busybox, command: [sleep, "1"], resources: {limits: {nvidia.com/gpu: 64}}}
YAML
run "${K[@]}" create -f "$TMPDIR/kc-huge.yaml"
until_ok 30 'Unschedulable' "${K[@]}" get pod kc-huge -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}'
run "${K[@]}" describe pod kc-huge
has 'FailedScheduling'
run "${K[@]}" delete pod kc-huge
has 'deleted'

# --- taints: NoSchedule keeps out pods that do not tolerate it; NoExecute sends running ones away ---
run "${K[@]}" taint node "$NODE_GPU" dedicated=infer:NoSchedule
has "node/${NODE_GPU} tainted"
run "${K[@]}" get node "$NODE_GPU" -o jsonpath='{range .spec.taints[*]}{.key}={.value}:{.effect}{"\n"}{end}'
has '^dedicated=infer:NoSchedule$'
run "${K[@]}" get nodes.ringleader.io "$NODE_GPU" -o jsonpath='{.spec.taints[0].key}'
has '^dedicated$'
fails "${K[@]}" patch node "$NODE_GPU" --type=merge -p '{"spec":{"taints":[{"key":"k","effect":"Sometimes"}]}}'
has 'spec.taints\[0\].effect'
sed 's/kc-cordoned/kc-intolerant/' "$TMPDIR/kc-cordoned.yaml" >"$TMPDIR/kc-intolerant.yaml"
run "${K[@]}" apply -f "$TMPDIR/kc-intolerant.yaml"
until_ok 30 'untolerated taint \{dedicated: infer\}' "${K[@]}" get events --field-selector reason=FailedScheduling -o jsonpath='{.items[*].message}'
cat >"$TMPDIR/kc-tolerant.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata: {name: kc-tolerant}
spec:
  template:
    spec:
      restartPolicy: Never
      tolerations: [{key: dedicated, operator: Equal, value: infer, effect: NoSchedule}]
      containers: [{name: main, image: busybox, command: [sleep, "300"], resources: {limits: {nvidia.com/gpu: 1}}}]
YAML
run "${K[@]}" apply -f "$TMPDIR/kc-tolerant.yaml"
until_ok 60 "^kc-tolerant[^=]*=${NODE_GPU}=Running" "${K[@]}" get pods -o jsonpath='{range .items[*]}{.metadata.name}={.spec.nodeName}={.status.phase}{"\n"}{end}'
run "${K[@]}" get pods -o jsonpath='{range .items[*]}{.metadata.name}={.spec.nodeName}{"\n"}{end}'
lacks "^kc-intolerant[^=]*=${NODE_GPU}"
# NoExecute: the running pod does not tolerate it and is evicted, as the taint manager does.
run "${K[@]}" taint node "$NODE_GPU" maintenance=now:NoExecute
has "node/${NODE_GPU} tainted"
until_ok 60 'TaintManagerEviction' "${K[@]}" get events --field-selector reason=TaintManagerEviction -o jsonpath='{.items[*].reason}'
run "${K[@]}" get events --field-selector reason=TaintManagerEviction -o jsonpath='{.items[*].message}'
has 'Marking for deletion Pod default/kc-tolerant'
run "${K[@]}" taint node "$NODE_GPU" maintenance- dedicated-
has "node/${NODE_GPU} untainted"
run "${K[@]}" get node "$NODE_GPU" -o jsonpath='{.spec.taints}'
lacks 'dedicated|maintenance'
run "${K[@]}" delete job kc-intolerant kc-tolerant

# --- drain: cordon, then every pod on the node evicted (pods/eviction) ------------
sed -e 's/kc-tolerant/kc-drained/' -e '/tolerations:/d' "$TMPDIR/kc-tolerant.yaml" >"$TMPDIR/kc-drained.yaml"
run "${K[@]}" apply -f "$TMPDIR/kc-drained.yaml"
until_ok 60 "^kc-drained[^=]*=${NODE_GPU}=Running" "${K[@]}" get pods -o jsonpath='{range .items[*]}{.metadata.name}={.spec.nodeName}={.status.phase}{"\n"}{end}'
# A budget that needs the pod holds the eviction back (429, retried until
# the drain's timeout); the pod runs on.
run "${K[@]}" create poddisruptionbudget kc-drained --selector=job-name=kc-drained --min-available=1
until_ok 30 '^kc-drained +1 +N/A +0 ' "${K[@]}" get pdb kc-drained --no-headers
fails "${K[@]}" drain "$NODE_GPU" --ignore-daemonsets --delete-emptydir-data --timeout=8s
has "Cannot evict pod as it would violate the pod's disruption budget"
run "${K[@]}" get pods -o jsonpath='{range .items[*]}{.metadata.name}={.spec.nodeName}={.status.phase}{"\n"}{end}'
has "^kc-drained[^=]*=${NODE_GPU}=Running"
fails "${K[@]}" patch pdb kc-drained --type=merge -p '{"spec":{"maxUnavailable":1}}'
has 'minAvailable and maxUnavailable cannot be both set'
run "${K[@]}" delete pdb kc-drained
run "${K[@]}" drain "$NODE_GPU" --ignore-daemonsets --delete-emptydir-data --timeout=90s
has 'evicting pod default/kc-drained'
has "node/${NODE_GPU} drained"
run "${K[@]}" get nodes
has "^${NODE_GPU} +Ready,SchedulingDisabled "
# Its job replaces the pod, which waits: the only GPU node is cordoned.
run "${K[@]}" get pods -o jsonpath='{range .items[*]}{.metadata.name}={.spec.nodeName}={.status.phase}{"\n"}{end}'
lacks "^kc-drained[^=]*=${NODE_GPU}=Running"
run "${K[@]}" uncordon "$NODE_GPU"
until_ok 60 "^kc-drained[^=]*=${NODE_GPU}=Running" "${K[@]}" get pods -o jsonpath='{range .items[*]}{.metadata.name}={.spec.nodeName}={.status.phase}{"\n"}{end}'
run "${K[@]}" delete job kc-drained

echo "kubectl contract: all steps passed"
