"""memlib.claims: threshold tests on Estimates (margins) and their noise rules."""

import math

from memlib.claims import (
    FAILS,
    HOLDS,
    WITHIN_NOISE,
    Claim,
    Estimate,
    all_of,
    any_of,
    evaluate,
    every_beyond_noise,
    margin,
    some_beyond_noise,
)


def clear(mean):  # a margin far outside its spread
    return Estimate(mean, 0.01, 5)


def vague(mean):  # a margin inside its spread
    return Estimate(mean, 10.0, 5)


def test_margin_points_towards_passing():
    e = Estimate.of([60.0, 62.0, 64.0])
    assert margin(e, 65, at_least=False).mean == 3 and margin(e, 50).mean == 12
    assert margin(e, 65, at_least=False).se == e.se and margin(e, 50).n == 3
    one = margin(Estimate.of([1.0]), 0.5)
    assert one.mean == 0.5 and not one.beyond_noise and math.isnan(one.se)


def test_every_test_passing_needs_all_clear_but_one_clear_failure_decides():
    assert every_beyond_noise([clear(1), clear(2)])
    assert not every_beyond_noise([clear(1), vague(2)])
    assert every_beyond_noise([clear(-1), vague(2)])
    assert not every_beyond_noise([])


def test_some_test_passing_needs_one_clear_pass_or_all_clear():
    assert some_beyond_noise([clear(1), vague(-2)])
    assert not some_beyond_noise([clear(-1), vague(2)])
    assert some_beyond_noise([clear(-1), clear(-2)])
    assert not some_beyond_noise([])


def verdict(claim, value):
    return evaluate([claim], {claim.id: value})["verdict"].item()


def test_all_of_and_any_of_give_the_verdict_order():
    both = Claim("both", "", "", "", "x >= 1 and y <= 0",
                 **all_of(lambda v: [margin(v["x"], 1), margin(v["y"], 0, at_least=False)]))
    assert verdict(both, {"x": clear(3), "y": clear(-1)}) == HOLDS
    assert verdict(both, {"x": clear(0), "y": vague(-1)}) == FAILS
    assert verdict(both, {"x": clear(3), "y": vague(-1)}) == WITHIN_NOISE
    either = Claim("either", "", "", "", "x >= 1 or y >= 1",
                   **any_of(lambda v: [margin(v["x"], 1), margin(v["y"], 1)]))
    assert verdict(either, {"x": clear(3), "y": vague(-5)}) == HOLDS
    assert verdict(either, {"x": clear(0), "y": clear(0)}) == FAILS
    assert verdict(either, {"x": clear(0), "y": vague(3)}) == WITHIN_NOISE
