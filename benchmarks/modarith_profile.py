"""Where study 2's seconds go, and the evaluation path's speedup over the previous one.

Part 1 profiles `memlib.studies.modarith.run` at a reduced default scale that keeps every code path
(one seed, the main and variant runs at 200 epochs, the sweep at 100, the image runs
shortened; the learning-order runs as in the preset), one CPU thread, into a fresh cache,
and prints the top entries by cumulative and by own time and the shares of the stages.

Part 2 times, in this process, a learning-order-like workload (4 runs, P = 59, M = 513,
AdamW, full batch, evaluated every 2 epochs) and the main runs' analysis (FF parts under
four activations, IPR/strength partitions under two), the previous way (kept below: one
pass per activation, new tensors for the sum and the activation) against memlib's, checks
that both give the same results bit for bit, and prints `speedup: X` (previous / current wall time).

Usage: python benchmarks/modarith_profile.py [--skip-profile | --from-profile FILE]
[--epochs N] [--repeats N]
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import io
import os
import pstats
import tempfile
import time

import pandas as pd
import torch

from memlib.presets import preset_of
from memlib.studies import modarith as ma
from memlib.train import TrainSpec

REDUCED = {"seeds": (300,), "epochs": 200, "sweep_epochs": 100, "digits_epochs": 100,
           "image_epochs": 30, "parallel_runs": 1}
STAGES = {  # function name in memlib/studies/modarith/ -> stage shown
    "train_main": "main runs (training)", "learning_order": "learning order (training)",
    "width_sweep": "width sweep (training + FF)", "variant_parts": "variants (training + FF)",
    "image_order": "image learning order", "analyse_main": "analysis of the main runs",
    "analytic_check": "analytic x^2 check"}
DETAIL = {"forward": "forward passes (training and evaluation)",
          "_engine_run_backward": "backward passes", "wrapper": "optimizer steps",
          "subset_accuracies": "subset_accuracies (previously every evaluation)",
          "predictions": "predictions (every evaluation)",
          "log": "evaluations during training", "partition_curves": "partitions",
          "evaluate_parts": "FF parts"}


# --------------------------------------------------------------------------- the previous way
def old_forward(weights, pairs, activation="relu"):
    U, V, W, mu = weights["U"], weights["V"], weights["W"], weights["mu"]
    hidden = (U.transpose(1, 2).contiguous().index_select(1, pairs[:, 0])
              + V.transpose(1, 2).contiguous().index_select(1, pairs[:, 1]))
    return torch.baddbmm(mu[:, None, :], ma.ACTIVATIONS[activation](hidden), W.transpose(1, 2))


def old_subset_accuracies(weights, task, noisy, mask, activation="relu"):
    with torch.no_grad():
        predicted = old_forward(weights, task.pairs, activation).argmax(-1)
    return ma.accuracy_table(predicted, task, noisy, mask)


def old_accuracy_tables(weights, task, noisy, mask, activations):
    return [old_subset_accuracies(weights, task, noisy, mask, act) for act in activations]


class previous_way:
    """Within it, memlib.studies.modarith evaluates and trains the previous way: every part
    that looks the functions up (the method, the runs, the experiment) sees the previous ones."""

    PATCH = {"forward": old_forward, "subset_accuracies": old_subset_accuracies,
             "accuracy_tables": old_accuracy_tables}
    PARTS = (ma.method, ma.runs, ma.experiment)

    def __enter__(self):
        self.saved = [(part, name, getattr(part, name)) for part in self.PARTS
                      for name in self.PATCH if hasattr(part, name)]
        for part, name, _ in self.saved:
            setattr(part, name, self.PATCH[name])

    def __exit__(self, *exc):
        for part, name, fn in self.saved:
            setattr(part, name, fn)


# --------------------------------------------------------------------------- part 1
def profile_run() -> pstats.Stats:
    with tempfile.TemporaryDirectory() as cache:
        os.environ["MEMLIB_CACHE"] = cache
        config = dataclasses.replace(preset_of(ma.Config, "modarith", "small"), **REDUCED)
        profiler = cProfile.Profile()
        profiler.runcall(ma.run, config)
    return pstats.Stats(profiler)


def report(stats: pstats.Stats, top: int = 25) -> None:
    """The top entries by cumulative and own time, and the shares of `ma.run`'s time."""
    for order in ("cumulative", "tottime"):
        out = io.StringIO()
        stats.stream = out
        stats.sort_stats(order).print_stats(top)
        print(f"--- top {top} by {order}\n" + out.getvalue().split("\n\n", 2)[-1])
    cumulative = {}
    for (file, _, name), (_, _, _, cum, _) in stats.stats.items():
        if "studies/modarith/" in file.replace(os.sep, "/") or name in DETAIL:
            cumulative[name] = max(cumulative.get(name, 0.0), cum)
    total = cumulative["run"]
    print(f"modarith.run: {total:.1f} s")
    for table in (STAGES, DETAIL):
        for name, label in table.items():
            seconds = cumulative.get(name, 0.0)
            print(f"  {label}: {seconds:.1f} s ({seconds / total:.0%})")


# --------------------------------------------------------------------------- part 2
def workload(epochs: int) -> dict:
    """Order-like training evaluated every 2 epochs, then the main runs' analysis."""
    task = ma.make_task(59)
    spec = TrainSpec(epochs=epochs, batch_size=None, optimizer="adamw", lr=1e-3,
                     weight_decay=0.1)
    out = ma.train_runs(task, [0.2, 0.2, 0.5, 0.5], [0, 1, 0, 1], 513, spec, log_every=2)
    args = (out["weights"], task, out["noisy"], out["mask"])
    parts = ma.evaluate_parts(*args, ("relu", "quadratic", "abs", "reverse_relu"))
    partition = ma.partition_curves(*args, (0.1, 0.5, 1.0), ("relu", "quadratic"))
    return {**out, "parts": parts, "partition": partition}


def same(a: dict, b: dict) -> bool:
    def equal(x, y):
        if isinstance(x, dict):
            return x.keys() == y.keys() and all(equal(x[k], y[k]) for k in x)
        if isinstance(x, pd.DataFrame):
            return x.equals(y)
        return torch.equal(x, y)
    return equal(a, b)


def best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def components(repeats: int) -> None:
    """One training step (forward + backward) and one evaluation of 4 runs, each way,
    interleaved; the fastest of `repeats`."""
    task = ma.make_task(59)
    net = ma.ModularNet(59, 513, [0, 1, 2, 3])
    pairs, labels = task.pairs[task.train_idx], task.labels[task.train_idx].expand(4, -1)
    weights = {k: v.detach() for k, v in net.weights().items()}
    mask = torch.zeros_like(labels, dtype=torch.bool)

    def step():
        net.zero_grad(set_to_none=True)
        ma.per_run_cross_entropy(net(pairs), labels).backward()

    def evaluation():
        ma.subset_accuracies(weights, task, labels, mask)

    for name, fn in (("training step", step), ("evaluation", evaluation)):
        old, new = [], []
        for _ in range(repeats):
            with previous_way():
                old.append(best(fn, 1))
            new.append(best(fn, 1))
        print(f"{name}: previous {min(old):.3f} s, current {min(new):.3f} s "
              f"({min(old) / min(new):.2f}x)")


def compare(epochs: int, repeats: int) -> float:
    components(5)
    timings, results = {"previous": [], "current": []}, {}
    for _ in range(repeats):
        for name in timings:
            start = time.perf_counter()
            if name == "previous":
                with previous_way():
                    results[name] = workload(epochs)
            else:
                results[name] = workload(epochs)
            timings[name].append(time.perf_counter() - start)
    for name, times in timings.items():
        print(f"{name}: {', '.join(f'{t:.2f}' for t in times)} s ({epochs} epochs of 4 runs "
              "evaluated every 2, then FF parts and partitions)")
    print("results identical (weights, labels, histories, FF parts, partitions):",
          same(results["previous"], results["current"]))
    speedup = min(timings["previous"]) / min(timings["current"])
    print(f"threads: {torch.get_num_threads()}; fastest of {repeats} each, interleaved")
    print(f"speedup: {speedup:.2f}")
    return speedup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-profile", action="store_true")
    parser.add_argument("--from-profile", metavar="FILE",
                        help="report this saved profile (python -m cProfile -o FILE -m memlib "
                             "run modarith ...) instead of making one")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)  # as the study's worker processes
    if args.from_profile:
        report(pstats.Stats(args.from_profile))
        return
    if not args.skip_profile:
        report(profile_run())
    compare(args.epochs, args.repeats)


if __name__ == "__main__":
    main()
