"""Training throughput: a plain timm training step vs memlib's step with RLP heads.

Both train the same ViT on random images with AdamW (bf16 autocast on a GPU); memlib's
step adds one linear random-label head per transformer block, with the RLP penalty on
every block (the costliest setting). Prints images/s for each and, last,
`overhead ratio: X` = plain images/s / memlib images/s (target <= 1.15 on a GPU).
On a CPU, use the default tiny ViT: `--model vit_tiny`.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

from memlib.models import vit
from memlib.studies import rlp
from memlib.train import TensorBatches, TrainSpec, make_optimizers, resolve_device, train


def images_per_second(run, steps: int, batch: int) -> float:
    run(2)  # warm-up: allocator, kernels
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    run(steps)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return steps * batch / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="vit_tiny")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    device = resolve_device("auto")
    size, channels = (28, 1) if args.model == "vit_tiny" else (224, 3)
    precision = "bf16" if device.type == "cuda" else "fp32"
    x = torch.rand(args.batch * 4, channels, size, size, device=device)
    y = torch.randint(0, 1000, (len(x),), device=device)
    r = rlp.random_labels(len(x), 1000, seed=1).to(device)
    spec = TrainSpec(epochs=1, batch_size=args.batch, optimizer="adamw", precision=precision,
                     device=device.type)

    torch.manual_seed(0)
    plain_model = vit(args.model, 1000, size, channels).to(device)
    optimizer = torch.optim.AdamW(plain_model.parameters(), lr=1e-3)

    def plain(steps):
        for i in range(steps):
            xb = x[(i % 4) * args.batch:(i % 4 + 1) * args.batch]
            yb = y[(i % 4) * args.batch:(i % 4 + 1) * args.batch]
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16"):
                loss = F.cross_entropy(plain_model(xb), yb)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

    torch.manual_seed(0)
    model = vit(args.model, 1000, size, channels).to(device)
    layers = model.probe_layers
    heads = rlp.RLPHeads(rlp.feature_dims(model, layers, x), 1000).to(device)
    optimizers = make_optimizers([*model.parameters(), *heads.parameters()], spec)
    step = rlp.rlp_step(heads, r, lam=1.0, reg_layers=layers)

    def ours(steps):
        run_spec = TrainSpec(**{**spec.__dict__, "max_steps": steps, "epochs": steps})
        train(model, TensorBatches(x, y, args.batch), run_spec, step=step, optimizers=optimizers)

    plain_rate = images_per_second(plain, args.steps, args.batch)
    ours_rate = images_per_second(ours, args.steps, args.batch)
    name = torch.cuda.get_device_name() if device.type == "cuda" else "cpu"
    print(f"{args.model} on {name}, batch {args.batch}, {precision}")
    print(f"plain timm step: {plain_rate:.1f} images/s")
    print(f"memlib step + {len(layers)} RLP heads (penalty on all): {ours_rate:.1f} images/s")
    print(f"overhead ratio: {plain_rate / ours_rate:.3f}")


if __name__ == "__main__":
    main()
