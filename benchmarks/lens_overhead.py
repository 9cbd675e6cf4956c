"""Cost of watching a run: study 1's plain training run (`rlp.train_run`) against the same
run watched by the lens (`lens.lens_run`: margins every epoch, er and the curves every
other epoch) and then measured (`lens.measure_run`: exact LOO at the er peak, the per-layer
probes), in one process on one CPU thread.

The run is study 1's small preset (1,000 Fashion-MNIST images, 6x256 MLP, its noise rate) for
`--epochs` epochs. Last line: `overhead ratio: X` (target <= 2: the notebook's 18 watched
runs then fit its 10-minute budget on two cores). Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import torch

from memlib.studies import lens, preset_config, rlp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=40)
    args = parser.parse_args()
    torch.set_num_threads(1)
    spec = dataclasses.replace(rlp.spec(preset_config("rlp", "small")), epochs=args.epochs)
    watched = lens.LensRun(spec, scatter_samples=None, measure_every=2)
    measures = lens.LensMeasures(watched, exact_loo_max=20000, null_draws=3)
    start = time.perf_counter()
    rlp.train_run(spec)
    plain = time.perf_counter() - start
    start = time.perf_counter()
    lens.measure_run(measures, lens.lens_run(watched))
    ours = time.perf_counter() - start
    print(f"{args.epochs} epochs: study 1's run {plain:.1f} s, watched by the lens {ours:.1f} s")
    print(f"overhead ratio: {ours / plain:.2f}")


if __name__ == "__main__":
    main()
