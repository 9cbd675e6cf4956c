# ruff: noqa: I001
"""What study 1's small recipe gains from its three speed choices, each against the plain way
in the same process (one CPU thread, the pinned instruction set, best of 3 alternating):

1. the SmallCNN's training step with channels-last convolutions vs the default NCHW layout;
2. the 6x256 MLP's training step with fused Adam vs torch's per-operation Adam;
3. an epoch's training-set measurements on the MLP: the fit from one pass at the measured
   epochs (every 5), shared with the other training-set scores, vs the fit measured every
   epoch with its own passes (all samples, then the flipped ones) and the clean labels in a
   pass of their own.

Last line: `run speedup: X`, the estimated speedup of a 150-epoch MLP run (target >= 1.2).
Usage: python benchmarks/rlp_recipe.py
"""

from __future__ import annotations

import time

import memlib  # noqa: F401  (first: it pins the instruction set before torch starts)
import torch
import torch.nn.functional as F

from memlib.studies import rlp
from memlib.models import build
from memlib.seed import seed_everything

EVERY = 5


def best(fn, repeats: int = 3) -> float:
    return min(fn() for _ in range(repeats))


def steps(model, optimizer, x, y, n: int = 20) -> float:
    for _ in range(3):  # warm-up
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    start = time.perf_counter()
    for _ in range(n):
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    return (time.perf_counter() - start) / n


def cnn_step(channels_last: bool) -> float:
    seed_everything(0)
    model = build("smallcnn", 10, (1, 28, 28), channels=(32, 64, 128))
    x, y = torch.randn(64, 1, 28, 28), torch.randint(0, 10, (64,))
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    return steps(model, torch.optim.Adam(model.parameters(), lr=2e-3), x, y)


def mlp(fused: bool):
    seed_everything(0)
    model = build("mlp", 10, (1, 28, 28), widths=(256,) * 6)
    return model, torch.optim.Adam(model.parameters(), lr=2e-3, fused=fused)


def mlp_step(fused: bool) -> float:
    model, optimizer = mlp(fused)
    return steps(model, optimizer, torch.randn(64, 1, 28, 28), torch.randint(0, 10, (64,)))


def measurements(one_pass: bool) -> float:
    """Seconds of training-set measurement per epoch, averaged over EVERY epochs."""
    model, _ = mlp(False)
    x, y, clean = torch.randn(1000, 1, 28, 28), torch.randint(0, 10, (1000,)), \
        torch.randint(0, 10, (1000,))
    flipped = y != clean
    start = time.perf_counter()
    for epoch in range(1, EVERY + 1):
        if one_pass:
            if epoch % EVERY == 0:
                rlp.measure(model, None, (x, y), labels={
                    "clean": clean, "flipped": torch.where(flipped, y, -1)})
        else:
            rlp.measure(model, None, (x, y))
            rlp.measure(model, None, (x[flipped], y[flipped]))
            if epoch % EVERY == 0:
                rlp.measure(model, None, (x, y))
                rlp.measure(model, None, (x, clean))
    return (time.perf_counter() - start) / EVERY


def main() -> None:
    torch.set_num_threads(1)
    cnn = {cl: best(lambda cl=cl: cnn_step(cl)) for cl in (False, True)}
    adam = {f: best(lambda f=f: mlp_step(f)) for f in (False, True)}
    meas = {o: best(lambda o=o: measurements(o)) for o in (False, True)}
    print(f"SmallCNN step: NCHW {cnn[False] * 1e3:.1f} ms, channels-last "
          f"{cnn[True] * 1e3:.1f} ms; speedup {cnn[False] / cnn[True]:.2f}")
    print(f"MLP step: Adam {adam[False] * 1e3:.2f} ms, fused Adam {adam[True] * 1e3:.2f} ms; "
          f"speedup {adam[False] / adam[True]:.2f}")
    print(f"MLP training-set measurements per epoch: every epoch {meas[False] * 1e3:.1f} ms, "
          f"one pass every {EVERY} {meas[True] * 1e3:.1f} ms; "
          f"speedup {meas[False] / meas[True]:.2f}")
    steps_per_epoch = 16  # 1,000 samples in batches of 64
    before = steps_per_epoch * adam[False] + meas[False]
    after = steps_per_epoch * adam[True] + meas[True]
    print(f"run speedup: {before / after:.2f}")


if __name__ == "__main__":
    main()
