"""Time the full Fig. 1 probe grid on one trained MLP over the whole test split.

Every probe (prune, flip, noise) x every mode x every level x float/signed(/scaled) of the
default (small) grid is evaluated on the 2000 test images of the hard Fashion-MNIST pair,
once with memlib.studies.probes.sweep (batched over variants with vmap) and once with a plain
PyTorch loop (one model copy per variant, loaded and evaluated batch by batch). Prints the
speedup, the evaluations per second and, last, `grid seconds: X` (target X <= 10 on 2 cores).

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/probes_sweep.py
"""

from __future__ import annotations

import copy
import time

import torch

from memlib.seed import generator
from memlib.studies import probes


def plain_grid(model, params, x, y, specs, batch_size=500):
    """The baseline: one copy of the model per variant, evaluated with an ordinary loop."""
    gen = generator(0)
    names = list(params)
    accuracies = []
    with torch.no_grad():
        for spec in specs:
            probed = copy.deepcopy(model)
            noisy = spec.probe == "noise"
            if not noisy:
                probed.load_state_dict(probes.probe_params(params, names, spec, gen))
            correct = 0
            for start in range(0, len(y), batch_size):
                if noisy:  # noise is redrawn for every evaluation batch
                    probed.load_state_dict(probes.probe_params(params, names, spec, gen))
                logits = probed(x[start:start + batch_size])
                correct += int((logits.argmax(1) == y[start:start + batch_size]).sum())
            accuracies.append(100.0 * correct / len(y))
    return accuracies


def main():
    torch.manual_seed(0)
    config = probes.Config()
    pair = probes.AUTHORS_PAIRS["fashion_mnist"]["hard"]
    x_train, y_train = probes.pair_data("fashion_mnist", pair, "train", per_class=2000)
    stacked = probes.train_runs(x_train, y_train, [0], config.width, config.activation,
                                epochs=3, batch_size=128, lr=config.lr)
    params = probes.run_params(stacked, 0)
    model = probes.make_mlp(config.width, config.activation, 0)
    x, y = probes.pair_data("fashion_mnist", pair, "test")
    specs = probes.fig1_grid(config)
    print(f"{len(specs)} probe variants x {len(y)} test images, {torch.get_num_threads()} threads")

    probes.sweep(model, params, x[:500], y[:500], specs[:8])  # warm-up
    start = time.perf_counter()
    table = probes.sweep(model, params, x, y, specs, batch_size=config.eval_batch_size)
    grid_seconds = time.perf_counter() - start

    start = time.perf_counter()
    plain = plain_grid(model, params, x, y, specs, config.eval_batch_size)
    plain_seconds = time.perf_counter() - start
    static = table["probe"] != "noise"
    same = (table.loc[static, "acc"].round(6) == [round(a, 6) for a, s in zip(
        plain, static, strict=True) if s]).all()
    print(f"plain loop: {plain_seconds:.2f} s; static probes agree with memlib: {bool(same)}")
    print(f"speedup: {plain_seconds / grid_seconds:.2f}")
    print(f"evaluations per second: {len(specs) / grid_seconds:.1f}")
    print(f"grid seconds: {grid_seconds:.2f}")


if __name__ == "__main__":
    main()
