"""memlib.claims: the verdict order (not run, precondition, noise, rule) and Estimates."""

import math

from hypothesis import given
from hypothesis import strategies as st

from memlib.claims import (
    FAILS,
    HOLDS,
    NOT_RUN,
    WITHIN_NOISE,
    Claim,
    Estimate,
    describe,
    evaluate,
    paired,
)

POSITIVE = Claim("pos", "a difference is positive", "", "a - b over seeds", "> 0",
                 lambda v: v["diff"].mean > 0,
                 preconditions=(("model memorized", lambda v: v["train_acc"] >= 0.99),))


def verdicts(claims, measured):
    return evaluate(claims, measured).set_index("id")["verdict"].to_dict()


def test_missing_value_is_not_run():
    assert verdicts([POSITIVE], {})["pos"] == NOT_RUN


def test_failed_precondition_overrides_a_rule_that_would_hold():
    value = {"train_acc": 0.9, "diff": paired([1.0, 1.1, 0.9], [0.0, 0.0, 0.0])}
    assert verdicts([POSITIVE], {"pos": value})["pos"] == "precondition failed: model memorized"


def test_difference_inside_the_spread_is_within_noise():
    value = {"train_acc": 1.0, "diff": paired([0.1, -0.2, 0.15], [0.0, 0.0, 0.0])}
    assert verdicts([POSITIVE], {"pos": value})["pos"] == WITHIN_NOISE


def test_one_seed_has_no_spread():
    value = {"train_acc": 1.0, "diff": Estimate.of([5.0])}
    assert verdicts([POSITIVE], {"pos": value})["pos"] == WITHIN_NOISE
    assert describe(value["diff"]) == "5 (n=1)"


def test_rule_decides_beyond_the_noise():
    up = {"train_acc": 1.0, "diff": paired([1.0, 1.1, 0.9], [0.0, 0.1, 0.0])}
    down = {"train_acc": 1.0, "diff": paired([0.0, 0.1, 0.0], [1.0, 1.1, 0.9])}
    assert verdicts([POSITIVE], {"pos": up})["pos"] == HOLDS
    assert verdicts([POSITIVE], {"pos": down})["pos"] == FAILS


def test_values_without_estimates_are_decided_by_the_rule():
    claim = Claim("big", "x is big", "", "x", ">= 1", lambda v: v >= 1)
    assert verdicts([claim], {"big": 2.0})["big"] == HOLDS
    assert verdicts([claim], {"big": 0.5})["big"] == FAILS


def test_rule_column_names_the_preconditions():
    table = evaluate([POSITIVE], {})
    assert table["rule"].item() == "> 0; requires model memorized"


@given(st.lists(st.floats(-1e3, 1e3), min_size=2, max_size=10), st.floats(0.01, 1e3))
def test_estimate_spread_scales_with_the_values(values, scale):
    a, b = Estimate.of(values), Estimate.of([v * scale for v in values])
    assert math.isclose(b.mean, a.mean * scale, rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(b.se, a.se * scale, rel_tol=1e-9, abs_tol=1e-9)
    assert a.beyond_noise == (abs(a.mean) > a.half_width)
    assert a.beyond_noise == b.beyond_noise


def test_constant_nonzero_difference_is_beyond_noise():
    assert paired([2.0, 3.0], [1.0, 2.0]).beyond_noise
    assert not paired([1.0, 2.0], [1.0, 2.0]).beyond_noise


def test_interval_is_student_t():
    # with 3 replicates the 95% t quantile is 4.303: 2 SE is not enough, 4.4 SE is
    assert not Estimate(2.0, 1.0, 3).beyond_noise
    assert Estimate(4.4, 1.0, 3).beyond_noise and not Estimate(4.2, 1.0, 3).beyond_noise
    assert math.isclose(Estimate(0.0, 1.0, 3).half_width, 4.302653, rel_tol=1e-6)
