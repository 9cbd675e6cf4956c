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
    EQUIVALENCE_LEVEL,
    LEVEL,
    MAX_REPLICATES,
    P_LEVEL,
    Estimate,
    equivalence_p,
    every_beyond_noise,
    holm,
    replicates_for_equivalence,
    replicates_needed,
    some_beyond_noise,
    two_sided_p,
)

HOLDS, FAILS, NOT_RUN = "holds", "does not hold", "not run at this scale"
WITHIN_NOISE, PRECONDITION = "within noise", "precondition failed"
# A verdict is its kind, then after a colon what qualifies it (every reader of a verdict
# splits it there). The reason of a "does not hold" reached by equivalence, the interval
# across the threshold and inside ±δ: "does not hold: no effect as large as δ = <δ> <unit>"
NO_EFFECT = "no effect as large as δ"
# a "holds" whose interval clears the threshold and also lies inside ±δ:
# "holds: smaller than δ = <δ> <unit>"
SMALLER = "smaller than δ"
# a "within noise" on fewer replicates than the rule's confirmatory n (or the registered
# minimum): "within noise: needs n ≈ <N> <unit>"
NEEDS = "needs n ≈"
# beside a failed precondition: "precondition failed: <name> (the rule alone would read:
# <verdict>)", or, where the value lacks what the rule reads, (CANNOT_READ)
WOULD_READ = "the rule alone would read"
CANNOT_READ = "the rule alone cannot read this value"
NO_DELTA = "none"  # a rule's margin column without δ: "none: <why the rule needs none>"
VERDICTS = (HOLDS, FAILS, WITHIN_NOISE, PRECONDITION, NOT_RUN)
MIN_REPLICATES = 5  # registered: no rule is decided on fewer replicates than this
# a confirmatory n above this is a power analysis's own; one at or below it is the registered
# minimum, which MIN_REPLICATES states (and a unit test may lower, to judge a rule's logic on
# a few synthetic replicates)
PLANNED_ABOVE = MIN_REPLICATES
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
    # the smallest effect of interest of a directional rule (one whose margins test an
    # effect against zero: "gain > 0"), in the margins' unit, only where the paper gives its
    # number (`delta_source`): an interval across the threshold whose 90% interval lies
    # inside ±delta reads does not hold (no effect as large as δ), one beyond the threshold
    # on the rule's side inside it reads holds (smaller than δ); None for a rule whose paper
    # gives no number, a rule with a non-zero threshold (an interval wholly on the wrong
    # side of it already reads does not hold) or one that no effect satisfies ("no later")
    delta: float | None = None
    # in words, decided before the run: where δ comes from (the paper's number), or,
    # without δ, why the rule has none ("the paper gives no number for ...")
    delta_reason: str = ""
    # the unit δ is stated in, where the margins' differs from the headline's `unit` (an
    # accuracy as a fraction where the headline shows points); "" for `unit`
    delta_unit: str = ""
    replicates: str = "seeds"  # the unit of replication the margins' n counts, plural
    # whether more of that unit can be had (seeds: yes; the classes of a dataset: no)
    more_replicates: bool = True
    # the replicates its confirmatory run measures it on, chosen by a power analysis before the
    # run (`powered`); None for a rule not yet planned
    confirmatory_n: int | None = None
    # the sentence of the paper that gives δ's number, quoted; a δ without one is not the
    # paper's and decides no equivalence verdict
    delta_source: str = ""
    # the smallest effect the confirmatory n is powered to decide, in the margins' unit, with
    # where it comes from (the paper's number, or the size the study would care about)
    smallest_effect: float | None = None
    smallest_effect_reason: str = ""
    # what the row reads ("the online RLP heads", "post-hoc probes"): the paper's own
    # instrument decides a paper's row; another instrument's reading is a row of memlib's own
    instrument: str = ""

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
    """Hash of everything that decides the claim's verdict: its defining text, its smallest
    effect of interest δ with its reason and its unit of replication, the code of its rule,
    noise rule, margins, preconditions, headline and `decided_by` functions with every memlib
    function and constant they name, the preset values it names, and the verdict order's own
    constants; 16 hex digits (the text-only scheme had 12)."""
    margins = {"delta": claim.delta, "delta_reason": claim.delta_reason,
               "replicates": claim.replicates, "more_replicates": claim.more_replicates}
    if claim.delta_unit:  # only where set, so that a rule without one keeps its fingerprint
        margins["delta_unit"] = claim.delta_unit
    if claim.confirmatory_n is not None:  # likewise
        margins["confirmatory_n"] = claim.confirmatory_n
    for name in ("delta_source", "smallest_effect", "smallest_effect_reason", "instrument"):
        if getattr(claim, name) not in (None, ""):  # likewise
            margins[name] = getattr(claim, name)
    return fp.fingerprint(_text(claim), margins, _code_parts(_functions(claim)),
                          preset_values(claim),
                          {"min_replicates": MIN_REPLICATES, "level": LEVEL,
                           "equivalence_level": EQUIVALENCE_LEVEL}, length=16)


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
    """The one number shown first, with its unit: the study's headline, else the Estimate
    whose margin gives the row its p (`deciding_estimate`), else the value's first. A
    deciding Estimate other than the first is named by where it sits in the value and shown
    without the unit, which the rule states for its first measure."""
    if value is None:
        return ""
    found = estimates(value)
    shown = claim.headline(value) if claim.headline else (
        (deciding_estimate(claim, value) if claim.margins else None)
        or next(iter(found), None))
    if shown is None:
        return ""
    text = describe(shown)
    if claim.headline is None and found and shown is not found[0] and shown != found[0]:
        return f"{_place(value, shown)}: {text}"
    return f"{text} {claim.unit}".strip() if claim.unit else text


def _place(value: Any, target: Estimate, path: str = "") -> str:
    """Where `target` sits in `value` ("enrichment", "mlp.rise"); "" if it does not."""
    if value is target:
        return path
    items = (value.items() if isinstance(value, Mapping) else
             enumerate(value) if isinstance(value, (list, tuple)) else ())
    for key, inner in items:
        found = _place(inner, target, f"{path}.{key}" if path else str(key))
        if found:
            return found
    return ""


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


def _equivalence_needs(claim: Claim, found: list[Estimate]) -> int | None:
    """The replicates at which the rule's margins would lie inside ±δ (one margin settles
    "every test passes", every margin must for "some test passes"); None when no n would."""
    if claim.delta is None:
        return None
    needs = [replicates_for_equivalence(m, claim.delta) for m in found]
    if claim.combine == "any":
        return None if not needs or None in needs else max(needs)
    return min((n for n in needs if n is not None), default=None)


def _reach(claim: Claim, value: Any, found: list[Estimate]) -> tuple[int, str] | None:
    """The replicates (at least the registered minimum; MAX_REPLICATES + 1 when more than
    MAX_REPLICATES would not do) at which the observed means would decide the rule at the
    observed spread, and the verdict they would reach; None without a spread."""
    settling, pick = _settling(claim, found)
    needs = [replicates_needed(m) for m in settling]
    if not needs or any(n is None for n in needs):
        return None
    reach = [(pick(needs), HOLDS if claim.holds(value) else FAILS)]
    equivalent = _equivalence_needs(claim, found)
    if equivalent is not None:
        reach.append((equivalent, f"{FAILS} ({NO_EFFECT})"))
    need, reached = min(reach, key=lambda r: r[0])
    return max(need, MIN_REPLICATES), reached


def replicates_note(claim: Claim, value: Any) -> str:
    """For a rule not decided by its interval: the replicates (of its unit) at which the
    observed means would decide it at the observed spread, and which verdict they would
    reach; that they sit on the threshold; or that its unit cannot grow."""
    found = _decisive(claim, value)
    if not found:
        return "no interval: the value was measured once, without replicates"
    have = min(m.n for m in found)
    if have < 2:
        return f"no interval: {have} replicate"
    unit = claim.replicates
    if not claim.more_replicates:
        return (f"its n counts {unit} ({have}), which more seeds do not add: no number of "
                "replicates would narrow it")
    reach = _reach(claim, value, found)
    if reach is None:
        return f"no spread to extrapolate from (n={have})"
    need, reached = reach
    if need > MAX_REPLICATES:
        return (f"sits on its threshold: more than {MAX_REPLICATES} {unit} would not "
                f"decide it at the observed spread (n={have})")
    return (f"needs seeds: about {need} {unit} would read {reached} at the observed spread "
            f"(n={have})")


def _deciding(claim: Claim, value: Any, held: bool) -> tuple[float, Estimate] | None:
    """The p and the margin of the test that decides (or would decide) the rule in the
    direction `held` (`p_of`); None when no margin lies on the deciding side."""
    found = _decisive(claim, value)
    if claim.margins is None:
        scored, pick = [(two_sided_p(e, e.mean >= 0), e) for e in found], max
    elif held == (claim.combine == "all"):  # every margin had to clear
        scored, pick = [(two_sided_p(m, held), m) for m in found], max
    else:
        scored = [(two_sided_p(m, held), m) for m in found if (m.mean > 0) == held]
        pick = min
    return pick(scored, key=lambda pair: pair[0]) if scored else None


def p_of(claim: Claim, value: Any, held: bool) -> float:
    """Two-sided p-value of the test that decides (or would decide) the rule in the direction
    `held`, on the scale of its interval, so that p < P_LEVEL exactly when that interval
    clears the threshold: where every margin had to clear ("every test passes" that held,
    "some test passes" that failed) the largest of theirs (an intersection-union test), else
    the smallest of the margins on the deciding side (one settles it). A rule without
    margins tests every Estimate in its value (each in the direction of its sign): the
    largest. nan when no margin lies on the deciding side (settled by a test outside them)."""
    found = _deciding(claim, value, held)
    return math.nan if found is None else found[0]


def deciding_margin(claim: Claim, value: Any) -> Estimate | None:
    """The margin whose test gives the row its p (`judge`'s: the interval's test, or the two
    one-sided tests of an equivalence); None for a row without a p (not run, a failed
    precondition) or whose p no single margin gives."""
    judged = judge(claim, value)
    if math.isnan(judged.p):
        return None
    for found in (_deciding(claim, value, bool(claim.holds(value))),
                  _equivalent(claim, value)):
        if found is not None and found[0] == judged.p:
            return found[1]
    return None


def deciding_estimate(claim: Claim, value: Any) -> Estimate | None:
    """The Estimate of the value whose margin gives the row its p (`deciding_margin`): a
    margin keeps its Estimate's spread and replicates (`margin`), which find it; None where
    none matches."""
    m = deciding_margin(claim, value)
    if m is None:
        return None
    return next((e for e in estimates(value) if e.n == m.n
                 and (e.se == m.se or (math.isnan(e.se) and math.isnan(m.se)))), None)


def _equivalent(claim: Claim, value: Any) -> tuple[float, Estimate] | None:
    """The p and the margin of the two one-sided tests that decide an equivalence
    (`equivalence_of`); None for a rule without δ or without a test."""
    if claim.delta is None:
        return None
    scored = [(q, m) for m in _decisive(claim, value)
              for q in (equivalence_p(m, claim.delta),) if not math.isnan(q)]
    if not scored:
        return None
    return (max if claim.combine == "any" else min)(scored, key=lambda pair: pair[0])


def _equivalence(claim: Claim, margins: Sequence[Estimate]) -> float:
    """The p of the two one-sided tests that `margins` lie inside ±δ, the larger over every
    margin for "some test passes" (each must), the smaller for "every test passes" (one
    suffices); nan for a rule without δ or without a margin to test."""
    if claim.delta is None:
        return math.nan
    ps = [q for q in (equivalence_p(m, claim.delta) for m in margins) if not math.isnan(q)]
    if not ps:
        return math.nan
    return max(ps) if claim.combine == "any" else min(ps)


def equivalence_of(claim: Claim, value: Any) -> float:
    """The p of the two one-sided tests that the rule's margins lie inside ±δ
    (`_equivalence` over every margin); nan for a rule without δ."""
    return _equivalence(claim, _decisive(claim, value))


def delta_size(claim: Claim) -> str:
    """δ with the unit it is stated in ("1.5 points", "0.01 of accuracy")."""
    return f"{claim.delta:g} {claim.delta_unit or claim.unit}".strip()


def margin_text(claim: Claim) -> str:
    """The row's smallest effect of interest with its reason and, quoted, the paper's
    sentence that gives it ("1.5 points: the paper's gain (the paper: "…")"), "none: <why>"
    for a rule that states why it has none, "" for one that says nothing."""
    if claim.delta is not None:
        source = f' (the paper: "{claim.delta_source}")' if claim.delta_source else ""
        return f"{delta_size(claim)}: {claim.delta_reason}{source}".strip()
    return f"{NO_DELTA}: {claim.delta_reason}" if claim.delta_reason.strip() else ""


@dataclass(frozen=True)
class Judgement:
    verdict: str
    note: str = ""  # why a rule was not decided, and what would decide it
    p: float = math.nan  # the p of the test that decides (or would decide) the rule
    n: int = 0  # the replicates behind that test


def _replicates(claim: Claim, value: Any, held: bool) -> int:
    """The replicates behind a decided rule: the fewest over every margin where each had to
    clear ("every test passes" that held, "some test passes" that failed), else the most
    over the margins clearly on the deciding side (one of them settles it)."""
    found = _decisive(claim, value)
    if claim.margins is None or held == (claim.combine == "all"):
        return min(m.n for m in found)
    side = [m for m in found if m.beyond_noise and (m.mean > 0) == held]
    return max(m.n for m in side) if side else min(m.n for m in found)


def _by_interval(claim: Claim, value: Any, found: list[Estimate]) -> Judgement | None:
    """The verdict the intervals give, direction first, whatever the replicate count: the
    95% interval beyond the threshold on the rule's side reads holds ("holds: smaller than
    δ" when the 90% interval also lies inside ±δ), on the wrong side does not hold; an
    interval that includes the threshold and lies inside ±δ reads "does not hold: no effect
    as large as δ" (for "every test passes", a margin whose interval includes the threshold
    suffices; for "some test passes", every margin must lie inside); None otherwise."""
    held = bool(claim.holds(value))
    if claim.beyond_noise(value):
        p, n = p_of(claim, value, held), _replicates(claim, value, held)
        if held and _equivalence(claim, found) < P_LEVEL:
            return Judgement(f"{HOLDS}: {SMALLER} = {delta_size(claim)}", p=p, n=n)
        return Judgement(HOLDS if held else FAILS, p=p, n=n)
    across = found if claim.combine == "any" else [m for m in found if not m.beyond_noise]
    equivalent = _equivalence(claim, across)
    if equivalent < P_LEVEL:
        return Judgement(f"{FAILS}: {NO_EFFECT} = {delta_size(claim)}", p=equivalent,
                         n=min(m.n for m in found))
    return None


def _needs(claim: Claim, value: Any, found: list[Estimate], need: int) -> Judgement:
    """A rule measured on fewer replicates than it is decided on (`need`: its confirmatory
    n, at least the registered minimum): within noise, with the replicates that would decide
    it (the more of `need` and what the observed spread asks, as `replicates_note` counts),
    and in its note what its intervals alone would read on these replicates."""
    held = bool(claim.holds(value))
    have, unit = min(m.n for m in found), claim.replicates
    reach = _reach(claim, value, found) if have >= 2 else None
    target = max(need, reach[0]) if reach else need
    # beyond MAX_REPLICATES the spread gives no number, only that it is more than that
    sits = reach is not None and reach[0] > MAX_REPLICATES and need <= MAX_REPLICATES
    wanted = f"needs n > {MAX_REPLICATES} {unit}" if sits else f"{NEEDS} {target} {unit}"
    registered = ("the confirmatory n its power analysis set" if need > MIN_REPLICATES
                  else "the registered minimum")
    alone = _by_interval(claim, value, found) if have >= 2 else None
    note = (f"{have} {unit}, fewer than {registered} ({need}): no verdict on fewer; "
            + (f"on these {have} its interval alone would read {alone.verdict}"
               if alone is not None else replicates_note(claim, value)))
    return Judgement(f"{WITHIN_NOISE}: {wanted}", note, p_of(claim, value, held),
                     _replicates(claim, value, held))


def decided_on(claim: Claim) -> int:
    """The replicates a rule is decided on: its confirmatory n where its power analysis set
    one above the registered minimum, else the registered minimum, MIN_REPLICATES."""
    planned = claim.confirmatory_n or 0
    return planned if planned > PLANNED_ABOVE else MIN_REPLICATES


def _rule_alone(claim: Claim, value: Any) -> Judgement:
    """The verdict of the rule on a measured value, its preconditions aside (`judge`)."""
    found = _decisive(claim, value)
    if not found:
        return Judgement(WITHIN_NOISE, replicates_note(claim, value))
    need = decided_on(claim)
    if min(m.n for m in found) < need and claim.more_replicates:
        return _needs(claim, value, found, need)
    held = bool(claim.holds(value))
    p, have = p_of(claim, value, held), _replicates(claim, value, held)
    if have < 2:
        return Judgement(WITHIN_NOISE, replicates_note(claim, value), p, have)
    decided = _by_interval(claim, value, found)
    return decided or Judgement(WITHIN_NOISE, replicates_note(claim, value), p, have)


def sign_test_n() -> int:
    """The fewest replicates, all on one side, whose exact two-sided sign test is below
    P_LEVEL (2·0.5^n < 0.05: six): the n a margin without spread needs for its p to agree
    with its zero-width interval."""
    return next(n for n in range(1, 64) if 2 * 0.5 ** n < P_LEVEL)


def _would_read(claim: Claim, value: Any) -> str:
    """What the rule alone would read on a value that failed a precondition, in words. A
    precondition often guards a value the rule cannot read (no peak, so no peak epoch):
    that reads as such, not as an error of the report."""
    try:
        return f"{WOULD_READ}: {_rule_alone(claim, value).verdict}"
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, ZeroDivisionError):
        return CANNOT_READ


def judge(claim: Claim, value: Any) -> Judgement:
    """The verdict, in order: not run (no value, or one this scale cannot judge); a failed
    precondition, with what the rule alone would read beside it; within noise, needing more
    replicates, when measured on fewer than the rule's confirmatory n (at least
    MIN_REPLICATES); then direction first: holds when the 95% interval clears the
    threshold on the rule's side ("holds: smaller than δ" when its 90% interval also lies
    inside ±δ), does not hold when it clears it on the wrong side; does not hold (no effect
    as large as δ) when the interval includes the threshold and its 90% interval lies
    inside ±δ; otherwise within noise (no interval, or an interval across the threshold),
    with the replicates that would decide it and the verdict they would reach. Each tested
    row carries the p of its test."""
    if value is None or (claim.judged_at is not None and not claim.judged_at(value)):
        return Judgement(NOT_RUN)
    for name, test in claim.preconditions:
        if not test(value):
            return Judgement(f"{PRECONDITION}: {name} ({_would_read(claim, value)})")
    return _rule_alone(claim, value)


def verdict(claim: Claim, value: Any) -> str:
    return judge(claim, value).verdict


def verdict_kind(verdict: str) -> str:
    """A verdict's kind, one of VERDICTS: "holds: smaller than δ = 1.5 points" -> "holds"."""
    return verdict.split(":")[0].strip()


def delta_mark(verdict: str) -> str:
    """What δ says of a decided verdict, for a reader who sees only its kind: "smaller than
    δ" beside a holds, "no effect as large as δ" beside a does not hold; else ""."""
    said = qualifier(verdict)
    return next((mark for kind, mark in ((HOLDS, SMALLER), (FAILS, NO_EFFECT))
                 if verdict_kind(verdict) == kind and said.startswith(mark)), "")


def qualifier(verdict: str) -> str:
    """What qualifies a verdict, after its kind: "does not hold: no effect as large as δ =
    1.5 points" -> "no effect as large as δ = 1.5 points"; "" for a bare kind."""
    return verdict.partition(":")[2].strip()


def holm_adjusted(p: Sequence[float], family: Sequence[bool] | None = None,
                  absent: int = 0) -> list[float]:
    """Holm's adjusted p of every row over the study's family; nan for the rows outside it.
    Without `family`, the family is every row with a p, that is every hypothesis the study
    tested (decided, within noise, or decided by equivalence), and the rows not tested (not
    run, a failed precondition, no interval) are outside it. `family` (a flag per row) is a
    family fixed before the run: each row in it counts, one without a p (its precondition
    failed, it did not run) as p = 1, and so do `absent` rows of the family the table lacks."""
    members = [i for i, q in enumerate(p)
               if (not math.isnan(q) if family is None else family[i])]
    tested = [1.0 if math.isnan(p[i]) else p[i] for i in members]
    out = [math.nan] * len(p)
    for i, q in zip(members, holm([*tested, *[1.0] * absent])[:len(members)], strict=True):
        out[i] = q
    return out


def holm_verdicts(verdicts: Sequence[str], p: Sequence[float],
                  family: Sequence[bool] | None = None, absent: int = 0) -> list[str]:
    """Each verdict after Holm's adjustment over the study's family (`holm_adjusted`): a
    decided row (holds or does not hold, by its interval or by equivalence) whose adjusted p
    is not below P_LEVEL reads within noise; the other rows keep their verdict."""
    out = list(verdicts)
    for i, q in enumerate(holm_adjusted(p, family, absent)):
        if verdict_kind(out[i]) in (HOLDS, FAILS) and not q < P_LEVEL:
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
                     "replicates": f"{judged.n} {claim.replicates}" if judged.n else "",
                     "delta": margin_text(claim),
                     "dataset": dataset_of(claim, value),
                     "text_fingerprint": claim.text_fingerprint})
    table = pd.DataFrame(rows)
    if len(table):  # Holm on the p-values as computed, not as rounded for the table
        p = [judge(c, measured.get(c.id)).p for c in claims]
        table["p_holm"] = [("" if math.isnan(q) else f"{q:.3g}") for q in holm_adjusted(p)]
        table["holm"] = holm_verdicts(list(table["verdict"]), p)
        table.attrs["p"] = p  # unrounded, for a family fixed at registration (`write`)
    table.attrs["measured"] = {c.id: measured[c.id] for c in claims if c.id in measured}
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


def declare(claims: Iterable[Claim], deciders: Deciders, dataset: str = "",
            measure: Callable | None = None) -> list[Claim]:
    """`claims` with `decided_by` and `preset_keys` set from `deciders` (claim id, or for a
    per-dataset claim the id before its "_<dataset>" suffix -> (functions, preset keys)) and
    with `dataset` when given; `measure`, the study's function that assembles every row's
    value, joins every claim's `decided_by`. A key that names no claim is an error, not a
    silent miss."""
    import dataclasses

    claims, used = list(claims), set()
    out = []
    for claim in claims:
        key = claim.id.removesuffix(f"_{dataset}") if dataset else claim.id
        changes: dict[str, Any] = {"dataset": dataset} if dataset else {}
        if key in deciders:
            used.add(key)
            changes["decided_by"], changes["preset_keys"] = deciders[key]
        if measure is not None:
            found = changes.get("decided_by", claim.decided_by)
            changes["decided_by"] = (measure, *(f for f in found if f is not measure))
        out.append(dataclasses.replace(claim, **changes) if changes else claim)
    unused = set(deciders) - used
    if unused:
        raise ValueError(f"deciders for no claim: {sorted(unused)}")
    return out


def with_margins(claims: Iterable[Claim], margins: Mapping[str, Mapping[str, Any]],
                 dataset: str = "") -> list[Claim]:
    """`claims` with their smallest effect of interest and unit of replication set from
    `margins` (claim id, or the id before its "_<dataset>" suffix -> Claim fields among
    delta, delta_reason, delta_unit, delta_source, smallest_effect, smallest_effect_reason,
    instrument, replicates, more_replicates). A δ needs its reason and the paper's
    sentence that gives its number (delta_source), and must be positive; a reason without δ
    says why the rule needs none (a threshold rule, one that zero satisfies, a paper that
    gives no number); a key that names no claim, or another field, is an error. Earlier
    versions already in a claim's `previous` keep the margins they were registered with."""
    import dataclasses

    allowed = {"delta", "delta_reason", "delta_unit", "replicates", "more_replicates",
               "delta_source", "smallest_effect", "smallest_effect_reason", "instrument"}
    out, used = [], set()
    for claim in claims:
        key = claim.id.removesuffix(f"_{dataset}") if dataset else claim.id
        fields = dict(margins.get(key, {}))
        if key in margins:
            used.add(key)
        if set(fields) - allowed:
            raise ValueError(f"{claim.id}: not a margin field: {sorted(set(fields) - allowed)}")
        delta = fields.get("delta")
        if delta is not None and not fields.get("delta_reason", "").strip():
            raise ValueError(f"{claim.id}: a smallest effect of interest needs its reason")
        if delta is not None and not delta > 0:
            raise ValueError(f"{claim.id}: a smallest effect of interest must be positive, "
                             f"not {delta}")
        if delta is not None and not fields.get("delta_source", "").strip():
            raise ValueError(f"{claim.id}: a smallest effect of interest needs the paper's "
                             "sentence that gives its number (delta_source): a δ the paper "
                             "does not give decides no equivalence")
        out.append(dataclasses.replace(claim, **fields) if fields else claim)
    unused = set(margins) - used
    if unused:
        raise ValueError(f"margins for no claim: {sorted(unused)}")
    return out


# ---- confirmatory n ----------------------------------------------------------------------

def replicates(value: Any) -> int:
    """The fewest replicates behind any Estimate in `value` (0 without one)."""
    return min((e.n for e in estimates(value)), default=0)


def _with_n(value: Any, n: int) -> Any:
    """`value` with every Estimate's replicate count raised to at least `n` (the cases of a
    rule that needs n replicates)."""
    import dataclasses

    if isinstance(value, Estimate):
        return dataclasses.replace(value, n=max(value.n, n))
    if isinstance(value, Mapping):
        return {k: _with_n(v, n) for k, v in value.items()}
    return value


def with_planned_cases(claim: Claim) -> Claim:
    """`claim` with every Estimate of its Cases raised to its confirmatory n: for cases
    written after `powered` (a revision's own), so that they exercise the rule, not the
    replicates it is decided on."""
    import dataclasses

    need, cases = claim.confirmatory_n or 0, claim.cases
    if cases is None or need <= MIN_REPLICATES:
        return claim
    return dataclasses.replace(claim, cases=Cases(
        _with_n(cases.holds, need), _with_n(cases.fails, need),
        {k: _with_n(v, need) for k, v in cases.preconditions.items()}))


def powered(claim: Claim, need: int, source: str) -> Claim:
    """`claim` with its confirmatory n, chosen by the power analysis `source` before the run,
    in its caveat and in `confirmatory_n`, which `judge` reads: measured on fewer replicates
    it reads "within noise: needs n ≈ <N>", never a verdict decided underpowered, and never
    "not run at this scale" (it ran). Its cases are measured on that many replicates."""
    import dataclasses

    said = f"confirmatory n ≥ {need} {claim.replicates} ({source})"
    caveat = f"{claim.caveat}; {said}" if claim.caveat else said
    cases = claim.cases
    if cases is not None and need > MIN_REPLICATES:
        cases = Cases(_with_n(cases.holds, need), _with_n(cases.fails, need),
                      {k: _with_n(v, need) for k, v in cases.preconditions.items()})
    return dataclasses.replace(claim, cases=cases, caveat=caveat, confirmatory_n=need)
