"""Where notebook 01's cold compute goes, arm by arm: each cached result of the small preset's
plan (every training run, frozen baseline and probe set) with the seconds its entry records
it took to compute on its own (the entries it loaded not counted), summed per experiment.
Run it after a cold notebook 01 filled the cache; nothing is computed. The wall time the
notebook needs is about the sum divided by its two worker processes.

Last line: `noise arm share: X` = the label-noise arm's seconds / all seconds.

    python benchmarks/rlp_arms.py
"""

from __future__ import annotations

import collections

import memlib  # noqa: F401  before torch (imported where used): it pins the CPU dispatch


def arm(function, s) -> str:
    """The experiment a planned result belongs to."""
    from memlib.studies import rlp

    if function is rlp.cached_frozen:
        return "frozen-initialisation baselines"
    if function is rlp.cached_probes:
        return "post-hoc probes (8 per layer)"
    if s.labels == "random":
        return "retraining on random labels"
    if s.noise > 0:
        return "label noise (2 rates x 4 λ)"
    if s.lam > 0:
        return "λ sweep (last layer, all layers)"
    if s.dropout > 0 or s.weight_decay > 0 or s.label_smoothing > 0:
        return "standard regularizers"
    return f"layer-wise ({s.model})"


def main() -> None:
    from memlib import cache
    from memlib.studies import rlp

    seconds: dict[str, float] = collections.defaultdict(float)
    counts: collections.Counter = collections.Counter()
    missing = 0
    for function, s in rlp.planned_runs(rlp.Config()):
        path = function.path(s)
        if not path.exists():
            missing += 1
            continue
        own = cache.own_seconds(path)
        name = arm(function, getattr(s, "run", s))
        seconds[name] += own or 0.0
        counts[name] += 1
    if missing:
        raise SystemExit(f"memlib: {missing} planned results of notebook 01 are not in the "
                         "cache; run notebook 01 first (cold), then this")
    total = sum(seconds.values())
    print(f"{'arm':36} {'results':>7} {'seconds':>8} {'share':>6}")
    for name in sorted(seconds, key=seconds.get, reverse=True):
        print(f"{name:36} {counts[name]:7d} {seconds[name]:8.0f} {seconds[name] / total:6.1%}")
    print(f"{'all':36} {sum(counts.values()):7d} {total:8.0f}   (two workers: about "
          f"{total / 2 / 60:.0f} min)")
    print(f"noise arm share: {seconds['label noise (2 rates x 4 λ)'] / total:.2f}")


if __name__ == "__main__":
    main()
