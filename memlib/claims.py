"""The papers' claims as data, checked against our measurements.

A study module declares its claims (statement, the paper's value, what we measure, the
rule) as `Claim` objects before any run. A notebook measures, then calls
`evaluate(CLAIMS, measured)`: each rule sees only its measured value. A verdict is decided
in this order, the same for every study:

1. the value is missing (None): **not run at this scale**;
2. a precondition fails (the model did not memorize, a head sits at chance, a curve is
   empty): **precondition failed: <which>**, never "holds";
3. the claim compares conditions and the difference does not exceed its seed-to-seed
   spread (|mean| <= 2 standard errors over seeds, or fewer than two seeds): **within
   noise**;
4. otherwise the rule decides: **holds** or **does not hold**.

Differences over seeds are `Estimate`s (mean, standard error, number of seeds), shown as
"mean ± 2 SE" in the table. `collect(scale)` gathers every study's claims into CLAIMS.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from memlib import DEFAULT_SCALE, STUDIES, paths
from memlib.process import atomic_write_bytes
from memlib.tables import save_table, to_markdown

HOLDS, FAILS, NOT_RUN = "holds", "does not hold", "not run at this scale"
WITHIN_NOISE, PRECONDITION = "within noise", "precondition failed"
VERDICTS = (HOLDS, FAILS, WITHIN_NOISE, PRECONDITION, NOT_RUN)
CLAIMS_TABLE = "claims"


@dataclass(frozen=True)
class Estimate:
    """A quantity measured over seeds: its mean, standard error of the mean and seed count."""

    mean: float
    se: float
    n: int

    @classmethod
    def of(cls, values: Iterable[float]) -> Estimate:
        v = np.asarray(list(values), dtype=float)
        se = float(v.std(ddof=1) / math.sqrt(len(v))) if len(v) > 1 else math.nan
        return cls(float(v.mean()) if len(v) else math.nan, se, len(v))

    @property
    def beyond_noise(self) -> bool:
        """|mean| > 2 SE over at least two seeds (one seed has no spread to compare with)."""
        return self.n >= 2 and not math.isnan(self.se) and abs(self.mean) > 2 * self.se

    def __str__(self) -> str:
        if self.n < 2:
            return f"{self.mean:.4g} (1 seed)"
        return f"{self.mean:.4g} ± {2 * self.se:.2g}"


def paired(a: Sequence[float], b: Sequence[float]) -> Estimate:
    """Estimate of a - b over seeds, paired seed by seed."""
    if len(a) != len(b):
        raise ValueError(f"paired difference of {len(a)} and {len(b)} seeds")
    return Estimate.of(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))


def margin(estimate: Estimate, threshold: float, at_least: bool = True) -> Estimate:
    """How far `estimate` clears a threshold (positive: it passes), with the same spread:
    mean - threshold for "at least", threshold - mean for "at most"."""
    mean = estimate.mean - threshold if at_least else threshold - estimate.mean
    return Estimate(mean, estimate.se, estimate.n)


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


Margins = Callable[[Any], Iterable[Estimate]]


def all_of(margins: Margins) -> dict[str, Callable[[Any], bool]]:
    """`holds` and `beyond_noise` of a Claim whose rule is "every threshold test passes";
    `margins(value)` gives each test's margin (see `margin`)."""
    return {"holds": lambda v: all(m.mean >= 0 for m in margins(v)),
            "beyond_noise": lambda v: every_beyond_noise(margins(v))}


def any_of(margins: Margins) -> dict[str, Callable[[Any], bool]]:
    """`holds` and `beyond_noise` of a Claim whose rule is "at least one test passes"."""
    return {"holds": lambda v: any(m.mean >= 0 for m in margins(v)),
            "beyond_noise": lambda v: some_beyond_noise(margins(v))}


def estimates(value: Any) -> list[Estimate]:
    """Every Estimate inside a measured value (nested dicts and lists)."""
    if isinstance(value, Estimate):
        return [value]
    if isinstance(value, Mapping):
        return [e for v in value.values() for e in estimates(v)]
    if isinstance(value, (list, tuple)):
        return [e for v in value for e in estimates(v)]
    return []


def all_beyond_noise(value: Any) -> bool:
    """The default noise rule: every Estimate in the value exceeds its spread."""
    return all(e.beyond_noise for e in estimates(value))


@dataclass(frozen=True)
class Claim:
    id: str
    statement: str  # what the paper says
    paper: str  # the paper's number or setting, "" if it gives none
    measure: str  # how our run measures it
    rule: str  # the rule for "holds", in words
    holds: Callable[[Any], bool]  # the same rule, as code
    # (name, test) pairs checked on the measured value before the rule; the first failing
    # one names the verdict "precondition failed: <name>"
    preconditions: tuple[tuple[str, Callable[[Any], bool]], ...] = field(default=())
    # True when the value's difference exceeds its seed-to-seed spread; by default every
    # Estimate in the value must (a value without Estimates is not a comparison over seeds)
    beyond_noise: Callable[[Any], bool] = all_beyond_noise


def describe(value: Any) -> str:
    """Short human-readable rendering of a measured value."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, Estimate):
        return str(value)
    if isinstance(value, (float, np.floating)):
        return "nan" if math.isnan(value) else f"{value:.4g}"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}=({describe(v)})" if isinstance(v, Mapping) else
                         f"{k}={describe(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(describe(v) for v in value) + "]"
    return str(value)


def verdict(claim: Claim, value: Any) -> str:
    if value is None:
        return NOT_RUN
    for name, test in claim.preconditions:
        if not test(value):
            return f"{PRECONDITION}: {name}"
    if not claim.beyond_noise(value):
        return WITHIN_NOISE
    return HOLDS if bool(claim.holds(value)) else FAILS


def evaluate(claims: Sequence[Claim], measured: Mapping[str, Any]) -> pd.DataFrame:
    """One row per claim: id, statement, paper, measure, rule, ours, verdict."""
    unknown = set(measured) - {c.id for c in claims}
    if unknown:
        raise KeyError(f"measured values for undeclared claims: {sorted(unknown)}")
    rows = []
    for claim in claims:
        value = measured.get(claim.id)
        rule = claim.rule
        if claim.preconditions:
            rule += "; requires " + ", ".join(name for name, _ in claim.preconditions)
        rows.append({"id": claim.id, "statement": claim.statement, "paper": claim.paper,
                     "measure": claim.measure, "rule": rule,
                     "ours": "" if value is None else describe(value),
                     "verdict": verdict(claim, value)})
    return pd.DataFrame(rows)


def write(table: pd.DataFrame, study: str, scale: str = DEFAULT_SCALE) -> None:
    save_table(table, CLAIMS_TABLE, study, scale)


def summary(table: pd.DataFrame) -> str:
    kinds = table["verdict"].str.split(":").str[0]
    counts = kinds.value_counts()
    return ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS)


def collect(scale: str = DEFAULT_SCALE) -> str:
    """Write CLAIMS.md from every study's claims.csv at `scale`; return its text."""
    sections, tables = [], []
    for study in STUDIES.values():
        csv = paths.figures_dir(study, scale) / f"{CLAIMS_TABLE}.csv"
        if not csv.exists():
            sections.append(f"## {study}\n\nNo results yet: run `make figures SCALE={scale}`.\n")
            continue
        table = pd.read_csv(csv, keep_default_na=False)
        tables.append(table)
        shown = table[["id", "statement", "paper", "ours", "rule", "verdict"]]
        sections.append(f"## {study}\n\n{summary(table)}.\n\n{to_markdown(shown)}")
    total = summary(pd.concat(tables)) if tables else "no claims checked yet"
    text = (
        f"# Claims report ({scale} scale)\n\n"
        "Generated by `make figures` from the notebooks' runs; do not edit by hand. "
        "Each row is one claim of a paper: the paper's value, ours, the rule fixed before "
        "the run, and the verdict. A verdict is *precondition failed* when what the rule "
        "presupposes did not happen (the model did not memorize, a curve is empty), and "
        "*within noise* when a difference does not exceed two standard errors over seeds "
        "(shown as mean ± 2 SE).\n\n"
        f"**Summary:** {total}.\n\n" + "\n".join(sections)
    )
    atomic_write_bytes(paths.claims_report(scale), text.encode())
    return text
