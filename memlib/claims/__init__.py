"""The papers' claims as data, registered before the confirmatory run and checked against it.

A study's package declares its claims (statement, the paper's value, the statistic, the rule,
preconditions, synthetic `Cases` that make the rule hold, fail and miss each precondition)
as `Claim` objects. Each rule has a fingerprint over what decides its verdict (its text, the
code of its rule and of the functions that compute its value, the constants they name, the
preset values it declares), recorded in the register (`register/<notebook>.yaml`) before the
confirmatory run; a rule changed afterwards gets a new register entry with its reason and
keeps its earlier versions in `Claim.previous`, whose verdicts the report shows beside the
new one. A notebook measures, then calls `evaluate(CLAIMS, measured)`: each rule sees only
its measured value. A verdict is decided in this order, the same for every study:

1. the value is missing (None): **not run at this scale**;
2. a precondition fails (the model did not memorize, a curve has no peak): **precondition
   failed: <which>**, never "holds";
3. the value has no interval (no Estimate, or one replicate), fewer than MIN_REPLICATES
   replicates, or its 95% Student-t interval over replicates does not clear the rule's
   threshold: **within noise**, with a note saying how many replicates would decide it;
4. otherwise the rule decides: **holds** or **does not hold**; beside it, the verdict after
   Holm's adjustment over the study's decided rows.

Four modules: `stats` (Estimates, intervals, p-values, Holm), `rules` (Claim, verdicts,
fingerprints), `register` (the register and its check) and `report` (CLAIMS.md). This
package re-exports the names the studies and notebooks use.
"""

from memlib.claims.register import (
    CLAIMS_TABLE,
    DamagedFileError,
    check,
    check_reason,
    earlier_runs,
    latest_registration,
    new_confirmatory_run,
    parse_seeds,
    read_register,
    read_results,
    register,
    register_path,
    registered_versions,
    same_rule_chain,
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
    FAILS,
    HOLDS,
    MIN_REPLICATES,
    NOT_RUN,
    PRECONDITION,
    VERDICTS,
    WITHIN_NOISE,
    Cases,
    Claim,
    Judgement,
    all_beyond_noise,
    all_of,
    any_of,
    declare,
    describe,
    earlier_version,
    estimates,
    evaluate,
    fingerprint,
    headline,
    holm_verdicts,
    judge,
    text_fingerprint,
    verdict,
)
from memlib.claims.stats import (
    ALPHA,
    LEVEL,
    MAX_REPLICATES,
    Estimate,
    correlation,
    correlations,
    every_beyond_noise,
    fisher_z,
    holm,
    margin,
    p_value,
    paired,
    replicates_needed,
    some_beyond_noise,
    t_quantile,
)

__all__ = [
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
