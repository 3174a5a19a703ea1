#!/usr/bin/env python3
"""Pod start latency, bound -> Running, for the process sandbox and for
containers through the CRI (issue 23's figures in BENCHMARKS.md).

    scripts/cri-bench.py RINGLEADER --runtime process|cri [--jobs 100 | --gang 1000]
                         [--nodes 4] [--endpoint unix://...] [--registry 127.0.0.1:5055]

Starts `RINGLEADER up` on a temporary data dir (`--nodes` virtual H100 nodes,
all served by the one agent inside `up`), submits N one-pod batch/v1 Jobs at
once, or with `--gang N` one Volcano Job of N pods that start only all
together (`sleep` in the test registry's busybox image), polls the pods
every 50 ms through the API and prints, per
pod, the time from the first poll that shows it bound to the first that
shows it Running: median, p90, max, and the wall time until all ran. With
`--runtime cri` the first job's pod is started alone first, so the image
pull is timed on its own (the registry holds the image; containerd has not
pulled it). Everything it started is deleted at the end.
"""
import argparse
import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

def cluster(nodes):
    return "".join(
        f"apiVersion: ringleader.io/v1alpha1\nkind: Node\nmetadata: {{name: bench-{i}}}\n"
        f"spec: {{profile: hgx-h100-8, address: 127.0.66.{i}}}\n---\n"
        for i in range(1, nodes + 1)
    ) + "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: default}\nspec: {weight: 1}\n"


def gang(name, image, pods):
    return (
        f"apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: {name}}}\nspec:\n"
        f"  minAvailable: {pods}\n  schedulerName: volcano\n  queue: default\n  tasks:\n"
        f"  - name: worker\n    replicas: {pods}\n    template:\n      spec:\n        restartPolicy: Never\n"
        f"        containers:\n        - name: main\n          image: {image}\n"
        f"          imagePullPolicy: IfNotPresent\n          command: [sh, -c, 'sleep 600']\n"
    )


def job(name, image):
    return (
        f"apiVersion: batch/v1\nkind: Job\nmetadata: {{name: {name}}}\nspec:\n  template:\n    spec:\n"
        f"      restartPolicy: Never\n      containers:\n      - name: main\n        image: {image}\n"
        f"        imagePullPolicy: IfNotPresent\n        command: [sh, -c, 'sleep 30']\n"
    )


class Api:
    def __init__(self, data):
        self.url = open(os.path.join(data, "server")).read().strip()
        self.token = open(os.path.join(data, "token")).read().strip()
        self.ctx = ssl.create_default_context(cafile=os.path.join(data, "ca.crt"))
        self.ctx.check_hostname = False

    def pods(self):
        req = urllib.request.Request(self.url + "/api/v1/namespaces/default/pods")
        req.add_header("Authorization", "Bearer " + self.token)
        with urllib.request.urlopen(req, context=self.ctx, timeout=10) as r:
            return json.load(r)["items"]


def wait_running(api, names, deadline):
    bound, running = {}, {}
    while time.time() < deadline and len(running) < len(names):
        now = time.time()
        for p in api.pods():
            n = p["metadata"]["name"]
            if n not in names:
                continue
            if p.get("spec", {}).get("nodeName") and n not in bound:
                bound[n] = now
            if p.get("status", {}).get("phase") == "Running" and n not in running:
                running[n] = now
                bound.setdefault(n, now)
        time.sleep(0.05)
    return bound, running


def main():
    a = argparse.ArgumentParser()
    a.add_argument("ringleader")
    a.add_argument("--runtime", default="process", choices=["process", "cri"])
    a.add_argument("--jobs", type=int, default=100)
    a.add_argument("--gang", type=int, default=0)
    a.add_argument("--nodes", type=int, default=4)
    a.add_argument("--endpoint", default=os.environ.get("RINGLEADER_CRI_ENDPOINT", ""))
    a.add_argument("--registry", default=os.environ.get("RINGLEADER_TEST_REGISTRY", "127.0.0.1:5055"))
    args = a.parse_args()
    image = f"{args.registry}/ringleader/busybox:1"
    tmp = tempfile.mkdtemp(prefix="cri-bench-")
    data = os.path.join(tmp, "data")
    with open(os.path.join(tmp, "cluster.yaml"), "w") as f:
        f.write(cluster(args.nodes))
    cmd = [args.ringleader, "up", "--cluster", os.path.join(tmp, "cluster.yaml"), "--data-dir", data,
           "--listen", "127.0.0.1:0", "--runtime", args.runtime]
    if args.runtime == "cri":
        cmd += ["--cri-endpoint", args.endpoint]
    up = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "up.log"), "w"))
    try:
        for _ in range(600):
            if os.path.exists(os.path.join(data, "server")):
                break
            time.sleep(0.05)
        time.sleep(0.5)
        api = Api(data)

        def apply(text):
            path = os.path.join(tmp, f"jobs-{time.time()}.yaml")
            with open(path, "w") as f:
                f.write(text)
            subprocess.run([args.ringleader, "apply", "-f", path, "--data-dir", data], check=True,
                           stdout=subprocess.DEVNULL)

        if args.runtime == "cri":
            subprocess.run(["ctr", "--address", args.endpoint.replace("unix://", ""), "-n", "k8s.io",
                            "images", "rm", image], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            apply(job("first", image))
            bound, running = wait_running(api, {"first-0"}, time.time() + 120)
            if "first-0" in running:
                print(f"first pod (image pull included): {running['first-0'] - bound['first-0']:.2f} s")
        if args.gang:
            names = {f"gang-worker-{i}" for i in range(args.gang)}
            started = time.time()
            apply(gang("gang", image, args.gang))
        else:
            names = {f"bench-{i}-0" for i in range(args.jobs)}
            started = time.time()
            apply("---\n".join(job(f"bench-{i}", image) for i in range(args.jobs)))
        bound, running = wait_running(api, names, time.time() + 1200)
        lat = sorted(running[n] - bound[n] for n in running)
        if not lat:
            print("no pod ran", file=sys.stderr)
            return 1
        pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
        print(f"runtime={args.runtime} pods={len(lat)}/{len(names)} bound->Running median={pick(0.5):.2f}s "
              f"p90={pick(0.9):.2f}s max={lat[-1]:.2f}s; all Running {max(running.values()) - started:.2f}s "
              f"after the submission")
        # Delete: the agent stops the containers and removes their sandboxes.
        for kind in ["jobs", "vcjob"]:
            subprocess.run([args.ringleader, "delete", kind, "--all", "--data-dir", data],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(6000):
            if not api.pods():
                break
            time.sleep(0.1)
        if args.runtime == "cri":
            # The agent removes the sandboxes in the background: wait for them.
            ctr = ["ctr", "--address", args.endpoint.replace("unix://", ""), "-n", "k8s.io", "containers", "ls", "-q",
                   'labels."io.ringleader.node"~=^bench-']
            for _ in range(3000):
                if not subprocess.run(ctr, capture_output=True, text=True).stdout.strip():
                    break
                time.sleep(0.1)
        return 0
    finally:
        up.send_signal(signal.SIGINT)
        try:
            up.wait(timeout=20)
        except subprocess.TimeoutExpired:
            up.kill()


if __name__ == "__main__":
    sys.exit(main())
