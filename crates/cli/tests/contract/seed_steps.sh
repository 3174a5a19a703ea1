#!/usr/bin/env bash
# The seeds' own first steps, word for word, with stock kubectl against
# `ringleader up` (process runtime): seed 000 (MindCluster) creates the
# namespace its Volcano job goes into and applies the job; seed 002 (ACK)
# labels a node for topology-aware GPU scheduling and applies its
# PyTorchJob; MindCluster's install labels the NPU node. Then the namespace
# is deleted: every pod in it goes, and the devices they held come free (the
# same job fits again elsewhere). Run by crates/cli/tests/kubectl.rs with
# KUBECONFIG, JOBS (the jobs' YAML, the seeds' with their commands made
# runnable here), NODE_NPU and NODE_GPU set.
set -uo pipefail

. "$(dirname "$0")/steps.sh"

wait_for() { # wait_for SECONDS PATTERN CMD...: until CMD's output has PATTERN
  local deadline=$((SECONDS + $1)) pattern=$2
  shift 2
  echo "+ (until /$pattern/) $*"
  while :; do
    OUT=$("$@" 2>&1)
    grep -Eq -- "$pattern" <<<"$OUT" && return 0
    if [ $SECONDS -ge $deadline ]; then
      printf 'FAIL: /%s/ never seen from: %s\n%s\n' "$pattern" "$*" "$OUT" >&2
      exit 1
    fi
    sleep 1
  done
}

# --- seed 000: the namespace first (MindCluster's "下发任务" step 1) ---------
fails "${K[@]}" apply -f "$JOBS/a800_pytorch_vcjob.yaml"
has 'namespaces "vcjob" not found'
run kubectl create namespace vcjob
has '^namespace/vcjob created$'
run "${K[@]}" get namespaces
has '^NAME +STATUS +AGE'
has '^vcjob +Active '
has '^default +Active '
has '^kube-system +Active '
run "${K[@]}" get namespace vcjob -o jsonpath='{.metadata.labels.kubernetes\.io/metadata\.name} {.spec.finalizers[0]}'
has '^vcjob kubernetes$'
fails "${K[@]}" create namespace vcjob
has 'AlreadyExists|already exists'
fails "${K[@]}" create namespace Bad_Name
has 'metadata.name'
fails "${K[@]}" delete namespace default
has 'namespaces "default" is forbidden: this namespace may not be deleted'
fails "${K[@]}" delete namespace kube-system
has 'may not be deleted'

# --- node labels: MindCluster's install, seed 002's activation step ---------
run kubectl label node "$NODE_NPU" host-arch=huawei-x86
has "node/${NODE_NPU} labeled"
run kubectl label node "$NODE_GPU" ack.node.gpu.schedule=topology
has "node/${NODE_GPU} labeled"

# --- the jobs, in that namespace --------------------------------------------
run kubectl apply -f "$JOBS/a800_pytorch_vcjob.yaml"
has '^configmap/rings-config-mindx-dls-test created$'
has '^job.batch.volcano.sh/mindx-dls-test created$'
run kubectl apply -f "$JOBS/pytorch-dist-nccl.yaml" -n vcjob
has '^pytorchjob.kubeflow.org/pytorch-dist-nccl created$'
wait_for 90 'mindx-dls-test-default-test-0 +1/1 +Running' "${K[@]}" get pod --all-namespaces -o wide
has '^vcjob +mindx-dls-test-default-test-0 '
wait_for 90 'pytorch-dist-nccl-worker-0 +1/1 +Running' "${K[@]}" get pod -n vcjob
has 'pytorch-dist-nccl-master-0 +1/1 +Running'
run "${K[@]}" get pod -n default
lacks 'mindx-dls-test|pytorch-dist-nccl'

# --- delete the namespace: everything in it goes, then it -------------------
# (kubectl waits until the namespace is gone.)
run "${K[@]}" delete namespace vcjob --timeout=120s
has '^namespace "vcjob" deleted$'
fails "${K[@]}" get namespace vcjob
has 'NotFound|not found'
run "${K[@]}" get pods,configmaps,jobs.batch.volcano.sh,pytorchjobs -n vcjob
lacks 'mindx-dls-test|pytorch-dist-nccl|rings-config'
run "${K[@]}" get pods --all-namespaces
lacks 'mindx-dls-test|pytorch-dist-nccl'

# --- the devices are free: the same jobs fit again, in a new namespace -------
run kubectl create namespace vcjob2
sed 's/namespace: vcjob$/namespace: vcjob2/' "$JOBS/a800_pytorch_vcjob.yaml" >"$TMPDIR/again.yaml"
run "${K[@]}" apply -f "$TMPDIR/again.yaml"
run "${K[@]}" apply -f "$JOBS/pytorch-dist-nccl.yaml" -n vcjob2
wait_for 90 'mindx-dls-test-default-test-0 +1/1 +Running' "${K[@]}" get pod -n vcjob2
wait_for 90 'pytorch-dist-nccl-worker-0 +1/1 +Running' "${K[@]}" get pod -n vcjob2
echo "seed steps: all steps passed"
