"""Study 1's SmallCNN run with deterministic mode's NaN-filling of new tensors, against
without it (memlib's setting, `seed.FILL_UNINITIALIZED_MEMORY`), in one process.

The small preset's default run (SmallCNN, 1k Fashion-MNIST samples, curves every 2 epochs),
shortened to `--epochs`, on one CPU thread, trained with and without the fill, alternating,
fastest of `--repeats` kept. Both store the same tensors (checked, bit for bit). Last line:
`speedup: X`.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import time

import torch

from memlib import seed
from memlib.process import one_cpu_thread
from memlib.studies import preset_config, rlp


def stored(result: dict) -> bytes:
    """The bytes torch serialises a run's tensors to (its history's clocks left out)."""
    buffer = io.BytesIO()
    torch.save({k: v for k, v in result.items() if isinstance(v, (torch.Tensor, dict))},
               buffer)
    return buffer.getvalue()


def timed(spec: rlp.RunSpec, fill: bool) -> tuple[float, bytes]:
    seed.FILL_UNINITIALIZED_MEMORY = fill
    start = time.perf_counter()
    result = rlp.train_run(spec)
    return time.perf_counter() - start, stored(result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    one_cpu_thread()
    config = dataclasses.replace(preset_config("rlp", "small"), epochs=args.epochs)
    spec = rlp.spec(config)
    filled, plain = [], []
    for _ in range(args.repeats):
        seconds, with_fill = timed(spec, True)
        filled.append(seconds)
        seconds, without = timed(spec, False)
        plain.append(seconds)
    assert with_fill == without, "the stored tensors differ"
    print(f"{config.model}, {args.epochs} epochs, one thread: NaN-filled {min(filled):.1f} s, "
          f"not filled {min(plain):.1f} s; stored tensors identical")
    print(f"speedup: {min(filled) / min(plain):.2f}")


if __name__ == "__main__":
    main()
