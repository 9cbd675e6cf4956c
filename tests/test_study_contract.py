"""One contract for every study: the runner, the notebooks and the claims report use each
study through the same parts, so each study must have them and they must behave alike."""

from __future__ import annotations

import dataclasses
import importlib

import pytest

from memlib import SCALES, STUDIES, studies
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
