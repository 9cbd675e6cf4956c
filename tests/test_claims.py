"""memlib.claims: the verdict order (not run, precondition, noise, rule) and Estimates."""

import dataclasses
import math

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlib import STUDIES
from memlib.claims import (
    FAILS,
    HOLDS,
    MAX_REPLICATES,
    MIN_REPLICATES,
    NOT_RUN,
    WITHIN_NOISE,
    Claim,
    Estimate,
    correlation,
    correlations,
    describe,
    evaluate,
    holm,
    holm_verdicts,
    margin,
    paired,
    replicates_needed,
)

POSITIVE = Claim("pos", "a difference is positive", "", "a - b over seeds", "> 0",
                 lambda v: v["diff"].mean > 0,
                 preconditions=(("model memorized", lambda v: v["train_acc"] >= 0.99),))


def verdicts(claims, measured):
    return evaluate(claims, measured).set_index("id")["verdict"].to_dict()


def test_missing_value_is_not_run():
    assert verdicts([POSITIVE], {})["pos"] == NOT_RUN


def test_failed_precondition_overrides_a_rule_that_would_hold():
    value = {"train_acc": 0.9, "diff": paired(A, B)}
    assert verdicts([POSITIVE], {"pos": value})["pos"] == (
        "precondition failed: model memorized (the rule alone would read: holds)")


def test_difference_inside_the_spread_is_within_noise():
    value = {"train_acc": 1.0, "diff": paired([0.1, -0.2, 0.15, 0.0, 0.05], [0.0] * 5)}
    assert verdicts([POSITIVE], {"pos": value})["pos"] == WITHIN_NOISE


def test_one_seed_has_no_spread():
    value = {"train_acc": 1.0, "diff": Estimate.of([5.0])}
    assert verdicts([POSITIVE], {"pos": value})["pos"] == f"{WITHIN_NOISE}: needs n ≈ 5 seeds"
    assert describe(value["diff"]) == "5 (n=1)"


A = [1.0, 1.1, 0.9, 1.05, 0.95]
B = [0.0, 0.1, 0.0, 0.05, 0.0]


def test_rule_decides_beyond_the_noise():
    up = {"train_acc": 1.0, "diff": paired(A, B)}
    down = {"train_acc": 1.0, "diff": paired(B, A)}
    assert verdicts([POSITIVE], {"pos": up})["pos"] == HOLDS
    assert verdicts([POSITIVE], {"pos": down})["pos"] == FAILS


def test_fewer_than_the_minimum_replicates_is_within_noise_and_says_so():
    clear = {"train_acc": 1.0, "diff": paired(A[:3], B[:3])}  # beyond noise on 3 seeds
    assert clear["diff"].beyond_noise and MIN_REPLICATES == 5
    row = evaluate([POSITIVE], {"pos": clear}).iloc[0]
    assert row["verdict"] == f"{WITHIN_NOISE}: needs n ≈ 5 seeds"
    assert row["note"] == ("3 seeds, fewer than the registered minimum (5): no verdict on "
                           "fewer; on these 3 its interval alone would read holds")


def test_a_value_without_an_interval_never_holds():
    claim = Claim("big", "x is big", "", "x", ">= 1", lambda v: v >= 1)
    assert verdicts([claim], {"big": 2.0})["big"] == WITHIN_NOISE
    assert verdicts([claim], {"big": 0.5})["big"] == WITHIN_NOISE
    row = evaluate([claim], {"big": 2.0}).iloc[0]
    assert row["note"].startswith("no interval")


def test_a_within_noise_row_says_how_many_replicates_would_decide_it():
    # mean 1, sd 2: t(n-1)·2/√n < 1 first at n = 18
    needs = Estimate(1.0, 2.0 / math.sqrt(3), 3)
    assert replicates_needed(needs) == 18
    on_threshold = Estimate(0.01, 2.0 / math.sqrt(3), 3)
    assert replicates_needed(on_threshold) == MAX_REPLICATES + 1
    table = evaluate([POSITIVE], {"pos": {"train_acc": 1.0, "diff": needs}})
    assert "needs seeds: about 18 seeds would read holds" in table["note"].item()
    table = evaluate([POSITIVE], {"pos": {"train_acc": 1.0, "diff": on_threshold}})
    assert "sits on its threshold" in table["note"].item()


def test_replicates_needed_matches_the_interval():
    e = Estimate(1.0, 2.0 / math.sqrt(3), 3)
    n = replicates_needed(e)
    assert Estimate(1.0, e.sd / math.sqrt(n), n).beyond_noise
    assert not Estimate(1.0, e.sd / math.sqrt(n - 1), n - 1).beyond_noise


def test_holm_adjusts_within_the_study():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    # three rows decided, two at two-sided p ≈ 0.034 and one at p < 0.0001: the smallest
    # weak p is multiplied by 2 (0.067 > 0.05), so Holm keeps only the strong row
    weak = {"train_acc": 1.0, "diff": Estimate(1.0, 1.0 / 2.9, 6)}
    strong = {"train_acc": 1.0, "diff": Estimate(5.0, 0.5, 6)}
    claims = [dataclasses.replace(POSITIVE, id=i) for i in ("a", "b", "c")]
    table = evaluate(claims, {"a": weak, "b": weak, "c": strong}).set_index("id")
    assert list(table["verdict"]) == [HOLDS, HOLDS, HOLDS]
    assert 0.02 < float(table.loc["a", "p"]) < 0.05 < 2 * float(table.loc["a", "p"])
    assert list(table["holm"]) == [WITHIN_NOISE, WITHIN_NOISE, HOLDS]
    assert float(table.loc["a", "p_holm"]) == pytest.approx(2 * float(table.loc["a", "p"]),
                                                            rel=1e-2)
    alone = evaluate(claims[:1], {"a": weak})  # a family of one: nothing to adjust
    assert alone["holm"].item() == HOLDS


def test_holm_leaves_undecided_rows_alone():
    assert holm_verdicts([WITHIN_NOISE, NOT_RUN, HOLDS], [math.nan, math.nan, 0.001]) == [
        WITHIN_NOISE, NOT_RUN, HOLDS]


def test_a_correlation_interval_stays_inside_minus_one_one():
    e = correlations([0.99, 0.7, 0.95])
    lo, hi = e.interval
    assert -1 < lo < e.mean < hi < 1
    assert e.mean + e.half_width > 1  # the plain t interval would leave [-1, 1]
    boot = correlation(-0.55, 10, se=0.2, z_se=0.3)
    assert -1 < boot.interval[0] < -0.55 < boot.interval[1] < 1
    perfect = correlation(-1.0, 10, se=0.001, z_se=0.05)  # every bootstrap draw near -1
    assert perfect.interval[1] < -0.99 and margin(perfect, 0, at_least=False).beyond_noise
    assert margin(boot, 0, at_least=False).beyond_noise == (boot.interval[1] < 0)


def test_rule_column_names_the_preconditions():
    table = evaluate([POSITIVE], {})
    assert table["rule"].item() == "> 0; requires model memorized"


# values whose squares underflow (|x| < 1e-150) have no spread in floating point
SCALED = st.floats(-1e3, 1e3).filter(lambda x: x == 0 or abs(x) > 1e-100)


@given(st.lists(SCALED, min_size=2, max_size=10), st.floats(0.01, 1e3))
def test_estimate_spread_scales_with_the_values(values, scale):
    a, b = Estimate.of(values), Estimate.of([v * scale for v in values])
    assert math.isclose(b.mean, a.mean * scale, rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(b.se, a.se * scale, rel_tol=1e-9, abs_tol=1e-9)
    assert a.beyond_noise == (abs(a.mean) > a.half_width)
    assert a.beyond_noise == b.beyond_noise


def test_constant_nonzero_difference_is_beyond_noise():
    assert paired([2.0, 3.0], [1.0, 2.0]).beyond_noise  # zero spread
    assert not paired([1.0, 2.0], [1.0, 2.0]).beyond_noise


def test_interval_is_student_t():
    # with 3 replicates the 95% t quantile is 4.303: 2 SE is not enough, 4.4 SE is
    assert not Estimate(2.0, 1.0, 3).beyond_noise
    assert Estimate(4.4, 1.0, 3).beyond_noise and not Estimate(4.2, 1.0, 3).beyond_noise
    assert math.isclose(Estimate(0.0, 1.0, 3).half_width, 4.302653, rel_tol=1e-6)


def test_replicates_needed_of_a_correlation_follows_its_own_interval():
    # a margin of -0.02 whose interval reaches 0.01 past zero at n = 6: the reach toward zero
    # (0.03) shrinks as 1/√n below 0.02 first at n = 14, whatever its standard error says
    rho = Estimate(-0.02, 0.5, 6, (-0.06, 0.01))
    assert replicates_needed(rho) == 14
    assert replicates_needed(Estimate(0.3, 0.5, 10, (0.2, 0.4))) == 2  # already clear
    assert replicates_needed(Estimate(0.001, 0.01, 10, (-0.3, 0.3))) == MAX_REPLICATES + 1


def test_holm_keeps_no_more_rows_than_the_intervals_decided():
    from memlib.claims.report import decided_by_interval, kept_by_holm

    table = pd.DataFrame({
        "verdict": [HOLDS, HOLDS, HOLDS, WITHIN_NOISE],
        "holm": [HOLDS, WITHIN_NOISE, HOLDS, WITHIN_NOISE],
        "p": ["0.001", "0.02", "", ""]})  # the third: settled by a test outside its margins
    assert decided_by_interval(table) == 2
    assert kept_by_holm(table) == 1


def test_a_value_this_scale_cannot_judge_is_not_run_and_its_earlier_rule_still_judges_it():
    import dataclasses

    guarded = dataclasses.replace(POSITIVE, judged_at=lambda v: v["replicated"],
                                  previous=(POSITIVE,))
    good = {"diff": Estimate(2.0, 0.1, 5), "train_acc": 1.0}
    assert verdicts([guarded], {"pos": {**good, "replicated": True}}) == {"pos": HOLDS}
    bad = {**good, "diff": Estimate(-2.0, 0.1, 5), "replicated": True}
    assert verdicts([guarded], {"pos": bad}) == {"pos": FAILS}
    row = evaluate([guarded], {"pos": {**good, "train_acc": 0.5, "replicated": True}}).iloc[0]
    assert row["verdict"].startswith("precondition failed")
    row = evaluate([guarded], {"pos": {**good, "replicated": False}}).iloc[0]
    assert row["verdict"] == NOT_RUN and row["previous"].endswith("=" + HOLDS)
    assert guarded.fingerprint != POSITIVE.fingerprint  # the guard decides: it is fingerprinted


def test_a_within_noise_row_is_in_holms_family_and_costs_the_others():
    weak = {"train_acc": 1.0, "diff": Estimate(1.0, 1.0 / 2.9, 6)}  # p ≈ 0.034
    vague = {"train_acc": 1.0, "diff": Estimate(0.2, 1.0, 6)}  # within noise, p ≈ 0.85
    a, b = (dataclasses.replace(POSITIVE, id=i) for i in ("a", "b"))
    assert evaluate([a], {"a": weak})["holm"].item() == HOLDS  # alone: nothing to adjust
    table = evaluate([a, b], {"a": weak, "b": vague}).set_index("id")
    assert list(table["verdict"]) == [HOLDS, WITHIN_NOISE]
    assert table.loc["b", "p"] != ""  # the undecided row was tested: it has a p
    assert list(table["holm"]) == [WITHIN_NOISE, WITHIN_NOISE]  # 2 × 0.034 > 0.05
    # a precondition failure or a missing value tests nothing and costs nothing
    table = evaluate([a, b], {"a": weak, "b": {**vague, "train_acc": 0.5}})
    assert list(table["holm"]) == [
        HOLDS, "precondition failed: model memorized (the rule alone would read: within noise)"]


def test_a_rows_p_is_the_test_that_decides_it():
    from memlib.claims import all_of

    # the rule judges x only; y, a model it does not judge, is far noisier
    claim = Claim("x", "", "", "", "x > 0", **all_of(lambda v: [v["x"]]))
    value = {"x": Estimate(5.0, 0.5, 6), "y": Estimate(1.0, 1.0, 6)}
    row = evaluate([claim], {"x": value}).iloc[0]
    assert row["verdict"] == HOLDS and float(row["p"]) < 1e-3


def test_p_and_interval_agree_for_correlations_over_few_units():
    from memlib.claims import two_sided_p

    for rho, z_se in ((0.55, 0.3), (0.62, 0.3), (-0.4, 0.2), (0.8, None)):
        e = correlation(rho, 10, z_se=z_se)
        for threshold in (0.0, 0.3, 0.7):
            m = margin(e, threshold)
            assert m.beyond_noise == (two_sided_p(m, m.mean > 0) < 0.05), (rho, threshold)
    # a bootstrap's spread over 10 classes takes t(9), not the normal 1.96: wider
    from scipy.stats import t

    e = correlation(0.5, 10, z_se=0.3)
    z = math.atanh(0.5)
    assert e.interval[1] == pytest.approx(math.tanh(z + t.ppf(0.975, 9) * 0.3))
    # without a bootstrap, Student's exact test of no correlation: t on r with n - 2 df
    e = correlation(0.5, 10)
    r_t = 0.5 * math.sqrt(8) / math.sqrt(1 - 0.25)
    assert two_sided_p(margin(e, 0)) == pytest.approx(2 * t.sf(r_t, 8))


# a directional rule with a smallest effect of interest of 1.5 points
GAIN = Claim("gain", "the gain is positive", "up to +1.5", "gain over seeds", "gain > 0",
             lambda v: v.mean > 0, delta=1.5, delta_reason="the paper's own gain", unit="points",
             delta_source="The regularizer gains up to 1.5 points.")


def test_an_interval_inside_the_margin_reads_does_not_hold_by_equivalence():
    from memlib.claims import NO_EFFECT

    none = Estimate(0.06, 0.3, 10)  # 90% interval ≈ [-0.49, 0.61], inside ±1.5
    row = evaluate([GAIN], {"gain": none}).iloc[0]
    assert row["verdict"] == f"{FAILS}: {NO_EFFECT} = 1.5 points"
    assert float(row["p"]) < 0.05 and row["holm"] == row["verdict"]
    assert row["delta"] == ('1.5 points: the paper\'s own gain (the paper: "The regularizer '
                            'gains up to 1.5 points.")')
    assert row["replicates"] == "10 seeds"
    # without δ the same value can only be within noise
    plain = dataclasses.replace(GAIN, delta=None)
    assert verdicts([plain], {"gain": none})["gain"] == WITHIN_NOISE


def test_an_interval_straddling_the_margin_stays_within_noise():
    straddles = Estimate(1.0, 0.6, 10)  # 90% interval ≈ [-0.1, 2.1]: crosses 0 and 1.5
    row = evaluate([GAIN], {"gain": straddles}).iloc[0]
    assert row["verdict"] == WITHIN_NOISE
    # a real gain beyond noise still holds, and so does one beyond noise inside ±δ, marked
    assert verdicts([GAIN], {"gain": Estimate(3.0, 0.3, 10)})["gain"] == HOLDS
    assert verdicts([GAIN], {"gain": Estimate(0.4, 0.1, 10)})["gain"] == (
        f"{HOLDS}: smaller than δ = 1.5 points")
    assert verdicts([GAIN], {"gain": Estimate(-3.0, 0.3, 10)})["gain"] == FAILS


def test_the_needed_replicates_name_the_verdict_they_would_reach():
    small = Estimate(0.2, 0.9, 5)  # near zero: equivalence comes first
    note = evaluate([GAIN], {"gain": small})["note"].item()
    assert "would read does not hold (no effect as large as δ)" in note
    large = Estimate(2.5, 1.5, 5)  # far outside ±δ: only holds can be reached
    note = evaluate([GAIN], {"gain": large})["note"].item()
    assert "would read holds" in note


def test_a_unit_more_seeds_cannot_add_gets_no_needed_replicates():
    classes = dataclasses.replace(GAIN, delta=None, replicates="classes",
                                  more_replicates=False)
    row = evaluate([classes], {"gain": Estimate(1.0, 0.6, 10)}).iloc[0]
    assert row["verdict"] == WITHIN_NOISE and row["replicates"] == "10 classes"
    assert "needs seeds" not in row["note"] and "more seeds do not add" in row["note"]


# ---- every rule decides its margin: a δ with its reason, or why it needs none -------------

@pytest.mark.parametrize("study", list(STUDIES))
def test_every_rule_states_its_margin_or_why_it_has_none(study):
    from memlib.studies import study_claims

    claims = study_claims(study)
    silent = [c.id for c in claims if not c.delta_reason.strip()]
    assert not silent, f"{study}: no δ and no reason why: {silent}"
    for c in claims:
        assert c.delta is None or c.delta > 0, c.id
        assert c.replicates in ("seeds", "runs", "models", "classes", "pairs",
                                    "classes or matrices"), c.id
        if c.replicates == "classes":  # a dataset's classes: more seeds add none
            assert not c.more_replicates, c.id


def test_a_rule_without_delta_says_why_in_its_row():
    from memlib.claims import NO_DELTA

    threshold = dataclasses.replace(GAIN, delta=None, delta_reason="a threshold rule")
    row = evaluate([threshold], {"gain": Estimate(0.06, 0.3, 10)}).iloc[0]
    assert row["delta"] == f"{NO_DELTA}: a threshold rule"
    assert row["verdict"] == WITHIN_NOISE  # no δ: no equivalence to reach
    silent = dataclasses.replace(GAIN, delta=None, delta_reason="")
    assert evaluate([silent], {"gain": Estimate(0.06, 0.3, 10)})["delta"].item() == ""


def test_delta_is_shown_in_the_unit_it_is_stated_in():
    from memlib.claims import NO_EFFECT

    fraction = dataclasses.replace(GAIN, delta=0.01, delta_unit="of accuracy",
                                   delta_reason="one point", delta_source="")
    row = evaluate([fraction], {"gain": Estimate(0.0005, 0.001, 10)}).iloc[0]
    assert row["verdict"] == f"{FAILS}: {NO_EFFECT} = 0.01 of accuracy"
    assert row["delta"] == "0.01 of accuracy: one point"
    assert fraction.fingerprint != dataclasses.replace(fraction, delta_unit="").fingerprint


def test_with_margins_sets_the_current_rule_and_checks_its_fields():
    from memlib.claims import with_margins

    plain = dataclasses.replace(GAIN, delta=None, delta_reason="")
    earlier = dataclasses.replace(plain, previous=(plain,))
    (claim,) = with_margins([earlier], {"gain": {"delta_reason": "a threshold rule"}})
    assert claim.delta is None and claim.delta_reason == "a threshold rule"
    assert claim.previous[0].delta_reason == ""  # an earlier version keeps its own
    (claim,) = with_margins([earlier], {"gain": {"delta": 1.5, "delta_reason": "the paper's",
                                                 "delta_source": "It gains 1.5 points."}})
    assert claim.delta == 1.5 and claim.delta_source == "It gains 1.5 points."
    with pytest.raises(ValueError, match="needs its reason"):
        with_margins([plain], {"gain": {"delta": 1.5}})
    # a reason without the paper's sentence is a δ the paper does not give: refused
    with pytest.raises(ValueError, match="needs the paper's sentence"):
        with_margins([plain], {"gain": {"delta": 1.5, "delta_reason": "a quarter of a target"}})
    with pytest.raises(ValueError, match="must be positive"):
        with_margins([plain], {"gain": {"delta": 0.0, "delta_reason": "none"}})
    with pytest.raises(ValueError, match="margins for no claim"):
        with_margins([plain], {"other": {"delta_reason": "a threshold rule"}})
