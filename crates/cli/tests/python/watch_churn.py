"""The Python `kubernetes` client (PyPI, unchanged) doing what an informer
does, in JSON: list Pods, Nodes and Namespaces once, then watch each from
the list's resourceVersion, resuming from the last version seen whenever a
watch ends, for SECONDS. Prints one JSON report: events per kind, the lists
made (a relist loop shows as more than one per kind), errors.

`python watch_churn.py <kubeconfig> <seconds> <ready-file>`; run by
crates/cli/tests/client_go.rs beside the client-go informer.
"""

import json
import sys
import threading
import time

from kubernetes import client, config, watch


def follow(kind, lister, until, report, lock, listed):
    counts = {"ADDED": 0, "MODIFIED": 0, "DELETED": 0}
    lists = 0
    errors = []
    version = None
    while time.time() < until:
        try:
            if version is None:
                lists += 1
                version = lister().metadata.resource_version
                if lists == 1:
                    listed.release()
            left = max(1, int(until - time.time()))
            w = watch.Watch()
            for event in w.stream(lister, resource_version=version, timeout_seconds=left):
                kind_of = event["type"]
                if kind_of == "ERROR":
                    errors.append(str(event.get("raw_object")))
                    version = None
                    break
                counts[kind_of] = counts.get(kind_of, 0) + 1
                version = event["object"].metadata.resource_version
                if time.time() >= until:
                    w.stop()
        except client.ApiException as e:
            errors.append(f"{e.status} {e.reason}")
            version = None if e.status == 410 else version
            time.sleep(0.5)
        except Exception as e:  # a decode error or a dropped stream: note it, go on
            errors.append(repr(e))
            time.sleep(0.5)
    with lock:
        report["events"][kind] = {"add": counts["ADDED"], "update": counts["MODIFIED"], "delete": counts["DELETED"]}
        report["lists"][kind] = lists
        report["errors"].extend(f"{kind}: {e}" for e in errors)


def main(kubeconfig, seconds, ready):
    config.load_kube_config(config_file=kubeconfig)
    v1 = client.CoreV1Api()
    until = time.time() + int(seconds)
    report = {"events": {}, "lists": {}, "errors": []}
    lock = threading.Lock()
    listers = {
        "pods": v1.list_pod_for_all_namespaces,
        "nodes": v1.list_node,
        "namespaces": v1.list_namespace,
    }
    listed = threading.Semaphore(0)
    threads = [
        threading.Thread(target=follow, args=(kind, lister, until, report, lock, listed), daemon=True)
        for kind, lister in listers.items()
    ]
    for t in threads:
        t.start()
    # Every kind listed once: what the churn does from now on comes as events.
    for _ in threads:
        if not listed.acquire(timeout=60):
            print(json.dumps({"error": "a first list did not answer within 60 s"}))
            sys.exit(1)
    with open(ready, "w") as f:
        f.write("watching\n")
    for t in threads:
        t.join(timeout=int(seconds) + 30)
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
