"""Study 1's regularized sweep runs measured at their last epoch only, against measured every
`measure_every` epochs as the unregularized runs are (same process, same run).

One run of the small preset's last-layer λ sweep (SmallCNN, 1k Fashion-MNIST samples, at
the preset's label noise), shortened to `--epochs`, trained twice, alternating, fastest of
`--repeats` kept. Both give the same final row (checked). Last line: `speedup: X` (the cold
notebook 01 trains 25 such runs of 60 epochs).
"""

from __future__ import annotations

import argparse
import dataclasses
import time

from memlib.studies import preset_config, rlp


def timed(spec: rlp.RunSpec) -> tuple[float, object]:
    start = time.perf_counter()
    result = rlp.train_run(spec)
    return time.perf_counter() - start, result["history"].iloc[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    config = dataclasses.replace(preset_config("rlp", "small"), epochs=args.epochs)
    lam = config.lambdas[0]
    every = rlp.spec(config, lam=lam)
    last = rlp.swept(config, lam=lam)
    assert last.measure_every == args.epochs and every.measure_every == config.measure_every
    plain, ours = [], []
    for _ in range(args.repeats):
        seconds, row_every = timed(every)
        plain.append(seconds)
        seconds, row_last = timed(last)
        ours.append(seconds)
    assert row_every.equals(row_last), "the last epoch's values differ"
    print(f"SmallCNN λ={lam:g}, {args.epochs} epochs: measured every {config.measure_every} "
          f"epochs {min(plain):.1f} s, at the last epoch only {min(ours):.1f} s; "
          "final rows identical")
    print(f"speedup: {min(plain) / min(ours):.2f}")


if __name__ == "__main__":
    main()
