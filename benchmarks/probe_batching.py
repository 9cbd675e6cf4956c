"""What batching study 1's post-hoc probes saves: the probes of one time-course run of the
small preset (the SmallCNN's three probed layers, 32/64/128 channels globally pooled, at the
frozen initialisation and 30 stored epochs: 93 feature sets of 1,000 images; 8 probes each,
30 epochs of Adam in batches of 128), trained one feature set at a time (the plain baseline)
and all at once (`train_probe_sets`, as `posthoc_probes` does). Random features stand in for
stored ones (the cost does not depend on their values). Prints both times, that the
accuracies agree, and `speed-up: X` = one-at-a-time / batched seconds, in one process.

    python benchmarks/probe_batching.py [--sets 93]
"""

from __future__ import annotations

import argparse
import time

import memlib  # noqa: F401  before torch (imported where used): it pins the CPU dispatch

WIDTHS = (32, 64, 128)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, default=93, help="feature sets (default: 93)")
    args = parser.parse_args()
    import torch

    from memlib.studies.rlp.method import label_draws, train_probe_sets

    torch.manual_seed(0)
    n = 1000
    sets = [torch.randn(n, WIDTHS[i % 3]).half() for i in range(args.sets)]
    labels = label_draws(torch.arange(n), 10, 7, 8, n)
    settings = dict(n_random=10, epochs=30, lr=1e-2, batch_size=128, seed=3)
    start = time.perf_counter()
    alone = [train_probe_sets([f], labels, **settings)[0] for f in sets]
    plain = time.perf_counter() - start
    start = time.perf_counter()
    together = train_probe_sets(sets, labels, **settings)
    batched = time.perf_counter() - start
    differ = max(float((a - b).abs().max()) for a, b in zip(alone, together))
    print(f"{args.sets} feature sets: one at a time {plain:.1f} s, batched {batched:.1f} s; "
          f"largest accuracy difference {differ:.3g}")
    print(f"speed-up: {plain / batched:.1f}")


if __name__ == "__main__":
    main()
