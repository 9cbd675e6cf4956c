"""Claims and their rules: the `Claim` a study declares, the synthetic `Cases` that make each
rule hold, fail and miss each precondition, the fingerprint over what decides a verdict, and
`evaluate`, which gives every claim its verdict in the same order for every study."""

from __future__ import annotations

import functools
import hashlib
import json
import math
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from memlib import STUDIES
from memlib import fingerprint as fp
from memlib.claims.stats import (
    ALPHA,
    LEVEL,
    MAX_REPLICATES,
    Estimate,
    every_beyond_noise,
    holm,
    p_value,
    replicates_needed,
    some_beyond_noise,
)

HOLDS, FAILS, NOT_RUN = "holds", "does not hold", "not run at this scale"
WITHIN_NOISE, PRECONDITION = "within noise", "precondition failed"
VERDICTS = (HOLDS, FAILS, WITHIN_NOISE, PRECONDITION, NOT_RUN)
MIN_REPLICATES = 5  # registered: no rule is decided on fewer replicates than this
PRESET_SCALE = "small"  # the preset whose values a claim's fingerprint covers

Margins = Callable[[Any], Iterable[Estimate]]


def all_of(margins: Margins) -> dict[str, Any]:
    """`holds`, `beyond_noise` and `margins` of a Claim whose rule is "every threshold test
    passes"; `margins(value)` gives each test's margin (see `margin`)."""
    return {"holds": lambda v: all(m.mean >= 0 for m in margins(v)),
            "beyond_noise": lambda v: every_beyond_noise(margins(v)),
            "margins": margins, "combine": "all"}


def any_of(margins: Margins) -> dict[str, Any]:
    """As `all_of`, for a Claim whose rule is "at least one test passes"."""
    return {"holds": lambda v: any(m.mean >= 0 for m in margins(v)),
            "beyond_noise": lambda v: some_beyond_noise(margins(v)),
            "margins": margins, "combine": "any"}


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
    """The default noise rule: the value has Estimates and every one exceeds its spread (a
    value without Estimates has no interval, so it is never beyond noise)."""
    found = estimates(value)
    return bool(found) and all(e.beyond_noise for e in found)


@dataclass(frozen=True)
class Cases:
    """Synthetic measured values that exercise a rule, so that no rule passes by construction:
    one where the claim holds, one where it is false beyond noise, and for each precondition
    (by name) one that fails exactly that precondition and none before it."""

    holds: Any
    fails: Any
    preconditions: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Claim:
    id: str
    statement: str  # what the paper says, in its own terms
    paper: str  # the paper's number or setting, "qualitative" if it gives none
    measure: str  # the statistic, its unit of replication and how our run measures it
    rule: str  # the rule for "holds", in words, with its threshold and direction
    holds: Callable[[Any], bool]  # the same rule, as code
    # (name, test) pairs checked on the measured value before the rule; the first failing
    # one names the verdict "precondition failed: <name>"
    preconditions: tuple[tuple[str, Callable[[Any], bool]], ...] = field(default=())
    # True when the value's difference exceeds its interval; by default every Estimate in the
    # value must (a value without Estimates is not a comparison over replicates)
    beyond_noise: Callable[[Any], bool] = all_beyond_noise
    cases: Cases | None = None  # required: the every-rule-can-fail test reads them
    unit: str = ""  # unit of the headline number ("points", "AUROC", "Spearman ρ", "×")
    # the one number a reader sees first, the one that decides (an Estimate, a float or a
    # short string); by default the first Estimate in the value
    headline: Callable[[Any], Any] | None = None
    caveat: str = ""  # one line a reader needs beside the verdict
    where: str = ""  # the figure or table of the notebook that shows it (file stem)
    scope: str = "paper"  # "paper": a paper's claim; "ours": memlib's own question
    # earlier registered versions of this rule, evaluated beside it so a change stays visible
    previous: tuple[Claim, ...] = ()
    # the threshold tests the rule combines (set by all_of / any_of): their p-values and the
    # replicates they would need; without them every Estimate in the value stands in
    margins: Margins | None = None
    combine: str = "all"  # "all": every margin must pass; "any": one suffices
    # the functions that compute the measured value (fingerprinted with the rule)
    decided_by: tuple[Callable, ...] = ()
    # names of the values in the study's small preset that decide the claim (fingerprinted)
    preset_keys: tuple[str, ...] = ()
    dataset: str = ""  # the dataset a per-dataset claim is about
    # whether this scale can judge the measured value at all (False: not run at this scale,
    # e.g. an arm too small to decide anything); earlier versions without it still judge it
    judged_at: Callable[[Any], bool] | None = None

    @functools.cached_property
    def fingerprint(self) -> str:
        """Hash of what decides a verdict (`fingerprint`); registered before the run."""
        return fingerprint(self)

    @functools.cached_property
    def text_fingerprint(self) -> str:
        """Hash of the rule's defining text alone (`text_fingerprint`)."""
        return text_fingerprint(self)


# ---- fingerprints ------------------------------------------------------------------------

def _text(claim: Claim) -> dict:
    return {"id": claim.id, "statement": claim.statement, "paper": claim.paper,
            "measure": claim.measure, "rule": claim.rule, "unit": claim.unit,
            "scope": claim.scope, "preconditions": [name for name, _ in claim.preconditions]}


def text_fingerprint(claim: Claim) -> str:
    """The register's first scheme: the rule's words only (statement, measure, rule, unit,
    scope, precondition names); 12 hex digits. Kept to recognise entries registered by it."""
    text = json.dumps(_text(claim), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _functions(claim: Claim) -> list[Callable]:
    fns = [claim.holds, claim.beyond_noise, claim.margins, claim.headline, claim.judged_at,
           *(test for _, test in claim.preconditions), *claim.decided_by]
    return [f for f in fns if f is not None]


def _code_parts(functions: Iterable[Callable]) -> list[str]:
    """Fingerprints of each function, of the memlib functions, classes and constants it
    names (`fingerprint.closure`), and of what its closure cells hold (the margins a lambda
    made by `all_of` calls, a task name captured by a factory), transitively."""
    parts, seen, todo = set(), set(), list(functions)

    def value(obj: Any) -> Any:
        """`obj` with each function inside it (a precondition's test in a (name, test)
        constant) replaced by its fingerprint and followed, never by its repr (an address)."""
        if isinstance(obj, (types.FunctionType, functools.partial)):
            todo.append(obj)
            return fp.part(obj)
        if isinstance(obj, (tuple, list)):
            return [value(o) for o in obj]
        if isinstance(obj, Mapping):
            return {str(k): value(v) for k, v in obj.items()}
        return None if callable(obj) else obj

    while todo:
        fn = todo.pop()
        if fn in seen:  # functions hash by identity and stay alive in their modules
            continue
        seen.add(fn)
        for obj in fp.closure(fn):
            parts.add(fp.part(obj) if callable(obj) else fp.part(value(obj)))
            for cell in getattr(obj, "__closure__", None) or ():
                parts.add(fp.part(value(cell.cell_contents)))
    return sorted(parts)


def study_of(claim: Claim) -> str | None:
    """The study whose package (memlib.studies.<study>, any of its parts) defines the claim's
    rule, measure or headline."""
    for fn in _functions(claim):
        names = (getattr(fn, "__module__", "") or "").split(".")
        if names[:2] == ["memlib", "studies"] and len(names) > 2 and names[2] in STUDIES:
            return names[2]
    return None


@functools.cache
def _declared(study: str, path: Path) -> dict:
    from memlib.presets import declared

    return declared(study, path)


def _preset(study: str) -> dict:
    """The values the study's small preset states, read once per process (as the code is)."""
    from memlib.presets import params_file

    return _declared(study, params_file(Path(STUDIES[study]), PRESET_SCALE))


def preset_values(claim: Claim) -> dict[str, Any]:
    """The values of `claim.preset_keys` in its study's small preset."""
    if not claim.preset_keys:
        return {}
    study = study_of(claim)
    if study is None:
        raise ValueError(f"claim {claim.id}: preset_keys need a rule defined in a study's package")
    params = _preset(study)
    missing = [k for k in claim.preset_keys if k not in params]
    if missing:
        raise ValueError(f"claim {claim.id}: {', '.join(missing)} not in the {PRESET_SCALE} "
                         f"preset of {STUDIES[study]}")
    return {k: params[k] for k in claim.preset_keys}


def fingerprint(claim: Claim) -> str:
    """Hash of everything that decides the claim's verdict: its defining text, the code of its
    rule, noise rule, margins, preconditions, headline and `decided_by` functions with every
    memlib function and constant they name, the preset values it names, and the verdict
    order's own constants; 16 hex digits (the text-only scheme had 12)."""
    return fp.fingerprint(_text(claim), _code_parts(_functions(claim)), preset_values(claim),
                          {"min_replicates": MIN_REPLICATES, "level": LEVEL}, length=16)


# ---- verdicts ----------------------------------------------------------------------------

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


def headline(claim: Claim, value: Any) -> str:
    """The one number shown first, with its unit."""
    if value is None:
        return ""
    shown = claim.headline(value) if claim.headline else next(iter(estimates(value)), None)
    if shown is None:
        return ""
    text = describe(shown)
    return f"{text} {claim.unit}".strip() if claim.unit else text


def _decisive(claim: Claim, value: Any) -> list[Estimate]:
    """The margins the rule tests, or every Estimate in the value for a rule without them."""
    return list(claim.margins(value) if claim.margins else estimates(value))


def _settling(claim: Claim, found: list[Estimate]) -> tuple[list[Estimate], Callable]:
    """The margins whose intervals would settle the rule, and how their needs combine: for
    "every test passes", one failing margin suffices (the fewest replicates of the failing
    ones), else every margin must clear (the most); for "some test passes" the reverse."""
    fails = [m for m in found if m.mean < 0]
    passes = [m for m in found if m.mean > 0]
    if claim.margins is None:
        return found, max
    if claim.combine == "any":
        return (passes, min) if passes else (found, max)
    return (fails, min) if fails else (found, max)


def replicates_note(claim: Claim, value: Any) -> str:
    """For a rule not decided by its interval: the replicates at which the observed means
    would clear their thresholds with the observed spread, or that they sit on them."""
    found = _decisive(claim, value)
    if not found:
        return "no interval: the value was measured once, without replicates"
    have = min(m.n for m in found)
    if have < 2:
        return f"no interval: {have} replicate"
    settling, pick = _settling(claim, found)
    needs = [replicates_needed(m) for m in settling]
    if not needs or any(n is None for n in needs):
        return f"no spread to extrapolate from (n={have})"
    need = max(pick(needs), MIN_REPLICATES)
    if need > MAX_REPLICATES:
        return (f"sits on its threshold: more than {MAX_REPLICATES} replicates would not "
                f"clear it at the observed spread (n={have})")
    return f"needs seeds: about {need} replicates would decide it at the observed spread " \
           f"(n={have})"


def p_of(claim: Claim, value: Any, held: bool) -> float:
    """One-sided p-value of a decided rule: of each margin's t-test in the verdict's
    direction, the largest where every margin had to clear ("every test passes" that held,
    "some test passes" that failed), else the smallest of the margins clear on the deciding
    side; for a rule without margins, the largest over its Estimates, each
    tested in the direction of its own sign."""
    found = _decisive(claim, value)
    if claim.margins is None:
        ps = [p_value(e, e.mean >= 0) for e in found]
        return max(ps, default=math.nan)
    if held == (claim.combine == "all"):  # every margin had to clear
        return max((p_value(m, held) for m in found), default=math.nan)
    # one clear margin settled it; a rule settled by a test outside its margins has no p
    return min((p_value(m, held) for m in found if m.beyond_noise and (m.mean > 0) == held),
               default=math.nan)


@dataclass(frozen=True)
class Judgement:
    verdict: str
    note: str = ""  # why a rule was not decided, and what would decide it
    p: float = math.nan  # the decided rule's one-sided p-value


def _replicates(claim: Claim, value: Any, held: bool) -> int:
    """The replicates behind a decided rule: the fewest over every margin where each had to
    clear ("every test passes" that held, "some test passes" that failed), else the most
    over the margins clearly on the deciding side (one of them settles it)."""
    found = _decisive(claim, value)
    if claim.margins is None or held == (claim.combine == "all"):
        return min(m.n for m in found)
    side = [m for m in found if m.beyond_noise and (m.mean > 0) == held]
    return max(m.n for m in side) if side else min(m.n for m in found)


def judge(claim: Claim, value: Any) -> Judgement:
    """The verdict, in order: not run (no value, or one this scale cannot judge); a failed
    precondition; within noise (no interval, an interval that does not clear the threshold,
    or fewer than MIN_REPLICATES replicates); holds or does not hold."""
    if value is None or (claim.judged_at is not None and not claim.judged_at(value)):
        return Judgement(NOT_RUN)
    for name, test in claim.preconditions:
        if not test(value):
            return Judgement(f"{PRECONDITION}: {name}")
    if not _decisive(claim, value) or not claim.beyond_noise(value):
        return Judgement(WITHIN_NOISE, replicates_note(claim, value))
    held = bool(claim.holds(value))
    have = _replicates(claim, value, held)
    if have < 2:
        return Judgement(WITHIN_NOISE, replicates_note(claim, value))
    if have < MIN_REPLICATES:
        return Judgement(WITHIN_NOISE, f"{have} replicates, fewer than the registered minimum "
                                       f"of {MIN_REPLICATES}: rerun with {MIN_REPLICATES} or more")
    return Judgement(HOLDS if held else FAILS, p=p_of(claim, value, held))


def verdict(claim: Claim, value: Any) -> str:
    return judge(claim, value).verdict


def holm_verdicts(verdicts: Sequence[str], p: Sequence[float]) -> list[str]:
    """Each verdict after Holm's adjustment over the family of decided rows (holds or does
    not hold, with a p-value): a row whose adjusted p is not below the one-sided error rate
    of its interval reads within noise; the other rows keep their verdict."""
    family = [i for i, (v, q) in enumerate(zip(verdicts, p, strict=True))
              if v in (HOLDS, FAILS) and not math.isnan(q)]
    adjusted = holm([p[i] for i in family])
    out = list(verdicts)
    for i, q in zip(family, adjusted, strict=True):
        if q >= ALPHA:
            out[i] = WITHIN_NOISE
    return out


def dataset_of(claim: Claim, value: Any) -> str:
    """The data a row was measured on (the value's "data"), else the claim's dataset."""
    if isinstance(value, Mapping) and isinstance(value.get("data"), str):
        return value["data"]
    return claim.dataset


def evaluate(claims: Sequence[Claim], measured: Mapping[str, Any]) -> pd.DataFrame:
    """One row per claim: its rule and fingerprints, ours (headline and every value), the
    verdict with its note and p-value, the verdict after Holm's adjustment within the study,
    and the verdict under each earlier registered version of the rule."""
    unknown = set(measured) - {c.id for c in claims}
    if unknown:
        raise KeyError(f"measured values for undeclared claims: {sorted(unknown)}")
    rows = []
    for claim in claims:
        value = measured.get(claim.id)
        rule = claim.rule
        if claim.preconditions:
            rule += "; requires " + ", ".join(name for name, _ in claim.preconditions)
        judged = judge(claim, value)
        rows.append({"id": claim.id, "scope": claim.scope, "statement": claim.statement,
                     "paper": claim.paper, "measure": claim.measure, "rule": rule,
                     "fingerprint": claim.fingerprint, "headline": headline(claim, value),
                     "ours": "" if value is None else describe(value),
                     "verdict": judged.verdict, "caveat": claim.caveat,
                     "where": claim.where,
                     "previous": "; ".join(f"{old.fingerprint}/{old.text_fingerprint}="
                                           f"{verdict(old, value)}" for old in claim.previous),
                     "note": judged.note,
                     "p": "" if math.isnan(judged.p) else f"{judged.p:.3g}",
                     "dataset": dataset_of(claim, value),
                     "text_fingerprint": claim.text_fingerprint})
    table = pd.DataFrame(rows)
    if len(table):
        p = [math.nan if q == "" else float(q) for q in table["p"]]
        table["holm"] = holm_verdicts(list(table["verdict"]), p)
    return table


Deciders = Mapping[str, tuple[tuple[Callable, ...], tuple[str, ...]]]


def earlier_version(claim: Claim, **registered: Any) -> Claim:
    """`claim` with an earlier registered version of itself kept in `previous`: the same
    claim with the fields (words, preconditions, cases) as they were registered, evaluated
    beside it on the same measured value so that the change stays visible in the report.
    Renamed preconditions keep their cases, matched by position."""
    import dataclasses

    old_names = [name for name, _ in registered.get("preconditions", claim.preconditions)]
    new_names = [name for name, _ in claim.preconditions]
    if "cases" not in registered and claim.cases is not None and old_names != new_names:
        if len(old_names) != len(new_names):
            raise ValueError(f"{claim.id}: an earlier version with other preconditions needs "
                             "its own cases")
        renamed = {old: claim.cases.preconditions[new]
                   for old, new in zip(old_names, new_names, strict=True)}
        registered["cases"] = dataclasses.replace(claim.cases, preconditions=renamed)
    old = dataclasses.replace(claim, previous=(), **registered)
    return dataclasses.replace(claim, previous=(*claim.previous, old))


def declare(claims: Iterable[Claim], deciders: Deciders, dataset: str = "") -> list[Claim]:
    """`claims` with `decided_by` and `preset_keys` set from `deciders` (claim id, or for a
    per-dataset claim the id before its "_<dataset>" suffix -> (functions, preset keys)) and
    with `dataset` when given. A key that names no claim is an error, not a silent miss."""
    import dataclasses

    claims, used = list(claims), set()
    out = []
    for claim in claims:
        key = claim.id.removesuffix(f"_{dataset}") if dataset else claim.id
        changes: dict[str, Any] = {"dataset": dataset} if dataset else {}
        if key in deciders:
            used.add(key)
            changes["decided_by"], changes["preset_keys"] = deciders[key]
        out.append(dataclasses.replace(claim, **changes) if changes else claim)
    unused = set(deciders) - used
    if unused:
        raise ValueError(f"deciders for no claim: {sorted(unused)}")
    return out
