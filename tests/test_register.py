"""The claims register: every rule is registered as it is now, its earlier versions stay
evaluable, and the small presets run the registered confirmatory seeds."""

import pytest

from memlib import STUDIES
from memlib.claim_sets import study_claims
from memlib.claims import (
    Cases,
    Claim,
    Estimate,
    collect,
    earlier_runs,
    evaluate,
    latest_registration,
    new_confirmatory_run,
    read_register,
    register,
    registered_versions,
    with_versions,
    write,
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


@pytest.mark.parametrize("study", list(STUDIES))
def test_earlier_confirmatory_runs_stay_visible_and_seeds_are_never_reused(study):
    reg = read_register(study)
    seen = set(reg["pilot_seeds"]) | set(reg["seeds"])
    for run, (_, _, verdicts) in zip(reg.get("earlier_runs", []), earlier_runs(reg),
                                     strict=True):
        assert run["reason"].strip(), "a replaced run says why"
        assert not set(run["seeds"]) & seen, f"seeds {run['seeds']} were used twice"
        seen |= set(run["seeds"])
        assert verdicts, f"{run['verdicts']}: the replaced run's verdicts are missing"


def test_a_new_confirmatory_run_keeps_the_old_verdicts_beside_the_new(tmp_path, monkeypatch):
    monkeypatch.setattr("memlib.paths.repo_root", lambda: tmp_path)
    monkeypatch.setenv("MEMLIB_FIGURES", str(tmp_path / "figures"))
    study = "rlp"
    (tmp_path / "register").mkdir()
    (tmp_path / "register" / f"{STUDIES[study]}.yaml").write_text(
        "seeds: [100, 101]\npilot_seeds: [0, 1]\nclaims: []\n")
    claim = _claim()
    register(study, [claim], "first", "2026-01-01")
    write(evaluate([claim], {"x": Estimate(1.0, 0.1, 5)}), STUDIES[study])
    with pytest.raises(ValueError, match="fresh"):
        new_confirmatory_run(study, [1, 200], "reused a pilot seed", "2026-01-02")
    with pytest.raises(ValueError, match="reason"):
        new_confirmatory_run(study, [200, 201], " ", "2026-01-02")
    new_confirmatory_run(study, [200, 201], "the recipe trains longer", "2026-01-02")
    reg = read_register(study)
    assert reg["seeds"] == [200, 201] and reg["earlier_runs"][0]["seeds"] == [100, 101]
    write(evaluate([claim], {"x": Estimate(-1.0, 0.1, 5)}), STUDIES[study])
    text = collect()
    assert "Confirmatory seeds 200-201. It replaces an earlier confirmatory run on seeds " \
           "100-101, whose verdicts stay in the details: the recipe trains longer." in text
    assert "| pilot (seeds 0-1) | earlier run (seeds 100-101) |" in text
    assert "| x | v1 (" in text and "| — | holds (v1) | — |" in text
    assert '<span class="verdict verdict-fails">does not hold</span>' in text
    with pytest.raises(ValueError, match="fresh"):  # the replaced run's seeds stay used
        new_confirmatory_run(study, [100, 300], "again", "2026-01-03")
