"""Seed numbers reach the notebooks' prose through code (memlib.prose.seed_history), never
typed: the confirmatory seeds are replaced by fresh ones at each new registration, and a typed
number would then be false."""

import dataclasses
import re
from pathlib import Path

import pytest
import yaml
from book_render import source_cells

from memlib import STUDIES
from memlib.claims import read_register
from memlib.claims.register import seed_span
from memlib.prose import count_word, seed_history, seeds_phrase

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("0*.py"))


def _register(tmp_path, monkeypatch, data: dict) -> str:
    monkeypatch.setattr("memlib.paths.repo_root", lambda: tmp_path)
    (tmp_path / "register").mkdir()
    (tmp_path / "register" / f"{STUDIES['rlp']}.yaml").write_text(yaml.safe_dump(data))
    return "rlp"


@dataclasses.dataclass
class _Config:
    seeds: tuple = (300, 301, 302)
    arm_seeds: tuple = (303, 304)
    ARM_SEEDS = ("arm_seeds",)


def test_the_register_gives_the_phrases(tmp_path, monkeypatch):
    study = _register(tmp_path, monkeypatch, {
        "seeds": [300, 301, 302, 303, 304], "pilot_seeds": [0, 1, 2], "claims": [],
        "earlier_runs": [{"seeds": [100, 101]}, {"seeds": [200, 202]}]})
    history = seed_history(study)
    assert history["registered"] == "300-304" and history["registered_count"] == "five"
    assert history["pilots"] == "0-2" and history["pilot_count"] == "three"
    assert history["earlier"] == "100-101 and 200,202" and history["earlier_count"] == "two"
    assert history["earlier_runs"] == "earlier confirmatory runs on seeds 100-101 and 200,202"
    assert history["earlier_steps"] == "first 100-101, then 200,202"
    assert history["first_earlier"] == "100-101" and history["first_earlier_count"] == "two"
    assert "seeds" not in history and "ran" not in history  # no config: the register alone


def test_the_config_says_what_ran_an_arm_included(tmp_path, monkeypatch):
    study = _register(tmp_path, monkeypatch, {
        "seeds": [300, 301, 302, 303, 304], "pilot_seeds": [0], "claims": [],
        "earlier_runs": [{"seeds": [100, 101]}]})
    history = seed_history(study, _Config())
    assert history["seeds"] == "300-302" and history["count"] == "three"
    assert history["arm_seeds"] == "303-304" and history["arm_seeds_count"] == "two"
    assert history["confirmatory"] == "yes"
    assert history["ran"] == "the three confirmatory seeds (300-302)"
    assert history["earlier_runs"] == "an earlier confirmatory run on seeds 100-101"
    smoke = seed_history(study, _Config(seeds=(0,), arm_seeds=(1,)))
    assert not smoke["confirmatory"]
    assert smoke["ran"] == ("one seed (0), not the five confirmatory seeds (300-304, the arms' "
                            f"among them) registered in register/{STUDIES['rlp']}.yaml")


def test_no_register_and_counts():
    assert count_word(0) == "zero" and count_word(20) == "twenty" and count_word(25) == "25"
    assert seeds_phrase([7]) == "one seed (7)" and seeds_phrase([3, 1, 2]) == "three seeds (1-3)"


def test_an_empty_register_says_nothing_of_earlier_runs(tmp_path, monkeypatch):
    study = _register(tmp_path, monkeypatch, {"seeds": [], "pilot_seeds": [], "claims": []})
    history = seed_history(study, _Config(seeds=(0,), arm_seeds=()))
    assert history["earlier"] == "" and history["earlier_runs"] == "no earlier confirmatory run"
    assert history["ran"] == "one seed (0)" and not history["confirmatory"]


def test_the_check_finds_typed_seeds_and_nothing_else():
    seeds = [300, 301, 302]
    assert "300–302" in _typed("five confirmatory seeds (300–302)", seeds)
    assert _typed("runs 300-302", seeds) == ["300-302"]
    assert _typed("the seeds 300 and 301", seeds) == ["seeds 300"]
    assert not _typed("300 per class; seed 0; 3000 seeds; seeds 1300", seeds)


def _typed(text: str, seeds: list[int]) -> list[str]:
    """The confirmatory seeds' span (either dash) typed in `text`, or their first seed as a
    word after "seed" in the same clause ("seeds 300 and 301"; "500 per class" is no seed)."""
    span = re.escape(seed_span(seeds)).replace(r"\-", "[-–]")
    first = rf"\bseeds?\b[^.;:]{{0,40}}?(?<![\d.,]){seeds[0]}(?![\d.,%])"
    return [m[0] for m in re.finditer(span, text)] + [m[0] for m in re.finditer(first, text)]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_markdown_cell_types_the_confirmatory_seeds(notebook):
    seeds = sorted(int(s) for s in read_register(notebook.stem).get("seeds", []))
    assert seeds, f"register/{notebook.stem}.yaml has no confirmatory seeds"
    for cell in source_cells(notebook):
        if cell["cell_type"] == "markdown":
            assert not _typed(cell["source"], seeds), (
                f"{notebook.stem}: a markdown cell types the confirmatory seeds "
                f"({_typed(cell['source'], seeds)}); show them with memlib.prose.seed_history: "
                f"{cell['source'][:200]!r}")
