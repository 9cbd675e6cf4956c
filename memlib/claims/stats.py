"""The statistics every verdict rests on: Estimates over replicates and their Student-t
intervals, threshold margins, their t-tests (one- and two-sided, and the two one-sided tests
of an equivalence), Holm's step-down adjustment, the replicates an undecided margin would
need, and Fisher-z intervals for correlations.

Every test is on the scale of the interval it goes with, so that "the 95% interval clears
the threshold" and "two-sided p < 0.05" are the same statement, and "the 90% interval lies
inside ±δ" and "the two one-sided tests' p < 0.05" are too. An Estimate tests its mean over
its SE with n - 1 degrees of freedom; a correlation tests on Fisher's z scale (`Estimate.test`).
scipy supplies the t distribution; Holm's adjustment (which scipy lacks) is eight lines here."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

LEVEL = 0.95  # two-sided confidence level of every interval over seeds
ALPHA = (1 - LEVEL) / 2  # one-sided error rate of an interval that excludes its threshold
P_LEVEL = 1 - LEVEL  # a row is decided when the p of its deciding test is below this
# the interval of an equivalence (two one-sided tests, each at P_LEVEL): it lies inside ±δ
# exactly when both tests reject, the standard TOST construction (Schuirmann 1987)
EQUIVALENCE_LEVEL = 1 - 2 * P_LEVEL
MAX_REPLICATES = 100  # beyond this, a margin "sits on its threshold" rather than "needs seeds"


def t_quantile(n: int, level: float = LEVEL, df: int | None = None) -> float:
    """Student-t quantile for a two-sided `level` interval of a mean over n replicates (n - 1
    degrees of freedom unless `df` says otherwise)."""
    from scipy.stats import t

    return float(t.ppf(0.5 + level / 2, n - 1 if df is None else df))


@dataclass(frozen=True)
class Estimate:
    """A quantity measured over replicates (seeds, runs, pairs): mean, standard error of the
    mean and replicate count. Its interval is the 95% Student-t interval, mean ± t·SE, which
    with 3 seeds is 4.3 SE wide on each side, not 2. `bounds`, when set, is the interval
    itself for a quantity whose interval is not symmetric (a correlation's Fisher-z
    interval), used in place of mean ± t·SE; `test` is then (centre, its SE, degrees of
    freedom) of the statistic on the scale that interval was built on (Fisher's z, centred
    on the threshold by `margin`), so that its p-values agree with its interval."""

    mean: float
    se: float
    n: int
    bounds: tuple[float, float] | None = None
    test: tuple[float, float, int] | None = None

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


    @property
    def statistic(self) -> tuple[float, float, int]:
        """(centre, SE, degrees of freedom) of the t statistic this Estimate is tested by."""
        return self.test if self.test is not None else (self.mean, self.se, self.n - 1)

    def interval_at(self, level: float) -> tuple[float, float]:
        """The two-sided `level` interval on the test's scale, carried back (a correlation's
        through tanh); the same as `interval` at LEVEL for a t interval."""
        centre, se, df = self.statistic
        half = t_quantile(self.n, level, df) * se
        if self.test is None:
            return centre - half, centre + half
        return math.tanh(centre - half), math.tanh(centre + half)


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
    bounds = test = None
    if estimate.bounds is not None:
        lo, hi = (b - threshold if at_least else threshold - b for b in estimate.bounds)
        bounds = (min(lo, hi), max(lo, hi))
    if estimate.test is not None:  # a correlation: the threshold moves on Fisher's z scale
        centre, se, df = estimate.test
        shift = centre - float(fisher_z(threshold))
        test = (shift if at_least else -shift, se, df)
    return Estimate(mean, estimate.se, estimate.n, bounds, test)


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


# an SE below this fraction of its centre is the rounding of a mean of equal values (five
# equal floats average to a float a few ulps off), not a spread between replicates
ROUNDING = 1e-12


def without_spread(m: Estimate) -> bool:
    """The margin's replicates are all equal (an SE of zero, or one at rounding level)."""
    centre, se, _ = m.statistic
    return se == 0 or (se > 0 and se <= ROUNDING * abs(centre))


def sign_p(n: int, passing: bool, on_passing_side: bool) -> float:
    """The one-sided exact sign test of n replicates all on one side of zero (`on_passing_side`
    whether that is the `passing` one): 0.5**n toward that side, 1 against it. No test of
    their location on n replicates can give less: it is the p of a margin without spread,
    whose t statistic would be infinite (2 · 0.5**n two-sided, 0.0625 at five)."""
    return 0.5 ** n if passing == on_passing_side else 1.0


def p_value(m: Estimate, passing: bool = True) -> float:
    """One-sided t-test of a margin: the chance of a mean this far on the `passing` side of
    zero (positive for passing, negative otherwise) if the margin were zero. A margin without
    spread (`without_spread`) has no t statistic: its p is the exact sign test's over its n
    replicates (`sign_p`), never one below what n replicates can give."""
    from scipy.stats import t

    centre, se, df = m.statistic
    if m.n < 2 or df < 1 or math.isnan(centre) or math.isnan(se):
        return math.nan
    if without_spread(m):
        return 1.0 if centre == 0 else sign_p(m.n, passing, centre > 0)
    if not se > 0:
        return math.nan
    stat = centre / se
    return float(t.sf(stat if passing else -stat, df))


def two_sided_p(m: Estimate, passing: bool = True) -> float:
    """The two-sided p of a margin's t-test, reported for a test in the `passing` direction:
    below P_LEVEL exactly when the LEVEL interval excludes zero on that side."""
    one = p_value(m, passing)
    return one if math.isnan(one) else min(1.0, 2 * one)


def equivalence_p(m: Estimate, delta: float) -> float:
    """The two one-sided tests (TOST) that a margin at a zero threshold lies inside ±δ: the
    larger of their p-values, below P_LEVEL exactly when the EQUIVALENCE_LEVEL interval lies
    inside ±δ (for a correlation, ±δ on Fisher's z scale)."""
    from scipy.stats import t

    centre, se, df = m.statistic
    if m.n < 2 or df < 1 or not se >= 0 or math.isnan(centre) or not delta > 0:
        return math.nan
    reach = float(fisher_z(delta)) if m.test is not None else delta
    if without_spread(m):  # each one-sided test is the exact sign test of equal replicates
        return max(sign_p(m.n, True, centre > -reach), sign_p(m.n, True, centre < reach))
    return float(max(t.sf((centre + reach) / se, df), t.sf((reach - centre) / se, df)))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of p-values (family-wise error over the family given):
    the i-th smallest is multiplied by (m - i + 1), kept monotone and capped at 1. (scipy has
    no Holm; statsmodels' multipletests(method="holm") gives the same numbers.)"""
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


def replicates_for_equivalence(m: Estimate, delta: float,
                               limit: int = MAX_REPLICATES) -> int | None:
    """The smallest n at which a margin at a zero threshold, with this mean and this spread
    per replicate, would have its EQUIVALENCE_LEVEL interval inside ±δ; None without a spread
    or when the mean itself lies outside ±δ (no n suffices), limit + 1 beyond `limit`."""
    centre, se, df = m.statistic
    if m.n < 2 or not se >= 0 or math.isnan(centre) or math.isnan(se) or not delta > 0:
        return None
    reach = float(fisher_z(delta)) if m.test is not None else delta
    if abs(centre) >= reach:
        return None
    spread = se * math.sqrt(m.n)  # of one replicate, on the test's scale
    for n in range(2, limit + 1):
        extra = df - (m.n - 1)  # a correlation's test keeps its offset from n - 1
        if abs(centre) + t_quantile(n, EQUIVALENCE_LEVEL, max(1, n - 1 + extra)) \
                * spread / math.sqrt(n) < reach:
            return n
    return limit + 1


def fisher_z(rho) -> np.ndarray:
    """atanh of correlations, kept finite at ±1."""
    return np.arctanh(np.clip(np.asarray(rho, dtype=float), -0.999999, 0.999999))


def exact_z_se(rho: float, n: int) -> float:
    """The spread on Fisher's z scale at which z / spread is the exact t statistic of a
    correlation over n independent units, r·√(n - 2)/√(1 - r²) with n - 2 degrees of freedom
    (Student's test of no correlation, exact for normal data at any n, where Fisher's
    1/√(n - 3) is a large-sample approximation); 1/√(n - 2), its limit, at r = 0."""
    r = float(np.clip(rho, -0.999999, 0.999999))
    if r == 0:
        return 1 / math.sqrt(n - 2)
    return float(fisher_z(r)) * math.sqrt(1 - r * r) / (r * math.sqrt(n - 2))


def correlation(rho: float, n: int, se: float | None = None,
                z_se: float | None = None) -> Estimate:
    """A correlation over n units with its 95% interval on Fisher's z scale, which stays
    inside [-1, 1]: tanh(atanh(rho) ± q·s) with s the spread on the z scale: `z_se` when
    given (a bootstrap's spread of atanh(rho) over resampled units), with q from t(n - 1),
    estimated from n units as the SE of a mean over them is (the bootstrap-t convention);
    else the spread at which z/s is the exact t statistic of no correlation (`exact_z_se`),
    with q from t(n - 2), so that its p against zero is Student's exact one and the interval
    excludes zero exactly when that p is below 0.05 (n is small: ten classes, a handful of
    seeds). Its p-values use the same statistic, z/s, and the same t (`Estimate.test`). `se`,
    the standard error of rho itself (shown, and used for the replicates needed), defaults
    to s·(1 - rho²)."""
    if n < 4 or math.isnan(rho):
        return Estimate(rho, math.nan if se is None else se, n)
    bootstrap = z_se is not None and not math.isnan(z_se)
    s, df = (z_se, n - 1) if bootstrap else (exact_z_se(rho, n), n - 2)
    q = t_quantile(n, LEVEL, df)
    z = float(fisher_z(rho))
    return Estimate(rho, s * (1 - rho ** 2) if se is None else se, n,
                    (math.tanh(z - q * s), math.tanh(z + q * s)), (z, s, df))


def correlations(values: Iterable[float]) -> Estimate:
    """The mean of correlations measured on replicates (one per seed), with a 95% t interval
    taken on Fisher's z scale (atanh) and carried back, so that it stays inside [-1, 1]."""
    rho = np.asarray(list(values), dtype=float)
    plain = Estimate.of(rho)
    if plain.n < 2 or math.isnan(plain.se):
        return plain
    z = Estimate.of(fisher_z(rho))
    return Estimate(plain.mean, plain.se, plain.n,
                    (math.tanh(z.mean - z.half_width), math.tanh(z.mean + z.half_width)),
                    (z.mean, z.se, z.n - 1))
