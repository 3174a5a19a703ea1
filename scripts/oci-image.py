#!/usr/bin/env python3
"""Builds a one-layer OCI image archive (an oci-layout tar `ctr images import`
takes) from files on this machine: no base image, nothing downloaded.

    oci-image.py OUT.tar REF [--file SRC[:DEST]]... [--link DEST=TARGET]...
                 [--tree SRC[:DEST]]... [--exclude NAME]...
                 [--entrypoint JSON] [--cmd JSON] [--env K=V]... [--workdir DIR] [--fast]

A SRC that is a dynamically linked ELF brings the libraries `ldd` names, at
the same paths, so the program runs inside the image as it does here. A
`--tree` is a directory copied whole (its symbolic links as links), but for
entries named by an `--exclude`; its shared objects bring their libraries too.
"""
import argparse
import gzip
import hashlib
import io
import json
import os
import subprocess
import tarfile
import time


def libraries(path):
    """The shared libraries (and loader) a program loads, by `ldd`."""
    try:
        out = subprocess.run(["ldd", path], capture_output=True, text=True, check=False).stdout
    except OSError:
        return []
    libs = []
    for line in out.splitlines():
        parts = line.split()
        if "=>" in parts:
            i = parts.index("=>")
            if i + 1 < len(parts) and parts[i + 1].startswith("/"):
                libs.append(parts[i + 1])
        elif parts and parts[0].startswith("/"):
            libs.append(parts[0])
    return libs


def add_file(tar, src, dest, seen):
    dest = dest.lstrip("/")
    if dest in seen:
        return
    # Parent directories first, as a root filesystem has them.
    parent = os.path.dirname(dest)
    if parent:
        add_dir(tar, parent, seen)
    seen.add(dest)
    real = os.path.realpath(src)
    info = tar.gettarinfo(real, arcname=dest)
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    with open(real, "rb") as f:
        tar.addfile(info, f)


def add_link(tar, dest, target, seen):
    dest = dest.lstrip("/")
    parent = os.path.dirname(dest)
    if parent:
        add_dir(tar, parent, seen)
    seen.add(dest)
    info = tarfile.TarInfo(dest)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    tar.addfile(info)


def add_dir(tar, dest, seen, mode=0o755):
    dest = dest.strip("/")
    parts = dest.split("/")
    for i in range(1, len(parts) + 1):
        d = "/".join(parts[:i])
        if d not in seen:
            seen.add(d)
            info = tarfile.TarInfo(d)
            info.type = tarfile.DIRTYPE
            info.mode = mode if d == dest else 0o755
            tar.addfile(info)


def add_tree(tar, src, dest, excluded, seen):
    for root, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if d not in excluded)
        rel = os.path.relpath(root, src)
        at = dest if rel == "." else os.path.join(dest, rel)
        add_dir(tar, at, seen)
        for name in sorted(files):
            if name in excluded:
                continue
            path = os.path.join(root, name)
            if os.path.islink(path):
                add_link(tar, os.path.join(at, name), os.readlink(path), seen)
                continue
            add_file(tar, path, os.path.join(at, name), seen)
            # Only shared objects are worth an `ldd` each (a tree may hold thousands of files).
            if ".so" in name:
                for lib in libraries(path):
                    add_file(tar, lib, lib, seen)


def blob(out, data):
    digest = hashlib.sha256(data).hexdigest()
    info = tarfile.TarInfo("blobs/sha256/" + digest)
    info.size = len(data)
    out.addfile(info, io.BytesIO(data))
    return "sha256:" + digest


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("ref")
    p.add_argument("--file", action="append", default=[])
    p.add_argument("--link", action="append", default=[])
    p.add_argument("--dir", action="append", default=[])
    p.add_argument("--tree", action="append", default=[])
    p.add_argument("--exclude", action="append", default=[])
    p.add_argument("--entrypoint")
    p.add_argument("--cmd")
    p.add_argument("--env", action="append", default=[])
    p.add_argument("--workdir")
    p.add_argument("--fast", action="store_true", help="gzip level 1 (large binaries)")
    a = p.parse_args()

    layer_tar = io.BytesIO()
    seen = set()
    with tarfile.open(fileobj=layer_tar, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for d in ["tmp"]:
            add_dir(tar, d, seen, 0o1777)
        for d in a.dir:
            add_dir(tar, d, seen)
        for spec in a.file:
            src, _, dest = spec.partition(":")
            dest = dest or src
            add_file(tar, src, dest, seen)
            for lib in libraries(src):
                add_file(tar, lib, lib, seen)
        for spec in a.tree:
            src, _, dest = spec.partition(":")
            add_tree(tar, src, dest or src, set(a.exclude), seen)
        for spec in a.link:
            dest, _, target = spec.partition("=")
            add_link(tar, dest, target, seen)
    diff = layer_tar.getvalue()
    layer = gzip.compress(diff, compresslevel=1 if a.fast else 9, mtime=0)

    env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"] + a.env
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(0)),
        "config": {"Env": env},
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(diff).hexdigest()]},
    }
    if a.entrypoint:
        config["config"]["Entrypoint"] = json.loads(a.entrypoint)
    if a.cmd:
        config["config"]["Cmd"] = json.loads(a.cmd)
    if a.workdir:
        config["config"]["WorkingDir"] = a.workdir

    with tarfile.open(a.out, "w") as out:
        config_bytes = json.dumps(config, sort_keys=True).encode()
        layer_digest = blob(out, layer)
        config_digest = blob(out, config_bytes)
        manifest = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest, "size": len(config_bytes)},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layer_digest, "size": len(layer)}],
        }
        manifest_bytes = json.dumps(manifest, sort_keys=True).encode()
        manifest_digest = blob(out, manifest_bytes)
        index = {
            "schemaVersion": 2,
            "manifests": [{
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": manifest_digest,
                "size": len(manifest_bytes),
                "annotations": {"org.opencontainers.image.ref.name": a.ref},
            }],
        }
        for name, data in [("oci-layout", b'{"imageLayoutVersion":"1.0.0"}'), ("index.json", json.dumps(index).encode())]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            out.addfile(info, io.BytesIO(data))


if __name__ == "__main__":
    main()
