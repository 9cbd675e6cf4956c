"""Power analysis of every registered rule of the five studies from a pilot run of the
registered code: `python pilots/power.py [PILOT_FIGURES [STUDY ...]]` (seconds) reads each
study's measured values (`claims_values.json`) from a `make figures` run whose MEMLIB_FIGURES
was PILOT_FIGURES (default: the committed figures/, the last confirmatory run, whose seeds are
used already), and writes `pilots/<notebook>_power_run.csv`: per rule, its replicate unit, the
pilot's n, whether its preconditions held there, the weakest deciding margin's mean and
per-replicate SD, δ, its stated smallest effect, the chance of a decision at the study's budget
when the true effect is that smallest effect, the n giving >= 80% chance of a decision (either
way, or inside ±δ) at it, the verdict that n most likely reaches, the n to register, and
whether the rule stays in Holm's family (`family`: "in", or why not).

The pilot is the small preset run on seeds already used (the last confirmatory run's, or a
pilot's that `register/seed-ledger.yaml` lists): the registered rules, margins, δ and
smallest effects were fixed before it ran, and only each rule's n is chosen from it, from the
pilot's per-replicate spread alone (`memlib.claims.power.at_effect`): never at the pilot's
mean. The decision simulated is the rule's own (`memlib.claims.power`). A rule without a
stated smallest effect cannot be planned this way and says so in its row. A new rule, with no
pilot value, takes the spread of a stand-in row (`STAND_INS`, named with its reason in the
row). Study 1's earlier analysis from its probe pilot (`pilots/rlp_power.py`, three seeds)
stays beside it.

A rule whose n exceeds its study's budget (`BUDGET`) runs on that budget and reads within
noise with the n it needs, outside Holm's family;
a rule whose precondition failed in the pilot gets the registered minimum (its run says
whether it fails again); a rule whose unit cannot grow (a dataset's classes) keeps its n and
says its power; a rule whose chance at the n it runs on stays below half cannot be decided
there, and `memlib register` leaves it out of Holm's family with that label."""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import memlib  # noqa: F401  before numpy and pandas (imported where used): it pins the CPU
from memlib.claims.power import IN_FAMILY

HERE = Path(__file__).parent
ALL_STUDIES = ("rlp", "modarith", "fisher", "probes", "lens")
N_MAX = 200  # beyond this no n is planned: the rule runs on its budget, outside the family
# the replicates each study's confirmatory run affords a rule, by its unit (a rule whose unit
# cannot grow keeps the pilot's): one cold `make figures` of about 105 minutes on 2 cores at
# the pilot's timings (pilots/power.md). Study 1 runs seven seeds (two more than the pilot,
# about 18 minutes of wall time: its rows on the online heads need 6 and 7), study 2 six
# (phase-error-grows' replicates are all equal: the exact sign test decides from six),
# study 3's main arm twelve (about 35 s of compute per seed), study 4 54 runs per pair (about
# 16 s each, to decide the MNIST rows) and its five ViT stand-ins (a ViT per model, minutes
# each), the lens study 1's seven (every rule it can decide needs five)
BUDGET: dict[str, dict[str, int]] = {
    "rlp": {"seeds": 7}, "modarith": {"seeds": 6}, "fisher": {"seeds": 12},
    "probes": {"runs": 54, "models": 5}, "lens": {"seeds": 7}}


def budget_of(study: str, claim, have: int) -> int:
    """The replicates the confirmatory run affords `claim` (`BUDGET`), `have` where its unit
    cannot grow."""
    return BUDGET[study].get(claim.replicates, have) if claim.more_replicates else have
# per study: a rule without pilot values (a new row) -> (the existing row of the same study
# whose margins lend it their per-replicate spread, why that row measures alike)
STAND_INS: dict[str, dict[str, tuple[str, str]]] = {
    "rlp": {
        "depth_probes": ("depth", "the version of depth the pilot judged read these very "
                                  "probes (block-wise excess over their frozen control)"),
        "positive_control": ("depth", "a per-seed difference of the deepest layer's "
                                      "random-label excess, in points"),
        "noise_reading": ("depth", "a per-seed difference of the deepest layer's random-label "
                                   "excess, in points"),
        "penalty_probes": ("regularizer_works", "the penalty's drop in random-label accuracy "
                                                "at the judged λ, in points"),
        "frozen_near_chance": ("depth", "the spread of a layer's random-label accuracy "
                                        "between seeds, in points")},
    "modarith": {f"{row}-quadratic": (row, "the same filtered network's FF-G, read with x² "
                                           "instead of the training activation")
                 for row in ("ff-recovers-rule", "ff-recovers-rule-leaky_relu",
                             "ff-recovers-rule-mul")},
    "fisher": {"inflation_under_noise": ("onset", "a per-seed er difference over the same "
                                                  "runs' early epochs")},
}


def _likely(power) -> str:
    return max(("holds", power.holds), ("does not hold", power.fails),
               ("no effect as large as δ", power.equivalent), key=lambda v: v[1])[0]


def _margins(claim, value) -> list:
    from memlib.claims.rules import _decisive

    return [m for m in _decisive(claim, value) if m.n >= 2 and m.se > 0]


UNREADABLE = (KeyError, TypeError, IndexError, AttributeError)  # a value of another measure


def _earlier_margins(claim, value) -> list:
    """The margins of the version of `claim` the pilot judged (its latest earlier version),
    for a pilot value that predates this version's measure: the spread of the same quantity
    as the pilot measured it; [] where that version cannot read it either."""
    try:
        return _margins(claim.previous[-1], value) if claim.previous else []
    except UNREADABLE:
        return []


def plan(claim, margins, budget: int, row: dict) -> dict:
    """The row of a rule with pilot margins: its power at `budget` and the n that decides it
    with 80% chance, both at its stated smallest effect, and whether it stays in Holm's
    family."""
    from memlib.claims.power import (
        at_effect,
        family_label,
        power_at,
        replicates_for_power,
    )
    from memlib.claims.rules import MIN_REPLICATES

    weakest = min(margins, key=lambda m: abs(m.statistic[0]) / m.statistic[1])
    have = min(m.n for m in margins)
    row |= {"pilot_n": have, "margins": len(margins), "weakest_mean": weakest.mean,
            "weakest_sd": weakest.sd, "smallest_effect": claim.smallest_effect}
    if claim.smallest_effect is None:
        return {**row, "family": IN_FAMILY,
                "registered": f"n = {MIN_REPLICATES} (no smallest effect stated: the rule "
                              "cannot be planned at one)"}
    effect = at_effect(margins, claim.smallest_effect)
    at_budget = power_at(effect, budget, claim.combine, claim.delta)
    row["power_at_budget"] = round(at_budget.decides, 3)
    if not claim.more_replicates:
        return {**row, "n_needed": math.nan, "expected_verdict": _likely(at_budget),
                "registered": f"n = {have} {claim.replicates} (cannot grow; power "
                              f"{at_budget.decides:.2f})",
                "family": family_label(have, at_budget.decides)}
    found = replicates_for_power(effect, claim.combine, claim.delta, least=MIN_REPLICATES,
                                 most=N_MAX)
    if found is None:
        return {**row, "n_needed": math.nan, "expected_verdict": "within noise",
                "registered": f"n = {budget} (more than {N_MAX} {claim.replicates} would not "
                              "decide it at its smallest effect)",
                "family": f"cannot be decided at n = {budget}: power "
                          f"{at_budget.decides:.0%} (more than {N_MAX} needed)"}
    row |= {"n_needed": found.n, "expected_verdict": _likely(found)}
    if found.n > budget:  # it runs and reads within noise with the n it needs
        return {**row, "registered": f"n = {found.n} (the run affords {budget})",
                "family": f"cannot be decided at n = {budget}: power "
                          f"{at_budget.decides:.0%} (needs n = {found.n})"}
    return {**row, "registered": f"n = {found.n}",
            "family": family_label(found.n, found.decides)}


def analyse(study: str):
    import pandas as pd

    from memlib import STUDIES as NOTEBOOKS
    from memlib import paths, studies
    from memlib.claims.register import CLAIMS_TABLE, read_results
    from memlib.claims.rules import MIN_REPLICATES, _decisive, sign_test_n
    from memlib.claims.stats import without_spread
    from memlib.claims.values import read_values

    values = read_values(study)
    if values is None:
        sys.exit(f"power.py: no claims_values.json for {NOTEBOOKS[study]} under "
                 f"{os.environ.get('MEMLIB_FIGURES')}: run `make figures` there first")
    claims = {c.id: c for c in studies.study_claims(study)}
    rows = []
    # a row the pilot's table holds without a stored value was not run at this scale there;
    # one it lacks is new since the pilot
    table = paths.figures_dir(NOTEBOOKS[study]) / f"{CLAIMS_TABLE}.csv"
    judged = set(read_results(table)["id"]) if table.exists() else set()
    for claim in claims.values():
        row = {"rule": claim.id, "unit": claim.replicates, "delta": claim.delta}
        stand_in = STAND_INS.get(study, {}).get(claim.id)
        if claim.id not in values and stand_in is not None:
            other, why = stand_in
            value = values.get(other)
            try:
                margins = [] if value is None else _margins(claims[other], value)
            except UNREADABLE:
                margins = _earlier_margins(claims[other], value)
            row["spread_from"] = f"{other}: {why}"
            if not margins:
                rows.append({**row, "family": IN_FAMILY, "registered":
                             f"its stand-in {other} has no spread in the pilot: no n planned"})
                continue
            budget = budget_of(study, claim, min(m.n for m in margins))
            rows.append(plan(claim, margins, budget, {**row, "precondition": "stand-in"}))
            continue
        if claim.id not in values and claim.id not in judged:
            rows.append({**row, "family": IN_FAMILY, "registered": "no pilot value and no "
                         "stand-in (STAND_INS): no n planned"})
            continue
        value = values.get(claim.id)
        if value is None:
            rows.append({**row, "family": "not run at this scale",
                         "registered": "not run at this scale in the pilot: no n planned"})
            continue
        try:
            failed = next((name for name, test in claim.preconditions if not test(value)),
                          None)
            margins = _margins(claim, value)
        except UNREADABLE:
            # the pilot measured this row for the version it judged; this version reads
            # fields its value lacks: plan on that version's margins, at this version's
            # smallest effect
            margins = _earlier_margins(claim, value)
            row["spread_from"] = ("the version the pilot judged: the pilot's value predates "
                                  "this version's measure")
            if not margins:
                rows.append({**row, "family": IN_FAMILY, "registered":
                             f"n = {MIN_REPLICATES} (no spread in the pilot for this measure)"})
                continue
            have = min(m.n for m in margins)
            budget = budget_of(study, claim, have)
            rows.append(plan(claim, margins, budget, {**row, "precondition": "earlier version"}))
            continue
        if failed:
            rows.append({**row, "precondition": f"failed: {failed}", "family": IN_FAMILY,
                         "registered": f"n = {MIN_REPLICATES} (precondition failed in the pilot)"})
            continue
        if not margins:
            flat = [m for m in _decisive(claim, value) if m.n >= 2 and without_spread(m)]
            if flat:  # equal replicates: only the exact sign test can decide, from six on
                need = sign_test_n()
                budget = budget_of(study, claim, need)
                rows.append({**row, "precondition": "held", "pilot_n": min(m.n for m in flat),
                             "n_needed": need,
                             "registered": f"n = {need} (the pilot's replicates are all "
                                           "equal: the exact sign test decides from six)",
                             "family": IN_FAMILY if need <= budget else
                             f"cannot be decided at n = {budget} (needs n = {need})"})
                continue
            rows.append({**row, "precondition": "held", "family": IN_FAMILY,
                         "registered": "no spread in the pilot: no n planned"})
            continue
        have = min(m.n for m in margins)
        budget = budget_of(study, claim, have)
        rows.append(plan(claim, margins, budget, {**row, "precondition": "held"}))
    return pd.DataFrame(rows)


def main(argv: list[str]) -> int:
    figures = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent / "figures"
    chosen = tuple(argv[1:]) or ALL_STUDIES
    unknown = [s for s in chosen if s not in ALL_STUDIES]
    if not figures.is_dir() or unknown:
        print("usage: python pilots/power.py [PILOT_FIGURES [STUDY ...]]: PILOT_FIGURES the "
              "MEMLIB_FIGURES folder of a pilot `make figures` run (default: the committed "
              f"figures/), STUDY among {', '.join(ALL_STUDIES)}", file=sys.stderr)
        return 2
    os.environ["MEMLIB_FIGURES"] = str(figures.resolve())
    from memlib import STUDIES as NOTEBOOKS

    for study in chosen:
        table = analyse(study)
        out = HERE / f"{NOTEBOOKS[study]}_power_run.csv"
        table.to_csv(out, index=False, float_format="%.4g")
        print(f"{out.name}:")
        shown = [c for c in ("rule", "pilot_n", "smallest_effect", "power_at_budget",
                             "n_needed", "registered", "family") if c in table]
        print(table[shown].to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
