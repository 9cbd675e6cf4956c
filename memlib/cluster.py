"""Missing runs computed on a Dask distributed cluster (`MEMLIB_SCHEDULER`, `memlib run
--scheduler tcp://HOST:8786`): more machines than one for one sweep.

Workers need no shared filesystem. Each task computes one call of a study's plan into a
cache folder of its own on the worker, which holds only the entries the client sent it (the
stored results the call reads), and returns the bytes of the entries it made; the client
writes them into its own cache after checking each (its digest, and that it names itself
as the entry it is written as: `cache.store_entry`). A worker whose results could have
other bits than the client's is refused in one line before it gets any work: another CPU
dispatch or pins, another version of a computing library or of Python, other memlib code,
or (where the client has one) another GPU. Dask retries the tasks of a worker that dies on
another one. Above the cache, beside `memlib.parallel`; the Dask client and its workers
import `distributed` only when a scheduler is named.
"""

from __future__ import annotations

import collections
import hashlib
import importlib.metadata
import os
import platform
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memlib import cache, fingerprint, paths
from memlib.cache import MissingResultError, only_cached
from memlib.process import PINS, dispatch_record, holding_warnings, one_cpu_thread, warn_once
from memlib.train import show_progress

SCHEDULER_VARIABLE = "MEMLIB_SCHEDULER"
# every library whose version can change a result's bits (memlib.runs keys the ones a
# computation's code reaches; a worker must match the client in all of them)
LIBRARIES = ("torch", "numpy", "scipy", "scikit-learn", "torchvision", "timm", "transformers")
CONNECT_SECONDS = 30
NUMPY_AVX512 = ("AVX512_KNL", "AVX512_KNM", "AVX512_SKX", "AVX512_ICL", "AVX512_SPR")
# entries the cluster's tasks returned: "stored" here, or "already stored" (computed twice)
activity: collections.Counter = collections.Counter()

Call = tuple[Callable[[Any], Any], Any]


class RefusedWorker(RuntimeError):
    """A worker whose results could differ from the client's."""


class ClusterError(RuntimeError):
    """No scheduler at the address, or no worker that may compute for this machine."""


def scheduler() -> str | None:
    """The Dask scheduler's address that MEMLIB_SCHEDULER names, else None (compute here)."""
    address = os.environ.get(SCHEDULER_VARIABLE, "").strip()
    return address or None


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def environment() -> dict[str, Any]:
    """What a cache key takes from the process that computes (and what it assumes the same):
    the CPU dispatch and pins, the instruction set torch reports, the computing libraries'
    and Python's versions, memlib's code (its sources by their place in the package) and the
    GPU."""
    import torch

    package = Path(fingerprint.__file__).parent
    code = hashlib.sha256()
    for file, text in sorted(fingerprint.sources().items()):
        try:
            name = Path(file).resolve().relative_to(package.resolve()).as_posix()
        except ValueError:
            continue  # not memlib's own
        code.update(f"{name}\0{text}\0".encode())
    gpu = (torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")
    import numpy

    features = numpy._core._multiarray_umath.__cpu_features__  # as numpy dispatches them
    return {"CPU dispatch": dispatch_record()["dispatch"],
            "CPU pins": {k: os.environ.get(k) for k in PINS},
            "torch's instruction set": torch.backends.cpu.get_cpu_capability(),
            # on for numpy imported before memlib's pins on a CPU with AVX-512 (off when pinned)
            "numpy's AVX-512 loops": [k for k in NUMPY_AVX512 if features.get(k)],
            "libraries": {name: _version(name) for name in LIBRARIES},
            "Python": platform.python_version(),
            "memlib's code": code.hexdigest()[:16], "GPU": gpu}


def difference(client: dict[str, Any], worker: dict[str, Any]) -> str | None:
    """The first thing the worker's `environment` differs in from the client's, in words,
    or None. The GPU counts only where the client has one (a CPU client keys CPU runs)."""
    for what, mine in client.items():
        theirs = worker.get(what)
        if what == "GPU" and mine == "none":
            continue
        if isinstance(mine, dict):
            for name, value in mine.items():
                if (theirs or {}).get(name) != value:
                    return (f"{what}: {name}={(theirs or {}).get(name)!r} there, {value!r} "
                            "here")
        elif theirs != mine:
            return f"{what}: {theirs!r} there, {mine!r} here"
    return None


class _Waiting(Exception):
    """Inside a task: the call reads an entry another task of its wave is computing."""


def compute_remote(function: Callable[[Any], Any], argument: Any, expected: dict[str, Any],
                   inputs: dict[str, bytes], one_thread: bool = True,
                   pending: frozenset[str] = frozenset()
                   ) -> tuple[dict[str, bytes], list, str | None]:
    """A Dask task: `function(argument)` computed into a fresh cache folder holding `inputs`
    (entry name -> bytes), on one CPU thread where the client computes on one (below full
    scale); the bytes of every entry it made, the warnings given once, and the entry of
    `pending` (those other tasks are computing) it stopped at to wait for, else None.
    Refused (RefusedWorker) where this worker's `environment` differs from `expected`."""
    why = difference(expected, environment())
    if why:
        raise RefusedWorker(f"worker refused, its results could differ ({why})")
    before, original, waiting = os.environ.get("MEMLIB_CACHE"), cache._load_or_compute, None

    def unless_pending(path, compute, refresh):
        if path.name in pending and not path.exists():
            raise _Waiting(path.name)  # computed by another task: not twice
        return original(path, compute, refresh)

    with tempfile.TemporaryDirectory(prefix="memlib-task-") as folder:
        for name, data in inputs.items():
            (Path(folder) / name).write_bytes(data)
        os.environ["MEMLIB_CACHE"] = folder
        cache._load_or_compute = unless_pending
        try:
            if one_thread:
                one_cpu_thread()
            with holding_warnings() as warned:
                function(argument)
        except _Waiting as err:
            waiting = str(err.args[0])
        finally:
            cache._load_or_compute = original
            if before is None:
                os.environ.pop("MEMLIB_CACHE", None)
            else:
                os.environ["MEMLIB_CACHE"] = before
        made = {p.name: p.read_bytes() for p in Path(folder).glob("*.pt") if p.name not in inputs}
    return made, warned, waiting


def _reads(call: Call) -> tuple[list[Path], Path | None]:
    """The stored entries `call` reads before the first one missing, and that one (None:
    nothing missing), found here with the cache read-only."""
    read: list[Path] = []
    missing = None
    original = cache._load_or_compute

    def noting(path, compute, refresh):
        nonlocal missing
        try:
            value = original(path, compute, refresh)
        except MissingResultError:
            missing = missing or path
            raise
        read.append(path)
        return value

    cache._load_or_compute = noting
    try:
        with cache.uncounted(), only_cached("memlib.cluster"):
            call[0](call[1])
    except MissingResultError:
        pass
    finally:
        cache._load_or_compute = original
    return read, missing


def _connect(address: str):
    from distributed import Client

    try:
        return Client(address, timeout=CONNECT_SECONDS, set_as_default=False)
    except (OSError, TimeoutError) as err:
        raise ClusterError(f"no Dask scheduler answered at {address} within "
                           f"{CONNECT_SECONDS} s ({' '.join(str(err).split())})") from None


def accepted_workers(client, expected: dict[str, Any]) -> list[str]:
    """The workers whose `environment` matches `expected`; one line for each other one."""
    found = client.run(environment)
    accepted = []
    for address, theirs in sorted(found.items()):
        why = difference(expected, theirs)
        if why:
            warn_once(f"refused {address}", f"Dask worker {address} refused, its results could "
                      f"differ: {why}")
        else:
            accepted.append(address)
    if not accepted:
        raise ClusterError(f"none of the {len(found)} Dask workers at the scheduler may compute "
                           "for this machine (each refused above)")
    return accepted


def compute(calls: list[Call], desc: str = "runs", address: str | None = None,
            on_gpu: Callable[[Call], bool] = lambda call: False) -> None:
    """Compute the missing `calls` on the Dask cluster at `address` (MEMLIB_SCHEDULER's) and
    store their entries in this machine's cache. A call that reads a result another call
    makes waits for it: the calls go in waves, each with the stored entries it reads (and
    those it stopped at in an earlier wave, waiting for another task), so nothing is
    computed twice. A call
    `on_gpu` says computes on a GPU asks for a worker's `GPU` resource (`dask worker
    --resources GPU=1`), one at a time per GPU."""
    import torch
    from distributed import as_completed
    from tqdm.auto import tqdm

    address = address or scheduler()
    client = _connect(address)
    try:
        expected = environment()
        workers = accepted_workers(client, expected)
        todo, wants = list(dict.fromkeys(calls)), {}
        one_thread = torch.get_num_threads() == 1
        with tqdm(total=len(todo), desc=desc, disable=not show_progress()) as bar:
            while todo:
                found = {call: _reads(call) for call in todo}
                todo = [call for call in todo if found[call][1] is not None]
                # a call whose first missing entry another call makes waits for that one
                made_by = {found[call][1]: call for call in todo if _makes(call, found[call][1])}
                wave = [call for call in todo if made_by.get(found[call][1], call) == call]
                pending = frozenset(found[call][1].name for call in wave
                                    if _makes(call, found[call][1]))
                futures = {}
                for f, a in wave:
                    inputs = {p.name: p.read_bytes() for p in found[(f, a)][0]}
                    for name in wants.get((f, a), ()):  # what it waited for last time
                        inputs[name] = (paths.cache_dir() / name).read_bytes()
                    futures[client.submit(
                        compute_remote, f, a, expected, inputs, one_thread,
                        pending - {found[(f, a)][1].name}, workers=workers,
                        allow_other_workers=False, pure=False,
                        resources={"GPU": 1} if on_gpu((f, a)) else None)] = (f, a)
                with client.as_current():
                    finished = as_completed(list(futures))
                done = set()
                for future in finished:
                    made, warned, waiting = future.result()
                    for name, data in made.items():
                        if cache.intact(paths.cache_dir() / name):
                            activity["already stored"] += 1
                        else:
                            cache.store_entry(paths.cache_dir() / name, data)
                            cache.note_computed_elsewhere([name])
                            activity["stored"] += 1
                    for topic, message in warned:
                        warn_once(topic, message)
                    if waiting is None:
                        done.add(futures[future])
                        bar.update(1)
                    else:
                        wants.setdefault(futures[future], set()).add(waiting)
                todo = [call for call in todo if call not in done]
    finally:
        client.close()


def _makes(call: Call, entry: Path) -> bool:
    """Whether `call` is the registered computation whose own entry is `entry`."""
    function, argument = call
    path = getattr(function, "path", None)
    return path is not None and path(argument) == entry
