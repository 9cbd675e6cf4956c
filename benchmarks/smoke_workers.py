"""The whole smoke-scale reproduction's computations at 1 worker and at 2, from empty caches.

Each way runs `python -m memlib run STUDY --scale smoke --workers N` for every study in the
order `make figures` renders them (the lens last: it reads study 1's runs), each into a fresh
cache, and times the whole. Rendering the notebooks is left out: it is one process whatever
the workers. Target: 2 workers >= 1.8x faster than 1 on an otherwise idle 2-core machine.
Usage: python benchmarks/smoke_workers.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STUDIES = ("rlp", "modarith", "fisher", "probes", "lens")


def reproduce(workers: int) -> float:
    """Seconds for every study's smoke computations with `workers` runs at once."""
    env = {**os.environ, "MEMLIB_CACHE": tempfile.mkdtemp(prefix="memlib-bench-"),
           "MEMLIB_PROGRESS": "0", "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    for study in STUDIES:
        subprocess.run([sys.executable, "-m", "memlib", "run", study, "--scale", "smoke",
                        "--workers", str(workers)], env=env, check=True,
                       stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    times = {n: reproduce(n) for n in (1, 2)}
    for n, seconds in times.items():
        print(f"{n} worker{'s' * (n > 1)}: {seconds:.1f} s")
    print(f"speedup of 2 workers over 1: {times[1] / times[2]:.2f}x (target >= 1.8x)")


if __name__ == "__main__":
    main()
