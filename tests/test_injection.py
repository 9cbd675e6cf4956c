"""No input reaches an interpreter it was not meant for: a commit name reaches git only as a
revision, a stored value names only memlib's own types, a note is text in CLAIMS.md and in
the book's HTML, and make never evaluates a folder named in the environment."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from test_register import _cli, _results

from memlib import STUDIES
from memlib.paths import ROOT, claims_report, figures_dir

SCRIPT = "<script>alert(1)</script>"


# ---- git: a commit name is never an option ------------------------------------------------

def test_rekeyed_from_an_option_leaves_its_target_untouched(tmp_path, capsys):
    victim = tmp_path / "victim"
    victim.write_text("mine")
    registers = {p: p.read_bytes() for p in (ROOT / "register").glob("*.yaml")}
    code, err = _cli(["register", "rlp", "--reason", "moved",
                      f"--rekeyed-from=--output={victim}"], capsys)
    assert code == 2 and len(err.splitlines()) == 1 and "not a commit" in err, err
    assert victim.read_text() == "mine"
    assert {p: p.read_bytes() for p in (ROOT / "register").glob("*.yaml")} == registers


def test_the_committed_tree_takes_a_commit_and_refuses_an_option(tmp_path):
    from memlib.claims.values import committed_tree

    victim = tmp_path / "victim"
    victim.write_text("mine")
    with pytest.raises(subprocess.CalledProcessError):
        committed_tree(tmp_path / "a", f"--output={victim}")
    assert victim.read_text() == "mine"
    (tmp_path / "b").mkdir()
    assert (committed_tree(tmp_path / "b", "HEAD") / "memlib" / "claims" / "values.py").is_file()


# ---- a stored value names only memlib's types ----------------------------------------------

def test_a_value_naming_a_module_outside_memlib_is_refused_unimported(tmp_path):
    folder = tmp_path / "figures" / STUDIES["rlp"]
    folder.mkdir(parents=True)
    (folder / "claims_values.json").write_text(
        '{"x": {"__type__": "this.Estimate", "fields": {}}}')
    script = ("import sys\n"
              "from memlib.claims import DamagedFileError\n"
              "from memlib.claims.values import read_values\n"
              "try:\n    read_values('rlp')\n"
              "except DamagedFileError as err:\n    print('refused:', err)\n"
              "print('imported' if 'this' in sys.modules else 'not imported')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT),
                               "MEMLIB_FIGURES": str(tmp_path / "figures")}, check=True)
    lines = done.stdout.splitlines()
    assert lines[0].startswith("refused:") and "outside memlib" in lines[0], done.stdout
    assert lines[-1] == "not imported" and "Zen of Python" not in done.stdout


def test_memlibs_own_types_still_round_trip(tmp_path):
    from memlib.claims import Estimate
    from memlib.claims.values import decode, encode

    assert decode(encode({"x": Estimate(1.0, 0.5, 5)})) == {"x": Estimate(1.0, 0.5, 5)}


# ---- a note is text, in CLAIMS.md and in the book --------------------------------------------

def _planted_report(tmp_path, monkeypatch, capsys) -> str:
    """The claims report of a study whose claims.csv carries markup in every text column."""
    _results(tmp_path, monkeypatch)
    csv = figures_dir(STUDIES["rlp"]) / "claims.csv"
    table = pd.read_csv(csv, dtype=str, keep_default_na=False)
    for column in ("note", "statement", "caveat", "headline", "ours", "paper", "rule",
                   "measure", "p"):
        table[column] = f"{SCRIPT} {column} <img src=x onerror=alert(2)>"
    table["verdict"] = f"within noise: {SCRIPT}"
    table.to_csv(csv, index=False)
    code, err = _cli(["claims"], capsys)
    assert code == 0, err
    return claims_report().read_text(encoding="utf-8")


def test_markup_in_a_claims_table_is_text_in_claims_md(tmp_path, monkeypatch, capsys):
    text = _planted_report(tmp_path, monkeypatch, capsys)
    assert "<script" not in text and "<img" not in text
    assert "&lt;script>alert(1)&lt;/script> note" in text
    assert "&lt;img src=x onerror=alert(2)>" in text


def test_markup_in_a_claims_table_is_text_in_the_books_claims_page(tmp_path, monkeypatch,
                                                                   capsys):
    """The book's claims page as MyST renders it to HTML (the parser Sphinx uses, without
    building the whole book): the planted tags are text, not elements."""
    from docutils.core import publish_string
    from myst_parser.parsers.docutils_ import Parser

    from memlib import book

    page = book.claims_page(_planted_report(tmp_path, monkeypatch, capsys))
    html = publish_string(page, parser=Parser(), writer="html5",
                          settings_overrides={"myst_enable_extensions": ["colon_fence"],
                                              "report_level": 5}).decode()
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; note" in html


def test_only_a_less_than_that_could_open_markup_is_escaped():
    from memlib.claims.report import escaped

    assert escaped("p < 0.05, a<b, x<=1, </i>, <!-- c -->, <?x>") == (
        "p < 0.05, a&lt;b, x<=1, &lt;/i>, &lt;!-- c -->, &lt;?x>")


# ---- make never evaluates a folder named in the environment --------------------------------

needs_make = pytest.mark.skipif(not shutil.which("make"), reason="needs make")


@needs_make
@pytest.mark.parametrize("target", ["figures", "clean", "book", "class-kit", "test"])
def test_make_never_runs_a_shell_named_in_a_folder_variable(target, tmp_path):
    planted = tmp_path / "planted"
    venv = Path(sys.executable).parent.parent
    env = {**os.environ, "MEMLIB_BUILD": f"$(shell touch {planted}-build)",
           "MEMLIB_FIGURES": f"$(shell touch {planted}-figures)"}
    run = subprocess.run(["make", "-n", "--no-print-directory", target, f"VENV={venv}",
                          "-o", f"{venv}/.installed"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert not list(tmp_path.glob("planted*")), run.stderr
    if target == "figures":  # make cannot name such a folder: one line
        assert run.returncode != 0 and run.stderr.count("\n") == 1, run.stderr
        assert "MEMLIB_BUILD" in run.stderr
