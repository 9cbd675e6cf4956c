"""The power of a rule's decision at n replicates, from a pilot's means and spreads: the chance
that a confirmatory run of n replicates reads *holds* (its interval clearing the threshold on
the rule's side, inside ±δ or not), *does not hold* (clearing it on the wrong side) or *does
not hold: no effect as large as δ* (an interval across the threshold inside ±δ), rather than
*within noise*. Used by `pilots/power.py` to choose each rule's confirmatory n before the run.

The decision is `rules.judge`'s, on the rule's margins (`Claim.margins`, or every Estimate of
a rule without them): each margin's test statistic (`Estimate.statistic`: its mean, or a
correlation's Fisher z, over its SE) is drawn as a study of n replicates would give it, with
the pilot's centre and per-replicate spread taken as true (a normal mean, an SE from a
chi-square with n - 1 degrees of freedom), the margins independent of one another. The
pilot's spread is itself uncertain (with 5 replicates by a factor of about 1.6 either way):
the n are planning numbers, not guarantees."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import t as student

from memlib.claims.stats import EQUIVALENCE_LEVEL, LEVEL, Estimate, fisher_z

DRAWS = 4000
TARGET = 0.80  # the power every registered n is chosen for
# below this chance of a decision at its planned n, at its smallest effect, a rule cannot be
# decided and leaves Holm's family (it would only dilute the others' adjustment)
DECIDABLE = 0.50
IN_FAMILY = "in"  # `family_label` of a rule Holm's family keeps (pilots/power.py's column)


@dataclass(frozen=True)
class Power:
    """The chances of each verdict at n replicates (they sum to at most 1; the rest reads
    within noise)."""

    n: int
    holds: float
    fails: float
    equivalent: float

    @property
    def decides(self) -> float:
        return self.holds + self.fails + self.equivalent


def power_at(margins: Sequence[Estimate], n: int, combine: str = "all",
             delta: float | None = None, draws: int = DRAWS, seed: int = 0) -> Power:
    """The chance of each verdict of a rule whose margins (`combine`: "all" must pass, "any"
    one suffices) have the pilot's centres and per-replicate spreads, measured on n
    replicates; `delta` the rule's smallest effect of interest (None: no equivalence)."""
    rng = np.random.default_rng(seed)
    centres, spreads, offsets, reaches = [], [], [], []
    for m in margins:
        centre, se, df = m.statistic
        if m.n < 2 or not se > 0 or math.isnan(centre):
            raise ValueError("a margin without a spread has no power to extrapolate")
        centres.append(centre)
        spreads.append(se * math.sqrt(m.n))
        offsets.append(df - (m.n - 1))  # a correlation's test keeps its offset from n - 1
        reaches.append(float(fisher_z(delta)) if delta and m.test is not None else delta)
    k = len(centres)
    df = np.maximum(1, n - 1 + np.asarray(offsets))
    se = np.asarray(spreads) / math.sqrt(n) * np.sqrt(rng.chisquare(df, (draws, k)) / df)
    centre = np.asarray(centres) + np.asarray(spreads) / math.sqrt(n) * rng.standard_normal(
        (draws, k))
    beyond = np.abs(centre) / se > student.ppf(0.5 + LEVEL / 2, df)
    passing = centre >= 0
    if combine == "any":
        held = passing.any(axis=1)
        decided = beyond.all(axis=1) | (beyond & passing).any(axis=1)
    else:
        held = passing.all(axis=1)
        decided = beyond.all(axis=1) | (beyond & ~passing).any(axis=1)
    if delta is None:
        equivalent = np.zeros(draws, dtype=bool)
    else:  # direction first: only an undecided rule can read no effect as large as δ
        reach = np.asarray(reaches, dtype=float)
        quantile = student.ppf(0.5 + EQUIVALENCE_LEVEL / 2, df)
        inside = np.abs(centre) + quantile * se < reach  # the 90% interval inside ±δ
        # "every test passes": one margin across its threshold and inside ±δ suffices;
        # "some test passes": every margin must lie inside
        found = inside.all(axis=1) if combine == "any" else (inside & ~beyond).any(axis=1)
        equivalent = ~decided & found
    return Power(n, float(np.mean(decided & held)), float(np.mean(decided & ~held)),
                 float(np.mean(equivalent)))


def replicates_for_power(margins: Sequence[Estimate], combine: str = "all",
                         delta: float | None = None, least: int = 5, most: int = 200,
                         target: float = TARGET) -> Power | None:
    """The smallest n from `least` to `most` at which the rule is decided (either way, or by
    equivalence) with at least `target` chance, with its Power; None when no n up to `most`
    suffices (a margin sitting on its threshold)."""
    candidates = sorted({*range(least, min(most, 30) + 1),
                         *np.unique(np.geomspace(31, most, 24).astype(int)).tolist()})
    candidates = [n for n in candidates if least <= n <= most]
    for n in candidates:
        found = power_at(margins, n, combine, delta)
        if found.decides >= target:
            return found
    return None


def at_effect(margins: Sequence[Estimate], effect: float) -> list[Estimate]:
    """Each margin with its true effect at `effect` (in the margins' unit: the smallest
    effect a rule states) and the pilot's per-replicate spread and replicates. A
    correlation's margin, tested on Fisher's z scale, moves its z centre by the pilot's own
    ratio of z to ρ (the slope of atanh over its span; 1 at a margin of zero, atanh's slope
    at zero), so its spread on that scale stays the pilot's."""
    moved = []
    for m in margins:
        if m.test is None:
            moved.append(Estimate(effect, m.se, m.n))
            continue
        centre, se, df = m.test
        slope = centre / m.mean if m.mean and not math.isnan(m.mean) else 1.0
        moved.append(Estimate(effect, m.se, m.n, None, (effect * slope, se, df)))
    return moved


def family_label(n: int, power: float) -> str:
    """"in" for a rule its planned n decides with at least DECIDABLE chance at its smallest
    effect, else why it leaves Holm's family: "cannot be decided at n = 10: power 32%"."""
    if power >= DECIDABLE:
        return IN_FAMILY
    return f"cannot be decided at n = {n}: power {power:.0%}"
