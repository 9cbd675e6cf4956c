"""The papers' claims as data, registered before the confirmatory run and checked against it.

A study's package declares its claims (statement, the paper's value, the statistic, the rule,
preconditions, synthetic `Cases` that make the rule hold, fail and miss each precondition)
as `Claim` objects. Each rule has a fingerprint over what decides its verdict (its text, the
code of its rule and of the functions that compute its value, the constants they name, the
preset values it declares), recorded in the register (`register/<notebook>.yaml`) before the
confirmatory run; a rule changed afterwards gets a new register entry with its reason and
keeps its earlier versions in `Claim.previous`, whose verdicts the report shows beside the
new one. A notebook measures, then calls `evaluate(CLAIMS, measured)`: each rule sees only
its measured value. A verdict is its kind, then after a colon what qualifies it; it is
decided in this order, the same for every study:

1. the value is missing (None), or one this scale cannot judge (an arm that did not run):
   **not run at this scale**;
2. a precondition fails (the model did not memorize, a curve has no peak): **precondition
   failed: <which> (the rule alone would read: <verdict>)**, never "holds";
3. fewer replicates than the rule's confirmatory n (at least MIN_REPLICATES): **within
   noise: needs n ≈ <N>**, N the more of that n and what the observed spread asks;
4. direction first: the 95% Student-t interval of the deciding margin clears the threshold
   on the rule's side: **holds** (**holds: smaller than δ = …** when its 90% interval also
   lies inside ±δ); on the wrong side: **does not hold**;
5. an interval that includes the threshold and whose 90% interval lies inside ±δ (two
   one-sided tests): **does not hold: no effect as large as δ = …**. δ, the smallest effect
   of interest, exists only where the paper's sentence gives its number (`delta_source`);
6. otherwise (no interval, an interval across the threshold): **within noise**, with a note
   saying how many replicates of the row's unit ("seeds", "runs"; none where the unit
   cannot grow, as a dataset's classes) would decide it and which verdict they would reach.

Every row that was tested (3-6) carries the two-sided p of the test that decides or would
decide it, on the scale of its interval (p < 0.05 exactly when the interval decides; for an
equivalence, the larger p of its two one-sided tests). Holm's family is fixed when the
study's seeds are registered (every rule registered at this scale but those its planned n
cannot decide; a member that fails a precondition counts as p = 1); a register without one
takes every tested row of the study (decided or within noise; not a failed precondition or a
row not run). Beside each verdict, its Holm-adjusted p and the verdict after the
adjustment; the report adds the adjustment over every study's family together.

Four modules: `stats` (Estimates, intervals, p-values, Holm), `rules` (Claim, verdicts,
fingerprints), `register` (the register and its check) and `report` (CLAIMS.md). This
package re-exports the names the studies and notebooks use.
"""

from memlib.claims.register import (
    CLAIMS_TABLE,
    DamagedFileError,
    chain_genesis,
    chain_problems,
    check,
    check_reason,
    earlier_runs,
    judged_versions,
    latest_registration,
    new_confirmatory_run,
    parse_seeds,
    read_register,
    read_results,
    register,
    register_path,
    registered_versions,
    rekey_earlier,
    same_rule_chain,
    seed_ledger,
    with_versions,
    write,
)
from memlib.claims.report import (
    VERDICT_CSS,
    claim_cell,
    claim_dataset,
    collect,
    counts,
    decided_by_interval,
    note_cell,
    pilot_verdicts,
    verdict_cell,
)
from memlib.claims.rules import (
    CANNOT_READ,
    FAILS,
    HOLDS,
    MIN_REPLICATES,
    NEEDS,
    NO_DELTA,
    NO_EFFECT,
    NOT_RUN,
    PRECONDITION,
    SMALLER,
    VERDICTS,
    WITHIN_NOISE,
    WOULD_READ,
    Cases,
    Claim,
    Judgement,
    all_beyond_noise,
    all_of,
    any_of,
    declare,
    delta_mark,
    describe,
    earlier_version,
    equivalence_of,
    estimates,
    evaluate,
    fingerprint,
    headline,
    holm_adjusted,
    holm_verdicts,
    judge,
    powered,
    qualifier,
    replicates,
    text_fingerprint,
    verdict,
    verdict_kind,
    with_margins,
    with_planned_cases,
)
from memlib.claims.stats import (
    ALPHA,
    EQUIVALENCE_LEVEL,
    LEVEL,
    MAX_REPLICATES,
    P_LEVEL,
    Estimate,
    correlation,
    correlations,
    equivalence_p,
    every_beyond_noise,
    fisher_z,
    holm,
    margin,
    p_value,
    paired,
    replicates_for_equivalence,
    replicates_needed,
    some_beyond_noise,
    t_quantile,
    two_sided_p,
)

__all__ = [
    "with_margins", "chain_genesis", "chain_problems", "judged_versions", "seed_ledger",
    "rekey_earlier", "powered", "with_planned_cases", "replicates",
    "EQUIVALENCE_LEVEL", "NO_DELTA", "NO_EFFECT", "P_LEVEL", "equivalence_of", "equivalence_p",
    "CANNOT_READ", "NEEDS", "SMALLER", "WOULD_READ", "delta_mark", "qualifier", "verdict_kind",
    "holm_adjusted", "replicates_for_equivalence", "two_sided_p",
    "ALPHA", "CLAIMS_TABLE", "FAILS", "HOLDS", "LEVEL", "MAX_REPLICATES", "MIN_REPLICATES",
    "NOT_RUN", "PRECONDITION", "VERDICTS", "WITHIN_NOISE", "Cases", "Claim",
    "DamagedFileError", "Estimate", "Judgement", "all_beyond_noise", "all_of", "any_of",
    "check", "check_reason", "collect", "correlation", "correlations", "counts",
    "decided_by_interval", "declare", "describe", "earlier_runs", "estimates", "evaluate",
    "every_beyond_noise", "fingerprint", "fisher_z", "headline", "holm", "holm_verdicts", "judge",
    "latest_registration", "margin", "new_confirmatory_run", "p_value", "paired",
    "parse_seeds", "pilot_verdicts", "read_register", "read_results", "register",
    "register_path", "registered_versions", "replicates_needed", "same_rule_chain",
    "some_beyond_noise",
    "t_quantile", "text_fingerprint", "verdict", "with_versions", "write",
    "VERDICT_CSS", "earlier_version", "claim_cell", "claim_dataset", "note_cell", "verdict_cell",
]
