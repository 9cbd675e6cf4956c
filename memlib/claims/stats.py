"""The statistics every verdict rests on: Estimates over replicates and their Student-t
intervals, threshold margins, one-sided p-values, Holm's step-down adjustment, the replicates
an undecided margin would need, and a Fisher-z interval for correlations."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

LEVEL = 0.95  # two-sided confidence level of every interval over seeds
ALPHA = (1 - LEVEL) / 2  # one-sided error rate of an interval that excludes its threshold
MAX_REPLICATES = 100  # beyond this, a margin "sits on its threshold" rather than "needs seeds"


def t_quantile(n: int) -> float:
    """Student-t quantile for a two-sided LEVEL interval of a mean over n replicates."""
    from scipy.stats import t

    return float(t.ppf(0.5 + LEVEL / 2, n - 1))


@dataclass(frozen=True)
class Estimate:
    """A quantity measured over replicates (seeds, runs, pairs): mean, standard error of the
    mean and replicate count. Its interval is the 95% Student-t interval, mean ± t·SE, which
    with 3 seeds is 4.3 SE wide on each side, not 2. `bounds`, when set, is the interval
    itself for a quantity whose interval is not symmetric (a correlation's Fisher-z
    interval), used in place of mean ± t·SE."""

    mean: float
    se: float
    n: int
    bounds: tuple[float, float] | None = None

    @classmethod
    def of(cls, values: Iterable[float]) -> Estimate:
        v = np.asarray(list(values), dtype=float)
        se = float(v.std(ddof=1) / math.sqrt(len(v))) if len(v) > 1 else math.nan
        return cls(float(v.mean()) if len(v) else math.nan, se, len(v))

    @property
    def half_width(self) -> float:
        """Half the width of the 95% t interval (nan for fewer than two replicates)."""
        return t_quantile(self.n) * self.se if self.n >= 2 else math.nan

    @property
    def interval(self) -> tuple[float, float]:
        if self.bounds is not None:
            return self.bounds
        return self.mean - self.half_width, self.mean + self.half_width

    @property
    def beyond_noise(self) -> bool:
        """The 95% interval excludes zero (one replicate has no spread to compare with)."""
        if self.n < 2 or math.isnan(self.se):
            return False
        if self.bounds is None:
            return abs(self.mean) > self.half_width
        lo, hi = self.bounds
        return lo > 0 or hi < 0

    @property
    def sd(self) -> float:
        """The spread of one replicate (standard deviation)."""
        return self.se * math.sqrt(self.n)

    def __str__(self) -> str:
        if self.n < 2:
            return f"{self.mean:.4g} (n={self.n})"
        if self.bounds is not None:
            return f"{self.mean:.4g} [{self.bounds[0]:.2g}, {self.bounds[1]:.2g}] (n={self.n})"
        return f"{self.mean:.4g} ± {self.half_width:.2g} (n={self.n})"


def paired(a: Sequence[float], b: Sequence[float]) -> Estimate:
    """Estimate of a - b over seeds, paired seed by seed."""
    if len(a) != len(b):
        raise ValueError(f"paired difference of {len(a)} and {len(b)} seeds")
    return Estimate.of(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))


def margin(estimate: Estimate, threshold: float, at_least: bool = True) -> Estimate:
    """How far `estimate` clears a threshold (positive: it passes), with the same spread:
    mean - threshold for "at least", threshold - mean for "at most". A bounded interval
    (`Estimate.bounds`) moves with it."""
    mean = estimate.mean - threshold if at_least else threshold - estimate.mean
    bounds = None
    if estimate.bounds is not None:
        lo, hi = (b - threshold if at_least else threshold - b for b in estimate.bounds)
        bounds = (min(lo, hi), max(lo, hi))
    return Estimate(mean, estimate.se, estimate.n, bounds)


def every_beyond_noise(margins: Iterable[Estimate]) -> bool:
    """Noise rule for "every test passes" (margins as from `margin`): decided when every
    margin exceeds its spread, or when one that fails does (one clear failure settles it)."""
    margins = list(margins)
    return bool(margins) and (all(m.beyond_noise for m in margins)
                              or any(m.beyond_noise and m.mean < 0 for m in margins))


def some_beyond_noise(margins: Iterable[Estimate]) -> bool:
    """Noise rule for "at least one test passes": decided when one passing margin exceeds its
    spread, or when every margin does."""
    margins = list(margins)
    return bool(margins) and (all(m.beyond_noise for m in margins)
                              or any(m.beyond_noise and m.mean > 0 for m in margins))


def p_value(m: Estimate, passing: bool = True) -> float:
    """One-sided t-test of a margin: the chance of a mean this far on the `passing` side of
    zero (positive for passing, negative otherwise) if the margin were zero."""
    from scipy.stats import t

    if m.n < 2 or not m.se > 0 or math.isnan(m.mean):
        return math.nan
    stat = m.mean / m.se
    return float(t.sf(stat if passing else -stat, m.n - 1))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of p-values (family-wise error over the family given):
    the i-th smallest is multiplied by (m - i + 1), kept monotone and capped at 1."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted, running = [math.nan] * len(p_values), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def _half_width_at(m: Estimate, n: int) -> float:
    """The half-width `m`'s interval would have with n replicates at the same spread: a
    t interval's from its standard deviation, a bounded one's (a correlation's, whose
    standard error does not set its width) from its bound on zero's side, as 1/√n."""
    if m.bounds is None:
        return t_quantile(n) * m.sd / math.sqrt(n)
    reach = abs(m.mean - (m.bounds[0] if m.mean > 0 else m.bounds[1]))
    return reach * math.sqrt(m.n / n)


def replicates_needed(m: Estimate, limit: int = MAX_REPLICATES) -> int | None:
    """The smallest n at which a margin with this mean and this spread per replicate would
    have a 95% interval clear of zero; None without a spread to extrapolate from, limit + 1
    when no n up to `limit` suffices."""
    if m.n < 2 or not m.se >= 0 or math.isnan(m.mean) or math.isnan(m.se):
        return None
    for n in range(2, limit + 1):
        if _half_width_at(m, n) < abs(m.mean):
            return n
    return limit + 1


def fisher_z(rho) -> np.ndarray:
    """atanh of correlations, kept finite at ±1."""
    return np.arctanh(np.clip(np.asarray(rho, dtype=float), -0.999999, 0.999999))


def correlation(rho: float, n: int, se: float | None = None,
                z_se: float | None = None) -> Estimate:
    """A correlation over n pairs with its 95% Fisher-z interval, which stays inside [-1, 1]:
    tanh(atanh(rho) ± z·s) with s the standard error on the z scale: `z_se` when given (a
    bootstrap's spread of atanh(rho)), else 1/√(n - 3). `se`, the standard error of rho
    itself (for p-values and the replicates needed), defaults to s·(1 - rho²)."""
    from scipy.stats import norm

    if n < 4 or math.isnan(rho):
        return Estimate(rho, math.nan if se is None else se, n)
    s = 1 / math.sqrt(n - 3) if z_se is None or math.isnan(z_se) else z_se
    q = float(norm.ppf(0.5 + LEVEL / 2))
    z = float(fisher_z(rho))
    return Estimate(rho, s * (1 - rho ** 2) if se is None else se, n,
                    (math.tanh(z - q * s), math.tanh(z + q * s)))


def correlations(values: Iterable[float]) -> Estimate:
    """The mean of correlations measured on replicates (one per seed), with a 95% t interval
    taken on Fisher's z scale (atanh) and carried back, so that it stays inside [-1, 1]."""
    rho = np.asarray(list(values), dtype=float)
    plain = Estimate.of(rho)
    if plain.n < 2 or math.isnan(plain.se):
        return plain
    z = Estimate.of(fisher_z(rho))
    return Estimate(plain.mean, plain.se, plain.n,
                    (math.tanh(z.mean - z.half_width), math.tanh(z.mean + z.half_width)))
