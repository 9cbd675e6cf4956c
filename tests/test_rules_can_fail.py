"""Every rule can fail: each claim's synthetic cases make it hold, not hold, and miss each
precondition (with what the rule alone would read beside it). A claim without cases fails
here, so no new claim can skip it."""

import pytest

from memlib.claims import CANNOT_READ, FAILS, HOLDS, PRECONDITION, WOULD_READ, verdict
from memlib.studies import every_claim

CLAIMS = every_claim()


@pytest.mark.parametrize("study,claim", CLAIMS, ids=[f"{s}.{c.id}.{c.fingerprint}"
                                                    for s, c in CLAIMS])
def test_rule_holds_fails_and_misses_each_precondition(study, claim):
    assert claim.cases is not None, f"{study}.{claim.id} has no Cases"
    assert verdict(claim, claim.cases.holds) == HOLDS
    assert verdict(claim, claim.cases.fails) == FAILS
    names = [name for name, _ in claim.preconditions]
    assert set(claim.cases.preconditions) == set(names), "one case per precondition"
    for name in names:
        found, failed = verdict(claim, claim.cases.preconditions[name]), f"{PRECONDITION}: {name}"
        assert found.startswith(f"{failed} (") and found.endswith(")"), found
        beside = found[len(failed) + 2:-1]
        assert beside == CANNOT_READ or beside.startswith(f"{WOULD_READ}: "), found
