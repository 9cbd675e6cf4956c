"""Where the small scale's seconds go: one representative unit of work per study, profiled.

For each study one cached computation of the small preset (its unit of work: what one worker
process computes) runs uncached, with a shortened epoch count where a full one would take
minutes, under cProfile in this process on one thread. Its CPU seconds (the same whatever else the
machine runs; on an idle core, about its wall seconds) are attributed to:

- training steps: forward (the study's step function), backward, optimizer (zero_grad, step),
  batching (the loader's batches), loop overhead (the rest of `memlib.train.train`'s own time);
- per-epoch measurements: `train`'s end-of-epoch work (evaluation sets and callbacks);
- data: the studies' loaders, memlib.data within them (memlib.data keeps what it read in
  the process, so a worker pays the reading once, for its first unit);
- after training: everything else in the unit (analyses, model set-up).

Training and measurement seconds are scaled from the shortened run to the preset's epochs
(training by epochs, measurements by measured epochs), then multiplied by the number of such
units the notebook computes and divided by the speedup of its two worker processes (1.61 on the
2-core machine, benchmarks/parallel_runs.py): a projection of the
notebook's compute, printed beside the measured cold notebook times. The cache is a temporary
directory: nothing real is cached.

    nice -n 10 python benchmarks/notebook_profile.py [--studies rlp,lens] [--top 12]
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import os
import pstats
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

os.environ.setdefault("MEMLIB_CACHE", tempfile.mkdtemp(prefix="memlib-profile-"))
os.environ.setdefault("MEMLIB_PROGRESS", "0")

import memlib  # noqa: E402,F401  (before torch: it pins the CPU dispatch)
from memlib.studies import module, preset_config  # noqa: E402

# the cold `make figures` at the small scale on 2 cores, seconds per notebook
NOTEBOOK_SECONDS = {"rlp": 1399, "modarith": 684, "fisher": 474, "probes": 343, "lens": 589}
OPTIMIZER_CALLS = ("zero_grad", "wrapper", "step", "_use_grad")
# the studies' data preparation, by (the end of its file's path, function); none calls
# another, so their cumulative seconds add up without counting anything twice
LOADERS = {("studies/rlp/runs.py", "load_data"), ("studies/probes/runs.py", "pair_data"),
           ("studies/probes/runs.py", "_standin_data"), ("studies/modarith/method.py", "make_task"),
           ("studies/modarith/method.py", "label_noise"), ("studies/fisher/runs.py", "_data")}


@dataclass
class Unit:
    """One study's profiled unit: `run()` computes it; `train_scale` and `measure_scale`
    turn its training and measurement seconds into the preset's; `units` such units (in
    preset-epoch equivalents) make the notebook's compute."""
    describe: str
    run: Callable[[], object]
    train_scale: float
    measure_scale: float
    units: float
    note: str


def measured_epochs(epochs: int, every: int) -> int:
    """Epochs 0..epochs at which a run measures (every `every`, and the last)."""
    return len({e for e in range(epochs + 1) if e % every == 0} | {epochs})


def rlp_unit() -> Unit:
    from memlib.studies import rlp

    config = preset_config("rlp", "small")
    short = 15
    s = dataclasses.replace(rlp.spec(config, seed=config.seeds[0]), epochs=short)
    full = config.epochs
    runs = sum(1 for f, _ in dict.fromkeys(rlp.planned_runs(config)) if f is rlp.cached_run)
    return Unit(f"rlp.train_run: SmallCNN, λ=0, {short} of {full} epochs",
                lambda: rlp.train_run(s), full / short,
                measured_epochs(full, s.measure_every) / measured_epochs(short, s.measure_every),
                runs, f"{runs} rlp_run units (25 SmallCNN at 60 epochs, 10 MLP at 150) and 10 "
                      "frozen baselines counted as SmallCNN runs")


def modarith_unit() -> Unit:
    from memlib.studies import modarith

    config = preset_config("modarith", "small")
    short = 60
    small = dataclasses.replace(config, epochs=short)

    def run():
        main = modarith.train_main(small)
        return modarith.analyse_main(small, main)

    full = config.epochs
    # the main runs were 237 s of 680 s of the notebook's compute (the preset's own account)
    return Unit(f"modarith.train_main + analyse_main: 20 runs batched, {short} of {full} epochs",
                run, full / short,
                measured_epochs(full, config.log_every) / measured_epochs(short, config.log_every),
                680 / 237, "the main runs are 237 of 680 s of the preset's compute")


def fisher_unit() -> Unit:
    from memlib.studies import fisher

    config = preset_config("fisher", "small")
    short = 12
    item = (config, config.model, "symmetric", 0.4, config.seeds[0], short)
    runs = len(fisher.training_runs(config))
    # a run stops 10 epochs after it fits: 15-69 epochs, 51 on average, in the cold run
    typical = 51
    return Unit(f"fisher.train_run: MLP, 40% noise, {short} epochs (≈{typical} when it stops)",
                lambda: fisher.train_run(*item), typical / short, typical / short, runs,
                f"{runs} runs counted as {typical}-epoch MLP runs")


def probes_unit() -> Unit:
    from memlib import data
    from memlib.studies import probes

    config = preset_config("probes", "small")
    dataset = data.resolve(config.datasets[0])
    calls = probes.planned_runs(config)
    task = next(a for f, a in calls if f is probes.cached_task and a[0] == dataset)
    return Unit(f"probes.cached_task: {dataset} {task[1]} pair, 12 runs, probe grids",
                lambda: probes.cached_task(task), 1.0, 1.0, len(calls),
                f"{len(calls)} units (4 tasks, 2 heatmaps, {len(config.standin_seeds)} "
                "stand-ins) counted as tasks")


def lens_unit() -> Unit:
    from memlib.studies import lens

    config = preset_config("lens", "small")
    short = 20
    m = lens.lens_measures(config)[0]
    full = m.watched.run.epochs
    r = dataclasses.replace(m.watched, run=dataclasses.replace(m.watched.run, epochs=short))
    m = dataclasses.replace(m, watched=r)
    return Unit(f"lens.lens_run and measure_run: MLP 6x256, {short} of {full} epochs",
                lambda: lens.measure_run(m, lens.lens_run(r)), full / short, full / short,
                len(lens.lens_runs(config)) + 1,
                "10 lens runs, and the MNIST frozen baselines counted as one")


UNITS = {"rlp": rlp_unit, "modarith": modarith_unit, "fisher": fisher_unit,
         "probes": probes_unit, "lens": lens_unit}


def _file_is(key: tuple, *suffixes: str) -> bool:
    return any(key[0].replace(os.sep, "/").endswith(s) for s in suffixes)


def attribute(stats: pstats.Stats, total: float) -> dict[str, float]:
    """Seconds per category from the profile's call graph (see the module docstring)."""
    table = stats.stats  # {function: (calls, primitive calls, own time, cumulative, callers)}
    trains = [k for k in table if _file_is(k, "memlib/train.py") and k[2] == "train"]
    out = dict.fromkeys(("forward", "backward", "optimizer", "batching", "loop overhead",
                         "measurements", "data", "after training"), 0.0)
    train_total = sum(table[k][3] for k in trains)
    for function, (_, _, _, _, callers) in table.items():
        for caller in trains:
            if caller not in callers:
                continue
            seconds = callers[caller][3]
            name = function[2]
            if name == "end_epoch":
                out["measurements"] += seconds
            elif name == "backward" and _file_is(function, "torch/_tensor.py"):
                out["backward"] += seconds
            elif (name in OPTIMIZER_CALLS and "torch/optim" in function[0].replace(os.sep, "/")
                  or name == "inner" and _file_is(function, "torch/_compile.py")):  # zero_grad
                out["optimizer"] += seconds
            elif name in ("__iter__", "__next__", "to_device") or name.startswith("<genexpr"):
                out["batching"] += seconds
            elif _file_is(function, "memlib/train.py") and name != "step":
                continue  # set-up helpers: loop overhead
            elif "memlib" in function[0] or name == "step":
                out["forward"] += seconds
    out["loop overhead"] = train_total - sum(out[k] for k in (
        "forward", "backward", "optimizer", "batching", "measurements"))
    out["data"] = sum(v[3] for k, v in table.items()
                      if any(_file_is(k, path) and k[2] == name for path, name in LOADERS))
    out["after training"] = total - train_total - out["data"]
    return out


def warm_up() -> float:
    """Load what every worker process loads once (seeding imports torch's compiler stack,
    progress bars, dataframes), so that the profiles hold only each unit's own seconds."""
    start = time.process_time()
    import pandas  # noqa: F401
    import tqdm.auto  # noqa: F401

    from memlib.seed import seed_everything

    seed_everything(0)
    return time.process_time() - start


def rlp_kinds(epochs: int, speedup: float) -> None:
    """Study 1's notebook is 45 units of a few kinds. Each kind runs `epochs` and 2 x `epochs`
    epochs (no profiler): the difference is the cost of `epochs` more epochs with their
    measurements, the shorter run holds the fixed costs (data, set-up, final analyses); scaled
    to the kind's preset epochs, times how many the plan holds."""
    from memlib.studies import rlp

    config = preset_config("rlp", "small")
    plan = list(dict.fromkeys(rlp.planned_runs(config)))

    def kind(call) -> str:
        fn, s = call
        base = ("frozen" if fn is rlp.cached_frozen else
                f"λ={s.lam:g} {s.regularize}" if s.lam > 0 else "λ=0")
        return f"{s.model} {base}"

    def seconds(fn, s, count: int) -> float:
        start = time.process_time()
        (rlp.frozen_baseline if fn is rlp.cached_frozen else rlp.train_run)(
            dataclasses.replace(s, epochs=count))
        return time.process_time() - start

    counts: dict[str, int] = {}
    examples: dict[str, tuple] = {}
    for call in plan:
        counts[kind(call)] = counts.get(kind(call), 0) + 1
        examples.setdefault(kind(call), call)
    total = 0.0
    print(f"\n## rlp: the plan's units by kind ({epochs} and {2 * epochs} epochs, scaled)\n")
    print("| kind | units | preset epochs | CPU s per epoch | CPU s per unit | CPU s in all |")
    print("|---|---|---|---|---|---|")
    for name, (fn, s) in examples.items():
        short = seconds(fn, s, epochs)
        per_epoch = (seconds(fn, s, 2 * epochs) - short) / epochs
        per_unit = short + (s.epochs - epochs) * per_epoch
        total += per_unit * counts[name]
        print(f"| {name} | {counts[name]} | {s.epochs} | {per_epoch:.2f} | {per_unit:.1f} | "
              f"{per_unit * counts[name]:.0f} |")
    print(f"\nprojection: {total:.0f} CPU s / speedup {speedup:g} = {total / speedup:.0f} s of "
          f"the notebook's {NOTEBOOK_SECONDS['rlp']} s")


def top_functions(stats: pstats.Stats, count: int) -> list[tuple[str, float]]:
    """The functions with the most own time."""
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:count]
    return [(f"{os.path.basename(k[0])}:{k[1]}({k[2]})", v[2]) for k, v in rows]


def scaled(parts: dict[str, float], unit: Unit) -> dict[str, float]:
    """The unit's seconds at the preset's epochs."""
    training = ("forward", "backward", "optimizer", "batching", "loop overhead")
    return {k: v * (unit.train_scale if k in training else
                    unit.measure_scale if k == "measurements" else 1.0)
            for k, v in parts.items()}


def report(study: str, unit: Unit, parts: dict[str, float], total: float, wall: float,
           top: list[tuple[str, float]], speedup: float) -> None:
    full = scaled(parts, unit)
    full_total = sum(full.values())
    print(f"\n## {study}: {unit.describe}\n")
    print(f"measured {total:.1f} CPU seconds ({wall:.0f} s wall); at the preset's epochs "
          f"{full_total:.1f} s\n")
    print("| category | seconds (profiled) | seconds (preset) | share |")
    print("|---|---|---|---|")
    for name, seconds in parts.items():
        print(f"| {name} | {seconds:.2f} | {full[name]:.1f} | {full[name] / full_total:.0%} |")
    # memlib.data keeps loaded splits in the process: a worker reads them once, not per unit
    per_unit = full_total - full["data"]
    projected = unit.units * per_unit / speedup + full["data"]
    print(f"\nprojection: {unit.units:g} units × {per_unit:.1f} s / speedup {speedup:g} + data "
          f"once per worker {full['data']:.1f} s = {projected:.0f} s of the notebook's "
          f"{NOTEBOOK_SECONDS[study]} s ({unit.note})")
    print("\nmost own time: " + ", ".join(f"{name} {s:.2f} s" for name, s in top))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", default=",".join(UNITS))
    parser.add_argument("--top", type=int, default=8)
    # two worker processes on the 2-core machine: benchmarks/parallel_runs.py measured 1.61
    parser.add_argument("--speedup", type=float, default=1.61,
                        help="the notebook's parallel speedup over one process")
    parser.add_argument("--dump", default=None, help="folder for the raw .prof files")
    parser.add_argument("--rlp-kinds", type=int, default=0, metavar="EPOCHS",
                        help="also time each kind of study 1's units over EPOCHS epochs")
    args = parser.parse_args()
    studies = [s.strip() for s in args.studies.split(",") if s.strip()]
    unknown = [s for s in studies if s not in UNITS]
    if unknown:
        print(f"unknown studies {', '.join(unknown)}; choose from {', '.join(UNITS)}",
              file=sys.stderr)
        return 2
    import torch

    torch.set_num_threads(1)
    print(f"imports and set-up a worker process pays once: {warm_up():.1f} CPU seconds")
    for study in studies:
        module(study)
        unit = UNITS[study]()
        # CPU seconds of this process: the same on a machine that other jobs share
        profile = cProfile.Profile(time.process_time)
        start, wall = time.process_time(), time.perf_counter()
        profile.runcall(unit.run)
        total, wall = time.process_time() - start, time.perf_counter() - wall
        stats = pstats.Stats(profile)
        if args.dump:
            stats.dump_stats(os.path.join(args.dump, f"{study}.prof"))
        report(study, unit, attribute(stats, total), total, wall,
               top_functions(stats, args.top), args.speedup)
        sys.stdout.flush()
    if args.rlp_kinds:
        rlp_kinds(args.rlp_kinds, args.speedup)
    return 0


if __name__ == "__main__":
    sys.exit(main())
