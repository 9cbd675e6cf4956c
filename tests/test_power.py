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
