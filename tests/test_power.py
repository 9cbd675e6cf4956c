"""The power of a rule's decision (memlib.claims.power), checked against the noncentral t
and on margins that hold, fail, sit on their threshold and lie inside ±δ."""

import math

import pytest
from scipy.stats import nct
from scipy.stats import t as student

from memlib.claims.power import power_at, replicates_for_power
from memlib.claims.stats import Estimate, correlation


def _margin(mean: float, sd: float, n: int = 5) -> Estimate:
    return Estimate(mean, sd / math.sqrt(n), n)


@pytest.mark.parametrize("n", [5, 12])
def test_one_margin_matches_the_noncentral_t(n):
    m = _margin(1.0, 2.0)
    found = power_at([m], n)
    exact = nct.sf(student.ppf(0.975, n - 1), n - 1, 1.0 / (2.0 / math.sqrt(n)))
    assert found.holds == pytest.approx(exact, abs=0.03)
    assert found.fails < 0.01 and found.equivalent == 0


def test_a_clear_effect_needs_the_minimum_and_a_failing_one_is_decided_against():
    assert replicates_for_power([_margin(5.0, 1.0)]).n == 5
    against = power_at([_margin(-5.0, 1.0)], 5)
    assert against.fails > 0.95 and against.holds == 0


def test_no_effect_is_decided_only_by_equivalence():
    flat = [_margin(0.0, 1.0)]
    assert replicates_for_power(flat, most=60) is None  # no δ: it sits on its threshold
    found = replicates_for_power(flat, delta=1.0)
    assert found is not None and found.decides >= 0.8 and found.equivalent > 0.7
    assert 5 <= found.n < 30


def test_every_margin_must_clear_for_all_and_one_for_any():
    strong, weak = _margin(5.0, 1.0), _margin(0.3, 2.0)
    assert power_at([strong, weak], 8, "all").holds < 0.3
    assert power_at([strong, weak], 8, "any").holds > 0.95


def test_a_correlation_draws_on_its_fisher_z_scale():
    rho = correlation(0.9, 10)
    assert power_at([rho], 10).holds > 0.8
    assert power_at([correlation(0.1, 10)], 10).holds < 0.2


def test_a_margin_without_spread_is_refused():
    with pytest.raises(ValueError):
        power_at([Estimate(1.0, math.nan, 1)], 5)


# ---- planned at a stated smallest effect ----------------------------------------------------

def test_the_n_is_planned_at_the_smallest_effect_not_the_pilots_mean():
    from memlib.claims.power import at_effect

    spread = 2.0
    lucky, unlucky = _margin(6.0, spread), _margin(0.2, spread)
    # the pilot's mean says nothing about the n: the same spread plans the same n
    assert (replicates_for_power(at_effect([lucky], 1.5)).n
            == replicates_for_power(at_effect([unlucky], 1.5)).n
            == replicates_for_power([_margin(1.5, spread)]).n)
    assert replicates_for_power([lucky]).n == 5  # where the pilot's mean would have planned
    moved = at_effect([correlation(0.6, 10)], 0.3)[0]
    assert moved.mean == 0.3 and moved.statistic[1:] == correlation(0.6, 10).statistic[1:]


def test_a_rule_its_n_cannot_decide_is_labelled_out_of_the_family():
    from memlib.claims.power import DECIDABLE, family_label

    assert family_label(10, DECIDABLE) == "in"
    assert family_label(10, 0.32) == "cannot be decided at n = 10: power 32%"


def _power_script():
    import importlib.util

    from memlib.paths import ROOT

    spec = importlib.util.spec_from_file_location("power_script", ROOT / "pilots" / "power.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_power_script_plans_at_the_smallest_effect_and_names_its_stand_in(monkeypatch):
    import dataclasses

    from memlib import STUDIES
    from memlib.claims import Claim, all_of, margin
    from memlib.paths import figures_dir

    base = Claim("old", "", "", "", "gain > 0", **all_of(lambda v: [margin(v["gain"], 0)]))
    stated = dataclasses.replace(base, id="stated", smallest_effect=1.0,
                                 smallest_effect_reason="the paper's gain")
    weak = dataclasses.replace(stated, id="weak", smallest_effect=0.3,
                               smallest_effect_reason="a tiny gain")
    new = dataclasses.replace(stated, id="new")
    values = {"old": {"gain": Estimate(3.0, 0.2, 5)}, "stated": {"gain": Estimate(3.0, 0.2, 5)},
              "weak": {"gain": Estimate(3.0, 0.2, 5)}, "gone": None}
    gone = dataclasses.replace(base, id="gone")
    elsewhere = dataclasses.replace(base, id="elsewhere")  # in the pilot's table, no value
    pilot = figures_dir(STUDIES["rlp"])
    pilot.mkdir(parents=True)
    (pilot / "claims.csv").write_text("id,verdict\nelsewhere,not run at this scale\n",
                                      encoding="utf-8")
    monkeypatch.setattr("memlib.studies.study_claims", lambda study: [base, stated, weak, new,
                                                                      gone, elsewhere])
    monkeypatch.setattr("memlib.claims.values.read_values", lambda study: values)
    script = _power_script()
    monkeypatch.setattr(script, "STAND_INS", {"rlp": {"new": ("old", "the same arm")}})
    table = script.analyse("rlp").set_index("rule")
    assert "no smallest effect stated" in table.loc["old", "registered"]
    assert table.loc["old", "family"] == "in"
    assert table.loc["stated", "registered"].startswith("n = ")
    assert table.loc["stated", "family"] == "in"
    # beyond the budget: planned, run on the budget, outside the family
    assert table.loc["weak", "registered"].startswith("n = ")
    assert table.loc["weak", "family"].startswith("cannot be decided at n = ")
    assert table.loc["new", "spread_from"] == "old: the same arm"
    assert table.loc["new", "registered"] == table.loc["stated", "registered"]
    assert table.loc["gone", "family"] == "not run at this scale"
    assert table.loc["elsewhere", "family"] == "not run at this scale"
