"""The claims register: every rule is registered as it is now, its earlier versions stay
evaluable, and the small presets run the registered confirmatory seeds."""

import dataclasses

import pytest

from memlib import STUDIES
from memlib.claims import (
    Cases,
    Claim,
    DamagedFileError,
    Estimate,
    chain_genesis,
    chain_problems,
    check,
    collect,
    earlier_runs,
    evaluate,
    judged_versions,
    latest_registration,
    new_confirmatory_run,
    parse_seeds,
    read_register,
    read_results,
    register,
    register_path,
    registered_versions,
    rules,
    same_rule_chain,
    with_versions,
    write,
)
from memlib.config import confirmatory_seeds
from memlib.paths import ROOT, figures_dir
from memlib.studies import every_claim, preset_config, study_claims


@pytest.mark.parametrize("study", list(STUDIES))
def test_every_rule_matches_its_latest_registration(study):
    latest = latest_registration(study)
    for claim in study_claims(study):
        entry = latest.get(claim.id)
        assert entry is not None, f"{study}.{claim.id} is not registered: python -m memlib " \
                                  f"register {study} --reason '...'"
        # computed afresh: another test may have cached one under a patched constant
        assert entry["fingerprint"] == rules.fingerprint(claim), (
            f"{study}.{claim.id} changed after its registration (v{entry['version']}): "
            "register the new version with its reason and keep the old one in "
            "Claim.previous")


@pytest.mark.parametrize("study", list(STUDIES))
def test_earlier_versions_stay_in_the_claim(study, monkeypatch):
    monkeypatch.setenv("MEMLIB_FIGURES", str(ROOT / "figures"))  # the committed runs' verdicts
    known = registered_versions(study)
    latest = latest_registration(study)
    for claim in study_claims(study):
        # an earlier version is kept as a Claim in previous (found by either fingerprint), or
        # is this very rule (registered by its words only, or before its code moved)
        # or is the same rule as a version that is kept (its code moved since)
        kept = {fp for old in claim.previous for fp in (old.fingerprint, old.text_fingerprint)}
        kept.add(claim.text_fingerprint)
        versions = known.get(claim.id, {})
        reg, last = read_register(study), latest[claim.id]["version"]
        same = {v for w in {last} | {versions[fp] for fp in kept if fp in versions}
                for v, _ in same_rule_chain(reg, claim.id, w)}
        # an earlier version stays in view: kept in previous (by any fingerprint the register
        # records for it), or shown by the confirmatory run that judged it
        judged = {v for (i, v) in judged_versions(study) if i == claim.id}
        # a version that no run judged, replaced by one a run did judge, was registered and
        # replaced between runs (each run judges the latest version, and every run's
        # verdicts are kept, frozen under register/earlier/): it has no verdict to keep in
        # view. The register does not order its entries against the runs, so this cannot
        # tell such a version from one whose run's verdicts were overwritten; the seed
        # ledger and the refusal to rerun judged versions guard that.
        superseded = {v for v in versions.values() if any(j > v for j in judged)}
        dropped = {v for fp, v in versions.items() if v < last and v not in same
                   and v not in judged and v not in superseded
                   and not any(f in kept for f, w in versions.items() if w == v)}
        assert not dropped, f"{study}.{claim.id}: earlier versions {sorted(dropped)} dropped " \
                            "from previous and judged by no run"


@pytest.mark.parametrize("study", list(STUDIES))
def test_small_preset_runs_the_registered_fresh_seeds(study):
    reg = read_register(study)
    seeds, pilot = set(reg["seeds"]), set(reg["pilot_seeds"])
    assert seeds and not seeds & pilot, "confirmatory seeds must be fresh"
    config = preset_config(study, "small")
    used = set(confirmatory_seeds(config))
    assert used == seeds, f"params/small runs seeds {sorted(used)}, registered {sorted(seeds)}"


def _claim(rule="> 0", previous=()):
    return Claim("x", "a difference is positive", "", "a - b over seeds", rule,
                 lambda v: v.mean > 0, previous=previous,
                 cases=Cases(Estimate(1, 0.1, 5), Estimate(-1, 0.1, 5)))


def test_a_changed_rule_shows_both_versions(tmp_path, monkeypatch):
    monkeypatch.setattr("memlib.paths.repo_root", lambda: tmp_path)
    old = _claim()
    assert register("demo", [old], "first", "2026-01-01", new=True) == ["x"]
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
    # the run's history is folded behind its seeds, below the table
    assert ("<details><summary>Confirmatory seeds 200-201. Why it replaces the earlier run on "
            "seeds 100-101</summary>\n\nIt replaces an earlier confirmatory run on seeds "
            "100-101, whose verdicts stay in the details: the recipe trains longer.") in text
    assert "| pilot (seeds 0-1) | earlier run (seeds 100-101) |" in text
    # the two runs of the same rule version read opposite verdicts beyond noise: said so
    assert "| x (runs disagree beyond noise) | v1 (" in text and "| — | holds (v1) | — |" in text
    assert '<span class="verdict verdict-fails">does not hold</span>' in text
    with pytest.raises(ValueError, match="fresh"):  # the replaced run's seeds stay used
        new_confirmatory_run(study, [100, 300], "again", "2026-01-03")
    # v1 of x already had a confirmatory run: running it again is a replication, or nothing
    with pytest.raises(ValueError, match="replication"):
        new_confirmatory_run(study, [300, 301], "again", "2026-01-03", [claim])
    powered = claims_powered(claim, 8, "pilots/power.py")
    new_confirmatory_run(study, [300, 301], "a replication of v1", "2026-01-03", [powered],
                         replication=True)
    assert read_register(study)["seeds_replication"] is True
    # each rule's n from the power analysis is registered with the seeds, and kept with the
    # run when a later one replaces it
    assert read_register(study)["planned_n"] == {"x": 8}
    new_confirmatory_run(study, [400, 401], "the next", "2026-01-04", [powered],
                         replication=True)
    assert read_register(study)["earlier_runs"][-1]["planned_n"] == {"x": 8}
    assert chain_problems(read_register(study)) == []


def claims_powered(claim, n, source):
    from memlib.claims import powered

    return powered(claim, n, source)


@pytest.mark.parametrize("study", list(STUDIES))
def test_every_rule_carries_the_n_its_power_analysis_chose_and_the_register_holds_it(study):
    from memlib.claims import MIN_REPLICATES

    claims = study_claims(study)
    planned = {c.id: c.confirmatory_n for c in claims}
    assert all(n is not None and n >= MIN_REPLICATES for n in planned.values()), planned
    assert read_register(study).get("planned_n") == planned


# ---- the fingerprint covers what decides a verdict ---------------------------------------

STUDY_SOURCE = '''
from memlib.claims import Claim, Estimate, all_of, margin

THRESHOLD = {threshold}


def spread(values):
    # {comment}
    return Estimate.of({values})


def value(results):
    return spread(results)


CLAIM = Claim("x", "a value clears its threshold", "", "value over seeds", "{rule}",
              **all_of(lambda v: [margin(v, THRESHOLD)]), decided_by=(value,),
              preset_keys=("epochs",))
'''


def _study_claim(root, name, epochs=10, **edits):
    """CLAIM of a study module (named as study 3's claims part, whose small preset it reads)
    written from STUDY_SOURCE with `edits`, under a repository root whose preset sets
    `epochs`."""
    import importlib.util

    fields = {"threshold": "0.5", "comment": "the spread", "values": "values",
              "rule": "mean >= 0.5", **edits}
    source = root / f"{name}.py"
    source.write_text(STUDY_SOURCE.format(**fields))
    preset = root / "params" / "small" / f"{STUDIES['fisher']}.yaml"
    preset.parent.mkdir(parents=True, exist_ok=True)
    preset.write_text(f"epochs: {epochs}\nseeds: [1, 2]\n")
    spec = importlib.util.spec_from_file_location("memlib.studies.fisher.claims", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CLAIM


def test_the_fingerprint_changes_with_whatever_decides_the_verdict(tmp_path, monkeypatch):
    roots = iter(range(100))

    def claim(**edits):
        root = tmp_path / str(next(roots))
        root.mkdir()
        monkeypatch.setattr("memlib.paths.repo_root", lambda: root)
        made = _study_claim(root, "study", **edits)
        _ = made.fingerprint  # read while its own preset is the repository's
        return made

    base = claim()
    assert claim().fingerprint == base.fingerprint  # the same code: the same fingerprint
    assert claim(comment="rewrapped, reworded").fingerprint == base.fingerprint
    changed = {"measure function": claim(values="[2 * v for v in values]"),
               "constant": claim(threshold="0.6"),
               "preset value": claim(epochs=20),
               "rule text": claim(rule="mean >= 0.5, beyond noise")}
    for what, edited in changed.items():
        assert edited.fingerprint != base.fingerprint, f"a changed {what} kept the fingerprint"
    assert len({c.fingerprint for c in changed.values()}) == len(changed)


def test_a_preset_key_the_preset_lacks_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr("memlib.paths.repo_root", lambda: tmp_path)
    claim = _study_claim(tmp_path, "study")
    broken = dataclasses.replace(claim, preset_keys=("epochs", "no_such_key"))
    with pytest.raises(ValueError, match="no_such_key"):
        _ = broken.fingerprint


def _demo_register(tmp_path, monkeypatch, claim, later: str = "") -> None:
    """A register "demo" whose version 1 of `claim` holds its text fingerprint (the first
    scheme), followed by the entries `later` (YAML)."""
    monkeypatch.setattr("memlib.paths.repo_root", lambda: tmp_path)
    path = register_path("demo")
    path.parent.mkdir(parents=True)
    path.write_text(f"seeds: []\npilot_seeds: []\nclaims:\n- id: x\n  version: 1\n"
                    f"  fingerprint: {claim.text_fingerprint}\n  registered: '2026-01-01'\n"
                    f"  reason: first\n{later}")
    chain_genesis("demo")  # a register written before its chains: chained once


def test_a_rule_registered_by_its_words_is_reregistered_as_the_same_rule(tmp_path,
                                                                         monkeypatch):
    claim = _claim()
    _demo_register(tmp_path, monkeypatch, claim)
    assert register("demo", [claim], "the fingerprint covers the code", "2026-02-01") == ["x"]
    entries = read_register("demo")["claims"]
    assert [(e["version"], e.get("same_rule_as")) for e in entries] == [(1, None), (2, 1)]
    row = with_versions(evaluate([claim], {"x": Estimate(1, 0.1, 5)}), "demo").iloc[0]
    assert row["version"] == "v2"
    assert row["previous"] == "v1: the same rule, registered by its words only; same verdict"


def test_a_rule_whose_code_moved_is_reregistered_as_the_same_rule(tmp_path, monkeypatch):
    claim = _claim()
    _demo_register(tmp_path, monkeypatch, claim,
                   "- id: x\n  version: 2\n  fingerprint: 0123456789abcdef\n"
                   "  registered: '2026-01-02'\n  reason: code\n  same_rule_as: 1\n")
    assert register("demo", [claim], "moved", "2026-02-01", moved=True) == ["x"]
    entries = read_register("demo")["claims"]
    assert [(e["version"], e.get("same_rule_as"), e.get("moved")) for e in entries] == [
        (1, None, None), (2, 1, None), (3, 2, True)]
    assert same_rule_chain(read_register("demo"), "x", 3) == [(2, True), (1, False)]
    row = with_versions(evaluate([claim], {"x": Estimate(1, 0.1, 5)}), "demo").iloc[0]
    assert row["previous"] == ("v2: the same rule, its code or values moved; same verdict; "
                               "v1: the same rule, registered by its words only; same verdict")
    # without the statement a changed fingerprint is a new rule, not the same one
    assert register("demo", [dataclasses.replace(claim, rule="> 1")], "changed",
                    "2026-03-01") == ["x"]
    assert "same_rule_as" not in read_register("demo")["claims"][-1]


# ---- the register checks itself ----------------------------------------------------------

def _results(tmp_path, monkeypatch):
    """A registered claim and its results under tmp_path; returns the claim."""
    monkeypatch.setattr("memlib.paths.repo_root", lambda: tmp_path)
    monkeypatch.setenv("MEMLIB_FIGURES", str(tmp_path / "figures"))
    # the real claims' fingerprints read their presets, in whatever order the tests ran
    (tmp_path / "params").symlink_to(ROOT / "params")
    claim = _claim()
    register("rlp", [claim], "first", "2026-01-01", new=True)
    write(evaluate([claim], {"x": Estimate(1.0, 0.1, 5)}), STUDIES["rlp"])
    return claim


def _checked(claim, code=None):
    table = read_results(figures_dir(STUDIES["rlp"]) / "claims.csv")
    return check(table, "rlp", code)


def test_the_register_check_agrees_with_an_untouched_register(tmp_path, monkeypatch):
    claim = _results(tmp_path, monkeypatch)
    assert _checked(claim, {"x": claim.fingerprint}) == [""]
    assert "Register check" not in collect()


def test_a_register_without_an_entry_for_a_rule_reads_unregistered(tmp_path, monkeypatch):
    claim = _results(tmp_path, monkeypatch)
    register_path("rlp").unlink()
    register("rlp", [dataclasses.replace(claim, id="y")], "another rule", "2026-01-01",
             new=True)
    assert _checked(claim) == ["unregistered"]
    text = collect()
    assert "**Register check: 1 of 1 rules are unregistered or changed since registration**" \
           in text and "| x | unregistered (" in text


def test_an_edited_fingerprint_reads_changed_since_registration(tmp_path, monkeypatch):
    claim = _results(tmp_path, monkeypatch)
    path = register_path("rlp")
    path.write_text(path.read_text().replace(claim.fingerprint, "0123456789abcdef"))
    assert _checked(claim)[0].startswith("changed since registration: the results' rule")
    with pytest.raises(DamagedFileError, match="was rewritten"):  # the report refuses it
        collect()


def test_code_changed_after_the_results_reads_changed_since_registration(tmp_path,
                                                                         monkeypatch):
    claim = _results(tmp_path, monkeypatch)
    assert _checked(claim, {"x": "fedcba9876543210"})[0].startswith(
        "changed since registration: the code's rule (unregistered)")


# ---- bad input and damaged files: one line, nothing written ------------------------------

def _cli(argv, capsys):
    from memlib.cli import main

    code = main(argv)
    err = capsys.readouterr().err.strip()
    return code, err


def _snapshot(root):
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("argv", [
    ["register", "fisher", "--reason", ""],
    ["register", "fisher", "--reason", "   "],
    ["register", "fisher", "--reason", "fresh seeds", "--seeds=-5,-6"],
    ["register", "fisher", "--reason", "fresh seeds", "--seeds", "300,300,4294967296"],
    ["register", "fisher", "--reason", "fresh seeds", "--seeds", "300,301,4294967296"],
    ["register", "fisher", "--reason", "fresh seeds", "--seeds", "300,abc"],
])
def test_bad_register_input_is_one_line_and_writes_nothing(argv, tmp_path, monkeypatch,
                                                           capsys):
    claim = _results(tmp_path, monkeypatch)
    assert claim  # the register and results exist, so "nothing written" can fail
    before = _snapshot(tmp_path)
    code, err = _cli(argv, capsys)
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("memlib: error:"), err
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("damage", ["yaml", "entries", "version"])
def test_a_damaged_register_is_one_line_and_exit_1(damage, tmp_path, monkeypatch, capsys):
    _results(tmp_path, monkeypatch)
    path = register_path("rlp")
    text = path.read_text(encoding="utf-8")
    path.write_text({"yaml": "claims: [unclosed\n", "entries": "claims: [1, 2]\n",
                     "version": text.replace("version: 1", "version: two", 1)}[damage])
    assert path.read_text() != text
    before = _snapshot(tmp_path)
    for argv in (["claims"], ["register", "rlp", "--reason", "again"]):
        code, err = _cli(argv, capsys)
        assert code == 1 and len(err.splitlines()) == 1 and "is damaged" in err, err
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("damage", ["truncated", "not utf-8", "empty"])
def test_a_damaged_claims_table_is_one_line_and_exit_1(damage, tmp_path, monkeypatch,
                                                       capsys):
    _results(tmp_path, monkeypatch)
    csv = figures_dir(STUDIES["rlp"]) / "claims.csv"
    data = csv.read_bytes()
    csv.write_bytes({"truncated": data[: len(data) * 2 // 3], "not utf-8": b"\xff\xfe" + data,
                     "empty": b""}[damage])
    before = _snapshot(tmp_path)
    code, err = _cli(["claims"], capsys)
    assert code == 1 and len(err.splitlines()) == 1 and "claims.csv is damaged" in err, err
    assert _snapshot(tmp_path) == before


def test_the_seeds_are_checked_as_the_configs_check_them():
    assert parse_seeds("300,301,4294967295") == [300, 301, 2**32 - 1]
    for bad in ("-5,-6", "300,300", "4294967296", "1.5", ""):
        with pytest.raises(ValueError):
            parse_seeds(bad)


def test_fingerprints_are_the_same_in_another_process():
    """Nothing process-specific (hash seeds, memory addresses, import order) enters."""
    import os
    import subprocess
    import sys

    script = ("import memlib.studies.lens, memlib.studies.probes\n"
              "from memlib.studies import every_claim\n"
              "for study, claim in every_claim(): print(study, claim.id, claim.fingerprint)\n")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, check=True).stdout.splitlines()
    here = [f"{study} {claim.id} {rules.fingerprint(claim)}" for study, claim in every_claim()]
    assert out == here


# ---- the register cannot be rewritten -----------------------------------------------------

@pytest.mark.parametrize("study", list(STUDIES))
def test_every_register_is_an_intact_hash_chain(study):
    assert chain_problems(read_register(study)) == []


def test_an_edit_of_a_committed_entry_breaks_the_chain(tmp_path, monkeypatch):
    monkeypatch.setattr("memlib.paths.repo_root", lambda: tmp_path)
    (tmp_path / "register").mkdir()
    committed = ROOT / "register" / f"{STUDIES['rlp']}.yaml"
    register_path("rlp").write_bytes(committed.read_bytes())
    assert chain_problems(read_register("rlp")) == []
    text = register_path("rlp").read_text()
    first = read_register("rlp")["claims"][0]["fingerprint"]  # an in-place re-registration
    register_path("rlp").write_text(text.replace(f"fingerprint: {first}",
                                                 "fingerprint: 0123456789abcdef", 1))
    problems = chain_problems(read_register("rlp"))
    assert problems and problems[0].startswith("claims[0] (")
    with pytest.raises(Exception, match="rewritten"):  # nothing is appended to it
        register("rlp", [_claim()], "more", "2026-01-01")


def test_a_register_is_chained_once_and_appends_keep_it_intact(tmp_path, monkeypatch):
    claim = _claim()
    _demo_register(tmp_path, monkeypatch, claim)
    assert chain_problems(read_register("demo")) == []
    with pytest.raises(ValueError, match="already chained"):
        chain_genesis("demo")
    register("demo", [dataclasses.replace(claim, rule="> 1")], "threshold", "2026-02-01")
    assert chain_problems(read_register("demo")) == []
    entries = read_register("demo")["claims"]
    entries.pop(0)  # a removed entry breaks the next one's link
    assert chain_problems({"claims": entries})


def test_a_seed_a_benchmark_or_pilot_used_is_not_fresh(tmp_path, monkeypatch):
    claim = _results(tmp_path, monkeypatch)
    (tmp_path / "register" / "seed-ledger.yaml").write_text(
        "rlp:\n- {seeds: [777], by: benchmarks/profile.py}\n")
    with pytest.raises(ValueError, match="777 was used by benchmarks/profile.py"):
        new_confirmatory_run("rlp", [776, 777], "fresh", "2026-01-02", [claim])


def test_the_committed_seed_ledger_names_the_pilots_and_benchmarks():
    from memlib.claims import seed_ledger

    for study in STUDIES:
        used = seed_ledger(study)
        assert set(read_register(study)["pilot_seeds"]) <= set(used), study
    assert "benchmarks/modarith_profile.py" in seed_ledger("modarith")[300]


def test_registering_seeds_again_for_unchanged_rules_is_one_line_and_exit_2(
        tmp_path, monkeypatch, capsys):
    _results(tmp_path, monkeypatch)
    monkeypatch.setattr("memlib.studies.study_claims", lambda study: [_claim()])
    before = _snapshot(tmp_path)
    code, err = _cli(["register", "rlp", "--reason", "again", "--seeds", "900,901"], capsys)
    assert code == 2 and len(err.splitlines()) == 1 and "replication" in err, err
    assert _snapshot(tmp_path) == before


# ---- claims.csv has every registered claim ------------------------------------------------

@pytest.mark.parametrize("rows", ["fewer", "none"])
def test_a_claims_table_missing_registered_rows_is_one_line(rows, tmp_path, monkeypatch,
                                                              capsys):
    claim = _results(tmp_path, monkeypatch)
    register("rlp", [dataclasses.replace(claim, id="y")], "another", "2026-01-01")
    if rows == "none":
        write(evaluate([claim], {}).iloc[0:0], STUDIES["rlp"])
    monkeypatch.setattr("memlib.studies.study_claims",
                        lambda study: [claim, dataclasses.replace(claim, id="y")])
    code, err = _cli(["claims"], capsys)
    assert code == 1 and len(err.splitlines()) == 1, err
    assert STUDIES["rlp"] in err and ("(x, y)" if rows == "none" else "(y)") in err


# ---- --moved is verified on the stored values ----------------------------------------------

def test_stored_values_round_trip():
    from memlib.claims.values import decode, encode

    value = {"a": Estimate(1.0, 0.5, 5, (0.1, 0.9), (0.3, 0.2, 4)), "b": [1, (2, 3)],
             "c": {0.5: Estimate(2.0, 0.1, 3)}, "d": None}
    back = decode(encode(value))
    assert back["a"] == value["a"] and back["c"][0.5] == value["c"][0.5]
    assert back["b"] == [1, [2, 3]] and back["d"] is None


def test_write_stores_each_rows_value_beside_the_table(tmp_path, monkeypatch):
    from memlib.claims.values import read_values

    claim = _results(tmp_path, monkeypatch)
    assert read_values("rlp") == {claim.id: Estimate(1.0, 0.1, 5)}


MOVED_RULE = 'lambda v: v["diff"].mean > 0'


def _old_package(tmp_path, old: str, new: str):
    """A copy of the package (and its params) whose study-3 rule `new` reads `old`."""
    import shutil

    root = tmp_path / "old"
    shutil.copytree(ROOT / "memlib", root / "memlib",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "params", root / "params")
    source = root / "memlib" / "studies" / "fisher" / "claims.py"
    text = source.read_text()
    assert new in text
    source.write_text(text.replace(new, old, 1))
    return root


def test_moved_rules_that_judge_alike_pass_and_a_changed_one_is_refused(tmp_path):
    from memlib.claims.values import verify_moved

    claims = study_claims("fisher")
    ids = ["onset"]
    same = _old_package(tmp_path / "a", "# the same rule\nCLAIMS = declare(CLAIMS, {",
                        "CLAIMS = declare(CLAIMS, {")
    differ, basis = verify_moved("fisher", claims, same, ids)
    assert differ == [] and basis in ("the stored values",
                                       "the rules' Cases (no values stored yet)")
    # the old code read a threshold of 1 where the new one reads 0: a verdict differs
    changed = _old_package(tmp_path / "b", 'margin(v["inflation_at_test_peak"], 9)',
                           'margin(v["inflation_at_test_peak"], 0)')
    differ, _ = verify_moved("fisher", claims, changed, ids)
    assert differ and "onset" in differ[0]


# ---- every study's measure function is in its claims' fingerprints -----------------------

MEASURES = {"rlp": "def measure_claims(results: dict) -> dict:\n",
            "modarith": "def measure(results: dict, config: Config) -> dict:\n",
            "fisher": "def measure(results: dict, config: Config) -> dict:\n",
            "probes": "def measure(results: dict) -> dict:\n",
            "lens": "def measure(results: dict) -> dict:\n"}


@pytest.mark.parametrize("study", list(STUDIES))
def test_editing_a_studys_measure_function_changes_every_claims_fingerprint(study, tmp_path):
    """On a copy of the package whose measure function gains one statement, imported by a
    fresh process: no claim of the study keeps its fingerprint."""
    import os
    import shutil
    import subprocess
    import sys

    shutil.copytree(ROOT / "memlib", tmp_path / "memlib",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "params", tmp_path / "params")
    source = tmp_path / "memlib" / "studies" / study / "claims.py"
    text = source.read_text()
    assert text.count(MEASURES[study]) == 1
    source.write_text(text.replace(MEASURES[study],
                                   MEASURES[study] + "    results = dict(results)\n"))
    script = ("from memlib.studies import study_claims\n"
              f"for c in study_claims({study!r}): print(c.id, c.fingerprint)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(tmp_path)}, cwd=tmp_path,
                         check=True)
    edited = dict(line.split() for line in out.stdout.splitlines())
    here = {c.id: rules.fingerprint(c) for c in study_claims(study)}
    assert set(edited) == set(here)
    kept = [i for i in here if edited[i] == here[i]]
    assert not kept, f"{study}: {kept} kept their fingerprint when its measure changed"


# ---- the report reads: long cells folded, no value that was never measured ----------------

OLD_TABLE_COLUMNS = ("id", "statement", "paper", "measure", "rule", "headline", "ours",
                     "verdict", "caveat", "where")  # a table written before p, δ and units


def _old_claims_table(tmp_path, monkeypatch, rows):
    """A study's claims.csv with only the columns of a table written before p-values, δ and
    the unit of replication existed, and an empty register, under tmp_path."""
    import pandas as pd

    monkeypatch.setattr("memlib.paths.repo_root", lambda: tmp_path)
    monkeypatch.setenv("MEMLIB_FIGURES", str(tmp_path / "figures"))
    register_path("rlp").parent.mkdir(exist_ok=True)
    register_path("rlp").write_text("seeds: []\npilot_seeds: []\nclaims: []\n")
    folder = figures_dir(STUDIES["rlp"])
    folder.mkdir(parents=True)
    pd.DataFrame([dict(zip(OLD_TABLE_COLUMNS, r, strict=True)) for r in rows]).to_csv(
        folder / "claims.csv", index=False)


def _visible_cells(text):
    """Every cell of the report's tables as a reader sees it before opening a <details>."""
    import re

    shown = re.sub(r"<details><summary>(.*?)</summary>.*?</details>", r"\1", text)
    for line in shown.splitlines():
        if line.startswith("|"):
            yield from (re.sub(r"<[^>]+>|\]\([^)]*\)", "", c).strip()
                        for c in re.split(r"(?<!\\)\|", line)[1:-1])


LONG = ("The memorizing layer is the one whose random-label probe accuracy rises furthest "
        "above its frozen initialisation, and it is also the layer that breaks first when "
        "its weights are binarized, on every dataset the paper tried, whatever the width")


def test_the_report_folds_a_long_cell_and_names_a_value_never_measured(tmp_path, monkeypatch):
    from memlib.tables import CELL_LIMIT

    _old_claims_table(tmp_path, monkeypatch, [
        ("long", LONG, "qualitative", "m", "> 0", "nan (n=0) epochs", "lead=nan (n=0)",
         "precondition failed: the head rises", "", ""),
        ("short", "A short claim.", "54% to 98.5%", "m", "> 0", "1.5 ± 0.2 (n=5) points",
         "x=1.5", "holds", "", "")])
    text = collect()
    assert len(LONG) > CELL_LIMIT and all(len(c) <= CELL_LIMIT for c in _visible_cells(text))
    # the folded cell keeps its opening words in view and every word behind them
    assert f"<details><summary>{LONG[:60]}" in text and LONG.split()[-1] in text
    assert "nan (n=0)" not in text and "| not measured |" in text
    assert "lead=not measured." in text  # the rules' list names it too
    # a short cell is left as it is
    assert "| A short claim. | 54% to 98.5% | 1.5 ± 0.2 (n=5) points |" in text
    assert "(Holm (not computed by this run))" not in text  # no p: no Holm either


def test_a_section_opens_with_its_table_and_folds_its_run_history(tmp_path, monkeypatch):
    _old_claims_table(tmp_path, monkeypatch, [
        ("short", "A short claim.", "qualitative", "m", "> 0", "1 (n=5)", "x=1", "holds", "",
         "")])
    reason = "the recipe trains longer, " * 40
    (tmp_path / "register").mkdir(exist_ok=True)
    (tmp_path / "register" / "earlier.csv").write_text("id,verdict,version\nshort,holds,v1\n")
    (tmp_path / "register" / f"{STUDIES['rlp']}.yaml").write_text(
        "seeds: [300, 301]\npilot_seeds: [0]\nclaims: []\nearlier_runs:\n"
        f"- {{seeds: [100, 101], replaced: 2026-01-02, reason: '{reason}', "
        "verdicts: register/earlier.csv}\n")
    chain_genesis("rlp")  # chained as the register command writes it
    text = collect()
    section = text.split(f"## {STUDIES['rlp']}\n\n")[1].split("\n## ")[0]
    paragraphs = section.split("\n\n")
    # before the table only the counts and the register check (an unregistered rule here)
    assert paragraphs[0].startswith("**1 holds") and paragraphs[1].startswith("**Register")
    assert paragraphs[2].startswith("| verdict |")
    history = paragraphs[3]
    assert history == ("<details><summary>Confirmatory seeds 300-301. Why it replaces the "
                       "earlier run on seeds 100-101</summary>")
    assert reason.strip().rstrip(",") in section.split(history)[1].split("</details>")[0]


def test_a_section_without_earlier_runs_names_its_seeds_in_one_line(tmp_path, monkeypatch):
    from memlib.claims.report import run_history

    assert run_history([300, 301], []) == "Confirmatory seeds 300-301.\n\n"
    assert run_history([], [("100-101", "why", {})]) == ""
    assert run_history([3], [("1", "a.", {}), ("2", "b", {})]).startswith(
        "<details><summary>Confirmatory seeds 3. Why it replaces the earlier runs on seeds "
        "1, 2</summary>\n\nIt replaces an earlier confirmatory run on seeds 1, whose verdicts "
        "stay in the details: a.\n\nIt replaces")


def test_a_studys_claims_md_folds_long_cells_and_keeps_the_csv_whole(tmp_path, monkeypatch):
    monkeypatch.setattr("memlib.paths.repo_root", lambda: tmp_path)
    monkeypatch.setenv("MEMLIB_FIGURES", str(tmp_path / "figures"))
    claim = dataclasses.replace(_claim(), statement=LONG)
    table = evaluate([claim], {"x": Estimate(1.0, 0.1, 5)})
    table.loc[0, "ours"] = "fitted=true, lead=nan (n=0)"
    write(table, STUDIES["rlp"])
    csv = read_results(figures_dir(STUDIES["rlp"]) / "claims.csv")
    assert csv.loc[0, "statement"] == LONG and csv.loc[0, "ours"].endswith("lead=nan (n=0)")
    md = (figures_dir(STUDIES["rlp"]) / "claims.md").read_text()
    assert f"<details><summary>{LONG[:60]}" in md and "nan (n=0)" not in md
    assert "| fitted=true, lead=not measured |" in md
    assert all(len(c) <= 200 for c in _visible_cells(md))


# ---- earlier versions recorded under their fingerprints after a shared change ---------------

def test_kept_versions_are_found_by_their_words_after_shared_code_moved(tmp_path, monkeypatch):
    from memlib.claims import rekey_earlier

    monkeypatch.setattr("memlib.paths.repo_root", lambda: tmp_path)
    old = _claim()
    register("demo", [old], "first", "2026-01-01", new=True)
    # the same words decided by other code (as when the verdict order every rule shares
    # changed): a new fingerprint, the same text fingerprint
    kept = dataclasses.replace(old, holds=lambda v: v.mean >= 0)
    assert (kept.fingerprint, kept.text_fingerprint) != (old.fingerprint, old.text_fingerprint)
    assert kept.text_fingerprint == old.text_fingerprint
    new = Claim("x", old.statement, "", old.measure, "> 0.5", lambda v: v.mean > 0.5,
                previous=(kept,))
    earlier = {"x": [(old.fingerprint, old.text_fingerprint)]}
    assert rekey_earlier("demo", [new], earlier, "shared code moved", "2026-01-02") == ["x v1"]
    assert rekey_earlier("demo", [new], earlier, "again", "2026-01-03") == []  # once only
    assert register("demo", [new], "threshold of the paper", "2026-01-04") == ["x"]
    assert latest_registration("demo")["x"]["version"] == 2  # the rekeyed entry is no rule
    row = with_versions(evaluate([new], {"x": Estimate(0.3, 0.05, 5)}), "demo").iloc[0]
    assert (row["version"], row["previous"]) == ("v2", "v1: holds")
    # a kept version whose words match nothing registered is left unrecorded
    other = dataclasses.replace(kept, statement="another claim")
    assert rekey_earlier("demo", [dataclasses.replace(new, previous=(other,))], earlier,
                         "no match", "2026-01-05") == []
    assert not chain_problems(read_register("demo"))


@pytest.mark.parametrize("study", list(STUDIES))
def test_each_rules_n_is_the_one_its_power_analysis_planned(study):
    """pilots/<notebook>_power_run.csv (pilots/power.py) plans each rule's n: "n = X" (for
    one beyond the budget, followed by what the run affords); the rule carries it."""
    import re

    import pandas as pd

    table = pd.read_csv(ROOT / "pilots" / f"{STUDIES[study]}_power_run.csv")
    claims = {c.id: c for c in study_claims(study)}
    for rule, registered in zip(table["rule"], table["registered"]):
        found = re.match(r"n = (\d+)", registered)
        if found and rule in claims:
            assert claims[rule].confirmatory_n == int(found[1]), rule


def _published(seeds):
    """A manifest beside the study's claims table recording the seeds its run used."""
    import json

    (figures_dir(STUDIES["rlp"]) / "manifest.json").write_text(
        json.dumps({"parameters": {"seeds": seeds}}), encoding="utf-8")


def test_registered_seeds_not_yet_run_read_pending_and_count_in_no_total(tmp_path, monkeypatch,
                                                                        capsys):
    from memlib.claims.register import pending_seeds

    claim = _results(tmp_path, monkeypatch)
    data = read_register("rlp")
    assert data.get("seeds", []) == [] and pending_seeds("rlp") == []  # nothing registered
    _published([1, 2, 3, 4, 5])
    new_seeds = [11, 12, 13, 14, 15]
    data["seeds"] = [1, 2, 3, 4, 5]
    from memlib.claims.register import _write_register

    _write_register("rlp", data)
    assert pending_seeds("rlp") == []  # the published run is the registered one
    text = collect()
    assert "not yet made" not in text and "1 holds" in text
    new_confirmatory_run("rlp", new_seeds, "fresh seeds for a replication", "2026-01-02",
                         [claim], replication=True)
    # a new rule registered with the seeds: the published table lacks its row, and that is
    # no error before the run that makes it
    register("rlp", [dataclasses.replace(claim, id="y")], "a new row", "2026-01-02")
    monkeypatch.setattr("memlib.studies.study_claims",
                        lambda study: [claim, dataclasses.replace(claim, id="y")])
    assert pending_seeds("rlp") == new_seeds
    code, err = _cli(["claims"], capsys)
    assert code == 0, err
    text = (tmp_path / "figures" / "CLAIMS.md").read_text() if (
        tmp_path / "figures" / "CLAIMS.md").exists() else collect()
    assert "Confirmatory run registered, not yet made" in text
    assert "seeds 11-15" in text and "count in no total" in text
    assert "0 holds" in text  # the last run's row counts in no total
    _published(new_seeds)  # the run made: the missing row is an error again
    code, err = _cli(["claims"], capsys)
    assert code == 1 and "(y)" in err, err

# ---- each row's earlier rounds -------------------------------------------------------------

def _rounds_register(tmp_path, monkeypatch):
    """A study whose register replaced two confirmatory rounds: x holds in round 1 (v1), its
    threshold is raised after seeing it (v2) and fails in round 2, and raised again after
    round 2 (v3); y is the same rule throughout; z is added after round 1."""
    monkeypatch.setattr("memlib.paths.repo_root", lambda: tmp_path)
    monkeypatch.setenv("MEMLIB_FIGURES", str(tmp_path / "figures"))
    study, notebook = "rlp", STUDIES["rlp"]
    (tmp_path / "register").mkdir()
    register_path(study).write_text("seeds: [100, 101]\npilot_seeds: [0, 1]\nclaims: []\n")

    def threshold(bar, previous=()):
        return Claim("x", "a difference is positive", "", "a - b over seeds", f"> {bar}",
                     lambda v: v.mean > bar, previous=previous,
                     cases=Cases(Estimate(1, 0.1, 5), Estimate(-1, 0.1, 5)))

    x1, y, z = threshold(0), dataclasses.replace(_claim(), id="y"), \
        dataclasses.replace(_claim(), id="z")
    x2 = threshold(0.5, (x1,))
    x3 = threshold(0.2, (x2, x1))
    register(study, [x1, y], "first", "2026-01-01")
    write(evaluate([x1, y], {"x": Estimate(1.0, 0.1, 5), "y": Estimate(1.0, 0.1, 5)}),
          notebook)
    new_confirmatory_run(study, [200, 201], "round 1 replaced", "2026-01-02")
    register(study, [x2, y, z], "after round 1", "2026-01-03")
    write(evaluate([x2, y, z], {"x": Estimate(0.3, 0.05, 5), "y": Estimate(-1.0, 0.1, 5),
                                "z": Estimate(1.0, 0.1, 5)}), notebook)
    new_confirmatory_run(study, [300, 301], "round 2 replaced", "2026-01-04")
    register(study, [x3, y, z], "after round 2", "2026-01-05")
    write(evaluate([x3, y, z], {"x": Estimate(0.3, 0.05, 5), "y": Estimate(1.0, 0.1, 5),
                                "z": Estimate(1.0, 0.1, 5)}), notebook)
    return study


def test_each_row_shows_its_earlier_rounds_as_each_round_judged_it(tmp_path, monkeypatch):
    _rounds_register(tmp_path, monkeypatch)
    text = collect()
    table = text.split("| verdict |")[1].split("\n\n")[0]  # the main table, never folded
    assert "<details>" not in table
    assert table.splitlines()[0].endswith("| earlier rounds, each by its own rule |")
    x, y, z = (line.rsplit("|", 2)[1].strip() for line in table.splitlines()[2:])
    # each round's verdict as it was written with that round's own rule, not evaluated again
    assert x == ("rule changed after seeing rounds 1 and 2; held in 1 of 2 earlier rounds "
                 "(v1: holds · v2: does not hold)")
    assert y == "held in 1 of 2 earlier rounds (v1: holds, does not hold)"
    assert z == "rule added after seeing round 1; held in 1 of 1 earlier round (v1: holds)"


def test_a_version_recorded_as_the_same_rule_is_no_change_and_repeats_are_counted():
    from memlib.claims.report import round_history

    register = {"claims": [{"id": "x", "version": 1, "fingerprint": "a"},
                           {"id": "x", "version": 2, "fingerprint": "b", "same_rule_as": 1},
                           {"id": "x", "version": 3, "fingerprint": "c"}]}
    rounds = [{"x": ("v1", "holds")}, {"x": ("v1", "holds")},
              {"x": ("v2", "precondition failed: the model did not fit")},
              {"x": ("v2", "not run at this scale")}]
    assert round_history("x", "v2", register, rounds) == (
        "held in 2 of 4 earlier rounds (v1: holds ×2 · v2: precondition failed, not run)")
    assert round_history("x", "v3", register, rounds).startswith(
        "rule changed after seeing round 4; ")
    assert round_history("x", "unregistered", register, rounds[:1]).startswith(
        "rule changed after seeing round 1; ")
    assert round_history("x", "v1", register, []) == "—"
    assert round_history("w", "v1", register, rounds) == (
        "rule added after seeing round 4; no earlier round judged it")
