"""Missing runs computed on a real Dask cluster on this machine (a scheduler and worker
processes on 127.0.0.1, always stopped): the client's cache ends with the same entries, bit
for bit, as a local run; a worker whose CPU dispatch differs is refused in one line; a
worker killed mid-run loses nothing."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from parallel_runs_check import assert_same_entries

pytest.importorskip("distributed")

from tiny import tiny  # noqa: E402

from memlib import cluster, runs  # noqa: E402
from memlib.studies import modarith as ma  # noqa: E402
from memlib.studies import rlp  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DASK = str(Path(sys.executable).parent / "dask")
START_SECONDS = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalCluster:
    """`dask scheduler` and `dask worker` processes on 127.0.0.1, each in its own session."""

    def __init__(self, tmp: Path):
        self.tmp, self.address, self.workers = tmp, f"tcp://127.0.0.1:{free_port()}", []
        self.scheduler = self._start([DASK, "scheduler", "--host", "127.0.0.1", "--port",
                                      self.address.rsplit(":", 1)[1], "--no-dashboard"], {})

    def _start(self, command: list[str], env: dict) -> subprocess.Popen:
        environ = {**os.environ, "PYTHONPATH": str(ROOT), "MEMLIB_PROGRESS": "0",
                   "MEMLIB_CACHE": str(self.tmp / "worker-cache"), **env}
        log = open(self.tmp / f"{len(self.workers)}-{command[1]}.log", "wb")  # noqa: SIM115
        return subprocess.Popen(command, env=environ, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)

    def add_worker(self, **env: str) -> subprocess.Popen:
        worker = self._start([DASK, "worker", self.address, "--nthreads", "1", "--no-nanny",
                              "--no-dashboard", "--host", "127.0.0.1", "--death-timeout", "60"],
                             env)
        self.workers.append(worker)
        return worker

    def wait_for(self, n: int) -> None:
        from distributed import Client

        with Client(self.address, timeout=START_SECONDS) as client:
            client.wait_for_workers(n, timeout=START_SECONDS)

    def stop(self) -> None:
        for process in [*self.workers, self.scheduler]:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


@pytest.fixture
def local_cluster(tmp_path):
    started = LocalCluster(tmp_path)
    try:
        yield started
    finally:
        started.stop()


def compute_on(address: str, plan, cache: Path, monkeypatch) -> None:
    """The plan computed on the cluster at `address`, from a client on one thread (as `memlib
    run` below full scale: its workers then compute on one thread too)."""
    import torch

    monkeypatch.setenv("MEMLIB_CACHE", str(cache))
    monkeypatch.setenv(cluster.SCHEDULER_VARIABLE, address)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        runs.compute_missing(plan, 1, "cluster")
    finally:
        torch.set_num_threads(threads)
    monkeypatch.delenv(cluster.SCHEDULER_VARIABLE)
    assert not runs.missing(plan)


def compute_here(plan, cache: Path, monkeypatch) -> None:
    """The plan computed in this process, on one thread as below full scale."""
    import torch

    monkeypatch.setenv("MEMLIB_CACHE", str(cache))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for function, argument in plan:
            function(argument)
    finally:
        torch.set_num_threads(threads)


def test_a_study_computed_on_the_cluster_stores_the_same_bits(local_cluster, tmp_path,
                                                              monkeypatch, recwarn):
    config = tiny(ma.Config, dict(
        p=7, width=9, alphas=[0.0, 0.8], epochs=4, log_every=2, partition_fractions=[0.5, 1],
        spectra_neurons=4, order_epochs=3, order_log_every=1, order_optimizers=["adamw"],
        order_lrs=[1e-3], order_weight_decays=[0.1], sweep_widths=[2, 4],
        sweep_alphas=[0.5], sweep_activations=["relu"], sweep_weight_decays=[0.1],
        sweep_epochs=2, digits_alphas=[0.2], digits_width=8, digits_epochs=2,
        image_dataset="none"))
    for _ in range(2):
        local_cluster.add_worker()
    refused = local_cluster.add_worker(MEMLIB_CPU_DISPATCH="native")
    local_cluster.wait_for(3)
    # and a study-1 run with its post-hoc probes, which read the run inside their computation
    study1 = tiny(rlp.Config, dict(dataset="digits", train_samples=200, test_samples=100,
                                   validation_samples=100, epochs=2, model="mlp",
                                   layer_models=("mlp",), widths=(16, 16), probes=2,
                                   probe_epochs=2))
    trained = rlp.spec(study1)
    plan = [*ma.planned_runs(config), (rlp.cached_probes, rlp.probe_spec(study1, trained)),
            (rlp.cached_run, trained)]
    compute_here(plan, tmp_path / "here", monkeypatch)
    cluster.activity.clear()
    compute_on(local_cluster.address, plan, tmp_path / "there", monkeypatch)
    assert_same_entries(tmp_path / "there", tmp_path / "here")
    assert cluster.activity["already stored"] == 0  # nothing computed twice
    assert cluster.activity["stored"] == len(list((tmp_path / "here").glob("*.pt")))
    lines = [str(w.message) for w in recwarn if "refused" in str(w.message)]
    assert len(lines) == 1 and "\n" not in lines[0], lines
    assert "CPU dispatch: 'native' there, 'avx2' here" in lines[0]
    assert refused.poll() is None  # refused, not stopped: it only got no work


def test_a_worker_killed_mid_run_loses_nothing(local_cluster, tmp_path, monkeypatch):
    from distributed import Client

    config = tiny(rlp.Config, dict(dataset="digits", train_samples=200, test_samples=100,
                                   validation_samples=100, epochs=30, model="mlp",
                                   layer_models=("mlp",), widths=(16, 16)))
    plan = [(rlp.cached_run, rlp.spec(config, seed=seed)) for seed in (0, 1, 2, 3)]
    workers = [local_cluster.add_worker() for _ in range(2)]
    local_cluster.wait_for(2)
    killed = []

    def kill_a_busy_worker() -> None:
        with Client(local_cluster.address, timeout=START_SECONDS) as client:
            pids = client.run(os.getpid)
            deadline = time.monotonic() + START_SECONDS
            while time.monotonic() < deadline:
                busy = [address for address, tasks in client.processing().items() if tasks]
                if busy:
                    time.sleep(1)  # inside its run
                    victim = next(w for w in workers if w.pid == pids[busy[0]])
                    os.killpg(victim.pid, signal.SIGKILL)
                    killed.append(victim)
                    return
                time.sleep(0.2)

    killer = threading.Thread(target=kill_a_busy_worker)
    killer.start()
    compute_on(local_cluster.address, plan, tmp_path / "there", monkeypatch)
    killer.join(timeout=START_SECONDS)
    assert killed and killed[0].poll() is not None  # one worker died during the run
    compute_here(plan, tmp_path / "here", monkeypatch)
    assert_same_entries(tmp_path / "there", tmp_path / "here")


def test_no_scheduler_is_one_line(capsys, monkeypatch, tmp_path):
    from memlib import cli

    monkeypatch.setattr(cluster, "CONNECT_SECONDS", 2)
    monkeypatch.setenv("MEMLIB_CACHE", str(tmp_path / "cache"))
    code = cli.main(["run", "modarith", "--scale", "smoke", "--scheduler",
                     f"tcp://127.0.0.1:{free_port()}"])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("memlib: error: no Dask scheduler answered at")
    assert err.count("\n") == 1


def test_runs_on_a_gpu_ask_for_a_gpu_resource():
    config = tiny(rlp.Config, dict(dataset="digits", model="mlp", layer_models=("mlp",),
                                   train_samples=200, validation_samples=100,
                                   test_samples=100))
    cpu = rlp.spec(config)
    assert not runs.on_gpu((rlp.cached_run, cpu))
    import dataclasses

    assert runs.on_gpu((rlp.cached_run, dataclasses.replace(cpu, device="cuda")))


def test_what_a_worker_differs_in_is_named_in_one_line():
    here = cluster.environment()
    assert cluster.difference(here, here) is None
    numpy_first = {**here, "numpy's AVX-512 loops": ["AVX512_SKX"]}
    assert cluster.difference(here, numpy_first).startswith("numpy's AVX-512 loops: ")
    older = {**here, "libraries": {**here["libraries"], "torch": "0.1"}}
    assert cluster.difference(here, older) == (
        f"libraries: torch='0.1' there, {here['libraries']['torch']!r} here")
    edited = {**here, "memlib's code": "0" * 16}
    assert cluster.difference(here, edited).startswith("memlib's code: ")
    # a client without a GPU keys CPU runs: a worker's GPU does not matter to it
    assert cluster.difference({**here, "GPU": "none"}, {**here, "GPU": "NVIDIA H100"}) is None
    assert cluster.difference({**here, "GPU": "NVIDIA H100"}, {**here, "GPU": "NVIDIA A100"})


def test_measure_on_the_cluster_writes_what_it_writes_here(local_cluster, tmp_path,
                                                           monkeypatch):
    """`memlib measure --scheduler`: the lens's runs of a model computed on the cluster with
    an empty client cache, the same entries and tables as computed here."""
    import pandas as pd

    from memlib import cli

    local_cluster.add_worker()
    local_cluster.wait_for(1)
    argv = ["measure", "--model", "mlp", "--data", "digits", "--epochs", "2", "--seeds", "0"]
    for where, extra in (("there", ["--scheduler", local_cluster.address]), ("here", [])):
        monkeypatch.setenv("MEMLIB_CACHE", str(tmp_path / where))
        assert cli.main([*argv, "--out", str(tmp_path / f"{where}-report"), *extra]) == 0
    assert_same_entries(tmp_path / "there", tmp_path / "here")
    for table in (tmp_path / "here-report").glob("*.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "there-report" / table.name),
                                      pd.read_csv(table))
