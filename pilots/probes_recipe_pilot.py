"""Pilot that chose study 4's training recipe: `python pilots/probes_recipe_pilot.py` (a few
minutes on one CPU core) writes pilots/04_task_complexity_probes.csv, which notebook 04 names.

Each row is one setting of the learning rate and its warmup, one of the authors' four pairs
(MNIST as the data resolve to offline: mnist-5k) and one pilot seed (0-2): the unprobed test
accuracy, the binarized (sign W) accuracy at p = 0 and its maximum over p <= 0.7 when the
smallest weights are pruned first. The question: which recipe trains every run without
changing what the probes measure? With lr 0.01 from the first step (the authors' recipe) the
MNIST 7 / 9 run of seed 2 never trains. A lower rate trains it, but changes what binarization
does: at lr 0.003 the binarized Fashion-MNIST hard-pair models keep 82-96% instead of falling
to chance, at lr 0.001 every binarized model keeps its accuracy. A linear warmup of the same
rate over the first 5 steps trains every run and keeps the hard pairs' collapse (in two of
the three MNIST 7 / 9 runs); so the rate stays at 0.01 and the warmup is added.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import torch

from memlib import data
from memlib.studies import probes as P

OUT = Path(__file__).with_name("04_task_complexity_probes.csv")
SEEDS = [0, 1, 2]  # the pilot seeds, never the confirmatory ones
PAIRS = [("mnist", "hard"), ("mnist", "easy"), ("fashion_mnist", "hard"),
         ("fashion_mnist", "easy")]
SETTINGS = [("lr 0.01, no warmup (the authors)", 0.01, 0), ("lr 0.003, no warmup", 0.003, 0),
            ("lr 0.001, no warmup", 0.001, 0), ("lr 0.01, 5-step warmup", 0.01, 5),
            ("lr 0.01, 10-step warmup", 0.01, 10)]
LEVELS = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]


def rows_for(name: str, task: str) -> list[dict]:
    dataset = data.resolve(name)
    pair = P.AUTHORS_PAIRS[dataset][task]
    epochs = P.pair_epochs(dataset, 10, None)
    x, y = P.pair_data(dataset, pair, "train", None, seed=SEEDS[0])
    x_test, y_test = P.pair_data(dataset, pair, "test")
    model = P.make_mlp(64, "relu", 0)
    specs = [P.ProbeSpec("prune", "smallest", p, form) for p in LEVELS
             for form in ("float", "signed")]
    rows = []
    for setting, lr, warmup in SETTINGS:
        start = time.time()
        stacked = P.train_runs(x, y, SEEDS, 64, "relu", epochs, 128, lr,
                               desc=f"{dataset} {pair} {setting}", warmup_steps=warmup)
        for r, seed in enumerate(SEEDS):
            acc = P.sweep(model, P.run_params(stacked, r), x_test, y_test, specs)
            signed = acc[acc["form"] == "signed"]["acc"]
            rows.append({"setting": setting, "dataset": dataset, "task": task,
                         "pair": f"{pair[0]}/{pair[1]}", "seed": seed,
                         "float_acc": acc[(acc["form"] == "float") & (acc["level"] == 0)]
                         ["acc"].item(), "signed_p0": signed.iloc[0],
                         "signed_max": signed.max(), "seconds": round(time.time() - start, 1)})
    return rows


def main() -> None:
    torch.set_num_threads(1)
    rows = [row for name, task in PAIRS for row in rows_for(name, task)]
    table = pd.DataFrame(rows).round(2)
    OUT.write_text(table.to_csv(index=False))
    print(table.pivot_table(index=["dataset", "task", "seed"], columns="setting",
                            values="signed_p0").round(1))


if __name__ == "__main__":
    main()
