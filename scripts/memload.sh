#!/usr/bin/env bash
# scripts/memload.sh BINARY LABEL: `ringleader up` (simulated runtime) with
# 125 HGX H100 nodes takes 1,000 one-GPU PyTorchJobs; prints the up process's
# peak RSS idle and once all 1,000 pods run. Works with older builds too (it
# only uses `up`, `apply -f` and `get pods` with --data-dir).
set -u
BIN=$(realpath "$1"); LABEL=$2; D=$(mktemp -d); W=$D/in; mkdir -p $W
python3 - "$W" <<'PY'
import sys
w = sys.argv[1]
nodes = [f"apiVersion: ringleader.io/v1alpha1\nkind: Node\nmetadata: {{name: g-{i:03d}}}\n"
         f"spec: {{profile: hgx-h100-8, network: {{tor: tor-{i // 32}}}}}\n" for i in range(125)]
nodes.append("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: default}\nspec: {weight: 1}\n")
open(f"{w}/cluster.yaml", "w").write("---\n".join(nodes))
job = """apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{name: load-{i:04d}, namespace: default}}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - {{name: pytorch, image: pytorch/pytorch:2.4.0, command: [torchrun, train.py], resources: {{limits: {{nvidia.com/gpu: 1}}}}}}
"""
open(f"{w}/jobs.yaml", "w").write("---\n".join(job.format(i=i) for i in range(1000)))
PY
$BIN up --data-dir $D/data --listen 127.0.0.1:0 --runtime simulated --cluster $W/cluster.yaml >$D/up.log 2>&1 &
UP=$!
for i in $(seq 100); do [ -f $D/data/server ] && break; sleep 0.2; done
sleep 1
rss() { grep -E "VmHWM|VmRSS" /proc/$UP/status | awk '{printf "%s %d MB  ", $1, $2/1024}'; }
echo "$LABEL idle: $(rss)"
T0=$(date +%s.%N)
(cd /tmp && $BIN apply -f $W/jobs.yaml --data-dir $D/data >/dev/null 2>$D/apply.err) || (cd /tmp && KUBECONFIG=$D/data/kubeconfig $BIN apply -f $W/jobs.yaml >/dev/null 2>>$D/apply.err)
for i in $(seq 240); do
  N=$(cd /tmp && KUBECONFIG=$D/data/kubeconfig $BIN get pods --data-dir $D/data 2>/dev/null | grep -c " Running ")
  [ "$N" -ge 1000 ] && break; sleep 0.5
done
T1=$(date +%s.%N)
echo "$LABEL 1000 running ($N) after $(echo "$T1 - $T0" | bc) s: $(rss)"
kill -INT $UP; wait $UP 2>/dev/null
head -3 $D/apply.err
