"""The training program of the containers test's stand-in for a vendor
training image (the seeds' jobs name images this machine cannot have).

It does what a distributed training script does before its first step:
prints the rendezvous it was given (the env the job controller injected and
the rank table, waited for until `"status": "completed"` as MindCluster's
launch scripts wait), then runs a real all-reduce across the job's pods with
`ringleader probe` (the image's stand-in for NCCL/HCCL) and exits with its
status. Arguments (the seeds pass their own, e.g. `--backend nccl`) are
printed and otherwise ignored, as is the size of `/dev/shm`.
"""
import json
import os
import subprocess
import sys
import time

PREFIXES = ("MASTER_", "RANK", "WORLD_SIZE", "LOCAL_", "PET_", "MS_", "CM_", "HCCL_", "ASCEND_",
            "NVIDIA_", "CUDA_", "MINDX_", "TF_CONFIG", "VC_", "OMPI_")


def main():
    print("args:", " ".join(sys.argv[1:]), flush=True)
    for name in sorted(os.environ):
        if name.startswith(PREFIXES):
            print(f"env {name}={os.environ[name]}", flush=True)
    # The shared memory data loaders use: its filesystem and size.
    with open("/proc/self/mounts") as f:
        shm = [line.split()[2] for line in f if line.split()[1:2] == ["/dev/shm"]]
    if shm:
        st = os.statvfs("/dev/shm")
        print(f"shm {shm[-1]} {st.f_blocks * st.f_frsize} bytes", flush=True)
    table = os.environ.get("RANK_TABLE_FILE")
    if table:
        for _ in range(600):
            with open(table) as f:
                text = f.read()
            if json.loads(text).get("status") == "completed":
                break
            time.sleep(0.2)
        print(f"rank table {table}: {text}", flush=True)
    probe = ["ringleader", "probe", "allreduce", "--size", "1MiB", "--iters", "3"]
    sys.exit(subprocess.run(probe).returncode)


if __name__ == "__main__":
    main()
