"""Pilot that chose study 1's default setting: `python pilots/rlp_pilot.py` (about 12 minutes
on one CPU core) writes pilots/01_random_label_heads.csv, which notebook 01 shows. Rows
already in the file are kept (a resumed or extended pilot reruns only what is new); `--all`
reruns every row.

Each row is one training run of the default model (seed 0) with one setting changed: train
accuracy, fit of the flipped labels, per-layer random-label accuracy of the trained network
and of the frozen-initialisation baseline, each layer's within/between-class variance ratio,
and seconds. The targets: train accuracy >= 99% with >= 95% of flipped labels
fitted, and a trained-minus-frozen excess >= 10 points at some layer.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pandas as pd

from memlib.config import build
from memlib.process import atomic_write_bytes
from memlib.studies import rlp

OUT = Path(__file__).with_name("01_random_label_heads.csv")
# the settings tried, in order; each changes the one before it (or the start)
START = dict(dataset="fashion_mnist", train_samples=4000, test_samples=1000,
             widths=[128] * 4, epochs=20, batch_size=128, lr=2e-3, head_lr=1e-2,
             schedule="constant", noise=0.0, layer_models=["mlp"], seeds=[0], measure_every=5)
STEPS = [
    ("previous default (4k samples, 4x128, 20 epochs)", {}),
    ("1k samples, 4x256, 60 epochs, lr 1e-3", dict(train_samples=1000, widths=[256] * 4,
                                                    epochs=60, lr=1e-3)),
    ("+ 40% label noise", dict(noise=0.4)),
    ("+ head with a hidden layer (256)", dict(head_hidden=256)),
    ("2k samples, cosine LR, 100 epochs", dict(head_hidden=0, train_samples=2000,
                                                epochs=100, schedule="cosine")),
    ("+ 80% label noise", dict(noise=0.8)),
    ("4x512, 1k samples, 40% noise", dict(noise=0.4, train_samples=1000, widths=[512] * 4)),
    ("6x256 (deeper)", dict(widths=[256] * 6)),
    ("+ no label noise", dict(noise=0.0)),
    ("6x256, 40% noise, batch 64, lr 2e-3, head LR 3e-2, 150 epochs",
     dict(noise=0.4, batch_size=64, lr=2e-3, head_lr=3e-2, epochs=150)),
    ("+ head LR 1e-1", dict(head_lr=1e-1)),
    ("+ 5 random classes (head LR 3e-2)", dict(head_lr=3e-2, n_random=5)),
    ("+ 500 samples, batch 32", dict(n_random=None, train_samples=500, batch_size=32)),
    ("8x256, 1k samples, batch 64", dict(train_samples=1000, batch_size=64, widths=[256] * 8)),
    ("SmallCNN 32/64/128, 40 epochs, 40% noise (6x256 settings otherwise)",
     dict(widths=[256] * 6, model="smallcnn", layer_models=["smallcnn"],
          cnn_channels=[32, 64, 128], epochs=40)),
]


def pilot_row(name: str, params: dict) -> dict:
    s = rlp.spec(build(rlp.Config, params))
    start = time.time()
    result = rlp.train_run(s)
    seconds = time.time() - start
    frozen = rlp.frozen_baseline(s)
    last, base = result["history"].iloc[-1], frozen["history"].iloc[-1]
    layers = result["layers"]
    excess = [last[f"rlp_{n}"] - base[f"rlp_{n}"] for n in layers]
    return {"setting": name, "train_acc": round(last["train_acc"], 3),
            "flipped_fit": None if result["noisy_fit"] is None else round(result["noisy_fit"], 3),
            "test_acc": round(last["test_acc"], 3),
            "rlp": json.dumps([round(last[f"rlp_{n}"], 3) for n in layers]),
            "frozen": json.dumps([round(base[f"rlp_{n}"], 3) for n in layers]),
            "max_excess": round(max(excess), 3),
            "collapse": json.dumps([round(v, 2) for v in result["collapse"].values()]),
            "seconds": round(seconds, 1)}


def main() -> int:
    done = {}
    if OUT.exists() and "--all" not in sys.argv:
        done = {row["setting"]: row for row in pd.read_csv(OUT).to_dict("records")}
    params, rows = dict(START), []
    for name, change in STEPS:
        params = {**params, **change}
        params = {k: v for k, v in params.items() if v is not None}
        rows.append(done.get(name) or pilot_row(name, params))
        print(json.dumps(rows[-1], default=str), flush=True)
    atomic_write_bytes(OUT, pd.DataFrame(rows).to_csv(index=False).encode())
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
