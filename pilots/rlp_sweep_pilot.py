"""Pilot that chose study 1's sweep grids on the SmallCNN: `python pilots/rlp_sweep_pilot.py`
writes pilots/01_random_label_heads_sweep.csv, which notebook 01 shows.

On pilot seed 0 (never confirmatory seeds), the small preset's SmallCNN (32/64/128
channels, 60 epochs, 40% label noise) trains without a regularizer, with the RLP
regularizer on its last block at each λ of LAST and on all blocks at each λ of ALL, and its
heads on frozen features give the baseline. Each row: train, test and validation accuracy,
the random-label accuracy per block, the fit epoch and the run's cold seconds. The grids'
question: which λ still trains (fits >= 90% of its noisy labels) and how far
each lowers the last block's random-label accuracy.
"""

from __future__ import annotations

from pathlib import Path

from memlib.runs import compute_missing
from memlib.studies import preset_config, rlp

OUT = Path(__file__).with_name("01_random_label_heads_sweep.csv")
SEEDS = (0,)
LAST, ALL = (3.0, 10.0), (1.0, 3.0)


def plan(config: rlp.Config) -> list[tuple]:
    calls = []
    for seed in SEEDS:
        calls += [(rlp.cached_run, rlp.spec(config, seed=seed)),
                  (rlp.cached_frozen, rlp.spec(config, seed=seed))]
        calls += [(rlp.cached_run, rlp.spec(config, seed=seed, lam=lam, regularize=where))
                  for where, grid in (("last", LAST), ("all", ALL)) for lam in grid]
    return calls


def main() -> None:
    import dataclasses

    import pandas as pd

    config = dataclasses.replace(preset_config("rlp", "small"), model="smallcnn", epochs=60,
                                 layer_models=("smallcnn",), seeds=SEEDS)
    calls = plan(config)
    compute_missing(calls, 2, "sweep pilot")
    rows = []
    for function, s in calls:
        result = function(s)
        last = result["history"].iloc[-1]
        row = {"run": "frozen init" if function is rlp.cached_frozen else
               "none" if s.lam == 0 else f"λ = {s.lam:g}, {s.regularize}", "seed": s.seed}
        for column in ("train_acc", "test_acc", "val_acc"):
            row[column] = round(float(last[column]), 3) if column in last else None
        row.update({k: round(float(v), 3) for k, v in last.items() if k.startswith("rlp_")})
        row["fit_epoch"] = result.get("fit_epoch")
        rows.append(row)
    table = pd.DataFrame(rows)
    table.to_csv(OUT, index=False)
    print(table.to_string())


if __name__ == "__main__":
    main()
