"""Every line of memlib a computation executes is inside its code fingerprint: each study's
registered computations run on the smallest settings under a profiler that records every
memlib code object called while a computation computes, and each must belong to the
functions, classes and modules the computation's key hashes. What no key hashes could change
a result without re-keying it."""

from __future__ import annotations

import sys
import threading
import types
from pathlib import Path

import pytest
from tiny import tiny

import memlib
from memlib import STUDIES, fingerprint, runs, studies

PACKAGE = str(Path(memlib.__file__).parent)

# the smallest settings that still make every computation of the study (on top of tiny.py's)
SMALLEST = {
    "rlp": dict(train_samples=400, test_samples=200, validation_samples=100, epochs=2,
                layer_model_epochs=1, widths=(16, 16), cnn_channels=(4, 4, 4), seeds=(0,),
                layer_models=("mlp",), dropouts=(0.1,), weight_decays=(1e-4,),
                label_smoothings=(0.1,), lambdas=(1.0,), fractions=(1.0,),
                noise_rates=(0.2,), noise_lambdas=(1.0,)),
    "modarith": dict(p=13, width=16, epochs=4, log_every=2, order_epochs=2,
                     order_log_every=1, sweep_widths=(8,), sweep_epochs=2,
                     sweep_activations=("quadratic",), sweep_weight_decays=(0.0,),
                     digits_epochs=2, image_epochs=0, image_dataset="none",
                     alphas=(0.1,), order_alphas=(0.1,)),
    "fisher": dict(dataset="digits", n_train=200, n_test=100, n_scatter=50, epochs=2,
                   seeds=(0,), corruptions=(0.4,), mlp_widths=(16,), cnn_channels=(4, 4, 4),
                   arch_epochs=2, synthetic_n=20, direct_checks=2, top_k=5,
                   epochs_after_fit=None),
    "probes": dict(seeds=(0,), standin_seeds=(1000,), heatmap_runs=1, epochs=1, width=8,
                   train_per_class=20, prune_levels=(0.0, 0.5), noise_log2_levels=(0.0,),
                   flip_levels=(0.0, 0.1), null_draws=1, null_prune_levels=(0.0, 0.5),
                   curveball_trades=1, ssim_pairs=5, heatmap_classes=3, heatmap_epochs=1,
                   heatmap_train_per_class=20, heatmap_null_draws=1, standin_train=100,
                   standin_test=50, standin_epochs=1, standin_prune_levels=(0.5,),
                   standin_noise_levels=(1.0,), standin_flip_levels=(0.1,)),
    "lens": dict(setting="smoke", datasets=("digits",), noise_rates=(0.4,),
                 study1_sets=("epochs=2", "widths=[8, 8]", "train_samples=200",
                              "test_samples=100", "validation_samples=100", "seeds=[0]"),
                 null_draws=1),
}


# what stores results and keys them, never what computes them (no fingerprint follows into it)
MACHINERY = {str(Path(PACKAGE) / f"{m.removeprefix('memlib.')}.py") for m in fingerprint.MACHINERY}


def _code_objects(code: types.CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def covered(computation: runs.Computation, roots: tuple) -> tuple[set, set]:
    """The code objects (and the files, for declared modules) a computation's key hashes."""
    codes, files = set(), {m.__file__ for m in computation.uses}
    for item in fingerprint.closure(computation.fn, deep=True, roots=roots):
        if isinstance(item, types.FunctionType):
            codes.update(_code_objects(item.__code__))
    return codes, files


def _under_machinery(frame) -> bool:
    """Whether the machinery runs this call (the cache asking torch.distributed whether this
    rank writes as an inner computation's entry loads): a machinery frame sits between it and
    the innermost computation's `traced` (this file) that computes it."""
    frame = frame.f_back
    while frame is not None and frame.f_code.co_filename != __file__:
        if frame.f_code.co_filename in MACHINERY:
            return True
        frame = frame.f_back
    return False


class Tracer:
    """Records, per computation in progress (every one on the stack: an outer computation's
    key must cover what its inner ones execute too), the memlib code objects called."""

    def __init__(self):
        self.stack: list[runs.Computation] = []
        self.executed: dict[str, set] = {}
        self.roots: dict[str, tuple] = {}

    def profile(self, frame, event, arg):
        if event == "call" and self.stack and frame.f_code.co_filename.startswith(PACKAGE) \
                and not _under_machinery(frame):
            for c in self.stack:
                self.executed[c.name].add(frame.f_code)


@pytest.mark.parametrize("study", STUDIES)
def test_every_executed_line_is_inside_the_key(study, monkeypatch):
    module = studies.module(study)
    config = tiny(module.Config, SMALLEST[study])
    tracer = Tracer()
    get = runs.Computation.get

    def traced_get(self, argument, compute, refresh=False):
        tracer.executed.setdefault(self.name, set())
        tracer.roots[self.name] = runs._classes(argument)

        def traced():  # what computes the result, not what keys it
            tracer.stack.append(self)
            try:
                return compute()
            finally:
                tracer.stack.pop()

        return get(self, argument, traced, refresh)

    monkeypatch.setattr(runs.Computation, "get", traced_get)
    sys.setprofile(tracer.profile)
    threading.setprofile(tracer.profile)
    try:
        for function, argument in module.planned_runs(config):
            function(argument)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    ours = {name for name, c in runs.REGISTRY.items()
            if c.fn.__module__.startswith(f"memlib.studies.{study}.")}
    assert ours <= set(tracer.executed), f"not run: {sorted(ours - set(tracer.executed))}"
    missing = {}
    for name, executed in tracer.executed.items():
        codes, files = covered(runs.REGISTRY[name], tracer.roots[name])
        outside = {f"{Path(c.co_filename).relative_to(PACKAGE)}:{c.co_firstlineno} {c.co_name}"
                   for c in executed if c not in codes and c.co_filename not in files
                   and c.co_filename not in MACHINERY and c.co_name != "<module>"}
        if outside:
            missing[name] = sorted(outside)
    assert not missing, "\n".join(f"{k}: {v}" for k, v in missing.items())
