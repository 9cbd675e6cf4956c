"""Pilot of study 1's post-hoc random-label probes, on clean labels: `python
pilots/rlp_probe_pilot.py` (about 9 CPU-minutes on one core) writes
pilots/01_random_label_heads_probes.csv, which pilots/rlp_probe_pilot.md reads and
pilots/rlp_power.py turns into each rule's confirmatory n.

Pilot seeds 0-2 only. The real small setup (SmallCNN 32/64/128, 1k Fashion-MNIST training
images), shortened to 20 epochs where the small run trains 60: on a machine shared by six
processes the pilot got about a third of a core, so its arms were sized to finish within the
hour it had (it used 530 CPU-seconds of its 30-minute budget). Arms: clean labels at λ = 0
(measured every 2 epochs: the time course) and at λ = 3 (last-layer regularization); clean
labels for the small run's 60 epochs, and on 250 images for 60 epochs (measured at the end);
40% label noise at λ = 0. Every run stores its features pooled on a 2x2 grid; the probe
variants read them as they are ("grid2") or averaged over the grid ("gap", global average
pooling, the concurrent heads' input).

Rows (long format): arm, seed, variant, probe (0..K-1, or "mean" over the K probes),
quantity, value. Quantities: per layer the trained and frozen-initialisation probe accuracy
at the last epoch, block3's trained accuracy at every measured epoch of the clean λ = 0 arm,
the concurrent head's accuracy (variant "head"), test accuracy on the 10,000-image test split
and on a stratified 1,000-image subset of it (variant "test"), train accuracy and seconds.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pandas as pd
import torch

import memlib  # noqa: F401  (pins the CPU dispatch)
from memlib import data as datasets
from memlib.process import one_cpu_thread
from memlib.studies import rlp

OUT = Path(__file__).with_name("01_random_label_heads_probes.csv")
SEEDS = (0, 1, 2)
EPOCHS = 20
K = 8
ARMS = {"clean": dict(noise=0.0, lam=0.0, measure_every=2),
        "clean_lam3": dict(noise=0.0, lam=3.0, measure_every=EPOCHS),
        # does longer training give the clean-label excess that 20 epochs lack?
        "clean_60ep": dict(noise=0.0, lam=0.0, measure_every=60, epochs=60),
        # does a smaller training set (250 images, 60 epochs) give it?
        "clean_250": dict(noise=0.0, lam=0.0, measure_every=60, epochs=60,
                          train_samples=250),
        # the regime where the deepest layer had an excess: 40% label noise
        "noisy": dict(noise=0.4, lam=0.0, measure_every=EPOCHS)}
VARIANTS = ("gap", "grid2")


def gap(features: torch.Tensor) -> torch.Tensor:
    """Global average pooling of grid-2 features (channel-major, 4 cells per channel)."""
    return features.float().view(len(features), -1, 4).mean(-1)


def rows_of(arm: str, seed: int, result: dict, seconds: float) -> list[dict]:
    base = dict(arm=arm, seed=seed)
    last = result["history"].iloc[-1]
    out = [dict(base, variant="run", probe="mean", quantity="train_acc",
                value=last["train_acc"]),
           dict(base, variant="run", probe="mean", quantity="seconds", value=seconds)]
    pred, y = result["test_pred"].long(), result["test_y"].long()
    subset = datasets.stratified_subset(y, count=1000, seed=0)
    out += [dict(base, variant="test", probe="mean", quantity="test_acc_10k",
                 value=float((pred == y).double().mean())),
            dict(base, variant="test", probe="mean", quantity="test_acc_1k",
                 value=float((pred[subset] == y[subset]).double().mean()))]
    for n in result["layers"]:
        out.append(dict(base, variant="head", probe="mean", quantity=f"trained_{n}",
                        value=last[f"rlp_{n}"]))
    if arm == "clean":  # the curves: train/test accuracy per measured epoch
        for _, h in result["history"].iterrows():
            e = int(h["epoch"])
            out += [dict(base, variant="run", probe="mean", quantity=f"train_acc@{e}",
                         value=h["train_acc"]),
                    dict(base, variant="run", probe="mean", quantity=f"test_acc@{e}",
                         value=h["test_acc"])]
    spec = rlp.ProbeSpec(_run_of(seed), K, 30, 1e-2, 128)
    for variant in VARIANTS:
        features = {e: {n: (gap(f) if variant == "gap" else f) for n, f in layer.items()}
                    for e, layer in result["features"].items()}
        t = time.process_time()
        probes = rlp.posthoc_probes({**result, "features": features}, spec)
        out.append(dict(base, variant=variant, probe="mean", quantity="probe_seconds",
                        value=time.process_time() - t))
        final = max(probes["trained"])
        for n, accs in probes["frozen"].items():
            out += [dict(base, variant=variant, probe=j, quantity=f"frozen_{n}", value=a)
                    for j, a in enumerate(accs)]
        for e, layer in probes["trained"].items():
            for n, accs in layer.items():
                name = f"trained_{n}" if e == final else f"trained_{n}@{e}"
                out += [dict(base, variant=variant, probe=j, quantity=name, value=a)
                        for j, a in enumerate(accs)]
    return out


def _run_of(seed: int):
    return rlp.spec(rlp.Config(seeds=(seed,)), seed=seed)


def main() -> int:
    one_cpu_thread()
    done = pd.read_csv(OUT) if OUT.exists() else pd.DataFrame(columns=["arm", "seed"])
    have = set(zip(done["arm"], done["seed"]))
    rows = [done]
    for arm, settings in ARMS.items():
        for seed in SEEDS:
            if (arm, seed) in have:
                continue
            config = rlp.Config(noise=settings["noise"], seeds=(seed,),
                                epochs=settings.get("epochs", EPOCHS),
                                train_samples=settings.get("train_samples", 1000),
                                measure_every=settings["measure_every"], feature_grid=2)
            s = rlp.spec(config, lam=settings["lam"], seed=seed)
            t = time.process_time()
            result = rlp.train_run(s)
            seconds = time.process_time() - t
            rows.append(pd.DataFrame(rows_of(arm, seed, result, seconds)))
            pd.concat(rows, ignore_index=True).to_csv(OUT, index=False)
            print(arm, seed, f"{seconds:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
