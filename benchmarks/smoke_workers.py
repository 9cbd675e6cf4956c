"""The whole smoke-scale reproduction at 1 worker and at 2, from empty caches.

Two measures, each into fresh cache, build and figures folders:
- `make figures SCALE=smoke` (every study's runs, every notebook rendered, the claims report),
  with MEMLIB_WORKERS=1 (one notebook at a time, one run at a time) and =2 (two notebooks at a
  time, each with two runs at once);
- `memlib run all --scale smoke` (the runs alone), then `make figures` from that cache, which
  must compute nothing (its cache holds as many entries after as before).
Target: 2 workers >= 1.8x faster than 1 on the whole reproduction, on an otherwise idle
2-core machine. Usage: python benchmarks/smoke_workers.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(sys.executable).parent.parent


def folders(workers: int) -> dict[str, str]:
    """A fresh environment: empty cache, build and figures folders, `workers` runs at once."""
    top = Path(tempfile.mkdtemp(prefix="memlib-bench-"))
    return {**os.environ, "MEMLIB_CACHE": str(top / "cache"), "MEMLIB_BUILD": str(top / "build"),
            "MEMLIB_FIGURES": str(top / "figures"), "MEMLIB_PROGRESS": "0",
            "MEMLIB_WORKERS": str(workers), "PYTHONPATH": str(ROOT)}


def timed(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def make_figures(env: dict[str, str]) -> list[str]:
    return ["make", "--no-print-directory", "figures", "SCALE=smoke", f"VENV={VENV}",
            "-o", f"{VENV}/.installed"]


def entries(env: dict[str, str]) -> int:
    return sum(1 for _ in Path(env["MEMLIB_CACHE"]).glob("*.pt"))


def main() -> None:
    whole, runs = {}, {}
    for n in (1, 2):
        env = folders(n)
        whole[n] = timed(make_figures(env), env)
        env = folders(n)
        runs[n] = timed([sys.executable, "-m", "memlib", "run", "all", "--scale", "smoke"], env)
        before = entries(env)
        timed(make_figures(env), env)
        assert entries(env) == before, f"make figures computed {entries(env) - before} entries"
    for n in (1, 2):
        print(f"{n} worker{'s' * (n > 1)}: make figures {whole[n]:.1f} s; "
              f"memlib run all {runs[n]:.1f} s (make figures after it computed nothing)")
    print(f"speedup of 2 workers over 1: whole reproduction {whole[1] / whole[2]:.2f}x "
          f"(target >= 1.8x); runs alone {runs[1] / runs[2]:.2f}x")


if __name__ == "__main__":
    main()
