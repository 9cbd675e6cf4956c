"""The lens's experiment: the plan of its cached runs (the watched runs, study 1's
frozen-initialisation baselines and the measures over the watched runs) and `run(config)`,
tidy tables over datasets, noise rates and seeds."""

from __future__ import annotations

import pandas as pd

from memlib.runs import compute_missing
from memlib.studies import rlp
from memlib.studies.lens.config import (
    Config,
    LensMeasures,
    frozen_spec,
    lens_measures,
    study1_config,
)
from memlib.studies.lens.method import agreement, corruption_auroc
from memlib.studies.lens.runs import cached_lens, cached_measures

__all__ = ["planned_runs", "run", "watch"]


def _trainings(measures: list[LensMeasures], study1: rlp.Config) -> list[tuple]:
    """The watched runs, then the frozen-initialisation baselines they are compared with
    (study 1's)."""
    planned = [m.watched for m in measures]
    frozen = dict.fromkeys((rlp.cached_frozen, frozen_spec(r.run, study1)) for r in planned)
    return [(cached_lens, r) for r in planned] + list(frozen)


def planned_runs(config: Config) -> list[tuple]:
    """(cached computation, argument) of every cached result of `run`: the trainings, then
    the measures over the watched runs (which read what the runs stored)."""
    measures = lens_measures(config)
    return (_trainings(measures, study1_config(config))
            + [(cached_measures, m) for m in measures])


def run(config: Config) -> dict:
    """Every (dataset, noise, seed) run and its measures, cached; `parallel_runs` computed
    at once. Tidy tables with dataset, noise and seed columns."""
    return watch(lens_measures(config), study1_config(config), config.parallel_runs)


def watch(measures: list[LensMeasures], study1: rlp.Config, parallel_runs: int) -> dict:
    """The watched runs of `measures` and their measures, cached, `parallel_runs` computed at
    once, each compared with the frozen-initialisation baseline of `study1`'s settings
    (`frozen_spec`): tidy tables with dataset, noise and seed columns. The lens and
    `python -m memlib measure` (any model, any layers) both call it."""
    # the measures after every training: a worker would otherwise train a run a second time
    # for its measures while another worker still trains it
    compute_missing(_trainings(measures, study1), parallel_runs, "lens runs")
    compute_missing([(cached_measures, m) for m in measures], parallel_runs, "lens measures")
    planned, examples, layers, curves, summary = [], [], [], [], []
    for m in measures:
        r = m.watched
        s = r.run
        planned.append(r)
        label = {"dataset": s.dataset, "noise": s.noise, "seed": s.seed}
        result, scores = cached_lens(r), cached_measures(m)
        frozen_history = rlp.cached_frozen(frozen_spec(s, study1))["history"].set_index("epoch")
        # the heads on frozen features after as many epochs as the run trained
        baseline = frozen_history.loc[result["epochs_trained"]]
        examples.append(scores["examples"].assign(**label))
        layer = scores["layers"].assign(**label)
        layer["frozen_acc"] = [baseline[f"rlp_{n}"] for n in layer["layer"]]
        layer["excess"] = 100 * (layer["rlp_acc"] - layer["frozen_acc"])  # points
        layers.append(layer)
        curve = result["curves"].assign(**label)
        # the deepest head on frozen features at each epoch: what it learns by itself
        deepest = f"rlp_{result['layers'][-1]}"
        curve["frozen_deepest"] = frozen_history[deepest].reindex(curve["epoch"]).to_numpy()
        curves.append(curve)
        last = result["history"].iloc[-1]
        summary.append({**label, "train_acc": last["train_acc"], "test_acc": last["test_acc"],
                        "noisy_fit": result["noisy_fit"], "peak_epoch": result["peak_epoch"],
                        "epochs": result["epochs_trained"], "fit_epoch": result["fit_epoch"],
                        "chance": result["chance"]})
    examples = pd.concat(examples, ignore_index=True)
    by = ["dataset", "noise", "seed"]
    layers = pd.concat(layers, ignore_index=True)
    layers["drop_sign"] = layers["float"] - layers["sign"]
    layers["drop_scaled_sign"] = layers["float"] - layers["scaled_sign"]
    layers["gap_null_b"] = layers["float"] - layers["null_b"]
    layers["drop_pruned"] = layers["float"] - layers["pruned"]
    return {"runs": pd.DataFrame(summary), "examples": examples, "layers": layers,
            "curves": pd.concat(curves, ignore_index=True),
            "agreement": agreement(examples, by), "auroc": corruption_auroc(examples, by),
            "specs": planned}
