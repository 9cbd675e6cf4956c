"""One study's missing runs computed in 2 local worker processes (`memlib.parallel`)
against a Dask cluster of 2 workers on this machine (`memlib.cluster`: a scheduler and two
`dask worker` processes on 127.0.0.1, started and stopped here), each into an empty cache.

The plan is the study's `planned_runs` at `--scale` (study 1's second stage, which depends on
the first's results, is left out). Both caches end with the same entries, each storing the
same bits (checked). Last line: `cluster / local wall: X` (the cluster's overhead: shipping
each task's inputs and entries, the scheduler's round trips).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from parallel_runs_check import assert_same_entries  # noqa: E402

from memlib import STUDIES, cluster, runs, studies  # noqa: E402
from memlib.studies import preset_config  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(plan, cache: Path, scheduler: str | None) -> float:
    os.environ["MEMLIB_CACHE"] = str(cache)
    os.environ.pop(cluster.SCHEDULER_VARIABLE, None)
    if scheduler:
        os.environ[cluster.SCHEDULER_VARIABLE] = scheduler
    start = time.perf_counter()
    runs.compute_missing(plan, 2)
    seconds = time.perf_counter() - start
    os.environ.pop(cluster.SCHEDULER_VARIABLE, None)
    assert not runs.missing(plan)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", default="modarith", choices=list(STUDIES))
    parser.add_argument("--scale", default="smoke")
    args = parser.parse_args()
    torch.set_num_threads(1)  # as `memlib run` below full scale
    plan = list(studies.module(args.study).planned_runs(preset_config(args.study, args.scale)))
    dask = str(Path(sys.executable).parent / "dask")
    address = f"tcp://127.0.0.1:{free_port()}"
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "MEMLIB_CACHE": str(tmp / "worker")}
        started = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port",
                                     address.rsplit(":", 1)[1], "--no-dashboard"], env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True)]
        try:
            started += [subprocess.Popen([dask, "worker", address, "--nthreads", "1",
                                          "--no-nanny", "--no-dashboard", "--host",
                                          "127.0.0.1"], env=env, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, start_new_session=True)
                        for _ in range(2)]
            from distributed import Client

            with Client(address, timeout=120) as client:
                client.wait_for_workers(2, timeout=120)
            local = timed(plan, tmp / "local", None)
            remote = timed(plan, tmp / "cluster", address)
            assert_same_entries(tmp / "cluster", tmp / "local")
            entries = len(list((tmp / "local").glob("*.pt")))
        finally:
            for process in started:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
    print(f"{args.study} at {args.scale} scale, {len(plan)} planned calls, {entries} entries: "
          f"2 local worker processes {local:.1f} s, a 2-worker Dask cluster {remote:.1f} s; "
          "every entry the same bits")
    print(f"cluster / local wall: {remote / local:.2f}")


if __name__ == "__main__":
    main()
