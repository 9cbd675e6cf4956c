"""The verdict words say what was measured: direction first, δ only where the paper gives
its number, "not run at this scale" only without data, and a failed precondition with what
the rule alone would read."""

import dataclasses

import pandas as pd
import pytest

from memlib import STUDIES
from memlib.claims import (
    CANNOT_READ,
    FAILS,
    HOLDS,
    NO_EFFECT,
    NOT_RUN,
    PRECONDITION,
    SMALLER,
    WITHIN_NOISE,
    WOULD_READ,
    Claim,
    Estimate,
    all_of,
    counts,
    delta_mark,
    evaluate,
    judge,
    margin,
    powered,
    verdict,
    verdict_kind,
    with_margins,
)
from memlib.claims.power import power_at

SOURCE = "The regularizer raises test accuracy by up to 1.5 points."
GAIN = Claim("gain", "the gain is positive", "up to +1.5", "gain over seeds", "gain > 0",
             lambda v: v.mean > 0, delta=1.5, delta_reason="the paper's own gain",
             delta_source=SOURCE, unit="points")


def test_beyond_the_threshold_inside_delta_holds_smaller_than_delta():
    small = Estimate(0.4, 0.1, 10)  # 95% interval ≈ [0.17, 0.63]: clears 0, inside ±1.5
    found = judge(GAIN, small)
    assert found.verdict == f"{HOLDS}: {SMALLER} = 1.5 points"
    assert verdict_kind(found.verdict) == HOLDS and delta_mark(found.verdict) == SMALLER
    assert found.p < 0.05 and found.n == 10  # the directional test decides it
    # beyond δ it holds unmarked, and without δ a small effect beyond noise holds unmarked
    assert verdict(GAIN, Estimate(3.0, 0.3, 10)) == HOLDS
    assert verdict(dataclasses.replace(GAIN, delta=None), small) == HOLDS


def test_an_interval_across_the_threshold_inside_delta_has_no_effect_as_large_as_delta():
    none = Estimate(0.06, 0.3, 10)  # includes 0; 90% interval ≈ [-0.49, 0.61], inside ±1.5
    assert verdict(GAIN, none) == f"{FAILS}: {NO_EFFECT} = 1.5 points"
    # across the threshold but reaching beyond δ: nothing decided
    assert verdict(GAIN, Estimate(1.0, 0.6, 10)) == WITHIN_NOISE


def test_beyond_the_threshold_on_the_wrong_side_does_not_hold_even_inside_delta():
    assert verdict(GAIN, Estimate(-0.4, 0.1, 10)) == FAILS  # a contrary result, not "no effect"
    assert verdict(GAIN, Estimate(-3.0, 0.3, 10)) == FAILS


def test_every_test_passes_reads_no_effect_only_from_a_margin_across_its_threshold():
    both = Claim("both", "both gains are positive", "", "gains over seeds", "a > 0 and b > 0",
                 **all_of(lambda v: [margin(v["a"], 0), margin(v["b"], 0)]), delta=1.5,
                 delta_reason="the paper's gain", delta_source=SOURCE, unit="points")
    clear_small = Estimate(0.4, 0.1, 10)  # beyond 0, inside ±δ: an effect, if a small one
    # the other margin across 0 and wide: nothing shows no effect, nothing decides
    assert verdict(both, {"a": clear_small, "b": Estimate(1.0, 0.6, 10)}) == WITHIN_NOISE
    # the other margin across 0 and inside ±δ: that test shows no effect as large as δ
    assert verdict(both, {"a": clear_small, "b": Estimate(0.06, 0.3, 10)}).startswith(
        f"{FAILS}: {NO_EFFECT}")
    # both beyond 0, one inside ±δ: the rule holds, smaller than δ
    assert verdict(both, {"a": clear_small, "b": Estimate(3.0, 0.3, 10)}).startswith(
        f"{HOLDS}: {SMALLER}")


def test_power_follows_the_same_order():
    # a margin clearly beyond 0 and inside ±δ is decided as holds, never as equivalence
    found = power_at([Estimate(0.4, 0.05, 10)], 10, delta=1.5)
    assert found.holds > 0.99 and found.equivalent == 0
    # one across 0 and well inside ±δ reads no effect
    found = power_at([Estimate(0.0, 0.1, 10)], 10, delta=1.5)
    assert found.equivalent > 0.9 and found.holds < 0.05


def test_fewer_replicates_than_the_confirmatory_n_read_within_noise_with_the_n_they_need():
    planned = powered(dataclasses.replace(GAIN, delta=None), 12, "a power analysis")
    clear = Estimate(2.0, 0.3, 8)  # beyond noise on 8 seeds, fewer than the 12 planned
    found = judge(planned, clear)
    assert found.verdict == f"{WITHIN_NOISE}: needs n ≈ 12 seeds"
    assert "fewer than the confirmatory n its power analysis set (12)" in found.note
    assert "on these 8 its interval alone would read holds" in found.note
    assert found.p < 0.05  # tested: it stays in Holm's family
    # where the observed spread asks for more than the plan, N is the spread's
    vague = Estimate(0.5, 0.5, 8)
    needed = judge(planned, vague).verdict
    assert needed.startswith(f"{WITHIN_NOISE}: needs n ≈ ") and needed != \
        f"{WITHIN_NOISE}: needs n ≈ 12 seeds"
    assert int(needed.split("≈ ")[1].split()[0]) > 12
    # below the registered minimum too; and with no replicate at all, the minimum
    assert verdict(GAIN, Estimate(2.0, 0.3, 3)) == f"{WITHIN_NOISE}: needs n ≈ 5 seeds"
    assert verdict(GAIN, Estimate.of([2.0])) == f"{WITHIN_NOISE}: needs n ≈ 5 seeds"
    # on the planned n it is decided
    assert verdict(planned, Estimate(2.0, 0.3, 12)) == HOLDS
    # not run only without data, or where the arm did not run
    assert verdict(planned, None) == NOT_RUN
    arm = dataclasses.replace(planned, judged_at=lambda v: False)
    assert verdict(arm, clear) == NOT_RUN


def test_a_failed_precondition_shows_what_the_rule_alone_would_read():
    guarded = Claim("guarded", "the gain is positive", "", "gain over seeds", "gain > 0",
                    **all_of(lambda v: [margin(v["gain"], 0)]), delta=1.5,
                    delta_reason="the paper's gain", delta_source=SOURCE, unit="points",
                    preconditions=(("the model fits", lambda v: v["fit"]),))
    unfit = {"fit": False, "gain": Estimate(3.0, 0.3, 10)}
    assert verdict(guarded, unfit) == (f"{PRECONDITION}: the model fits "
                                       f"({WOULD_READ}: {HOLDS})")
    small = {"fit": False, "gain": Estimate(0.4, 0.1, 10)}
    assert verdict(guarded, small) == (f"{PRECONDITION}: the model fits "
                                       f"({WOULD_READ}: {HOLDS}: {SMALLER} = 1.5 points)")
    # a value the rule cannot read (what the precondition guards is missing)
    assert verdict(guarded, {"fit": False}) == f"{PRECONDITION}: the model fits ({CANNOT_READ})"
    row = evaluate([guarded], {"guarded": unfit}).iloc[0]
    assert row["p"] == "" and row["verdict"].startswith(PRECONDITION)  # nothing was tested


def test_the_report_counts_contrary_and_equivalence_verdicts_apart():
    table = pd.DataFrame({"verdict": [
        HOLDS, f"{HOLDS}: {SMALLER} = 1.5 points", FAILS, f"{FAILS}: {NO_EFFECT} = 1.5 points",
        f"{WITHIN_NOISE}: needs n ≈ 12 seeds", WITHIN_NOISE,
        f"{PRECONDITION}: the model fits ({WOULD_READ}: {HOLDS})", NOT_RUN]})
    assert counts(table) == (
        f"2 {HOLDS} (1 of them {SMALLER}), 1 {FAILS} (contrary: the interval on the wrong "
        f"side), 1 {NO_EFFECT}, 2 {WITHIN_NOISE}, 1 {PRECONDITION}, 1 {NOT_RUN}")


def test_a_delta_without_the_papers_sentence_is_refused():
    plain = dataclasses.replace(GAIN, delta=None, delta_reason="", delta_source="")
    with pytest.raises(ValueError, match="needs the paper's sentence"):
        with_margins([plain], {"gain": {"delta": 2.5, "delta_reason": "a quarter of a target"}})
    (kept,) = with_margins([plain], {"gain": {"delta": 1.5, "delta_reason": "the paper's gain",
                                              "delta_source": SOURCE}})
    assert kept.delta == 1.5 and kept.delta_source == SOURCE


@pytest.mark.parametrize("study", list(STUDIES))
def test_every_delta_quotes_the_sentence_of_its_paper(study):
    from memlib.studies import study_claims

    for claim in study_claims(study):
        if claim.delta is not None:
            assert claim.scope == "paper", f"{claim.id}: memlib's own rows have no paper's δ"
            assert claim.delta_source.strip(), f"{claim.id}: δ without the paper's sentence"


@pytest.mark.parametrize("study", list(STUDIES))
def test_no_row_measured_on_enough_replicates_reads_not_run(study):
    """On the committed values (figures/<notebook>/claims_values.json), a row reads *not run
    at this scale* only without data, or where its arm did not run at this scale (its
    `judged_at`): one measured on too few replicates reads within noise with the n it needs."""
    from memlib.claims.values import read_values
    from memlib.studies import study_claims

    stored = read_values(study) or {}
    for claim in study_claims(study):
        value = stored.get(claim.id)
        if value is None or verdict(claim, value) != NOT_RUN:
            continue
        assert claim.judged_at is not None and not claim.judged_at(value), claim.id

