"""The claims register: every rule is registered as it is now, its earlier versions stay
evaluable, and the small presets run the registered confirmatory seeds."""

import pytest

from memlib import STUDIES
from memlib.claim_sets import study_claims
from memlib.claims import (
    Cases,
    Claim,
    Estimate,
    evaluate,
    latest_registration,
    read_register,
    register,
    registered_versions,
    with_versions,
)
from memlib.presets import preset_config


@pytest.mark.parametrize("study", list(STUDIES))
def test_every_rule_matches_its_latest_registration(study):
    latest = latest_registration(study)
    for claim in study_claims(study):
        entry = latest.get(claim.id)
        assert entry is not None, f"{study}.{claim.id} is not registered: python -m memlib " \
                                  f"register {study} --reason '...'"
        assert entry["fingerprint"] == claim.fingerprint, (
            f"{study}.{claim.id} changed after its registration (v{entry['version']}): "
            "register the new version with its reason and keep the old one in "
            "Claim.previous")


@pytest.mark.parametrize("study", list(STUDIES))
def test_earlier_versions_stay_in_the_claim(study):
    known = registered_versions(study)
    latest = latest_registration(study)
    for claim in study_claims(study):
        kept = {old.fingerprint for old in claim.previous}
        earlier = {fp for fp, v in known.get(claim.id, {}).items()
                   if v < latest[claim.id]["version"]}
        assert earlier <= kept, f"{study}.{claim.id}: earlier versions dropped from previous"


@pytest.mark.parametrize("study", list(STUDIES))
def test_small_preset_runs_the_registered_fresh_seeds(study):
    reg = read_register(study)
    seeds, pilot = set(reg["seeds"]), set(reg["pilot_seeds"])
    assert seeds and not seeds & pilot, "confirmatory seeds must be fresh"
    config = preset_config(study, "small")
    used = set(config.seeds)
    assert used == seeds, f"params/small runs seeds {sorted(used)}, registered {sorted(seeds)}"


def _claim(rule="> 0", previous=()):
    return Claim("x", "a difference is positive", "", "a - b over seeds", rule,
                 lambda v: v.mean > 0, previous=previous,
                 cases=Cases(Estimate(1, 0.1, 5), Estimate(-1, 0.1, 5)))


def test_a_changed_rule_shows_both_versions(tmp_path, monkeypatch):
    monkeypatch.setattr("memlib.paths.repo_root", lambda: tmp_path)
    old = _claim()
    assert register("demo", [old], "first", "2026-01-01") == ["x"]
    assert register("demo", [old], "again", "2026-01-02") == []  # unchanged: nothing new
    new = Claim("x", old.statement, "", old.measure, "> 0.5", lambda v: v.mean > 0.5,
                previous=(old,))
    table = with_versions(evaluate([new], {"x": Estimate(0.3, 0.05, 5)}), "demo")
    assert table.loc[0, "version"] == "unregistered"  # an unrecorded change is visible
    assert register("demo", [new], "threshold of the paper", "2026-01-03") == ["x"]
    row = with_versions(evaluate([new], {"x": Estimate(0.3, 0.05, 5)}), "demo").iloc[0]
    assert (row["version"], row["verdict"], row["previous"]) == ("v2", "does not hold",
                                                                  "v1: holds")


def test_registration_needs_a_reason(tmp_path, monkeypatch):
    monkeypatch.setattr("memlib.paths.repo_root", lambda: tmp_path)
    with pytest.raises(ValueError):
        register("demo", [_claim()], " ", "2026-01-01")
