"""Words and numbers for notebook prose: formats, ranges and result-dependent words."""

import math

from memlib.claims import Estimate
from memlib.prose import beyond, direction, listing, num, pct, pct_span, pm, span, spread_phrase


def test_numbers_use_a_true_minus_sign_and_fixed_decimals():
    assert num(-0.5, 1) == "−0.5"
    assert num(0.5, 2, signed=True) == "+0.50"
    assert num(math.nan) == "n/a"


def test_percentages_and_ranges():
    assert pct(0.614) == "61%"
    assert pct_span([0.41, 0.52, 0.47]) == "41–52%"
    assert span([1.0, 1.004], 2) == "1.00"  # both ends round alike: one value
    assert span([-3.0, 5.0], 0) == "−3 to 5"  # a negative end is never joined by a dash
    assert span([math.nan]) == "n/a"


def test_mean_plus_minus_the_t_interval():
    # 3 replicates: the 95% t quantile is 4.303
    assert pm(Estimate(-0.006, 0.001, 3), 1, 100) == "−0.6 ± 0.4"
    assert pm(Estimate(0.79, 0.01, 3), 2, signed=False) == "0.79 ± 0.04"
    assert pm(Estimate(0.1, math.nan, 1), 1) == "+0.1 (one seed)"


def test_words_follow_the_numbers():
    assert beyond(Estimate(0.1, 0.02, 3)) and not beyond(Estimate(0.1, 0.03, 3))
    assert not beyond(Estimate(0.1, math.nan, 1))
    assert spread_phrase(Estimate(0.1, 0.06, 3)) == "within the seed spread"
    assert direction(0.2) == "rises" and direction(-0.2) == "falls"
    assert direction(0.001, tolerance=0.005) == "stays flat"
    assert listing(["a"]) == "a" and listing(["a", "b", "c"]) == "a, b and c"
