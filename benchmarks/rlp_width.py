"""What a narrower SmallCNN would save study 1's small run: one training epoch of the small
recipe (1,000 images of 28x28, batches of 64, fused Adam, channels-last convolutions, an RLP
head per block, λ = 3 at the last) with the preset's 32/64/128 channels (the plain baseline)
and with 16/32/64, on one CPU thread as each of the notebook's runs trains, best of
`--repeats`, alternating, in one process. Random images stand in for Fashion-MNIST (the
cost does not depend on the pixels). The narrower network is a different recipe: what it
memorizes would need its own pilot before any registered run used it.

Last line: `width speedup: X` = 32/64/128 seconds / 16/32/64 seconds.

    python benchmarks/rlp_width.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import memlib  # noqa: F401  before torch (imported where used): it pins the CPU dispatch

LAYERS = ("block1", "block2", "block3")
WIDTHS = {"32/64/128 (the small preset)": (32, 64, 128), "16/32/64": (16, 32, 64)}


def epoch_seconds(channels, x, y, r) -> float:
    import torch

    from memlib.models import SmallCNN
    from memlib.studies import rlp
    from memlib.train import TensorBatches, TrainSpec, make_optimizers, train

    torch.manual_seed(0)
    spec = TrainSpec(epochs=1, batch_size=64, optimizer="adam", lr=2e-3, channels_last=True,
                     fused=True, device="cpu")
    model = SmallCNN(1, 10, channels=channels)
    heads = rlp.RLPHeads(rlp.feature_dims(model, LAYERS, x[:2]), 10, project=32)
    optimizers = make_optimizers([*model.parameters(), *heads.parameters()], spec)
    start = time.perf_counter()
    train(model, TensorBatches(x, y, spec.batch_size), spec,
          step=rlp.rlp_step(heads, r, lam=3.0, reg_layers=LAYERS[-1:]), optimizers=optimizers,
          modules={"heads": heads})
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
    r = rlp.random_labels(1000, 10, seed=1)
    best = {name: float("inf") for name in WIDTHS}
    for channels in WIDTHS.values():  # warm-up
        epoch_seconds(channels, x, y, r)
    for _ in range(args.repeats):
        for name, channels in WIDTHS.items():
            best[name] = min(best[name], epoch_seconds(channels, x, y, r))
    for name, seconds in best.items():
        print(f"SmallCNN {name}: {seconds:.2f} s per epoch, {60 * seconds:.0f} s per 60-epoch run")
    wide, narrow = best.values()
    print(f"width speedup: {wide / narrow:.2f}")


if __name__ == "__main__":
    main()
