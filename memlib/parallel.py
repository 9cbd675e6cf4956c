"""Independent cached experiments computed in parallel worker processes.

Above the cache and the training loop: the cache only stores, and a study decides which of
its runs may run side by side (through `memlib.runs.compute_missing`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memlib import cache, distributed, fingerprint
from memlib.cache import MissingResultError, only_cached, reading_only
from memlib.process import holding_warnings, one_cpu_thread, warn_once, workers
from memlib.train import show_progress

Call = tuple[Callable[[Any], Any], Any]  # (a module-level cached computation, its argument)


def _end_with_parent(parent: int) -> None:
    """A worker's initializer: the worker ends as soon as the process that started it is gone
    (killed with SIGKILL, it cannot stop its pool), instead of computing on for minutes with a
    gigabyte of memory. The check runs in a daemon thread: one getppid a second."""
    import threading
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1)
        os._exit(1)

    threading.Thread(target=watch, name="memlib-parent-watch", daemon=True).start()


def _start_worker(parent: int, sources: dict) -> None:
    """A worker's initializer: it ends with its parent and fingerprints its parent's sources."""
    _end_with_parent(parent)
    fingerprint.adopt(sources)


def _compute_in_worker(function: Callable[[Any], Any], argument: Any
                       ) -> tuple[dict[Path, bytes], list[tuple[str, str]], list[str]]:
    """Fill the cache with `function(argument)`'s entries (the caller loads them from there);
    return the entries that could not be written (a full disk), for the caller to keep in
    memory instead of computing them again, the warnings given once, for the caller to
    give once for all its workers, and the entries computed, for the caller to count."""
    one_cpu_thread()
    before, count = cache.unwritten(), cache.computed_count()
    with holding_warnings() as warned:
        function(argument)
    return cache.unwritten_since(before), warned, cache.computed_since(count)


def can_prefetch(processes: int | None) -> bool:
    """Whether `prefetch` starts workers at all: for more than one process (`processes`, a
    study's `parallel_runs`, as `process.workers` resolves it), not under torch.distributed
    (where runs use every rank) and not inside `cache.only_cached` (where nothing may be
    computed: the caller's own calls name the command that computes it)."""
    return workers(processes) > 1 and not distributed.active() and not reading_only()


def prefetch(calls: list[Call], processes: int | None, desc: str = "runs") -> None:
    """Compute the cached computations `function(argument)` in `processes` worker processes
    (one CPU thread each; None: as many as `process.workers` gives), so that the caller's own
    calls then load them from the cache.

    A small model on a CPU keeps one core busy per run: independent runs in parallel use the
    machine's cores far better than threads inside one run, and each result is the same as
    computed alone (same code, one thread, the same pinned instruction set: the workers
    inherit the pins with the environment). Functions must be importable (module level).
    Does nothing unless `can_prefetch(processes)`.
    """
    calls = list(dict.fromkeys(calls))  # the same computation once
    if len(calls) <= 1 or not can_prefetch(processes):
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    from tqdm.auto import tqdm

    # spawn, not fork: a forked copy of a process that already ran torch can deadlock
    context = multiprocessing.get_context("spawn")
    try:
        # the workers end with this process, and key by the sources it read, not by files
        # edited since
        with ProcessPoolExecutor(min(workers(processes), len(calls)), mp_context=context,
                                 initializer=_start_worker,
                                 initargs=(os.getpid(), fingerprint.sources())) as pool:
            futures = [pool.submit(_compute_in_worker, f, a) for f, a in calls]
            for future in tqdm(as_completed(futures), total=len(futures), desc=desc,
                               disable=not show_progress()):
                unwritten, warned, computed = future.result()
                cache.note_computed_elsewhere(computed)
                cache.keep_unwritten(unwritten)
                for topic, message in warned:
                    warn_once(topic, message)
    except BrokenProcessPool:  # e.g. a __main__ that workers cannot import (python - <<EOF)
        warn_once("prefetch", "worker processes could not start; computing the runs one "
                  "after another in this process")


def uncached(calls: list[Call]) -> list[Call]:
    """The calls that would compute something: each runs here with the cache read-only
    (`cache.only_cached`) and is kept when it reaches a missing entry. What it finds loads,
    so a call may make several cached computations, a later one using an earlier result
    (`cache.activity` counts these loads only when the caller makes them)."""
    kept = []
    with cache.uncounted():
        for function, argument in calls:
            try:
                with only_cached("memlib.parallel.prefetch"):
                    function(argument)
            except MissingResultError:
                kept.append((function, argument))
    return kept
