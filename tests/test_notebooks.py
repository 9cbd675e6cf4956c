"""Smoke run of every study notebook through the documented pipeline: `make -j2 figures
SCALE=smoke` and `make book SCALE=smoke` in a clean copy of the checkout (papermill, smoke
params), once per session (conftest.SmokeRuns)."""

import json
from pathlib import Path

import pandas as pd
import pytest

from memlib import STUDY_OF
from memlib.claims import VERDICTS
from memlib.config import to_dict
from memlib.studies import preset_config

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("[0-9]*.py"))


@pytest.mark.notebook
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_smoke(notebook, smoke_runs):
    out = smoke_runs.run(notebook)  # published where the book test finds them
    assert list(out.glob("*.png")), "the notebook saved no figure"
    assert (out / f"{notebook.stem}.ipynb").is_file(), "the executed notebook was not published"
    claims = pd.read_csv(out / "claims.csv", keep_default_na=False)
    kinds = set(claims["verdict"].str.split(":").str[0])
    assert len(claims) > 0 and kinds <= set(VERDICTS)
    # the notebook ran the very config `memlib run STUDY --scale smoke` runs, and its
    # manifest records every setting of it
    study = STUDY_OF[notebook.stem]
    recorded = json.loads((out / "manifest.json").read_text())["parameters"]
    assert {**recorded, "scale": None} == {**to_dict(preset_config(study, "smoke")),
                                           "scale": None}


@pytest.mark.notebook
def test_the_documented_smoke_pipeline_finishes_from_a_clean_copy(smoke_runs):
    """`make -j2 figures SCALE=smoke` runs every notebook and writes the claims report (every
    registered row of each study that its smoke preset runs), then `make book SCALE=smoke`
    builds the book from them."""
    figures = smoke_runs.make("figures")
    assert figures.returncode == 0, figures.stderr[-3000:]
    report = smoke_runs.figures / "smoke" / "CLAIMS.md"
    assert report.is_file() and "No results yet" not in report.read_text(encoding="utf-8")
    book = smoke_runs.make("book")
    assert book.returncode == 0, book.stderr[-3000:]
    assert (smoke_runs.build / "book" / "smoke" / "html" / "index.html").is_file()
    assert not (smoke_runs.clone / ".venv").exists()  # nothing was installed


@pytest.mark.notebook
def test_a_notebook_runs_and_publishes_in_an_ascii_locale(smoke_runs):
    """The smoke runs (shared with test_notebook_smoke) go through the command line with
    LC_ALL=C and PYTHONUTF8=0, and publish their non-ASCII text."""
    import codecs
    import os
    import subprocess
    import sys

    [notebook] = [p for p in NOTEBOOKS if p.stem in smoke_runs.in_ascii_locale]
    encoding = subprocess.run(
        [sys.executable, "-c", "import locale; print(locale.getpreferredencoding(False))"],
        env={**os.environ, **smoke_runs.ASCII_LOCALE}, capture_output=True, text=True,
        check=True).stdout.strip()
    assert codecs.lookup(encoding).name == "ascii"  # the locale that run is given is ASCII
    out = smoke_runs.run(notebook)
    published = (out / f"{notebook.stem}.ipynb").read_text(encoding="utf-8")
    assert not published.isascii() and (out / "claims.md").is_file()
