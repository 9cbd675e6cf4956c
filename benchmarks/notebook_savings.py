"""Savings in the studies' code that the small scale's profiles point at, each measured here
(CPU seconds of one thread, fastest of `--repeats`) with whether it keeps the results' bits.

- rlp: `measure` forwards up to 2048 samples at once; smaller pieces of the same samples give
  the SmallCNN the same logits, faster (the accuracies and head hits are counts; the loss sum
  keeps its bits only if it is taken over the whole batch's logits);
- modarith: the 20 main runs trained as one batch of runs, against two halves of 10 (two
  worker processes could each take one): the same weights, and the longest unit shorter;
- fisher: Adam per tensor (as now) against torch's fused Adam (other rounding);
- memlib.train: the optimizers' multi-tensor (foreach) form on the CPU, a candidate for
  `make_optimizers`: the same bits, but is it faster?

    nice -n 10 python benchmarks/notebook_savings.py [--repeats 3] [--checks rlp,train]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("MEMLIB_CACHE", tempfile.mkdtemp(prefix="memlib-savings-"))

import memlib  # noqa: E402,F401  (before torch: it pins the CPU dispatch)
from memlib.studies import preset_config  # noqa: E402


def fastest(fn, repeats: int):
    """(fastest CPU seconds, the last result) of `repeats` calls."""
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.process_time()
        out = fn()
        best = min(best, time.process_time() - start)
    return best, out


def rlp_measure(repeats: int) -> None:
    import torch

    from memlib.seed import seed_everything
    from memlib.studies import rlp

    config = preset_config("rlp", "small")
    s = rlp.spec(config, seed=config.seeds[0])
    d = rlp.load_data(s)
    seed_everything(s.seed)
    model, layers = rlp.make_model(s, d["num_classes"], tuple(d["example"].shape[1:]))
    model.to(memory_format=torch.channels_last)  # as `train` leaves it (channels_last: true)
    heads = rlp.make_heads(s, model, layers, d)
    results = {}
    for batch in (2048, 256, 128):
        results[batch] = fastest(lambda b=batch: rlp.measure(model, heads, d["train_eval"],
                                                             d["random"], batch_size=b),
                                 repeats)
    whole_t, whole = results[2048]
    for batch in (256, 128):
        t, out = results[batch]
        same = [k for k in whole if whole[k] == out[k]]
        differ = [k for k in whole if whole[k] != out[k]]
        print(f"rlp.measure, SmallCNN + heads, {len(d['random'])} samples: batch 2048 "
              f"{whole_t:.3f} s, batch {batch} {t:.3f} s, ratio {whole_t / t:.2f}; same bits: "
              f"{', '.join(same)}; other bits: {', '.join(differ) or 'none'}")
    # the loss keeps its bits when only the forward pass goes in pieces: the same logits
    x = d["train_eval"][0]
    with torch.no_grad():
        model.eval()
        pieces = torch.cat([model(x[i:i + 128]) for i in range(0, len(x), 128)])
        print(f"rlp logits of {len(x)} samples at once and in pieces of 128: "
              f"{'identical' if torch.equal(model(x), pieces) else 'DIFFERENT'}")


def optimizer_seconds(model, opt, x, y, batch: int, steps: int):
    """CPU seconds of `steps` optimizer steps alone (forward and backward not counted),
    cycling through `x` in batches, and the trained parameters."""
    import torch.nn.functional as F

    stepping, usable = 0.0, len(y) - len(y) % batch
    for i in range(steps):
        start = (i * batch) % usable
        loss = F.cross_entropy(model(x[start:start + batch]), y[start:start + batch])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        clock = time.process_time()
        opt.step()
        stepping += time.process_time() - clock
    return stepping, [p.detach().clone() for p in model.parameters()]


def modarith_split(repeats: int, epochs: int) -> None:
    import torch

    from memlib.studies import modarith
    from memlib.train import TrainSpec

    config = preset_config("modarith", "small")
    alphas, seeds = modarith._grid(config.alphas, config.seeds)
    spec = TrainSpec(epochs=epochs, batch_size=None, optimizer=config.optimizer, lr=config.lr,
                     weight_decay=config.weight_decay, seed=seeds[0])

    def train(part: slice):
        return modarith.train_runs(modarith._task(config, seeds[part]), alphas[part],
                                   seeds[part], config.width, spec,
                                   config.activation, config.noise, epochs)

    whole_t, whole = fastest(lambda: train(slice(None)), repeats)
    half = len(alphas) // 2
    times, same = [], True
    for part in (slice(0, half), slice(half, None)):
        t, out = fastest(lambda p=part: train(p), repeats)
        times.append(t)
        same &= all(torch.equal(whole["weights"][k][part], v) for k, v in out["weights"].items())
    print(f"modarith main runs, {epochs} epochs: 20 runs together {whole_t:.2f} s, halves of 10 "
          f"{times[0]:.2f} + {times[1]:.2f} s; weights {'identical' if same else 'DIFFER'}; "
          f"longest unit ratio {whole_t / max(times):.2f}, total ratio {whole_t / sum(times):.2f}")


def fisher_adam(repeats: int, steps: int) -> None:
    import torch

    from memlib.studies import fisher

    config = preset_config("fisher", "small")
    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(512, 1, 28, 28, generator=gen), torch.randint(0, 10, (512,), generator=gen)

    def run(fused: bool):
        torch.manual_seed(0)
        model = fisher.build_model(config, config.model, 10, (1, 28, 28))
        opt = torch.optim.Adam(model.parameters(), lr=config.lr, fused=fused)
        return optimizer_seconds(model, opt, x, y, config.batch_size, steps)

    plain = min((run(False) for _ in range(repeats)), key=lambda r: r[0])
    fused = min((run(True) for _ in range(repeats)), key=lambda r: r[0])
    diff = max((a - b).abs().max().item() for a, b in zip(plain[1], fused[1], strict=True))
    print(f"fisher Adam, MLP {config.mlp_widths}, {steps} steps: per tensor {plain[0]:.3f} s, "
          f"fused {fused[0]:.3f} s, ratio {plain[0] / fused[0]:.2f}; max weight difference "
          f"{diff:.2e} (other bits)")


def optimizer_foreach(repeats: int, steps: int) -> None:
    import torch

    from memlib.models import MLP

    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(512, 784, generator=gen), torch.randint(0, 10, (512,), generator=gen)
    kinds = {"adam": (torch.optim.Adam, {}), "adamw": (torch.optim.AdamW, {"weight_decay": 0.1}),
             "sgd": (torch.optim.SGD, {"momentum": 0.9, "weight_decay": 1e-3})}
    for name, (optimizer, extra) in kinds.items():
        def run(foreach: bool, optimizer=optimizer, extra=extra):
            torch.manual_seed(0)
            model = MLP(784, (256,) * 6, 10)
            opt = optimizer(model.parameters(), lr=1e-3, foreach=foreach, **extra)
            return optimizer_seconds(model, opt, x, y, 64, steps)

        plain = min((run(False) for _ in range(repeats)), key=lambda r: r[0])
        multi = min((run(True) for _ in range(repeats)), key=lambda r: r[0])
        same = all(torch.equal(a, b) for a, b in zip(plain[1], multi[1], strict=True))
        print(f"train: {name} on a 6x256 MLP, {steps} steps: per tensor {plain[0]:.3f} s, "
              f"foreach {multi[0]:.3f} s, ratio {plain[0] / multi[0]:.2f}; "
              f"{'same bits' if same else 'OTHER BITS'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--modarith-epochs", type=int, default=8)
    parser.add_argument("--adam-steps", type=int, default=300)
    parser.add_argument("--checks", default="rlp,modarith,fisher,train")
    args = parser.parse_args()
    checks = {"rlp": lambda: rlp_measure(args.repeats),
              "modarith": lambda: modarith_split(args.repeats, args.modarith_epochs),
              "fisher": lambda: fisher_adam(args.repeats, args.adam_steps),
              "train": lambda: optimizer_foreach(args.repeats, args.adam_steps)}
    chosen = [c.strip() for c in args.checks.split(",") if c.strip()]
    if not chosen or any(c not in checks for c in chosen):
        print(f"--checks takes a comma-separated list of {', '.join(checks)}", file=sys.stderr)
        return 2
    if args.repeats < 1 or args.modarith_epochs < 1 or args.adam_steps < 1:
        print("--repeats, --modarith-epochs and --adam-steps must be >= 1", file=sys.stderr)
        return 2
    import torch

    torch.set_num_threads(1)
    for check in chosen:
        checks[check]()
    return 0


if __name__ == "__main__":
    sys.exit(main())
