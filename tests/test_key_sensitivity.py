"""Every Config field decides some planned result: changed within its domain, it changes at
least one planned cache key, unless it only schedules work (which process computes what) or
says where to look for results it does not change. A field that changed results but no key
would serve a stale entry."""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import typing

import pytest
from test_trace import SMALLEST
from tiny import tiny

from memlib import STUDIES, runs, studies
from memlib.config import ConfigError, build, to_dict

# fields that schedule work or choose where it runs, never what a result is: each with why
SCHEDULING = {
    "parallel_runs": "how many runs compute at once",
    "workers": "DataLoader worker processes",
    "device": "resolved on this machine (a CPU here): tests/test_runs.py shows a GPU key",
}

# the tiny settings each study starts from here, where a field acts only with more of them
BASE = {"modarith": dict(seeds=(0, 1, 2)), "probes": SMALLEST["probes"],
        # no clean rate of its own: study 1's clean runs are the lens's only by `study1_runs`
        "lens": dict(noise_rates=(0.2, 0.4))}
# studies whose plan keys entries from the results of earlier ones (a trained model's
# probes): their base plan is computed first, on the smallest settings, so those results load
COMPUTED_FIRST = {"probes"}
# fields that act only on a machine without some data: on this one they cannot change a key
CONDITIONAL = {"image_fallback": "used only when image_dataset is not on disk",
               "human_seeds": "used only with human_label_sets, which need CIFAR-10 and its "
                              "CIFAR-10N label files"}
# fields that size one model, perturbed where that model is the one trained: a run is keyed
# by the sizes of its own model alone (study 1's `spec`), so elsewhere they change no key
TRAINED_BY = {"rlp": {"wrn_depth": "wrn", "wrn_width": "wrn", "vit_depth": "vit_tiny"}}
# fields read only by what a study computes afresh from loaded results, never cached
UNCACHED = {"fisher": {"top_k": "ranks the loaded runs' scores each time"},
            "probes": {"fold_below_chance": "folds the loaded heatmap accuracies each time",
                       "distilbert": "the DistilBERT case study is computed, never cached",
                       "distilbert_model": "the DistilBERT case study is never cached",
                       "distilbert_sentences": "the DistilBERT case study is never cached"}}


class _Anything:
    """What a recorded entry returns instead of its result: every operation on it gives it
    back, so a study function goes on to key its later entries."""

    def __getattr__(self, name):
        return self

    def __getitem__(self, key):
        return self

    def __call__(self, *args, **kwargs):
        return self

    def keys(self):
        return []

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0


def planned_keys(module, config) -> set[str]:
    """The key of every entry the plan makes: stored entries load, a missing one returns a
    stand-in (a study function stops where it needs a real one, after keying what came
    before)."""
    keys = set()
    get = runs.Computation.get

    def record(self, argument, compute, refresh=False):
        keys.add(self.key(argument))
        # the base plan's entries are stored: with their real results a study function goes
        # on to key every later entry; a changed key is all this needs to see
        return self.load(argument) if self.has(argument) else _Anything()

    plan = list(module.planned_runs(config))
    if "best" in inspect.signature(module.planned_runs).parameters:  # study 1's second stage
        plan += module.planned_runs(config, best=1.0)
    runs.Computation.get = record
    try:
        for function, argument in plan:
            if isinstance(function, runs.Computation):
                keys.add(function.key(argument))
                continue
            try:
                function(argument)
            except Exception:  # noqa: BLE001 - a stand-in went where a real result must
                pass
    finally:
        runs.Computation.get = get
    return keys


def variants(value, hint):
    """Values near `value` that a field of type `hint` might take."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1, value - 1, value * 2, 1, 0]
    if isinstance(value, float):
        return [value * 0.5 or 0.1, value * 1.5, min(0.9, value + 0.1), 0.5]
    if isinstance(value, str):
        args = [a for a in typing.get_args(typing.get_args(hint)[0] if typing.get_origin(hint)
                                          is typing.Annotated else hint) if isinstance(a, str)]
        return [a for a in args if a != value] or [value + "x"]
    if isinstance(value, tuple):
        out = [value[:-1]] if len(value) > 1 else []
        for item in variants(value[0], None) if value else []:
            out.append((item, *value[1:]))
        return out
    if value is None:
        return [1, 2, 10, 100, 0.5, (1,), "x"]
    return []


@pytest.mark.parametrize("study", [s for s in STUDIES if s != "lens"] + ["lens"])
def test_every_field_changes_some_planned_key(study):
    module = studies.module(study)
    config = tiny(module.Config, BASE.get(study))
    if study in COMPUTED_FIRST:  # stored: its later keys need earlier results
        for function, argument in module.planned_runs(config):
            function(argument)
    base = planned_keys(module, config)
    hints = typing.get_type_hints(module.Config, include_extras=True)
    params = {k: v for k, v in to_dict(config).items() if k in hints}
    silent = []
    for field in dataclasses.fields(module.Config):
        if (field.name in SCHEDULING or field.name in CONDITIONAL
                or field.name in UNCACHED.get(study, {}) or not field.init):
            continue
        start, reference, keys = config, params, base
        model = TRAINED_BY.get(study, {}).get(field.name)
        if model is not None:
            reference = {**params, "model": model, "layer_models": (model,)}
            start = build(module.Config, reference)
            keys = planned_keys(module, start)
        tried = False
        for value in itertools.islice(variants(getattr(config, field.name), hints[field.name]),
                                      6):
            try:
                changed = build(module.Config, {**reference, field.name: value})
            except (ConfigError, ValueError, TypeError):
                continue
            if changed == start:
                continue
            tried = True
            if planned_keys(module, changed) != keys:
                break
        else:
            if tried:
                silent.append(field.name)
    assert not silent, f"{study}: changing {silent} changes no planned key"
