"""Would a cheaper SmallCNN recipe still memorize 40% label noise? `python
pilots/rlp_capacity_pilot.py` (about 6 minutes on 2 cores) writes
pilots/01_random_label_heads_capacity.csv.

Notebook 01 takes about 40 minutes cold on 2 cores, against a budget of 15; its label-noise
arm (2 rates x 4 λ x 5 seeds) is half of that. A narrower network or fewer epochs would pay
for it, but only if the runs still fit their noisy labels: the noise rows compare networks
that have memorized them (the declared fit: 99% train accuracy, 95% of the flipped labels).
Each row: one run of the noise arm's hardest setting (40% noise, measured at its last epoch
as the arm's runs are) at λ = 0 and at the grid's largest λ = 10, seeds 600 and 601 (pilot
seeds, already used), with the preset's 32/64/128 channels or 16/32/64, for 60 epochs (the
preset) or 40; `seconds` is its training time, on one thread beside one other run, as the
notebook's two workers train.
"""

from __future__ import annotations

import itertools
import time
from multiprocessing import get_context
from pathlib import Path

import memlib  # noqa: F401  before torch (imported where used): it pins the CPU dispatch

OUT = Path(__file__).with_name("01_random_label_heads_capacity.csv")
CHANNELS = ((32, 64, 128), (16, 32, 64))
EPOCHS = (60, 40)
LAMBDAS = (0.0, 10.0)
SEEDS = (600, 601)
NOISE = 0.4


def fit_of(job: tuple) -> dict:
    import torch

    from memlib.studies import rlp
    from memlib.studies.rlp.experiment import noise_spec

    torch.set_num_threads(1)
    channels, epochs, lam, seed = job
    config = rlp.Config(cnn_channels=channels, epochs=epochs)
    start = time.perf_counter()
    out = rlp.train_run(noise_spec(config, NOISE, lam, seed))
    last = out["history"].iloc[-1]
    fits = (last["train_acc"] >= config.fit_train_acc
            and out["noisy_fit"] >= config.fit_flipped_acc)
    return {"channels": "/".join(map(str, channels)), "epochs": epochs, "lam": lam,
            "seed": seed, "seconds": round(time.perf_counter() - start, 1),
            "train_acc": round(float(last["train_acc"]), 4),
            "flipped_fit": round(float(out["noisy_fit"]), 4),
            "test_acc": round(float(last["test_acc"]), 4), "fits": bool(fits)}


def main() -> None:
    import pandas as pd

    jobs = list(itertools.product(CHANNELS, EPOCHS, LAMBDAS, SEEDS))
    with get_context("spawn").Pool(2) as pool:
        rows = pool.map(fit_of, jobs, chunksize=1)
    table = pd.DataFrame(rows)
    table.to_csv(OUT, index=False)
    summary = table.groupby(["channels", "epochs", "lam"], sort=False).agg(
        seconds=("seconds", "mean"), train_acc=("train_acc", "mean"),
        flipped_fit=("flipped_fit", "mean"), fits=("fits", "sum"))
    print(summary.to_string())
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
