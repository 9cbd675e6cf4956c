"""Study 2's run with its main runs analysed in the worker that trains them, against the plain
way: the workers train, then this process analyses the main runs on one core.

Both compute study 2's small preset, shortened (fewer epochs everywhere, so that it takes
minutes; the analysis does not depend on the epochs), from an empty cache with two worker
processes, in this process one after the other. The plain way's plan starts with the main
runs (`train_main`) and calls `analyse_main` after every worker is done; memlib's starts with
`main_analysis`, which trains and analyses them in one worker while the other computes the
rest. Usage: python benchmarks/modarith_analysis.py [epochs]
"""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
import time

from memlib import presets
from memlib.runs import compute_missing
from memlib.studies import modarith as ma


def config(epochs: int) -> ma.Config:
    small = presets.preset_of(ma.Config, "modarith", "small")
    return dataclasses.replace(small, epochs=epochs, order_epochs=max(2, epochs // 4),
                               sweep_epochs=max(2, epochs // 2), digits_epochs=epochs,
                               image_epochs=max(2, epochs // 6), parallel_runs=2)


def plain(c: ma.Config) -> float:
    start = time.perf_counter()
    plan = [(ma.train_main, c), *ma.planned_runs(c)[1:]]
    compute_missing(plan, c.parallel_runs)
    ma.analyse_main(c, ma.train_main(c))
    return time.perf_counter() - start


def in_worker(c: ma.Config) -> float:
    start = time.perf_counter()
    compute_missing(ma.planned_runs(c), c.parallel_runs)
    ma.main_analysis(c)
    return time.perf_counter() - start


def main() -> None:
    epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    c = config(epochs)
    seconds = {}
    for name, way in (("plain", plain), ("in the worker", in_worker)):
        os.environ["MEMLIB_CACHE"] = tempfile.mkdtemp(prefix="memlib-bench-")
        seconds[name] = way(c)
        print(f"{name}: {seconds[name]:.1f} s (the preset at {epochs} main epochs, 2 workers)")
    print(f"speedup: {seconds['plain'] / seconds['in the worker']:.2f}")


if __name__ == "__main__":
    main()
