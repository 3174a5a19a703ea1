"""Contract test: the Python `kubernetes` client, unchanged, against a
ringleader server. Run by tests/python_client.rs as
`python contract.py <kubeconfig> <namespace>`; prints CONTRACT OK at the end
and exits non-zero (with the failing check) otherwise."""

import sys

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

SMP = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok -", what.split(":")[0], flush=True)


def api_error(call):
    try:
        call()
    except ApiException as e:
        return e
    raise AssertionError("expected an ApiException")


def pod(name, labels):
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels),
        spec=client.V1PodSpec(
            containers=[client.V1Container(name="main", image="busybox", command=["sleep", "1"])]
        ),
    )


def pytorchjob(name, workers):
    replica = lambda n: {
        "replicas": n,
        "template": {"spec": {"containers": [{"name": "pytorch", "image": "pytorch/pytorch:2.4.0"}]}},
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name},
        "spec": {"pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(workers)}},
    }


def main(kubeconfig, ns):
    config.load_kube_config(config_file=kubeconfig)
    v1 = client.CoreV1Api()

    # Typed create / read / list.
    created = v1.create_namespaced_pod(ns, pod("py-a", {"app": "py", "tier": "web"}))
    check(created.metadata.name == "py-a" and created.metadata.uid, "create_namespaced_pod returns a typed V1Pod")
    check(created.spec.containers[0].command == ["sleep", "1"], "created pod keeps its spec")
    dry = v1.create_namespaced_pod(ns, pod("py-dry", {"app": "py"}), dry_run="All")
    check(dry.metadata.name == "py-dry", "dry_run=All answers the object")
    check(api_error(lambda: v1.read_namespaced_pod("py-dry", ns)).status == 404, "a dry run writes nothing")
    got = v1.read_namespaced_pod("py-a", ns)
    check(got.metadata.labels == {"app": "py", "tier": "web"}, "read_namespaced_pod decodes")
    listed = v1.list_namespaced_pod(ns, label_selector="app in (py),tier notin (db)")
    check([p.metadata.name for p in listed.items] == ["py-a"], "list_namespaced_pod with a set-based selector")
    start = listed.metadata.resource_version

    # 404 and 409 as ApiException with Kubernetes' reason.
    e = api_error(lambda: v1.read_namespaced_pod("missing", ns))
    check(e.status == 404 and '"reason":"NotFound"' in e.body.replace(" ", ""), "404 NotFound: " + str(e.body))
    check('pods \\"missing\\" not found' in e.body, "NotFound message worded as Kubernetes: " + str(e.body))
    e = api_error(lambda: v1.create_namespaced_pod(ns, pod("py-a", {})))
    check(e.status == 409 and '"reason":"AlreadyExists"' in e.body.replace(" ", ""), "409 AlreadyExists: " + str(e.body))

    # Strategic merge patch (dict body): containers merge by name, so the
    # command survives an image change; JSON patch (list body).
    smp = {"metadata": {"labels": {"patched": "smp"}}, "spec": {"containers": [{"name": "main", "image": "busybox:2"}]}}
    patched = v1.patch_namespaced_pod("py-a", ns, smp, _content_type=SMP)
    c = patched.spec.containers
    check(len(c) == 1 and c[0].image == "busybox:2" and c[0].command == ["sleep", "1"], "strategic merge patch")
    patched = v1.patch_namespaced_pod("py-a", ns, [{"op": "add", "path": "/metadata/labels/json", "value": "yes"}])
    check(patched.metadata.labels.get("json") == "yes", "JSON patch (list body)")

    # Paging through every namespace.
    for i in range(3):
        v1.create_namespaced_pod(ns, pod("py-page-%d" % i, {"app": "page"}))
    names, token = [], None
    for _ in range(20):
        page = v1.list_pod_for_all_namespaces(limit=2, _continue=token)
        names += [p.metadata.name for p in page.items]
        token = page.metadata._continue
        if not token:
            break
    check(sorted(names) == sorted(["py-a", "py-page-0", "py-page-1", "py-page-2"]), "limit/_continue paging: %s" % names)

    # Watch from the list's version: the writes since then, in order.
    v1.delete_namespaced_pod("py-a", ns)
    seen = []
    w = watch.Watch()
    for event in w.stream(v1.list_namespaced_pod, ns, resource_version=start, timeout_seconds=5):
        obj = event["object"]
        seen.append((event["type"], obj.metadata.name))
        if event["type"] == "DELETED" and obj.metadata.name == "py-a":
            w.stop()
    a = [t for (t, n) in seen if n == "py-a"]
    check(a == ["MODIFIED", "MODIFIED", "DELETED"], "watch sees MODIFIED and DELETED of py-a: %s" % seen)
    check(("ADDED", "py-page-0") in seen, "watch sees ADDED: %s" % seen)

    # Custom objects: list / get / merge patch of a PyTorchJob.
    co = client.CustomObjectsApi()
    co.create_namespaced_custom_object("kubeflow.org", "v1", ns, "pytorchjobs", pytorchjob("py-job", 2))
    jobs = co.list_namespaced_custom_object("kubeflow.org", "v1", ns, "pytorchjobs")
    check([j["metadata"]["name"] for j in jobs["items"]] == ["py-job"], "list_namespaced_custom_object")
    job = co.get_namespaced_custom_object("kubeflow.org", "v1", ns, "pytorchjobs", "py-job")
    check(job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 2, "get_namespaced_custom_object")
    body = {"spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 3}}}}
    job = co.patch_namespaced_custom_object("kubeflow.org", "v1", ns, "pytorchjobs", "py-job", body, _content_type=MERGE)
    check(job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 3, "merge patch of a custom object")
    bad = {"spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": -1}}}}
    e = api_error(lambda: co.patch_namespaced_custom_object("kubeflow.org", "v1", ns, "pytorchjobs", "py-job", bad, _content_type=MERGE))
    check(e.status == 422 and "Invalid" in e.body, "an invalid patch is 422 Invalid: " + str(e.body))
    e = api_error(lambda: co.patch_namespaced_custom_object("kubeflow.org", "v1", ns, "pytorchjobs", "py-job", body, _content_type=SMP))
    check(e.status == 415, "custom objects refuse strategic merge patch with 415")
    e = api_error(lambda: co.get_namespaced_custom_object("kubeflow.org", "v1", ns, "pytorchjobs", "nope"))
    check(e.status == 404 and "pytorchjobs.kubeflow.org" in e.body, "custom object 404: " + str(e.body))
    print("CONTRACT OK", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
