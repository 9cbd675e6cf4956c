"""Independent cached experiments computed in parallel worker processes.

Above the cache and the training loop: the cache only stores, and a study decides which of
its runs may run side by side.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memlib import distributed
from memlib.process import one_cpu_thread, warn_once
from memlib.train import show_progress


def _compute_in_worker(function: Callable[[Any], Any], argument: Any) -> None:
    one_cpu_thread()
    function(argument)  # fills the cache; the caller loads the result from there


def prefetch(calls: list[tuple[Callable[[Any], Any], Any]], processes: int,
             desc: str = "runs") -> None:
    """Compute the cached computations `function(argument)` in `processes` worker processes
    (one CPU thread each), so that the caller's own calls then load them from the cache.

    A small model on a CPU keeps one core busy per run: independent runs in parallel use the
    machine's cores far better than threads inside one run, and each result is the same as
    computed alone (same code, one thread, the same pinned instruction set: the workers
    inherit the pins with the environment). Functions must be importable (module level).
    Does nothing for one process or under torch.distributed, where runs use every rank.
    """
    calls = list(dict.fromkeys(calls))  # the same computation once
    if processes <= 1 or len(calls) <= 1 or distributed.active():
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    from tqdm.auto import tqdm

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
