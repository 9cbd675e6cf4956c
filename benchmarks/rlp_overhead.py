"""Cost of RLP heads per training step: SmallCNN with one linear RLP head per probed layer and
λ > 0 at every head, against a plain cross-entropy step (same process, same data).

Both run through memlib.train; each is timed several times, alternating, and the fastest
run of each is kept, to damp the noise of a shared machine. Last line:
`overhead ratio: X` (target <= 1.5).
"""

from __future__ import annotations

import argparse
import time

import torch

from memlib.models import SmallCNN
from memlib.studies import rlp
from memlib.train import TensorBatches, TrainSpec, make_optimizers, train

LAYERS = ("block1", "block2", "block3")


def plain(x, y, r, spec):
    torch.manual_seed(0)
    model = SmallCNN(1, 10, channels=(16, 32, 64))
    start = time.perf_counter()
    train(model, TensorBatches(x, y, spec.batch_size), spec)
    return time.perf_counter() - start


def with_heads(x, y, r, spec):
    torch.manual_seed(0)
    model = SmallCNN(1, 10, channels=(16, 32, 64))
    heads = rlp.RLPHeads(rlp.feature_dims(model, LAYERS, x), 10)
    optimizers = make_optimizers([*model.parameters(), *heads.parameters()], spec)
    start = time.perf_counter()
    train(model, TensorBatches(x, y, spec.batch_size), spec,
          step=rlp.rlp_step(heads, r, lam=10.0, reg_layers=LAYERS), optimizers=optimizers)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    g = torch.Generator().manual_seed(0)
    x = torch.rand(args.samples, 1, 28, 28, generator=g)
    y = torch.randint(0, 10, (args.samples,), generator=g)
    r = rlp.random_labels(args.samples, 10, seed=1)
    spec = TrainSpec(epochs=1, batch_size=args.batch, device="auto")
    plain(x, y, r, spec), with_heads(x, y, r, spec)  # warm-up
    base, ours = [], []
    for _ in range(args.repeats):
        base.append(plain(x, y, r, spec))
        ours.append(with_heads(x, y, r, spec))
    steps = -(-args.samples // args.batch)
    print(f"smallcnn plain: {min(base) / steps * 1e3:.2f} ms/step")
    per_step = min(ours) / steps * 1e3
    print(f"smallcnn + {len(LAYERS)} RLP heads, λ > 0 at all: {per_step:.2f} ms/step")
    print(f"overhead ratio: {min(ours) / min(base):.3f}")


if __name__ == "__main__":
    main()
