"""Runs per second of the batched modular-arithmetic trainer vs a loop of single runs.

Both train 8 seeds of the two-layer net (P = 59, M = 513, AdamW, full batch, alpha = 0.5)
for the same number of steps in this process. The baseline is the plain PyTorch way: one
model per seed with one-hot inputs through nn.Linear(2P, M, bias=False), ReLU and
nn.Linear(M, P), trained one after the other. The batched trainer is
`memlib.studies.modarith.train_runs` (memlib.train loop, all 8 runs in one set of batched matmuls,
embedding gathers instead of one-hot matmuls), including its evaluation at the first and last
epoch. Usage: python benchmarks/modarith_train.py [steps]
"""

from __future__ import annotations

import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

from memlib.studies import modarith as ma
from memlib.train import TrainSpec

P, WIDTH, SEEDS, ALPHA = 59, 513, list(range(8)), 0.5


def plain_loop(task: ma.Task, noisy: torch.Tensor, steps: int) -> None:
    pairs = task.pairs[task.train_idx]
    x = torch.cat([F.one_hot(pairs[:, 0], P), F.one_hot(pairs[:, 1], P)], 1).float()
    for seed, labels in zip(SEEDS, noisy, strict=True):
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(2 * P, WIDTH, bias=False), nn.ReLU(), nn.Linear(WIDTH, P))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
        for _ in range(steps):
            loss = F.cross_entropy(model(x), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()


def batched(task: ma.Task, steps: int) -> dict:
    spec = TrainSpec(epochs=steps, batch_size=None, optimizer="adamw", lr=1e-3,
                     weight_decay=0.1)
    return ma.train_runs(task, [ALPHA] * len(SEEDS), SEEDS, WIDTH, spec, log_every=steps)


def main(steps: int = 30) -> float:
    task = ma.make_task(P)
    noisy = batched(task, 1)["noisy"]  # warm-up; the same noisy labels for the baseline
    timings = {}
    for name, fn in (("loop of single runs (plain PyTorch)", lambda: plain_loop(task, noisy,
                                                                                   steps)),
                     ("batched trainer (memlib.studies.modarith)", lambda: batched(task, steps))):
        start = time.perf_counter()
        fn()
        timings[name] = time.perf_counter() - start
        rate = len(SEEDS) / timings[name]
        print(f"{name}: {timings[name]:.2f} s for {len(SEEDS)} runs x {steps} steps "
              f"({rate * steps:.1f} run-steps/s)")
    base, ours = timings.values()
    print(f"threads: {torch.get_num_threads()}, P = {P}, M = {WIDTH}")
    speedup = base / ours
    print(f"speedup: {speedup:.2f}")
    return speedup


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
