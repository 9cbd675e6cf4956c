"""`memlib run all`: every study's missing runs, two studies at a time, the dearest first
(`make figures` builds its notebooks two at a time in the same spirit, through make).

A study computes in waves (a sweep, then the runs its best value picks, then the measures) and
analyses between them in one process, so a study alone leaves cores idle at the end of every
wave. A second study beside it fills them. Each study is its own `memlib run` process, with
the worker count it would have alone (`memlib.process.workers`): what a run computes never
depends on which process computes it, so the bits are those of the studies run one by one.
Notebook 05 (the lens) reads study 1's runs and starts only once study 1 has ended.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from memlib import STUDIES, paths
from memlib.prose import cold_seconds

AFTER = {"lens": ("rlp",)}  # a study -> the studies whose runs it reads
AT_ONCE = 2  # studies computing side by side: enough to fill one study's idle waves


def cost(study: str, scale: str) -> float:
    """Seconds `study` took to compute at `scale` the last time it was published (its
    manifest's compute time, else its wall time), else at the default scale as this checkout
    publishes it (a smaller scale keeps the order of costs), else 0."""
    stem = STUDIES[study]
    for manifest in (paths.figures_dir(stem, scale) / "manifest.json",
                     paths.repo_root() / "figures" / stem / "manifest.json"):
        try:
            return cold_seconds(json.loads(manifest.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return 0.0


def order(studies: Iterable[str], costs: dict[str, float]) -> list[str]:
    """`studies` dearest first (ties in the given order)."""
    studies = list(studies)
    return sorted(studies, key=lambda s: (-costs.get(s, 0.0), studies.index(s)))


def run_studies(studies: list[str], launch: Callable[[str], int], at_once: int = AT_ONCE,
                after: dict[str, tuple[str, ...]] = AFTER) -> dict[str, int]:
    """Launch each study (`launch(study)` -> its exit code) in the order given, at most
    `at_once` at a time, a study only once the studies it reads (`after`) have ended well.
    After a failure no study starts; the running ones end. Returns each launched study's
    exit code; a study never launched (one it reads failed, or a failure stopped the
    schedule) is missing."""
    waiting, codes, running = list(studies), {}, {}
    with ThreadPoolExecutor(max(1, at_once)) as pool:
        while True:
            failed = any(codes.values())
            while not failed and len(running) < at_once and (
                    study := next((s for s in waiting if ready(s, codes, studies, after)), None)):
                waiting.remove(study)
                running[pool.submit(launch, study)] = study
            if not running:
                return codes
            finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for future in finished:
                codes[running.pop(future)] = exit_code(future)


def ready(study: str, codes: dict[str, int], studies: list[str],
          after: dict[str, tuple[str, ...]]) -> bool:
    """Whether every study `study` reads (among those scheduled) has ended with code 0."""
    return all(codes.get(first) == 0 for first in after.get(study, ()) if first in studies)


def exit_code(future: Future) -> int:
    """A launch's exit code; 1 when the launch itself raised."""
    try:
        return future.result()
    except Exception as err:  # noqa: BLE001 - the launch's error is reported, not raised
        print(f"memlib: error: {err}", file=sys.stderr)
        return 1


def run_all(scale: str) -> int:
    """Compute every study's missing runs at `scale`: `memlib run STUDY` processes, dearest
    first, AT_ONCE at a time (one at a time where one worker is all there is), a progress bar
    over the studies. Returns 0, or the first failed study's code once the running ones end."""
    from tqdm.auto import tqdm

    from memlib.process import workers
    from memlib.train import show_progress

    studies = order(STUDIES, {study: cost(study, scale) for study in STUDIES})
    at_once = min(AT_ONCE, workers(None))
    env = dict(os.environ)
    if at_once > 1:  # two studies' bars on one line would overwrite each other
        env["MEMLIB_PROGRESS"] = "0"
    start = time.monotonic()
    with tqdm(total=len(studies), desc="studies", unit="study",
              disable=not show_progress()) as bar:
        def launch(study: str) -> int:
            began = time.monotonic()
            code = subprocess.run([sys.executable, "-m", "memlib", "run", study, "--scale",
                                   scale], env=env, stdout=subprocess.DEVNULL).returncode
            bar.write(f"memlib: {study} {'computed' if code == 0 else f'failed (exit {code})'}"
                      f" in {time.monotonic() - began:.0f} s")
            bar.update()
            return code

        bar.write(f"memlib: computing the runs of {', '.join(studies)} at {scale} scale, "
                  f"{at_once} at a time")
        codes = run_studies(studies, launch, at_once)
    failed = [s for s in studies if codes.get(s, 0)]
    if failed:
        skipped = [s for s in studies if s not in codes]
        print(f"memlib: error: {failed[0]} failed"
              + (f"; not started: {', '.join(skipped)}" if skipped else "")
              + f"; `memlib run {failed[0]} --scale {scale}` shows why", file=sys.stderr)
        return codes[failed[0]]
    print(f"memlib: every study's runs at {scale} scale are in the cache "
          f"({time.monotonic() - start:.0f} s)")
    return 0
