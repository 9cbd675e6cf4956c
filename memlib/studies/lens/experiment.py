"""The lens's experiment: the plan of its cached runs (the watched runs and study 1's
frozen-initialisation baselines) and `run(config)`, tidy tables over datasets, noise rates
and seeds."""

from __future__ import annotations

import pandas as pd

from memlib.runs import compute_missing
from memlib.studies import rlp
from memlib.studies.lens.config import Config, frozen_spec, lens_runs, study1_config
from memlib.studies.lens.method import agreement, corruption_auroc
from memlib.studies.lens.runs import cached_lens

__all__ = ["planned_runs", "run"]


def planned_runs(config: Config) -> list[tuple]:
    """(cached computation, argument) of every cached result of `run`: the watched runs,
    then the frozen-initialisation baselines they are compared with (study 1's)."""
    planned, study1 = lens_runs(config), study1_config(config)
    frozen = dict.fromkeys((rlp.cached_frozen, frozen_spec(r.run, study1)) for r in planned)
    return [(cached_lens, r) for r in planned] + list(frozen)


def run(config: Config) -> dict:
    """Every (dataset, noise, seed) run, cached; `parallel_runs` computed at once. Tidy
    tables with dataset, noise and seed columns."""
    planned, study1 = lens_runs(config), study1_config(config)
    compute_missing(planned_runs(config), config.parallel_runs, "lens runs")
    examples, layers, curves, summary = [], [], [], []
    for r in planned:
        s = r.run
        label = {"dataset": s.dataset, "noise": s.noise, "seed": s.seed}
        result = cached_lens(r)
        frozen_history = rlp.cached_frozen(frozen_spec(s, study1))["history"].set_index("epoch")
        # the heads on frozen features after as many epochs as the run trained
        baseline = frozen_history.loc[result["epochs_trained"]]
        examples.append(result["examples"].assign(**label))
        layer = result["layers"].assign(**label)
        layer["frozen_acc"] = [baseline[f"rlp_{n}"] for n in layer["layer"]]
        layer["excess"] = 100 * (layer["rlp_acc"] - layer["frozen_acc"])  # points
        layers.append(layer)
        curve = result["curves"].assign(**label)
        # the deepest head on frozen features at each epoch: what it learns by itself
        deepest = f"rlp_{result['layers']['layer'].iloc[-1]}"
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
    return {"runs": pd.DataFrame(summary), "examples": examples, "layers": layers,
            "curves": pd.concat(curves, ignore_index=True),
            "agreement": agreement(examples, by), "auroc": corruption_auroc(examples, by),
            "specs": planned}
