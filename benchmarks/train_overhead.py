"""Per-step overhead of memlib.train over a hand-written PyTorch loop (same process, same data).

Both loops produce the same thing, trained weights and the mean training loss per
epoch (the hand-written loop sums `loss.item()`, as such loops do for logging).
Prints one ratio per model and, last, `overhead ratio: X` = the worst of them
(target <= 1.10). Each loop is timed several times, alternating, and the fastest
run of each is kept, to damp the noise of a shared machine.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

from memlib.models import MLP, SmallCNN
from memlib.train import TensorBatches, TrainSpec, train


def plain_loop(model, x, y, epochs, batch_size, lr):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(0)
    model.train()
    epoch_losses = []
    for _ in range(epochs):
        total, steps = 0.0, 0
        order = torch.randperm(len(y), generator=generator)
        for start in range(0, len(y), batch_size):
            idx = order[start:start + batch_size]
            loss = F.cross_entropy(model(x[idx]), y[idx])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total, steps = total + loss.item(), steps + 1
        epoch_losses.append(total / steps)
    return epoch_losses


def memlib_loop(model, x, y, epochs, batch_size, lr):
    train(model, TensorBatches(x, y, batch_size), TrainSpec(epochs=epochs, lr=lr,
                                                            batch_size=batch_size))


def best_time(fn, make_model, x, y, repeats, **kwargs) -> float:
    times = []
    for _ in range(repeats):
        model = make_model()
        start = time.perf_counter()
        fn(model, x, y, **kwargs)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=4096)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(0)
    x = torch.rand(args.samples, 1, 28, 28)
    y = torch.randint(0, 10, (args.samples,))
    cases = {
        "mlp": lambda: MLP(784, (256, 256), 10),
        "smallcnn": lambda: SmallCNN(1, 10, channels=(16, 32, 64)),
    }
    worst = 0.0
    for name, make_model in cases.items():
        kwargs = dict(epochs=args.epochs, batch_size=args.batch, lr=1e-3)
        best_time(plain_loop, make_model, x, y, 1, **kwargs)  # warm-up
        plain, ours = [], []
        for _ in range(args.repeats):
            plain.append(best_time(plain_loop, make_model, x, y, 1, **kwargs))
            ours.append(best_time(memlib_loop, make_model, x, y, 1, **kwargs))
        ratio = min(ours) / min(plain)
        worst = max(worst, ratio)
        steps = args.epochs * -(-args.samples // args.batch)
        print(f"{name}: plain {min(plain) / steps * 1e3:.3f} ms/step, "
              f"memlib {min(ours) / steps * 1e3:.3f} ms/step, ratio {ratio:.3f}")
    print(f"overhead ratio: {worst:.3f}")


if __name__ == "__main__":
    main()
