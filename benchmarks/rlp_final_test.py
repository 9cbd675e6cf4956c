"""What reading the last epoch's test row and the stored test predictions from one pass saves
study 1's small run: the preset's SmallCNN (32/64/128) over a test split of 10,000 images of
28x28, on one CPU thread as each of the notebook's runs measures, best of `--repeats`,
alternating, in one process. The plain baseline is what a run did before: `measure` for the
test row, then `predictions` for the stored predictions, two passes; the one-pass way is
`predictions`, whose accuracy and loss are `measure`'s (the same sums). Random images stand
in for Fashion-MNIST (the cost does not depend on the pixels).

Last line: `final test speedup: X` = two passes' seconds / one pass's seconds.

    python benchmarks/rlp_final_test.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import memlib  # noqa: F401  before torch (imported where used): it pins the CPU dispatch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    import torch

    from memlib.models import SmallCNN
    from memlib.studies.rlp.method import measure, predictions

    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    test = (torch.rand(10_000, 1, 28, 28, generator=g).contiguous(
        memory_format=torch.channels_last), torch.randint(0, 10, (10_000,), generator=g))
    torch.manual_seed(0)
    model = SmallCNN(1, 10, channels=(32, 64, 128)).to(memory_format=torch.channels_last)

    def two_passes():
        return measure(model, None, test), predictions(model, test)[0]

    def one_pass():
        return predictions(model, test)

    best = {"two passes (measure, then predictions)": float("inf"), "one pass": float("inf")}
    for _ in range(args.repeats):
        for name, fn in zip(best, (two_passes, one_pass), strict=True):
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    for name, seconds in best.items():
        print(f"{name}: {seconds:.2f} s")
    plain, fused = best.values()
    print(f"final test speedup: {plain / fused:.2f}")


if __name__ == "__main__":
    main()
