"""tpu-agent's launcher for Ray jobs (v1): one command on every host of a TPU slice, files sent back.

Usage: python tpu_agent_ray_launch.py --hosts N --chips C [--download PATH]... -- ARGV...

It is uploaded into the job's working_dir (its SHA-256 is part of the approved request, like every other
upload) and runs as the job's entrypoint, where Ray placed it: on worker 0 of a slice (the slice's
`TPU-<pod type>-head` resource) for N > 1, on a host with C `TPU` for N = 1. With N > 1 it starts one
Ray task per host, each holding that host's C chips and, on a real slice, the slice's own resource (its
name, from `ray.util.tpu.get_current_pod_name`), so all N land on the same slice; each task runs ARGV in
the working_dir and prefixes its lines with `[tpu-agent wI]`. After ARGV ends, each PATH (relative to
the working_dir) is packed as tar.gz and printed between `@@tpu-agent-dl` lines in base64, and each host's
exit status as `@@tpu-agent-exit wI CODE`: the job log is the only way back that the job API offers.

It needs only the standard library and, for N > 1, the cluster's own `ray`.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import os
import subprocess
import sys
import tarfile

MARK_DL = "@@tpu-agent-dl"
MARK_EXIT = "@@tpu-agent-exit"
MAX_DOWNLOAD_BYTES = 64 * 1024 * 1024  # per host, packed: a larger result belongs in shared storage
CHUNK = 4096


def pack(path: str) -> tuple[bytes, str]:
    """PATH as tar.gz bytes (its own name at the top), or an error line."""
    if not os.path.exists(path):
        return b"", "no such file or folder: " + path
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(path, arcname=os.path.basename(os.path.normpath(path)))
    data = buffer.getvalue()
    if len(data) > MAX_DOWNLOAD_BYTES:
        return b"", "%s is %d bytes packed, over the %d limit" % (path, len(data), MAX_DOWNLOAD_BYTES)
    return data, ""


def run_host(index: int, argv: list[str], downloads: list[str], prefix: bool) -> tuple[int, list]:
    """Run ARGV here; returns its exit status and the packed downloads [(path, bytes, error)]."""
    env = dict(os.environ, TPU_AGENT_WORKER=str(index))
    if prefix:
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True, errors="replace"
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            print("[tpu-agent w%d] %s" % (index, line.rstrip("\n")), flush=True)
        code = proc.wait()
    else:
        code = subprocess.call(argv, env=env)
    packed = []
    for path in downloads:
        data, error = pack(path)
        packed.append((path, data, error))
    return code, packed


def emit(index: int, code: int, packed: list) -> None:
    for path, data, error in packed:
        name = os.path.basename(os.path.normpath(path))
        if error:
            print("%s error w%d %s" % (MARK_DL, index, error), flush=True)
            continue
        digest = hashlib.sha256(data).hexdigest()
        print("%s begin w%d %s %d %s" % (MARK_DL, index, digest, len(data), name), flush=True)
        text = base64.b64encode(data).decode()
        for at in range(0, len(text), CHUNK):
            print("%s data w%d %s" % (MARK_DL, index, text[at : at + CHUNK]))
        print("%s end w%d" % (MARK_DL, index), flush=True)
    print("%s w%d %d" % (MARK_EXIT, index, code), flush=True)


def main(args: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="tpu_agent_ray_launch.py")
    parser.add_argument("--hosts", type=int, required=True)
    parser.add_argument("--chips", type=int, required=True)
    parser.add_argument("--download", action="append", default=[])
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    opts = parser.parse_args(args)
    argv = opts.argv[1:] if opts.argv[:1] == ["--"] else opts.argv
    if not argv:
        parser.error("no command after --")
    if opts.hosts == 1:
        results = [run_host(0, argv, opts.download, prefix=False)]
    else:
        os.environ.setdefault("RAY_DEDUP_LOGS", "0")  # every host's lines, not "repeated 3x"
        import ray
        import ray.util.tpu

        ray.init()
        slice_name = ray.util.tpu.get_current_pod_name()
        resources = {"TPU": float(opts.chips)} if opts.chips else {}
        if slice_name:
            resources[slice_name] = 1.0
        else:
            print(
                "[tpu-agent] not on a TPU slice host: hosts are chosen by the TPU resource alone", flush=True
            )
        task = ray.remote(run_host).options(num_cpus=0, resources=resources)
        results = ray.get([task.remote(i, argv, opts.download, True) for i in range(opts.hosts)])
    worst = 0
    for index, (code, packed) in enumerate(results):
        emit(index, code, packed)
        if code != 0 and worst == 0:
            worst = code if 0 < code < 256 else 1
    return worst


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
