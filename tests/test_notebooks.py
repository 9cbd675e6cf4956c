"""Smoke run of every study notebook through the real pipeline (papermill, smoke params)."""

from pathlib import Path

import pandas as pd
import pytest

from memlib import paths
from memlib.claims import VERDICTS
from memlib.pipeline import run_notebook

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("[0-9]*.py"))


@pytest.mark.notebook
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_smoke(notebook, tmp_path):
    run_notebook(notebook, "smoke", build_dir=tmp_path)
    out = paths.figures_dir(notebook.stem, "smoke")
    assert list(out.glob("*.png")), "the notebook saved no figure"
    claims = pd.read_csv(out / "claims.csv", keep_default_na=False)
    kinds = set(claims["verdict"].str.split(":").str[0])
    assert len(claims) > 0 and kinds <= set(VERDICTS)
