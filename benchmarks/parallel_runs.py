"""Wall time of study 1's training runs computed one after another vs two at a time.

Both compute the same 4 random-label runs of the small preset's default model (seeds 0-3,
the preset's 150 epochs unless given) into empty caches, one CPU thread per run. The
baseline calls `memlib.studies.rlp.cached_run` for each run in this process; memlib's way is
`memlib.parallel.prefetch` with 2 worker processes (what `parallel_runs: 2` does), including
the workers' start-up (a few seconds each, which short runs do not amortize).
Target: speedup >= 1.6 on 2 free cores. Usage: python benchmarks/parallel_runs.py [epochs]
"""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
import time

import torch

from memlib.parallel import prefetch
from memlib.studies import preset_config, rlp


def main() -> None:
    torch.set_num_threads(1)
    os.environ["MEMLIB_PROGRESS"] = "0"
    config = preset_config("rlp", "small")
    epochs = int(sys.argv[1]) if len(sys.argv) > 1 else config.epochs
    specs = [dataclasses.replace(rlp.spec(config, seed=k), epochs=epochs) for k in range(4)]
    times = {}
    for way in ("one after another", "prefetch, 2 processes"):
        os.environ["MEMLIB_CACHE"] = tempfile.mkdtemp(prefix="memlib-bench-")
        start = time.perf_counter()
        if way.startswith("prefetch"):
            prefetch([(rlp.cached_run, s) for s in specs], 2)
        else:
            for s in specs:
                rlp.cached_run(s)
        times[way] = time.perf_counter() - start
        print(f"{way:>24}: {times[way]:6.1f} s for {len(specs)} runs of {epochs} epochs")
    print(f"speedup: {times['one after another'] / times['prefetch, 2 processes']:.2f}")


if __name__ == "__main__":
    main()
