"""One contract for every study: the runner, the notebooks and the claims report use each
study through the same parts, so each study must have them and they must behave alike."""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path
from typing import get_type_hints

import pytest

from memlib import SCALES, STUDIES, paths, presets, studies
from memlib.config import coerce
from memlib.runs import Computation


@pytest.mark.parametrize("study", STUDIES)
def test_study_has_the_parts_the_runner_and_the_report_use(study):
    module = studies.module(study)
    assert dataclasses.is_dataclass(module.Config)
    for part in ("run", "planned_runs"):
        assert callable(getattr(module, part, None)), f"{study} has no {part}(config)"
    assert studies.study_claims(study), f"{study} declares no claims"


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("study", STUDIES)
def test_every_preset_is_a_valid_config(study, scale):
    config = studies.preset_config(study, scale)
    assert isinstance(config, studies.module(study).Config)


@pytest.mark.parametrize("study", STUDIES)
def test_each_value_is_written_once(study):
    """The Config's defaults are the small run, a parameter file holds only what differs from
    them, and a notebook's parameters cell names nothing but the scale: no value is copied
    where it could drift from its source."""
    config_class = studies.module(study).Config
    defaults = presets._DEFAULTS[study]
    assert studies.preset_config(study, "small") == config_class()
    assert presets.read_params(presets.params_file(Path(STUDIES[study]), "small")) == {}
    for scale in ("smoke", "full"):
        params = presets.read_params(presets.params_file(Path(STUDIES[study]), scale))
        hints = get_type_hints(config_class, include_extras=True)
        same = [k for k, v in params.items()
                if k in defaults and coerce(v, hints[k], k) == coerce(defaults[k], hints[k], k)]
        assert not same, f"params/{scale}/{STUDIES[study]}.yaml repeats defaults: {same}"
    source = (Path(paths.repo_root()) / "notebooks" / f"{STUDIES[study]}.py").read_text()
    cell = source.split('# %% tags=["parameters"]\n', 1)[1].split("\n# %%", 1)[0]
    names = [line.split("=")[0].strip() for line in cell.splitlines()
             if line and not line.startswith("#")]
    assert names == ["scale"], f"the parameters cell of {STUDIES[study]} sets {names}"


def test_a_declared_value_is_the_file_over_the_defaults():
    """What a claim's fingerprint reads: the file's value where it sets one, else the default
    as written (unresolved: "mnist" stays "mnist" whatever is on disk)."""
    studies.module("modarith")

    def declared(scale):
        return presets.declared("modarith", presets.params_file(Path(STUDIES["modarith"]), scale))

    assert declared("small")["image_dataset"] == "mnist"
    assert declared("smoke")["p"] == 23 and declared("smoke")["width"] == 65
    assert declared("smoke")["weight_decay"] == 0.1  # the default


def _call_key(function, argument) -> str:
    """A planned call's identity: a computation's cache key, or a study function (one that
    makes several entries) by its name and its argument's fields."""
    if isinstance(function, Computation):
        return function.key(argument)
    return f"{function.__module__}.{function.__qualname__}({argument!r})"


@pytest.mark.parametrize("study", STUDIES)
def test_the_plan_is_deterministic_and_each_call_importable(study):
    """The smoke plan names each cached result by a registered computation and its spec (or
    a module-level study function that makes several), asking twice gives the same calls in
    the same order, and no call comes twice: the cache, the parallel workers (which import
    each function by name) and the class kit rely on it."""
    module = studies.module(study)
    config = studies.preset_config(study, "smoke")
    keys = []
    for _ in range(2):
        plan = module.planned_runs(config)
        assert plan, f"{study} plans no runs"
        for function, _ in plan:
            home = importlib.import_module(function.__module__)
            assert getattr(home, function.__qualname__, None) is function, function
        keys.append([_call_key(function, argument) for function, argument in plan])
    assert keys[0] == keys[1]
    assert len(set(keys[0])) == len(keys[0]), "the plan asks for a result twice"
