"""Independent cached experiments computed in parallel worker processes.

Above the cache and the training loop: the cache only stores, and a study decides which of
its runs may run side by side (through `memlib.runs.compute_missing`).
"""

from __future__ import annotations

import concurrent.futures.process as futures  # before the exit handler below: see there
import os
import threading
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


def _compute_in_worker(function: Callable[[Any], Any], argument: Any, sources: dict
                       ) -> tuple[dict[Path, bytes], list[tuple[str, str]], list[str]]:
    """Fill the cache with `function(argument)`'s entries (the caller loads them from there);
    return the entries that could not be written (a full disk), for the caller to keep in
    memory instead of computing them again, the warnings given once, for the caller to
    give once for all its workers, and the entries computed, for the caller to count.
    `sources`: what the parent has read since the worker started, to fingerprint by too."""
    one_cpu_thread()
    if sources:
        fingerprint.adopt(sources)
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


COMPUTES_HERE = True  # this process takes runs beside its workers (off: the workers alone)
IDLE_SECONDS = 30  # how long a pool's workers wait for the next wave before they end
_POOL: dict = {}  # the pool the last wave used: "executor", "key", "sources", "timer"
_POOL_LOCK = threading.RLock()  # the idle timer's thread ends the pool


def _end_pool() -> None:
    """End the pool's workers at once: when idle (they hold nothing), when this process exits
    (not left to unload torch, 1-2 s), on an error or Ctrl-C (what a worker computes is not
    wanted any more: its entry stays unwritten). Its manager thread is joined, so that no pipe
    of it is closed while the exit's handler writes to it."""
    with _POOL_LOCK:
        if not _POOL:
            return
        _POOL["timer"].cancel()
        executor = _POOL.pop("executor")
        _POOL.clear()
        # shutdown forgets both (it drops its references when it does not wait)
        processes = list((executor._processes or {}).values())
        manager = executor._executor_manager_thread
        executor.shutdown(wait=False, cancel_futures=True)
        for worker in processes:
            worker.terminate()
        if manager is not None:
            manager.join(10)


# At exit the workers end at once, before concurrent.futures joins them (its handler, which
# its import above registered, runs after this one: they run last registered first).
threading._register_atexit(_end_pool)


def _pool(size: int):
    """A pool of `size` worker processes: the last wave's while the workers' number and this
    process's environment (the cache folder, the pins) are the same, else a new one. A study
    computes in waves (a sweep, then the runs its best value picks, then the measures), and a
    new pool per wave started every worker again: an interpreter and torch, 3-4 s, then the
    first run's imports and data, which at the smoke scale cost more than the runs."""
    import multiprocessing

    key = (size, tuple(sorted(os.environ.items())))
    with _POOL_LOCK:
        if _POOL and (_POOL["key"] != key or _POOL["executor"]._broken):
            _end_pool()
        if not _POOL:
            sources = fingerprint.sources()
            # spawn, not fork: a forked copy of a process that already ran torch can deadlock;
            # the workers end with this process, and key by the sources it read, not by files
            # edited since
            _POOL.update(executor=futures.ProcessPoolExecutor(
                size, mp_context=multiprocessing.get_context("spawn"),
                initializer=_start_worker, initargs=(os.getpid(), sources)),
                key=key, sources=sources, timer=threading.Timer(0, lambda: None))
        _POOL["timer"].cancel()
        return _POOL["executor"], _POOL["sources"]


def _idle() -> None:
    """The pool waits IDLE_SECONDS for the next wave, then its workers end (a notebook's kernel
    would otherwise hold their memory as long as it lives)."""
    with _POOL_LOCK:
        if _POOL:
            _POOL["timer"] = threading.Timer(IDLE_SECONDS, _end_if_idle)
            _POOL["timer"].daemon = True
            _POOL["timer"].start()


def _end_if_idle() -> None:
    with _POOL_LOCK:  # not if a new wave took the pool while this timer waited for the lock
        if _POOL and _POOL["timer"] is threading.current_thread():
            _end_pool()


def _ready() -> None:
    """A worker's first task: done when the worker has started, which is when it is handed a
    run (handed one before, it would hold it through its start while this process is idle)."""


def prefetch(calls: list[Call], processes: int | None, desc: str = "runs") -> None:
    """Compute the cached computations `function(argument)` with `processes` runs at once (one
    CPU thread each; None: as many as `process.workers` gives), so that the caller's own calls
    then load them from the cache.

    A small model on a CPU keeps one core busy per run: independent runs in parallel use the
    machine's cores far better than threads inside one run, and each result is the same as
    computed alone (same code, one thread, the same pinned instruction set: the workers
    inherit the pins with the environment). Functions must be importable (module level).

    The runs are taken in order (the studies plan them longest first) by each worker once it
    has started, and by this process itself when it computes on one thread as the workers do:
    a wave of short runs then does not wait for the workers to start. Does nothing unless
    `can_prefetch(processes)`.
    """
    calls = list(dict.fromkeys(calls))  # the same computation once
    if len(calls) <= 1 or not can_prefetch(processes):
        return
    from collections import deque
    from concurrent.futures import FIRST_COMPLETED, wait

    import torch
    from tqdm.auto import tqdm

    here = COMPUTES_HERE and torch.get_num_threads() == 1  # else its bits could differ
    size = workers(processes) - here
    pool, started_with = _pool(size)
    read_since = {k: v for k, v in fingerprint.sources().items() if started_with.get(k) != v}
    todo, done, lock = deque(calls), [], threading.Lock()

    def take() -> Call | None:
        with lock:
            return todo.popleft() if todo else None

    def failed() -> bool:
        return any(f.exception() is not None for f in list(done))

    def hand_out() -> None:  # in a thread: each worker, once started, takes the next run
        running = {pool.submit(_ready) for _ in range(size)}
        while running:
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                if future.exception() is not None or future.result() is not None:
                    done.append(future)
                    bar.update()
                # after an error no run starts: the error is raised once the running ones end
                if not failed() and (call := take()) is not None:
                    running.add(pool.submit(_compute_in_worker, *call, read_since))

    try:
        with tqdm(total=len(calls), desc=desc, disable=not show_progress()) as bar:
            dispatcher = threading.Thread(target=hand_out, name="memlib-prefetch", daemon=True)
            dispatcher.start()
            while here and not failed() and (call := take()):
                function, argument = call
                count = cache.computed_count()
                function(argument)
                cache.note_computed_ahead(cache.computed_since(count))
                bar.update()
            dispatcher.join()
        for future in done:
            unwritten, warned, computed = future.result()  # a worker's error raises here
            cache.note_computed_elsewhere(computed)
            cache.keep_unwritten(unwritten)
            for topic, message in warned:
                warn_once(topic, message)
    except futures.BrokenProcessPool:  # e.g. a __main__ that workers cannot import (python - <<EOF)
        _end_pool()
        warn_once("prefetch", "worker processes could not start; computing the runs one "
                  "after another in this process")
    except BaseException:  # the runs not started are not wanted any more, nor the pool
        todo.clear()
        _end_pool()
        raise
    _idle()


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
