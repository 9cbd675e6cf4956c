"""Study 2's experiment: the plan of its cached runs, the analyses of the main runs and
`run(config)`, every result as tidy DataFrames."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pandas as pd
import torch

from memlib.runs import compute_missing, inline
from memlib.studies.modarith.config import Config, chance
from memlib.studies.modarith.method import (
    analytic_quadratic_solution,
    evaluate_parts,
    forward,
    frequency_filter,
    ipr,
    partition_curves,
    phase_error,
    phases,
    spectra_table,
    split_test_pairs,
)
from memlib.studies.modarith.runs import (
    _grid,
    _label_runs,
    _task,
    image_order,
    learning_order,
    main_key,
    minibatch_order,
    train_main,
    variant_parts,
    width_sweep,
)

__all__ = ["analyse_main", "main_analysis", "ANALYSIS", "analytic_check", "run", "planned_runs",
           "prefetch_runs"]


HALVES_STREAM = 7_000_003  # offsets a run's seed into the stream that splits its test pairs


def analyse_main(config: Config, main: dict) -> dict:
    """FF parts, phases, partitions and spectra of the main runs (pure: copies only)."""
    alphas, seeds = _grid(config.alphas, config.seeds)
    task, weights = _task(config, seeds), main["weights"]
    noisy, mask = main["noisy"], main["mask"]
    parts = _label_runs(evaluate_parts(weights, task, noisy, mask, config.eval_activations),
                        alphas, seeds)
    k, *_ = phases(weights)
    error = phase_error(weights, config.operation)
    phase = pd.DataFrame({"run": torch.arange(len(alphas)).repeat_interleave(k.shape[1]).tolist(),
                          "neuron": torch.arange(k.shape[1]).repeat(len(alphas)).tolist(),
                          "k": k.flatten().tolist(), "phase_error": error.flatten().tolist(),
                          "ipr": ipr(weights).flatten().tolist()})
    # each run's test halves drawn from a stream of its own seed (selection vs scoring)
    halves = split_test_pairs(task, [HALVES_STREAM + s for s in seeds])
    partition = _label_runs(partition_curves(
        weights, task, noisy, mask, config.partition_fractions, ("relu", "quadratic"), halves),
        alphas, seeds)
    noisiest = alphas.index(max(config.alphas))
    spectra = spectra_table(weights, noisiest, min(config.spectra_neurons, config.width))
    return {"parts": parts, "phase": _label_runs(phase, alphas, seeds), "partition": partition,
            "spectra": {**spectra, "alpha": alphas[noisiest]}}


def main_analysis(config: Config) -> dict:
    """The main runs' history and `analyse_main` of them, the analysis cached: a worker that
    trains the runs analyses them too, beside the other runs, rather than the notebook on one
    core after every worker is done. The runs are loaded outside the analysis's computation,
    so its stored cost is its own."""
    key = {**main_key(config), "eval_activations": list(config.eval_activations),
           "partition_fractions": list(config.partition_fractions),
           "spectra_neurons": config.spectra_neurons}
    main = train_main(config)
    return {"history": main["history"], **ANALYSIS.get(key, lambda: analyse_main(config, main))}


def analytic_check(config: Config) -> pd.DataFrame:
    """The hand-built x^2 solution: test accuracy (on the first seed's test pairs), and how
    much FF changes it."""
    task = _task(config, config.seeds[:1])
    test = task.test_idx[0]
    weights = analytic_quadratic_solution(config.p, config.operation)
    g, _ = frequency_filter(weights)
    rows = []
    for name, w in (("analytic", weights), ("FF(analytic)", g)):
        predicted = forward(w, task.pairs, "quadratic").argmax(-1)[0]
        rows.append({"net": name, "neurons": w["U"].shape[1],
                     "test_acc": (predicted[test] == task.labels[test])
                     .float().mean().item(),
                     "max_change_under_FF": max((g[n] - weights[n]).abs().max().item()
                                                for n in weights)})
    return pd.DataFrame(rows)


def run(config: Config) -> dict:
    """Every experiment of the study (each training cached), as tidy DataFrames."""
    prefetch_runs(config)
    images, image_note = image_order(config)
    return {**main_analysis(config), "order": learning_order(config),
            "minibatch": minibatch_order(config),
            "sweep": width_sweep(config), "images": images, "image_note": image_note,
            "analytic": analytic_check(config), "variants": variant_parts(config),
            "chance": chance(config)}


# --- which cached computations worker processes compute first ----------------------------


def planned_runs(config: Config) -> list[tuple[Callable, Config]]:
    """(study function, config) calls that together make every cached computation of `run`,
    independent of each other, one entry each (the image runs: all four of theirs), longest
    first (small scale, cold: the main runs 237 s and their analysis 35 s, the image runs
    41 s, a variant 33 s, an optimizer's learning order 20-38 s, the mini-batch learning
    order 37 s, a sweep net 14 s at the
    widest to 3 s). A config
    narrowed to one optimizer, variant or sweep net makes the entry that `config` makes for
    it: no key holds the lists it narrows."""
    order = [(learning_order, replace(config, order_optimizers=(opt,), order_lrs=(lr,),
                                      order_weight_decays=(wd,)))
             for opt, lr, wd in zip(config.order_optimizers, config.order_lrs,
                                    config.order_weight_decays, strict=True)]
    sweep = [(width_sweep, replace(config, sweep_widths=(width,), sweep_activations=(act,),
                                   sweep_weight_decays=(wd,)))
             for width in sorted(config.sweep_widths, reverse=True)
             for act in config.sweep_activations for wd in config.sweep_weight_decays]
    variants = [(variant_parts, replace(config, variants=(v,))) for v in config.variants]
    minibatch = [(minibatch_order, config)] if config.order_batch_size is not None else []
    return [(main_analysis, config), (image_order, config), *variants, *order, *minibatch,
            *sweep]


def prefetch_runs(config: Config) -> None:
    """Compute the planned runs missing from the cache `config.parallel_runs` at a time, in
    worker processes (one CPU thread each; nothing under torchrun), for `run` to load."""
    compute_missing(planned_runs(config), config.parallel_runs, "modarith runs")


ANALYSIS = inline("modarith-analysis", 1, main_analysis)
