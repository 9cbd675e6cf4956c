"""Power analysis of every registered rule of the five studies from a pilot run of the
registered code: `python pilots/power.py PILOT_FIGURES` (seconds) reads each study's measured values
(`claims_values.json`) from a `make figures` run whose MEMLIB_FIGURES was PILOT_FIGURES, and
writes `pilots/<notebook>_power_run.csv`: per rule, its replicate unit, the pilot's n, whether its
preconditions held there, the weakest deciding margin's mean and per-replicate SD, δ, the
chance of a decision at the study's budget, the n giving >= 80% chance of a decision (either
way, or inside ±δ), the verdict that n most likely reaches, and the n to register.

The pilot is the small preset run on the seeds of the confirmatory run before this one
(already used, so never fresh; `register/seed-ledger.yaml` lists them as this pilot's): the
registered rules, margins and δ were fixed before it ran, and only each rule's n is chosen
from it. The decision simulated is the rule's own (`memlib.claims.power`). Study 1's earlier
analysis from its probe pilot (`pilots/rlp_power.py`, three seeds) stays beside it.

A rule whose n exceeds its study's budget reads "not run at this scale" with the n it needs;
a rule whose precondition failed in the pilot gets the registered minimum (its run says
whether it fails again); a rule whose unit cannot grow (a dataset's classes) keeps its n and
says its power."""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import memlib  # noqa: F401  before numpy and pandas (imported where used): it pins the CPU

HERE = Path(__file__).parent
STUDIES = tuple(sys.argv[2:]) or ("rlp", "modarith", "fisher", "probes", "lens")
N_MAX = 200  # beyond this a rule reads "not run at this scale" at any budget
# the seeds beyond the pilot's each study's small run affords for a rule that needs them,
# within its notebook's 15 minutes on 2 cores and `make figures`' 45 at the pilot's timings
# (pilots/power.md): a rule's budget is its pilot n (the seeds of the arm it reads) plus
# these. Study 3's main arm affords one seed more (about 35 s of compute per seed), study 4 one
# run per pair more (about 16 s), the lens four seeds more (about 70 s each)
EXTRA_SEEDS = {"rlp": 0, "modarith": 0, "fisher": 1, "probes": 1, "lens": 4}


def analyse(study: str):
    import pandas as pd

    from memlib import STUDIES as NOTEBOOKS
    from memlib import studies
    from memlib.claims.power import power_at, replicates_for_power
    from memlib.claims.rules import MIN_REPLICATES, _decisive
    from memlib.claims.values import read_values

    values = read_values(study)
    if values is None:
        sys.exit(f"power.py: no claims_values.json for {NOTEBOOKS[study]} under "
                 f"{os.environ.get('MEMLIB_FIGURES')}: run `make figures` there first")
    rows = []
    for claim in studies.study_claims(study):
        value = values.get(claim.id)
        row = {"rule": claim.id, "unit": claim.replicates, "delta": claim.delta}
        failed = next((name for name, test in claim.preconditions
                       if value is not None and not test(value)), None)
        margins = [] if value is None or failed else [
            m for m in _decisive(claim, value) if m.n >= 2 and m.se > 0]
        if value is None:
            rows.append({**row, "registered": "not run at this scale in the pilot: no n planned"})
            continue
        if failed:
            rows.append({**row, "precondition": f"failed: {failed}",
                         "registered": f"n = {MIN_REPLICATES} (precondition failed in the pilot)"})
            continue
        if not margins:
            rows.append({**row, "precondition": "held",
                         "registered": "no spread in the pilot: no n planned"})
            continue
        weakest = min(margins, key=lambda m: abs(m.statistic[0]) / m.statistic[1])
        have = min(m.n for m in margins)
        budget = have + EXTRA_SEEDS[study] if claim.more_replicates else have
        at_budget = power_at(margins, budget, claim.combine, claim.delta)
        row |= {"pilot_n": have, "precondition": "held", "margins": len(margins),
                "weakest_mean": weakest.mean, "weakest_sd": weakest.sd,
                "power_at_budget": round(at_budget.decides, 3)}
        if not claim.more_replicates:
            likely = max(("holds", at_budget.holds), ("does not hold", at_budget.fails),
                         ("no effect as large as δ", at_budget.equivalent), key=lambda v: v[1])
            rows.append({**row, "n_needed": math.nan, "expected_verdict": likely[0],
                         "registered": f"n = {have} {claim.replicates} (cannot grow; power "
                                       f"{at_budget.decides:.2f})"})
            continue
        found = replicates_for_power(margins, claim.combine, claim.delta,
                                     least=MIN_REPLICATES, most=N_MAX)
        if found is None:
            rows.append({**row, "n_needed": math.nan, "expected_verdict": "within noise",
                         "registered": f"not run at this scale (sits on its threshold: more "
                                       f"than {N_MAX} {claim.replicates})"})
            continue
        likely = max(("holds", found.holds), ("does not hold", found.fails),
                     ("no effect as large as δ", found.equivalent), key=lambda v: v[1])
        registered = (f"n = {found.n}" if found.n <= budget else
                      f"not run at this scale (needs n = {found.n})")
        rows.append({**row, "n_needed": found.n, "expected_verdict": likely[0],
                     "registered": registered})
    return pd.DataFrame(rows)


def main(argv: list[str]) -> int:
    if not argv or not Path(argv[0]).is_dir():
        print("usage: python pilots/power.py PILOT_FIGURES (the MEMLIB_FIGURES folder of a "
              "pilot `make figures` run)", file=sys.stderr)
        return 2
    os.environ["MEMLIB_FIGURES"] = str(Path(argv[0]).resolve())
    from memlib import STUDIES as NOTEBOOKS

    for study in STUDIES:
        table = analyse(study)
        out = HERE / f"{NOTEBOOKS[study]}_power_run.csv"
        table.to_csv(out, index=False, float_format="%.4g")
        print(f"{out.name}:")
        print(table[["rule", "pilot_n", "power_at_budget", "n_needed", "expected_verdict",
                     "registered"]].to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
