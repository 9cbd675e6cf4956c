"""What K online random-label heads per layer cost study 1's small recipe: one training epoch
(1,000 images of 28x28, batches of 64, fused Adam, channels-last convolutions, the heads on
every block of the 32/64/128 SmallCNN and the capacity-matched projected heads, λ = 3 at the
last block) plus one eval-mode measurement of the heads on the 1,000 training images, with
one head per layer (the plain baseline, the paper's single head) and with four, on one CPU
thread as each of the notebook's runs trains, best of `--repeats`, alternating, in one
process. Random images stand in for Fashion-MNIST (the cost does not depend on the pixels).

Last line: `heads cost ratio: X` = seconds with K = 4 / seconds with K = 1.

    python benchmarks/rlp_heads.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import memlib  # noqa: F401  before torch (imported where used): it pins the CPU dispatch

LAYERS = ("block1", "block2", "block3")
HEADS = (1, 4)


def epoch_seconds(k: int, x, y, labels) -> float:
    import torch

    from memlib.models import SmallCNN
    from memlib.studies import rlp
    from memlib.train import TensorBatches, TrainSpec, make_optimizers, train

    torch.manual_seed(0)
    spec = TrainSpec(epochs=1, batch_size=64, optimizer="adam", lr=2e-3, channels_last=True,
                     fused=True, device="cpu")
    model = SmallCNN(1, 10, channels=(32, 64, 128))
    heads = rlp.RLPHeads(rlp.feature_dims(model, LAYERS, x[:2]), 10, project=32, k=k)
    r = labels[:, :k]
    optimizers = make_optimizers([*model.parameters(), *heads.parameters()], spec)
    start = time.perf_counter()
    train(model, TensorBatches(x, y, spec.batch_size), spec,
          step=rlp.rlp_step(heads, r, lam=3.0, reg_layers=LAYERS[-1:]), optimizers=optimizers,
          modules={"heads": heads})
    rlp.measure(model, heads, (x, y), r)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    import torch

    from memlib.studies import rlp

    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    x = torch.rand(1000, 1, 28, 28, generator=g)
    y = torch.randint(0, 10, (1000,), generator=g)
    labels = rlp.head_labels(1000, 10, seed=1, heads=max(HEADS))
    best = {k: float("inf") for k in HEADS}
    for k in HEADS:  # warm-up
        epoch_seconds(k, x, y, labels)
    for _ in range(args.repeats):
        for k in HEADS:
            best[k] = min(best[k], epoch_seconds(k, x, y, labels))
    for k, seconds in best.items():
        print(f"K = {k} heads per layer: {seconds:.2f} s per epoch (training + one measurement)")
    print(f"heads cost ratio: {best[HEADS[-1]] / best[HEADS[0]]:.2f}")


if __name__ == "__main__":
    main()
