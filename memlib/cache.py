"""Compute-or-load, keyed by a hash of the config and of the code that computes it.

Entries are torch-saved payloads followed by a SHA-256 digest of those bytes and
written atomically (temp file + rename), so an interrupted run never leaves a
half-written entry and a corrupted one is detected and recomputed. Loading uses
`weights_only=True`; pandas DataFrames are stored as column dicts for that reason.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import io
import json
import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import torch

import memlib
from memlib import distributed, paths

_DIGEST = hashlib.sha256().digest_size
_UMASK = os.umask(0)
os.umask(_UMASK)
_FRAME = "__dataframe__"
_ONLY_CACHED: list[str] = []  # the command that computes missing entries, inside only_cached()
_COMPUTING: list[list] = []  # [entry path, training runs so far] of computations in progress
_UNWRITTEN: dict[Path, Any] = {}  # results whose entry could not be written: kept in memory
_WARNED: set[str] = set()
activity: collections.Counter = collections.Counter()  # entries "loaded" / "computed" so far


class MissingResultError(RuntimeError):
    """A result that must come from the cache is not there; the message names the command."""


CLAIMS_SECTION = b"\n# --- claims"


def code_version(*modules) -> str:
    """memlib's version plus a hash of the source of `modules`: edits invalidate entries.

    A module's claims section (from a line starting `# --- claims` to the end) is left out:
    claims are evaluated from cached results, so editing a rule must not retrain anything.
    """
    h = hashlib.sha256(memlib.__version__.encode())
    for module in modules:
        h.update(Path(module.__file__).read_bytes().split(CLAIMS_SECTION)[0])
    return h.hexdigest()[:16]


def key(config: Any, code: str = "") -> str:
    if hasattr(config, "__dataclass_fields__"):
        from memlib.config import to_dict

        config = to_dict(config)
    blob = json.dumps(config, sort_keys=True, default=str) + code + memlib.__version__
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _encode(value):
    if isinstance(value, pd.DataFrame):
        return {_FRAME: {c: value[c].tolist() for c in value.columns}}
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_encode(v) for v in value)
    return value


def _decode(value):
    if isinstance(value, dict):
        if set(value) == {_FRAME}:
            return pd.DataFrame(value[_FRAME])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_decode(v) for v in value)
    return value


def save(path: Path, value: Any) -> None:
    buffer = io.BytesIO()
    torch.save(_encode(value), buffer)
    payload = buffer.getvalue()
    atomic_write_bytes(path, payload + hashlib.sha256(payload).digest())


def load(path: Path) -> Any:
    """Return the stored value; raise ValueError if the entry is corrupted."""
    data = Path(path).read_bytes()
    payload, digest = data[:-_DIGEST], data[-_DIGEST:]
    if len(data) <= _DIGEST or hashlib.sha256(payload).digest() != digest:
        raise ValueError(f"cache entry {path} is corrupted")
    return _decode(torch.load(io.BytesIO(payload), weights_only=True))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp creates 0600; outputs are for everyone to read
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def entry_path(name: str, config: Any, code: str = "") -> Path:
    return paths.cache_dir() / f"{name}-{key(config, code)}.pt"


def cached(name: str, config: Any, compute: Callable[[], Any], code: str = "",
           refresh: bool = False) -> Any:
    """Return `compute()`'s result for (`name`, `config`, `code`), computing it at most once.

    `compute` must return tensors, numbers, strings, DataFrames and containers of them.
    Under torch.distributed rank 0 decides between loading and computing for all ranks
    (computing runs collectives, so every rank must take the same branch) and writes.
    """
    path = entry_path(name, config, code)
    if path in _UNWRITTEN and not refresh and not distributed.active():
        activity["kept in memory"] += 1
        return _UNWRITTEN[path]
    value, found = None, False
    if path.exists() and not refresh and distributed.is_main():
        try:
            value, found = load(path), True
        except Exception as err:  # noqa: BLE001 - any unreadable entry is recomputed
            warnings.warn(f"recomputing {path.name}: {err}", stacklevel=2)
    if distributed.broadcast_flag(found):
        activity["loaded"] += 1
        return value if distributed.is_main() else load(path)
    if _ONLY_CACHED:
        raise MissingResultError(
            f"no cached result {path.name} for this configuration; compute it first with: "
            f"{_ONLY_CACHED[-1]}")
    _COMPUTING.append([path, 0])
    try:
        value = compute()
    finally:
        _COMPUTING.pop()
    activity["computed"] += 1
    if distributed.is_main():
        try:
            save(path, value)
        except OSError as err:  # read-only or full: the result is not lost, only not kept
            _UNWRITTEN[path] = value
            warn_once("cache", f"could not write the cache entry {path} ({err.strerror or err}); "
                      "results are kept in memory for this run only")
            return value
        for checkpoint in checkpoint_dir().glob(f"{path.stem}.*.ckpt"):
            checkpoint.unlink(missing_ok=True)
    return value


def _compute_in_worker(function: Callable[[Any], Any], argument: Any) -> None:
    from memlib.pipeline import one_cpu_thread

    one_cpu_thread()
    function(argument)  # fills the cache; the caller loads the result from there


def prefetch(calls: list[tuple[Callable[[Any], Any], Any]], processes: int,
             desc: str = "runs") -> None:
    """Compute the cached computations `function(argument)` in `processes` worker processes
    (one CPU thread each), so that the caller's own calls then load them from the cache.

    A small model on a CPU keeps one core busy per run: independent runs in parallel use the
    machine's cores far better than threads inside one run, and each result is the same as
    computed alone (same code, one thread). Functions must be importable (module level).
    Does nothing for one process or under torch.distributed, where runs use every rank.
    """
    calls = list(dict.fromkeys(calls))  # the same computation once
    if processes <= 1 or len(calls) <= 1 or distributed.active():
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    from tqdm.auto import tqdm

    from memlib.train import show_progress

    # spawn, not fork: a forked copy of a process that already ran torch can deadlock
    context = multiprocessing.get_context("spawn")
    try:
        with ProcessPoolExecutor(min(processes, len(calls)), mp_context=context) as pool:
            futures = [pool.submit(_compute_in_worker, f, a) for f, a in calls]
            for future in tqdm(as_completed(futures), total=len(futures), desc=desc,
                               disable=not show_progress()):
                future.result()
    except BrokenProcessPool:  # e.g. a __main__ that workers cannot import (python - <<EOF)
        warn_once("prefetch", "worker processes could not start; computing the runs one "
                  "after another in this process")


def warn_once(topic: str, message: str) -> None:
    """A RuntimeWarning the first time `topic` comes up in this process, then silence."""
    if topic not in _WARNED:
        _WARNED.add(topic)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def checkpoint_dir() -> Path:
    return paths.cache_dir() / "checkpoints"


def next_checkpoint() -> Path | None:
    """The checkpoint file of the next training run inside the cached computation in
    progress (runs are numbered in the order the computation starts them), or None."""
    if not _COMPUTING:
        return None
    entry = _COMPUTING[-1]
    entry[1] += 1
    return checkpoint_dir() / f"{entry[0].stem}.{entry[1]}.ckpt"


@contextlib.contextmanager
def only_cached(command: str):
    """Inside the block a missing entry raises MissingResultError naming `command` instead
    of being computed: notebooks at full scale read what `memlib run` produced."""
    _ONLY_CACHED.append(command)
    try:
        yield
    finally:
        _ONLY_CACHED.pop()
