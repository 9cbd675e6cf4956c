"""Smoke run of every study notebook through the real pipeline (papermill, smoke params)."""

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
