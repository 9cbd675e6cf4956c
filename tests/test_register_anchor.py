"""A register cannot be rewritten, shortened or lost unseen: its head covers every setting
that decides a verdict, its anchor in the claims report and git's history catch a register
rewritten whole, and `memlib claims` stops in one line on any of them, as it does for a
study's claims table missing beside its other outputs."""

from __future__ import annotations

import subprocess

import pytest
import yaml
from test_register import _claim, _cli, _results, _snapshot

from memlib import STUDIES
from memlib.claims import Estimate, evaluate, read_register, register, register_path, write
from memlib.claims.register import (
    CHAIN,
    HEAD,
    anchor_of,
    chain_problems,
    extends,
    read_anchors,
)
from memlib.paths import ROOT, claims_report, figures_dir

REGISTERS = [f"register/{notebook}.yaml" for notebook in STUDIES.values()]


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)


needs_history = pytest.mark.skipif(_git("rev-parse", "HEAD").returncode != 0,
                                   reason="needs the repository's git history")


# ---- the committed registers, against git's history and the committed anchors -------------

def _committed_versions(path: str) -> list[tuple[str, dict]]:
    """(commit, register) of every committed version of `path` that has its head, oldest
    first (earlier versions predate the head and are checked by their chains alone)."""
    commits = _git("log", "--format=%H", "--reverse", "--", path).stdout.split()
    versions = []
    for commit in commits:
        shown = _git("show", f"{commit}:{path}")
        if shown.returncode == 0:
            data = yaml.safe_load(shown.stdout) or {}
            if HEAD in data:
                versions.append((commit[:10], data))
    return versions


@needs_history
@pytest.mark.parametrize("path", REGISTERS)
def test_every_committed_register_extends_the_one_before_it(path):
    versions = _committed_versions(path)
    for (_, before), (commit, after) in zip(versions, versions[1:]):
        assert chain_problems(after) == [], f"{path} at {commit}"
        assert extends(after, anchor_of(before)) == "", f"{path} at {commit}"
    now = yaml.safe_load((ROOT / path).read_text(encoding="utf-8"))
    if versions:  # the working tree's register appends to the last committed one
        assert extends(now, anchor_of(versions[-1][1])) == "", f"{path} in the working tree"


@needs_history
def test_every_register_extends_its_anchor_in_the_committed_claims_report():
    committed = _git("show", "HEAD:figures/CLAIMS.md")
    reports = [(ROOT / "figures" / "CLAIMS.md").read_text(encoding="utf-8")]
    if committed.returncode == 0:
        reports.append(committed.stdout)
    for text in reports:
        anchors = read_anchors(text)
        for study, notebook in STUDIES.items():
            anchor = anchors.get(f"{notebook}.yaml")
            if anchor is not None:
                assert extends(read_register(study), anchor) == "", notebook


def test_the_committed_report_anchors_every_register():
    anchors = read_anchors((ROOT / "figures" / "CLAIMS.md").read_text(encoding="utf-8"))
    assert set(anchors) == {f"{notebook}.yaml" for notebook in STUDIES.values()}


# ---- rewriting the register: `memlib claims` stops in one line ----------------------------

def _anchored(tmp_path, monkeypatch, capsys):
    """A registered claim, its results and a claims report anchoring the register (with an
    earlier run, so that every chained list has entries)."""
    from memlib.claims import new_confirmatory_run

    claim = _results(tmp_path, monkeypatch)
    data = read_register("rlp")
    data["seeds"] = [100, 101]
    register_path("rlp").write_text(yaml.safe_dump(data, sort_keys=False))
    _rechain("rlp")
    new_confirmatory_run("rlp", [200, 201], "the recipe trains longer", "2026-01-02")
    register("rlp", [_claim(rule="> 1")], "a stricter threshold", "2026-01-03")
    write(evaluate([claim], {"x": Estimate(1.0, 0.1, 5)}), STUDIES["rlp"])
    code, err = _cli(["claims"], capsys)
    assert code == 0, err
    assert "register 01_random_label_heads.yaml settings=" in claims_report().read_text()
    return claim


def _rechain(study: str) -> None:
    """Recompute every hash of the register as it now reads: what a forger would do."""
    from memlib.claims import chain_genesis

    path = register_path(study)
    data = yaml.safe_load(path.read_text())
    data.pop(HEAD, None)
    for name in ("claims", "earlier_runs"):
        for entry in data.get(name) or []:
            entry.pop(CHAIN, None)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    chain_genesis(study)


def _edit(study: str, change) -> None:
    path = register_path(study)
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _stops(capsys, tmp_path, *words: str) -> None:
    before = _snapshot(tmp_path)
    code, err = _cli(["claims"], capsys)
    assert code == 1 and len(err.splitlines()) == 1 and err.startswith("memlib: error:"), err
    for word in words:
        assert word in err, err
    assert _snapshot(tmp_path) == before  # nothing written


def _set_reason(data):
    data["claims"][0]["reason"] = "an edited reason"


def _set_seeds(data):
    data["seeds"] = [200, 202]


def _set_planned(data):
    data["planned_n"] = {"x": 3}


def _flag_replication(data):
    data["seeds_replication"] = True


def _drop_last(data):
    data["claims"].pop()


def _drop_earlier(data):
    data["earlier_runs"].pop()


EDITS = {"an edited entry": _set_reason, "changed seeds": _set_seeds,
         "a changed planned n": _set_planned, "a replication flag": _flag_replication,
         "a removed last entry": _drop_last, "a removed earlier run": _drop_earlier}


@pytest.mark.parametrize("edit", list(EDITS))
def test_an_edit_stops_the_report_in_one_line(edit, tmp_path, monkeypatch, capsys):
    _anchored(tmp_path, monkeypatch, capsys)
    _edit("rlp", EDITS[edit])
    _stops(capsys, tmp_path, "register/01_random_label_heads.yaml", "rewritten")


@pytest.mark.parametrize("edit", list(EDITS))
def test_an_edit_with_every_hash_recomputed_stops_the_report_in_one_line(
        edit, tmp_path, monkeypatch, capsys):
    _anchored(tmp_path, monkeypatch, capsys)
    _edit("rlp", EDITS[edit])
    _rechain("rlp")
    assert chain_problems(read_register("rlp")) == []  # the file alone looks intact
    _stops(capsys, tmp_path, "was rewritten since the claims report recorded it")


def test_an_append_is_accepted_and_anchored_anew(tmp_path, monkeypatch, capsys):
    _anchored(tmp_path, monkeypatch, capsys)
    register("rlp", [_claim(rule="> 2")], "stricter still", "2026-01-04")
    code, err = _cli(["claims"], capsys)
    assert code == 0, err
    anchor = read_anchors(claims_report().read_text())["01_random_label_heads.yaml"]
    assert anchor == anchor_of(read_register("rlp"))


def test_registering_on_a_rewritten_register_is_refused(tmp_path, monkeypatch, capsys):
    _anchored(tmp_path, monkeypatch, capsys)
    _edit("rlp", _set_seeds)
    _rechain("rlp")
    before = _snapshot(tmp_path)
    code, err = _cli(["register", "rlp", "--reason", "more"], capsys)
    assert code == 1 and len(err.splitlines()) == 1 and "rewritten" in err, err
    assert _snapshot(tmp_path) == before


# ---- a missing register, a missing claims table ------------------------------------------

def test_a_missing_register_stops_the_report_and_the_register_command(tmp_path, monkeypatch,
                                                                      capsys):
    _results(tmp_path, monkeypatch)
    register_path("rlp").unlink()
    _stops(capsys, tmp_path, "register/01_random_label_heads.yaml is missing",
           "--new-register")
    before = _snapshot(tmp_path)
    code, err = _cli(["register", "rlp", "--reason", "again"], capsys)
    assert code == 1 and len(err.splitlines()) == 1 and "is missing" in err, err
    assert _snapshot(tmp_path) == before


def test_a_new_register_is_started_only_when_asked_and_says_what_it_loses(
        tmp_path, monkeypatch, capsys):
    _results(tmp_path, monkeypatch)
    monkeypatch.setattr("memlib.studies.study_claims", lambda study: [_claim()])
    code, err = _cli(["register", "rlp", "--reason", "again", "--new-register"], capsys)
    assert code == 2 and "exists" in err  # never over an existing register
    register_path("rlp").unlink()
    from memlib.cli import main

    assert main(["register", "rlp", "--reason", "lost", "--new-register"]) == 0
    out = capsys.readouterr().out
    assert "no seeds, no earlier runs" in out
    data = read_register("rlp")
    assert data["seeds"] == [] and [e["version"] for e in data["claims"]] == [1]
    assert chain_problems(data) == []


def test_a_missing_claims_table_beside_other_outputs_stops_the_report(tmp_path, monkeypatch,
                                                                      capsys):
    _results(tmp_path, monkeypatch)
    folder = figures_dir(STUDIES["rlp"])
    (folder / "manifest.json").write_text("{}")
    (folder / "claims.csv").unlink()
    _stops(capsys, tmp_path, f"{folder / 'claims.csv'} is missing", "manifest.json")


def test_a_study_without_any_output_reads_no_results_yet(tmp_path, monkeypatch, capsys):
    _results(tmp_path, monkeypatch)
    for path in figures_dir(STUDIES["rlp"]).iterdir():
        path.unlink()
    code, err = _cli(["claims"], capsys)
    assert code == 0, err
    assert "No results yet" in claims_report().read_text()


def test_the_book_stops_on_a_missing_claims_table(tmp_path, monkeypatch):
    from memlib import book

    monkeypatch.setenv("MEMLIB_FIGURES", str(tmp_path / "figures"))
    for notebook in STUDIES.values():
        folder = figures_dir(notebook)
        folder.mkdir(parents=True)
        (folder / f"{notebook}.ipynb").write_text("{}")
        (folder / "claims.csv").write_text("id,verdict,rule\n")
    claims_report().write_text("# Claims\n")
    lost = figures_dir(STUDIES["probes"]) / "claims.csv"
    lost.unlink()
    with pytest.raises(book.BookError, match=f"no {lost}"):
        book.source_tree("small", tmp_path / "src")
